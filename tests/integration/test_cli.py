#!/usr/bin/python3
"""The command line: check-config, serve, --version, the HTTP endpoints, demo."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def ckptmon(*args, timeout=60):
    return subprocess.run([harness.BIN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def position(text, line_no, needle):
    """'line:column' of `needle` on 1-based line `line_no` of `text`, found
    here rather than taken from ckptmon's output."""
    line = text.splitlines()[line_no - 1]
    return f"{line_no}:{line.index(needle) + 1}"


class CheckConfig(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)

    def test_good_file_is_ok(self):
        cfg = self.ws.write("good.yml", harness.config_yaml([
            harness.tier_yaml("staging", "/mnt/nvme/ckpt", role="staging", drains_to="rapid"),
            harness.tier_yaml("rapid", "/lustre/ckpt", role="rapid"),
        ]))
        r = ckptmon("check-config", cfg)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, f"{cfg}: OK (2 tiers)\n")
        self.assertEqual(r.stderr, "")

    def test_a_drain_across_residencies_is_a_warning_not_an_error(self):
        cfg = self.ws.write("drain.yml", harness.config_yaml([
            "  - name: staging\n    path: /mnt/nvme/ckpt\n    role: staging\n"
            "    drains_to: archive\n    residency: eu-west\n"
            "    namespaces: {'^team-a-': {residency: [eu-west]}}\n",
            "  - {name: archive, path: /s3/ckpt, role: capacity, residency: us-east}\n",
        ]))
        r = ckptmon("check-config", cfg)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, f"{cfg}: OK (2 tiers, 1 warning)\n")
        self.assertEqual(
            r.stderr,
            f"{cfg}: warning: tiers[0].drains_to: tier staging drains to archive (residency "
            "'us-east'), which namespace ^team-a- (tiers[0].namespaces) does not allow "
            "(allowed: eu-west): every drained copy of its jobs would be a residency finding\n")

    def test_the_documented_example_is_ok(self):
        cfg = self.ws.write("doc.yml", (
            "global: {state_dir: /var/lib/ckptmon, scan_interval: 15s}\n"
            "tiers:\n"
            "  - {name: staging, path: /mnt/nvme/ckpt, role: staging, drains_to: rapid}\n"
            "  - {name: rapid,   path: /lustre/ckpt,   role: rapid}\n"))
        r = ckptmon("check-config", cfg)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, f"{cfg}: OK (2 tiers)\n")

    def test_bad_files_print_exact_errors(self):
        roles = "staging, rapid, milestone, capacity, deletion"
        cases = {
            "unknown_role": (
                "tiers:\n  - {name: a, path: /a, role: fast}\n",
                lambda t: [f"{position(t, 2, 'fast')}: tiers[0].role: expected one of {roles}, "
                           "got \"fast\""]),
            "unknown_key": (
                "tiers:\n  - name: a\n    path: /a\n    role: rapid\n    drain_to: b\n",
                lambda t: [f"{position(t, 5, 'drain_to')}: tiers[0].drain_to: unknown key "
                           "(expected one of: name, path, role, durable, drains_to, partial_after, "
                           "jobs, shard, watch, walk_concurrency, walk_max_depth, residency, "
                           "encryption_required, namespaces, "
                           "layout, retention, sizing, bandwidth, drain, restore_drill, storage_path)"]),
            "bad_duration": (
                "global:\n  scan_interval: 15 s\ntiers:\n  - {name: a, path: /a, role: rapid}\n",
                lambda t: [f"{position(t, 2, '15 s')}: global.scan_interval: expected a duration "
                           "such as 500ms, 15s, 5m, 2h or 14d, got \"15 s\""]),
            "duplicate_tier": (
                "tiers:\n  - {name: a, path: /a, role: rapid}\n  - {name: a, path: /b, role: rapid}\n",
                lambda t: [f"{position(t, 3, 'a,')}: tiers[1].name: duplicate tier name \"a\" "
                           "(first defined at line 2)"]),
            "drains_to_nowhere": (
                "tiers:\n  - {name: s, path: /s, role: staging, drains_to: nowhere}\n",
                lambda t: [f"{position(t, 2, 'nowhere')}: tiers[0].drains_to: names no tier: "
                           "\"nowhere\" (tiers are: s)"]),
            "missing_path": (
                "tiers:\n  - name: a\n    role: rapid\n",
                lambda t: [f"{position(t, 2, 'name')}: tiers[0].path: required key is missing"]),
            "two_errors": (
                "global: {probe_timeout: soon}\ntiers:\n  - {name: a, path: rel/path, role: rapid}\n",
                lambda t: [f"{position(t, 1, 'soon')}: global.probe_timeout: expected a duration "
                           "such as 500ms, 15s, 5m, 2h or 14d, got \"soon\"",
                           f"{position(t, 3, 'rel/path')}: tiers[0].path: expected an absolute "
                           "path, got \"rel/path\""]),
        }
        for name, (text, expected) in cases.items():
            with self.subTest(name):
                cfg = self.ws.write(f"{name}.yml", text)
                r = ckptmon("check-config", cfg)
                self.assertEqual(r.returncode, 1)
                self.assertEqual(r.stdout, "")
                want = [f"{cfg}:{e}" for e in expected(text)]
                n = len(want)
                want.append(f"{cfg}: {n} error{'s' if n > 1 else ''}")
                self.assertEqual(r.stderr.splitlines(), want)

    def test_missing_file(self):
        cfg = self.ws.path("absent.yml")
        r = ckptmon("check-config", cfg)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.splitlines(),
                         [f"{cfg}: cannot open: No such file or directory", f"{cfg}: 1 error"])

    def test_no_file_argument_is_a_usage_error(self):
        r = ckptmon("check-config")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("file", (r.stdout + r.stderr).lower())


