#!/usr/bin/python3
"""The systemd unit as `cmake --install` (and so the .deb) installs it,
checked with the real systemd-analyze (Debian 12's systemd 252):

- `systemd-analyze verify` accepts it, with ExecStart= naming the binary as
  installed (installed into a DESTDIR, the test points the unit there);
- `systemd-analyze security --offline=true --threshold=20` passes and the
  overall exposure is at most 2.0, also with each documented drop-in of
  systemd/ckptmon.service.d-examples/ applied;
- the directives issue 13 asks for are all there.

systemd is not PID 1 on the CI machine (a container), so the unit itself is
never started; the test checks the unit file only. What the unit does to the
process (a dynamic unprivileged user, no capabilities, no new privileges) is
reproduced with setpriv(1) instead, to check the behaviour the docs promise:
a tier the service user cannot read is down with the reason "permission
denied" and the daemon keeps serving; with CAP_DAC_READ_SEARCH (the
cap-dac-read-search.conf drop-in) it is up.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

SYSTEMD_ANALYZE = "/usr/bin/systemd-analyze"
DROPINS = os.path.join(harness.SOURCE_DIR, "systemd", "ckptmon.service.d-examples")
BUILD_DIR = os.path.dirname(os.path.abspath(harness.BIN))


def install_tree():
    """DESTDIR=<tmp> cmake --install <build> --prefix /usr; returns <tmp>."""
    if not os.path.exists(os.path.join(BUILD_DIR, "cmake_install.cmake")):
        harness.skip_peer(f"{BUILD_DIR} is not a CMake build directory")
    dest = tempfile.mkdtemp(prefix="ckptmon-destdir-")
    subprocess.run(["cmake", "--install", BUILD_DIR, "--prefix", "/usr"],
                   env=dict(os.environ, DESTDIR=dest), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    return dest


def exposure(output):
    m = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", output)
    if not m:
        raise AssertionError(f"no exposure level in:\n{output}")
    return float(m.group(1))


class InstalledUnit(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.require_executable(SYSTEMD_ANALYZE, "systemd")
        harness.require_binary()
        cls.dest = install_tree()
        cls.unit = os.path.join(cls.dest, "usr", "lib", "systemd", "system", "ckptmon.service")
        with open(cls.unit) as f:
            cls.text = f.read()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dest, ignore_errors=True)

    def directives(self):
        out = {}
        for line in self.text.splitlines():
            line = line.strip()
            if line and not line.startswith(("#", "[")) and "=" in line:
                k, v = line.split("=", 1)
                out.setdefault(k, []).append(v)
        return out

    def test_exec_start_is_the_installed_binary(self):
        self.assertIn("ExecStart=/usr/bin/ckptmon serve --config.file=/etc/ckptmon/ckptmon.yml",
                      self.text)
        self.assertTrue(os.access(os.path.join(self.dest, "usr", "bin", "ckptmon"), os.X_OK))

    def test_verify(self):
        # systemd-analyze verify checks that ExecStart's binary exists and that
        # the man: page of Documentation= opens: both point into the DESTDIR.
        pointed = os.path.join(self.dest, "pointed", "ckptmon.service")
        os.makedirs(os.path.dirname(pointed))
        with open(pointed, "w") as f:
            f.write(self.text.replace("ExecStart=/usr/bin/ckptmon ",
                                      f"ExecStart={self.dest}/usr/bin/ckptmon "))
        env = dict(os.environ, MANPATH=os.path.join(self.dest, "usr", "share", "man"))
        r = subprocess.run([SYSTEMD_ANALYZE, "verify", pointed], env=env, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertEqual(r.stdout.strip(), "", r.stdout)

    def security(self, root=None):
        args = [SYSTEMD_ANALYZE, "security", "--offline=true", "--threshold=20", "--no-pager"]
        args += [f"--root={root}", "ckptmon.service"] if root else [self.unit]
        r = subprocess.run(args, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout)
        return exposure(r.stdout)

    def test_security_exposure_at_most_2(self):
        self.assertLessEqual(self.security(), 2.0)

    def test_security_with_each_documented_dropin(self):
        dropins = sorted(f for f in os.listdir(DROPINS) if f.endswith(".conf"))
        self.assertIn("nvml.conf", dropins)
        self.assertIn("cap-dac-read-search.conf", dropins)
        for name in dropins:
            with self.subTest(dropin=name):
                root = tempfile.mkdtemp(prefix="ckptmon-root-")
                self.addCleanup(shutil.rmtree, root, True)
                d = os.path.join(root, "etc", "systemd", "system", "ckptmon.service.d")
                os.makedirs(d)
                shutil.copy(self.unit, os.path.join(root, "etc", "systemd", "system"))
                shutil.copy(os.path.join(DROPINS, name), d)
                self.assertLessEqual(self.security(root), 2.0)

    def test_hardening_directives(self):
        d = self.directives()
        want = {
            "DynamicUser": "yes", "StateDirectory": "ckptmon", "ProtectSystem": "strict",
            "ProtectHome": "read-only", "PrivateTmp": "yes", "PrivateDevices": "yes",
            "CapabilityBoundingSet": "", "NoNewPrivileges": "yes",
            "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6 AF_NETLINK",
            "SystemCallArchitectures": "native", "MemoryDenyWriteExecute": "yes",
            "ProtectKernelTunables": "yes", "ProtectKernelModules": "yes",
            "ProtectKernelLogs": "yes", "ProtectClock": "yes", "ProtectHostname": "yes",
            "ProtectControlGroups": "yes", "ProtectProc": "invisible", "LockPersonality": "yes",
            "RestrictNamespaces": "yes", "RestrictRealtime": "yes", "RestrictSUIDSGID": "yes",
            "UMask": "0077",
        }
        for k, v in want.items():
            self.assertIn(v, d.get(k, []), f"{k}={v} missing")
        self.assertEqual(d["SystemCallFilter"], ["@system-service", "~@privileged @resources"])
        for k in ("TasksMax", "MemoryMax"):
            self.assertIn(k, d)
        # No capability, no write access outside the state directory.
        self.assertNotIn("AmbientCapabilities", [k for k, v in d.items() if v != [""]])
        self.assertNotIn("ReadWritePaths", d)


class UnreadableTier(unittest.TestCase):
    """The unit's process conditions, reproduced with setpriv."""

    def setUp(self):
        harness.require_binary()
        harness.require_root("switching to an unprivileged user")
        harness.require_executable("/usr/bin/setpriv", "util-linux")
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        os.chmod(self.ws.dir, 0o755)
        self.tier = self.ws.mkdir("tier", "job", "step-1")
        os.chmod(self.ws.path("tier"), 0o700)  # root's, unreadable to others
        state = self.ws.mkdir("state")
        os.chown(state, 65534, 65534)
        self.cfg = self.ws.write("c.yml", harness.config_yaml(
            [harness.tier_yaml("t", self.ws.path("tier"))], state_dir=state))
        os.chmod(self.cfg, 0o644)

    def start(self, caps):
        inh = "-all" + (",+dac_read_search" if caps else "")
        argv = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                f"--inh-caps={inh}", f"--bounding-set={inh}", "--no-new-privs"]
        if caps:
            argv.append("--ambient-caps=+dac_read_search")
        p = harness.Process(argv + [harness.BIN, "serve", "--config.file", self.cfg,
                                    "--web.listen-address", "127.0.0.1:0"])
        self.ws.start(p)
        port = int(p.wait_line(r"msg=listening .*\bport=(\d+)").group(1))
        harness.wait_for(lambda: harness.http_request(port, "/-/ready").status == 200,
                         what="/-/ready")
        return p, port

    def tier_view(self, port):
        return [t for t in harness.http_request(port, "/api/v1/tiers").json() if t["name"] == "t"][0]

    def test_without_capability_tier_down_with_permission_reason(self):
        p, port = self.start(caps=False)
        t = self.tier_view(port)
        self.assertFalse(t["up"])
        self.assertEqual(t["down_reason"], "permission denied")
        self.assertEqual(harness.scrape(port).get("ckpt_tier_up", tier="t"), 0)
        self.assertIsNone(p.proc.poll(), "the daemon must keep running")

    def test_with_cap_dac_read_search_tier_up(self):
        _, port = self.start(caps=True)
        t = harness.wait_for(lambda: (lambda v: v if v["up"] else None)(self.tier_view(port)),
                             what="tier up")
        self.assertIsNone(t["down_reason"])


if __name__ == "__main__":
    harness.main()
