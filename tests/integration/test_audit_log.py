#!/usr/bin/python3
"""Issue 26.5: the audit log.

A daemon behind basic auth (a bcrypt hash from Python's crypt module, as in
test_web_config) with `audit.log_file` and `http_access_log: true` watches a
tier holding one world-readable checkpoint. Its audit log must say, one JSON
line each:
- the finding opened at the first walk, and closed once `chmod o-r` fixed it;
- the configuration loaded at start, reloaded by SIGHUP and by
  POST /-/reload, the last one with the client's address and its user;
- every HTTP request with peer, user, method, path, status and bytes, the
  path without its query string, and never a password, even a wrong one.
An audit log on a full disk (/dev/full) is counted in the metrics while the
daemon keeps serving.
"""

import base64
import json
import os
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import test_web_config  # noqa: E402  (bcrypt_hash, its reference vector)


def basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


class AuditLog(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        self.tier = self.ws.mkdir("tier")
        self.ck = os.path.join(self.tier, "llama", "save_100")
        os.makedirs(self.ck)
        for name in ("rank0.bin", "COMMITTED"):
            with open(os.path.join(self.ck, name), "wb") as f:
                f.write(b"x" * 100)
        for d, _, files in os.walk(os.path.join(self.tier, "llama")):
            os.chmod(d, 0o755)
            for f in files:
                os.chmod(os.path.join(d, f), 0o644)
        self.password = "correct horse battery staple"
        self.hash = test_web_config.bcrypt_hash(self.password, 5)
        if self.hash is None:
            self.password = test_web_config.VECTOR_PASSWORD
            self.hash = test_web_config.VECTOR_HASH
        self.web = self.ws.write("web.yml", f"basic_auth_users:\n  alice: '{self.hash}'\n")
        self.log = self.ws.path("audit", "audit.log")
        os.makedirs(os.path.dirname(self.log))

    def config(self, log_file):
        return (harness.config_yaml([
            "  - name: a\n"
            f"    path: {json.dumps(self.tier)}\n"
            "    role: rapid\n"
            "    layout: {shard_glob: 'rank*.bin', marker: COMMITTED, "
            "step_regex: '^save_(\\d+)$'}\n"], scan_interval="200ms",
            state_dir=self.ws.mkdir("state"))
                + f"audit:\n  log_file: {log_file}\n  http_access_log: true\n")

    def start(self, log_file):
        cfg = self.ws.write("ckptmon.yml", self.config(log_file))
        p = self.ws.start(harness.Ckptmon(cfg, serve_args=("--web.config.file", self.web)))
        self.proc = p
        harness.wait_for(lambda: self.get("/-/ready").status == 200, what="/-/ready")
        return p

    def get(self, path, method="GET", auth=None):
        auth = basic("alice", self.password) if auth is None else auth
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", self.proc.port, timeout=10)
        try:
            conn.request(method, path, headers={"Authorization": auth})
            r = conn.getresponse()
            return harness.Reply(r.status, dict(r.getheaders()), r.read(), 0)
        finally:
            conn.close()

    def records(self):
        try:
            with open(self.log, encoding="utf-8") as f:
                return [json.loads(line) for line in f]
        except FileNotFoundError:
            return []

    def wait_record(self, pred, what):
        return harness.wait_for(lambda: next((r for r in self.records() if pred(r)), None),
                                what=what)

    def test_findings_reloads_and_requests_are_recorded(self):
        self.start(self.log)
        start = self.wait_record(lambda r: r["event"] == "config_load", "the start's config_load")
        self.assertEqual(start["source"], "start")
        self.assertEqual(start["outcome"], "applied")
        opened = self.wait_record(
            lambda r: r["event"] == "finding_opened" and r["kind"] == "world_readable",
            "the world-readable finding opened")
        self.assertEqual(opened["tier"], "a")
        self.assertEqual(opened["path"], "llama/save_100")
        self.assertTrue(opened["first_walk"])

        # A request whose query carries a token: the path is kept, the query never.
        self.assertEqual(self.get("/metrics?token=s3cr3t-query").status, 200)
        access = self.wait_record(
            lambda r: r["event"] == "http_request" and r["path"] == "/metrics",
            "the scrape's access record")
        self.assertEqual(access["user"], "alice")
        self.assertEqual(access["method"], "GET")
        self.assertEqual(access["status"], 200)
        self.assertGreater(access["bytes"], 1000)
        self.assertTrue(access["peer"].startswith("127.0.0.1:"), access["peer"])
        self.assertGreaterEqual(access["duration_seconds"], 0)
        # A wrong password: 401, no user, and the password nowhere.
        self.assertEqual(self.get("/api/v1/tiers", auth=basic("alice", "wrong-pass-xyz")).status, 401)
        denied = self.wait_record(
            lambda r: r["event"] == "http_request" and r["status"] == 401, "the 401's record")
        self.assertEqual(denied["user"], "")
        self.assertEqual(denied["path"], "/api/v1/tiers")

        # Reloads: by HTTP (with who asked) and by SIGHUP.
        self.assertEqual(self.get("/-/reload", method="POST").status, 200)
        by_http = self.wait_record(
            lambda r: r["event"] == "config_load" and r["source"] == "http", "the HTTP reload")
        self.assertEqual(by_http["user"], "alice")
        self.assertTrue(by_http["peer"].startswith("127.0.0.1:"))
        self.assertEqual(by_http["outcome"], "applied")
        self.assertEqual(by_http["generation"], 2)
        self.proc.proc.send_signal(signal.SIGHUP)
        by_signal = self.wait_record(
            lambda r: r["event"] == "config_load" and r["source"] == "sighup", "the SIGHUP reload")
        self.assertNotIn("user", by_signal)

        # Fixed: the finding closes at the next walk.
        for d, _, files in os.walk(os.path.join(self.tier, "llama")):
            os.chmod(d, 0o750)
            for f in files:
                os.chmod(os.path.join(d, f), 0o640)
        closed = self.wait_record(lambda r: r["event"] == "finding_closed",
                                  "the finding closed after chmod o-r")
        self.assertEqual(closed["path"], "llama/save_100")
        self.assertEqual(closed["kind"], "world_readable")

        with open(self.log, encoding="utf-8") as f:
            text = f.read()
        for secret in ("s3cr3t-query", "wrong-pass-xyz", self.password, self.hash):
            self.assertNotIn(secret, text)
        # Owner-only: the log names peers and users.
        self.assertEqual(os.stat(self.log).st_mode & 0o077, 0)
        # The writer counts a batch once its fsync returned, after its lines
        # are in the file: the counter catches up with what the file held
        # (each scrape adds an access record of its own, not among these).
        in_file = len(self.records())
        m = harness.wait_for(
            lambda: (lambda m: m if m.get("ckptmon_audit_log_records_total", outcome="written")
                     >= in_file else None)(harness.Metrics(self.get("/metrics").text())),
            what=f"ckptmon_audit_log_records_total{{outcome=written}} to reach {in_file}")
        self.assertEqual(m.get("ckptmon_audit_log_enabled"), 1.0)
        self.assertEqual(m.get("ckptmon_audit_log_write_errors_total"), 0.0)

    def test_a_full_disk_is_counted_and_the_daemon_keeps_serving(self):
        self.start("/dev/full")
        m = harness.wait_for(
            lambda: (lambda m: m if m.get("ckptmon_audit_log_write_errors_total") > 0 else None)(
                harness.Metrics(self.get("/metrics").text())),
            what="the audit log's write errors to be counted")
        self.assertGreater(m.get("ckptmon_audit_log_records_total", outcome="dropped_write_error"), 0)
        self.assertEqual(m.get("ckptmon_audit_log_records_total", outcome="written"), 0.0)
        self.assertEqual(self.get("/-/ready").status, 200)
        self.assertEqual(self.get("/-/reload", method="POST").status, 200)
        # Said once in the daemon's own log, not once per record.
        self.assertEqual(self.proc.output().count("audit log: write failed"), 1)


if __name__ == "__main__":
    harness.main()