class Version(unittest.TestCase):
    def setUp(self):
        harness.require_binary()

    def test_version(self):
        r = ckptmon("--version")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(harness.SOURCE_DIR, "CMakeLists.txt")) as f:
            want = re.search(r"project\(ckptmon VERSION (\S+)", f.read()).group(1)
        m = re.fullmatch(r"ckptmon (\S+) \(revision (\S+)\)\n", r.stdout)
        self.assertIsNotNone(m, r.stdout)
        self.assertEqual(m.group(1), want)
        rev = m.group(2)
        in_git = (shutil.which("git") is not None
                  and os.path.exists(os.path.join(harness.SOURCE_DIR, ".git"))
                  and subprocess.run(["git", "-C", harness.SOURCE_DIR, "rev-parse", "HEAD"],
                                     capture_output=True).returncode == 0)
        if in_git:
            # Built from a git checkout git can read: the revision must be known.
            self.assertNotEqual(rev, "unknown")
        if rev != "unknown":
            self.assertRegex(rev, r"^[0-9a-f]{12}$")
            if in_git:
                g = subprocess.run(["git", "-C", harness.SOURCE_DIR, "cat-file", "-e",
                                    rev + "^{commit}"], capture_output=True)
                self.assertEqual(g.returncode, 0, f"{rev} is not a commit of this repository")

    def test_unknown_flag_is_an_error(self):
        r = ckptmon("serve", "--no-such-flag")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--no-such-flag", r.stdout + r.stderr)


