#!/usr/bin/python3
"""The Debian package as `make deb` builds it (cpack -G DEB from the build
directory of the binary under test), unpacked with dpkg-deb and checked with
the real tools:

- its files are in their FHS places, /etc/ckptmon/ckptmon.yml is a conffile,
  Depends comes from dpkg-shlibdeps (libc6 with a version), there are no
  maintainer scripts (DynamicUser= makes them unnecessary);
- the unpacked binary runs: `--version` names the project's version and
  `check-config` accepts the shipped example configuration;
- lintian reports no error and no warning.
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

BUILD_DIR = os.path.dirname(os.path.abspath(harness.BIN))


def project_version():
    with open(os.path.join(harness.SOURCE_DIR, "CMakeLists.txt")) as f:
        return re.search(r"project\(ckptmon VERSION (\S+)", f.read()).group(1)


class Deb(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.require_binary()
        harness.require_executable("/usr/bin/cpack", "cmake")
        harness.require_executable("/usr/bin/dpkg-deb", "dpkg")
        config = os.path.join(BUILD_DIR, "CPackConfig.cmake")
        if not os.path.exists(config):
            harness.skip_peer(f"no {config} (the build directory make test configures)")
        cls.tmp = tempfile.mkdtemp(prefix="ckptmon-deb-")
        r = subprocess.run(["cpack", "-G", "DEB", "--config", config, "-B", cls.tmp],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        if r.returncode != 0:
            raise AssertionError(r.stdout)
        debs = [f for f in os.listdir(cls.tmp) if f.endswith(".deb")]
        assert len(debs) == 1, debs
        cls.deb = os.path.join(cls.tmp, debs[0])
        cls.root = os.path.join(cls.tmp, "root")
        subprocess.run(["dpkg-deb", "-x", cls.deb, cls.root], check=True, timeout=60)
        cls.control = os.path.join(cls.tmp, "control")
        subprocess.run(["dpkg-deb", "-e", cls.deb, cls.control], check=True, timeout=60)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def field(self, name):
        out = subprocess.run(["dpkg-deb", "-f", self.deb, name], stdout=subprocess.PIPE,
                             text=True, check=True).stdout
        return out.strip()

    def test_files_in_fhs_places(self):
        for rel in ("usr/bin/ckptmon", "usr/lib/systemd/system/ckptmon.service",
                    "etc/ckptmon/ckptmon.yml", "usr/share/ckptmon/grafana/ckptmon-dashboard.json",
                    "usr/share/ckptmon/prometheus/ckptmon-alerts.yml",
                    "usr/share/ckptmon/prometheus/ckptmon-recording-rules.yml",
                    "usr/share/ckptmon/prometheus/prometheus.yml",
                    "usr/share/doc/ckptmon/copyright", "usr/share/doc/ckptmon/changelog.gz",
                    "usr/share/doc/ckptmon/operations.md",
                    "usr/share/doc/ckptmon/examples/systemd/cap-dac-read-search.conf",
                    "usr/share/man/man1/ckptmon.1.gz"):
            with self.subTest(path=rel):
                self.assertTrue(os.path.isfile(os.path.join(self.root, rel)), rel)
        with open(os.path.join(self.root, "usr/lib/systemd/system/ckptmon.service")) as f:
            self.assertIn("ExecStart=/usr/bin/ckptmon serve", f.read())

    def test_control(self):
        self.assertEqual(self.field("Package"), "ckptmon")
        self.assertEqual(self.field("Version"), project_version())
        depends = self.field("Depends")
        # dpkg-shlibdeps' output: versioned libc6 and the libraries linked.
        self.assertRegex(depends, r"\blibc6 \(>= [0-9.]+\)")
        for lib in ("libsqlite3-0", "libssl3", "libyaml-cpp0.7", "libsystemd0"):
            self.assertIn(lib, depends)
        with open(os.path.join(self.control, "conffiles")) as f:
            self.assertEqual(f.read().split(), ["/etc/ckptmon/ckptmon.yml"])
        for script in ("preinst", "postinst", "prerm", "postrm"):
            self.assertFalse(os.path.exists(os.path.join(self.control, script)), script)

    def test_unpacked_binary_runs(self):
        binary = os.path.join(self.root, "usr", "bin", "ckptmon")
        r = subprocess.run([binary, "--version"], stdout=subprocess.PIPE, text=True, timeout=30)
        self.assertEqual(r.returncode, 0)
        self.assertTrue(r.stdout.startswith(f"ckptmon {project_version()} "), r.stdout)
        example = os.path.join(self.root, "etc", "ckptmon", "ckptmon.yml")
        r = subprocess.run([binary, "check-config", example], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("OK (2 tiers)", r.stdout)

    def test_lintian_clean(self):
        harness.require_executable("/usr/bin/lintian", "lintian")
        r = subprocess.run(["lintian", "--fail-on", "error,warning", self.deb],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        tags = [l for l in r.stdout.splitlines() if re.match(r"^[EW]: ", l)]
        self.assertEqual(tags, [], r.stdout)
        self.assertEqual(r.returncode, 0, r.stdout)


if __name__ == "__main__":
    harness.main()