class Serve(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)

    def test_bad_config_exits_non_zero_with_the_error(self):
        text = "tiers:\n  - {name: a, path: /a, role: fast}\n"
        cfg = self.ws.write("bad.yml", text)
        r = ckptmon("serve", "--config.file", cfg, "--web.listen-address", "127.0.0.1:0",
                    timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"{cfg}:{position(text, 2, 'fast')}: tiers[0].role: expected one of",
                      r.stderr)

    def test_port_in_use_exits_non_zero(self):
        ck = self.ws.ckptmon(harness.config_yaml([harness.tier_yaml("a", self.ws.mkdir("a"))]))
        # A state directory of its own: the first daemon holds the lock on its one.
        cfg = self.ws.write("second.yml", harness.config_yaml(
            [harness.tier_yaml("a", self.ws.mkdir("a"))]))
        r = ckptmon("serve", "--config.file", cfg, "--web.listen-address", f"127.0.0.1:{ck.port}",
                    timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"cannot listen on 127.0.0.1:{ck.port}", r.stderr)

    def test_endpoints(self):
        a = self.ws.mkdir("a")
        ck = self.ws.ckptmon(harness.config_yaml([
            harness.tier_yaml("fast", a, role="staging", drains_to="slow"),
            harness.tier_yaml("slow", self.ws.path("missing"), role="capacity"),
        ]))
        ck.wait_ready()
        self.assertEqual(ck.get("/-/ready").text(), "ckptmon is Ready.\n")
        r = ck.get("/-/healthy")
        self.assertEqual((r.status, r.text()), (200, "ckptmon is Healthy.\n"))

        r = ck.get("/")
        self.assertEqual(r.status, 200)
        self.assertTrue(r.headers["Content-Type"].startswith("text/html"))
        page = r.text()
        for needle in ("fast", "slow", a, "path does not exist", 'href="/metrics"',
                       'href="/api/v1/tiers"'):
            self.assertIn(needle, page)

        r = ck.get("/api/v1/tiers")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.headers["Content-Type"], "application/json")
        tiers = r.json()
        self.assertEqual([t["name"] for t in tiers], ["fast", "slow"])
        fast, slow = tiers
        self.assertEqual((fast["role"], fast["drains_to"], fast["path"], fast["up"]),
                         ("staging", "slow", a, True))
        self.assertIsNone(fast["down_reason"])
        st = os.statvfs(a)
        self.assertEqual(fast["size_bytes"], st.f_blocks * st.f_frsize)
        self.assertEqual(fast["files"], st.f_files)
        self.assertEqual((slow["up"], slow["down_reason"]), (False, "path does not exist"))
        self.assertNotIn("size_bytes", slow)

        self.assertEqual(ck.get("/nope").status, 404)
        self.assertEqual(ck.get("/metrics", method="POST").status, 405)
        head = ck.get("/", method="HEAD")
        self.assertEqual(head.status, 200)
        self.assertEqual(head.body, b"")
        self.assertEqual(int(head.headers["Content-Length"]), len(page.encode()))

    def test_json_logs(self):
        cfg = self.ws.write("ckptmon.yml", harness.config_yaml(
            [harness.tier_yaml("a", self.ws.mkdir("a"))]))
        p = self.ws.start(harness.Process([harness.BIN, "--log.format=json", "--log.level=debug",
                                           "serve", "--config.file", cfg,
                                           "--web.listen-address", "127.0.0.1:0"]))
        line = p.wait_line(r'"msg":"listening"').string
        rec = json.loads(line)
        self.assertEqual(rec["level"], "info")
        self.assertIsInstance(rec["port"], int)
        self.assertEqual(rec["config"], cfg)
        self.assertRegex(rec["ts"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        harness.wait_for(lambda: harness.http_request(rec["port"], "/-/ready").status == 200)
        p.proc.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(timeout=30), 0)
        for l in p.lines["stderr"]:
            json.loads(l)  # every line is one JSON object

    def test_sigint_stops_with_zero(self):
        ck = self.ws.ckptmon(harness.config_yaml([harness.tier_yaml("a", self.ws.mkdir("a"))]))
        ck.wait_ready()
        ck.proc.send_signal(signal.SIGINT)
        self.assertEqual(ck.wait(timeout=30), 0)
        ck.wait_line(r'msg="signal received" signal=SIGINT')


class Demo(unittest.TestCase):
    def setUp(self):
        harness.require_binary()

    def test_exit_after(self):
        r = ckptmon("demo", "--web.listen-address", "127.0.0.1:0", "--exit-after", "3s",
                    timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = re.search(r"http://localhost:(\d+)/", r.stdout)
        self.assertIsNotNone(m, r.stdout)
        d = re.search(r"Demo tiers under (\S+)", r.stdout)
        self.assertIsNotNone(d, r.stdout)
        self.assertFalse(os.path.exists(d.group(1)), "the demo left its tiers behind")

    def test_the_printed_url_serves(self):
        p = harness.Process([harness.BIN, "demo", "--web.listen-address", "127.0.0.1:0",
                             "--exit-after", "5m"])
        self.addCleanup(p.stop)
        port = int(p.wait_line(r"http://localhost:(\d+)/", stream="stdout").group(1))
        harness.wait_for(lambda: harness.http_request(port, "/-/ready").status == 200)
        m = harness.scrape(port)
        self.assertEqual(m.get("ckpt_tier_up", tier="staging"), 1.0)
        self.assertEqual(m.get("ckpt_tier_up", tier="rapid"), 1.0)
        self.assertEqual(harness.http_request(port, "/").status, 200)
        p.proc.send_signal(signal.SIGINT)
        self.assertEqual(p.wait(timeout=30), 0)

    def test_bad_duration_flags_name_the_flag_and_value(self):
        # One line each: command, flag, what it expects, the value given; exit 2.
        such_as = "expected a duration such as 500ms, 30s, 5m or 1h30m"
        at_least = "expected a duration of at least 10ms"
        cases = [
            (["serve", "--config.read-timeout", "5ms"], "serve", "--config.read-timeout",
             at_least, "5ms"),
            (["serve", "--web.read-header-timeout", "x"], "serve", "--web.read-header-timeout",
             at_least, "x"),
            (["serve", "--web.read-timeout", "9ms"], "serve", "--web.read-timeout", at_least,
             "9ms"),
            (["serve", "--config.watch-interval", "soon"], "serve", "--config.watch-interval",
             such_as, "soon"),
            (["scan", "--partial-after", "1 h", "/nonexistent"], "scan", "--partial-after",
             such_as, "1 h"),
            (["demo", "--web.listen-address", "127.0.0.1:0", "--exit-after", "soon"], "demo",
             "--exit-after", such_as, "soon"),
        ]
        for args, command, flag, expects, value in cases:
            with self.subTest(flag=flag):
                r = ckptmon(*args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(r.stderr, f'ckptmon {command}: {flag}: {expects}, got "{value}"\n')

    def test_bad_exit_after(self):
        r = ckptmon("demo", "--web.listen-address", "127.0.0.1:0", "--exit-after", "soon")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--exit-after", r.stderr)


if __name__ == "__main__":
    harness.main()
