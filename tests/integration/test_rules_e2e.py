#!/usr/bin/python3
"""The rules end to end: two directory tiers (staging drains to rapid) with
PyTorch DCP checkpoints that this test writes to staging and copies to rapid
with a lag. The drain backlog equals, to the byte, what the test has not
copied yet (partially copied files included); CheckpointDrainBacklogGrowing
fires (ckpt_alert, /api/v1/alerts, a real Alertmanager) when a new checkpoint
lands before the previous one drained, and resolves once it has; promtool
accepts a scrape taken while the alert fires; a restart loads the history.
"""

import json
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

ALERTMANAGER = "/usr/bin/prometheus-alertmanager"
PROMTOOL = "/usr/bin/promtool"
ALERT = "CheckpointDrainBacklogGrowing"


class Tiers:
    """What the test wrote to each tier, the oracle for the backlog: the
    content of every file, by tier and path relative to the tier root."""

    def __init__(self, ws):
        self.root = {"staging": ws.mkdir("staging"), "rapid": ws.mkdir("rapid")}
        self.files = {"staging": {}, "rapid": {}}

    def write(self, tier, rel, data):
        p = os.path.join(self.root[tier], rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        self.files[tier][rel] = data

    def save(self, job, step, shard_sizes):
        """A DCP save on staging: every rank's shard, then .metadata (the commit)."""
        d = f"{job}/step-{step}"
        for rank, size in enumerate(shard_sizes):
            self.write("staging", f"{d}/__{rank}_0.distcp", os.urandom(size))
        self.write("staging", f"{d}/.metadata", os.urandom(1234))

    def copy(self, rel, upto=None):
        """Copies one staging file to rapid, its first `upto` bytes only when given."""
        data = self.files["staging"][rel]
        self.write("rapid", rel, data if upto is None else data[:upto])

    def committed(self, job):
        """Checkpoint directories of `job` on staging that have their .metadata."""
        return sorted({os.path.dirname(rel) for rel in self.files["staging"]
                       if rel.startswith(job + "/") and rel.endswith("/.metadata")})

    def backlog(self, job):
        """Bytes of the committed staging checkpoints of `job` not on rapid:
        a missing file counts whole, a shorter one its missing tail."""
        total = 0
        for d in self.committed(job):
            for rel, data in self.files["staging"].items():
                if os.path.dirname(rel) == d:
                    there = len(self.files["rapid"].get(rel, b""))
                    total += max(0, len(data) - there)
        return total


class Alertmanager(harness.Process):
    """Debian's prometheus-alertmanager on 127.0.0.1, no gossip, storage in the workspace."""

    def __init__(self, ws):
        cfg = ws.write("am/am.yml", "route:\n  receiver: blackhole\nreceivers:\n  - name: blackhole\n")
        self.port = harness.free_port()
        super().__init__([ALERTMANAGER, f"--config.file={cfg}",
                          f"--storage.path={ws.mkdir('am', 'data')}",
                          f"--web.listen-address=127.0.0.1:{self.port}",
                          "--cluster.listen-address=", "--log.level=warn"])

    def alerts(self):
        """Alerts Alertmanager lists (active ones), or None while it does not answer."""
        try:
            r = harness.http_request(self.port, "/api/v2/alerts", timeout=2)
        except OSError:
            return None
        return r.json() if r.status == 200 else None

    def ours(self):
        alerts = self.alerts() or []
        return [a for a in alerts if a["labels"].get("alertname") == ALERT
                and a["labels"].get("tier") == "staging"]


class RulesEndToEnd(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        self.am = None
        if os.access(ALERTMANAGER, os.X_OK):
            self.am = self.ws.start(Alertmanager(self.ws))
        else:
            print(f"\n{ALERTMANAGER} is missing (Debian package prometheus-alertmanager): "
                  "the Alertmanager part is not checked")

    def config(self, tiers):
        alerting = ["alerting:"]
        if self.am:
            alerting += [f"  alertmanager_url: http://127.0.0.1:{self.am.port}",
                         "  resend_interval: 1s", "  timeout: 2s"]
        alerting += ["  rules:", f"    {ALERT}: {{for: 0s}}"]
        return ("global:\n"
                f"  state_dir: {self.ws.path('state')}\n"
                "  scan_interval: 300ms\n"
                "  probe_timeout: 2s\n"
                "tiers:\n"
                + harness.tier_yaml("staging", tiers.root["staging"], role="staging",
                                    drains_to="rapid")
                + harness.tier_yaml("rapid", tiers.root["rapid"], role="rapid")
                + "\n".join(alerting) + "\n")

    def scrape_when(self, ck, pred, what):
        """The first scrape for which pred(metrics) holds. A scrape renders one
        evaluation cycle, so the figures and the alerts in it belong together."""
        found = {}

        def check():
            m = ck.scrape()
            if pred(m):
                found["m"] = m
                return True
            found["last"] = m
            return False

        try:
            harness.wait_for(check, timeout=20, interval=0.05, what=what)
        except AssertionError:
            last = found.get("last")
            rows = [l for l in (last.text.splitlines() if last else [])
                    if l.startswith(("ckpt_drain_backlog_bytes", "ckpt_alert"))]
            raise AssertionError(f"timed out waiting for {what}; last scrape:\n" + "\n".join(rows))
        return found["m"]

    def backlog_is(self, ck, tiers, job, what):
        want = tiers.backlog(job)
        return self.scrape_when(
            ck, lambda m: m.get("ckpt_drain_backlog_bytes", tier="staging", to_tier="rapid",
                                training_job=job) == want,
            f"ckpt_drain_backlog_bytes{{training_job={job}}} == {want} ({what})")

    @staticmethod
    def firing(m, job):
        return m.get("ckpt_alert", alertname=ALERT, tier="staging", training_job=job)

    def api_alerts(self, ck):
        r = ck.get("/api/v1/alerts")
        self.assertEqual(r.status, 200)
        doc = r.json()
        self.assertEqual(doc["status"], "success")
        return [a for a in doc["data"]["alerts"] if a["labels"]["alertname"] == ALERT]

    def test_backlog_to_the_byte_and_the_growing_queue_alert(self):
        started = time.monotonic()
        if self.am:
            harness.wait_for(lambda: self.am.alerts() is not None, timeout=30,
                             what="Alertmanager to answer")
        tiers = Tiers(self.ws)
        # bert is fully drained from the start: its figures stay at zero.
        tiers.save("bert", 10, [4096, 4096])
        for rel in list(tiers.files["staging"]):
            if rel.startswith("bert/"):
                tiers.copy(rel)

        ck = self.ws.ckptmon(self.config(tiers))
        ck.wait_ready()

        # 1. llama's step-100 lands on staging; nothing of it is copied yet.
        tiers.save("llama", 100, [300_000, 200_000])
        m = self.backlog_is(ck, tiers, "llama", "step-100 committed, nothing copied")
        self.assertEqual(tiers.backlog("llama"), 300_000 + 200_000 + 1234)
        self.assertEqual(m.get("ckpt_drain_backlog_bytes", tier="staging", to_tier="rapid",
                               training_job="bert"), 0)
        self.assertEqual(m.get("ckpt_drain_pending_checkpoints", tier="staging", training_job="llama"), 1)
        self.assertEqual(m.get("ckpt_drain_overlapping_checkpoints", tier="staging",
                               training_job="llama"), 0)
        self.assertIsNone(self.firing(m, "llama"))

        # 2. The copier is half-way: shard 0 whole, 50,000 bytes of shard 1, no .metadata.
        tiers.copy("llama/step-100/__0_0.distcp")
        tiers.copy("llama/step-100/__1_0.distcp", upto=50_000)
        m = self.backlog_is(ck, tiers, "llama", "step-100 partly copied")
        self.assertEqual(tiers.backlog("llama"), 150_000 + 1234)
        self.assertIsNone(self.firing(m, "llama"))

        # 3. step-200 commits before step-100 drained: the queue grows.
        tiers.save("llama", 200, [250_000, 250_000])
        m = self.backlog_is(ck, tiers, "llama", "step-200 committed before step-100 drained")
        self.assertEqual(tiers.backlog("llama"), 150_000 + 1234 + 500_000 + 1234)
        self.assertEqual(m.get("ckpt_drain_overlapping_checkpoints", tier="staging",
                               training_job="llama"), 1)
        self.assertEqual(m.get("ckpt_drain_pending_checkpoints", tier="staging", training_job="llama"), 2)
        self.assertEqual(self.firing(m, "llama"), 1.0)  # for: 0s fires in the same cycle
        self.assertIsNone(self.firing(m, "bert"))
        self.assertEqual(m.labels_of("ckpt_alert", alertname=ALERT),
                         [{"alertname": ALERT, "severity": "warning", "tier": "staging",
                           "training_job": "llama"}])

        api = harness.wait_for(lambda: [a for a in self.api_alerts(ck) if a["state"] == "firing"],
                               what=f"{ALERT} firing in /api/v1/alerts")
        self.assertEqual(len(api), 1)
        self.assertEqual(api[0]["labels"], {"alertname": ALERT, "severity": "warning",
                                            "tier": "staging", "training_job": "llama"})
        self.assertIn("llama", api[0]["annotations"]["summary"])
        self.assertEqual(api[0]["annotations"]["runbook_url"],
                         "docs/runbook.md#" + ALERT.lower())
        page = ck.get("/").text()
        self.assertIn(ALERT, page)

        # promtool on a scrape taken while the alert fires.
        if os.access(PROMTOOL, os.X_OK):
            body = ck.get("/metrics").body
            self.assertIsNotNone(self.firing(harness.Metrics(body.decode()), "llama"))
            p = subprocess.run([PROMTOOL, "check", "metrics"], input=body,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            self.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode())
            self.assertEqual((p.stdout + p.stderr).decode().strip(), "")
        else:
            print(f"\n{PROMTOOL} is missing (Debian package prometheus): scrape not checked")

        if self.am:
            seen = harness.wait_for(self.am.ours, timeout=20,
                                    what=f"{ALERT} to arrive at Alertmanager")
            self.assertEqual(len(seen), 1)
            self.assertEqual(seen[0]["labels"], {"alertname": ALERT, "severity": "warning",
                                                 "tier": "staging", "training_job": "llama"})
            self.assertEqual(seen[0]["status"]["state"], "active")
            self.assertEqual(seen[0]["generatorURL"],
                             f"http://127.0.0.1:{ck.port}/api/v1/alerts")
            self.assertEqual(seen[0]["annotations"]["runbook_url"],
                             "docs/runbook.md#" + ALERT.lower())

        # 4. step-100 finishes draining: one pending checkpoint, no overlap, resolved.
        tiers.copy("llama/step-100/__1_0.distcp")
        tiers.copy("llama/step-100/.metadata")
        m = self.backlog_is(ck, tiers, "llama", "step-100 drained, step-200 waiting")
        self.assertEqual(tiers.backlog("llama"), 500_000 + 1234)
        self.assertEqual(m.get("ckpt_drain_overlapping_checkpoints", tier="staging",
                               training_job="llama"), 0)
        self.assertIsNone(self.firing(m, "llama"))
        harness.wait_for(lambda: not [a for a in self.api_alerts(ck) if a["state"] == "firing"],
                         what=f"{ALERT} gone from /api/v1/alerts")
        if self.am:
            harness.wait_for(lambda: self.am.alerts() is not None and not self.am.ours(),
                             timeout=20, what=f"{ALERT} resolved at Alertmanager")
            self.assertIsNotNone(ck.scrape().get("ckptmon_alertmanager_last_success_timestamp_seconds"))
            self.assertEqual(ck.scrape().get("ckptmon_alertmanager_post_errors_total"), 0)

        # 5. Everything copied: the backlog is empty.
        for rel in list(tiers.files["staging"]):
            if rel.startswith("llama/step-200/"):
                tiers.copy(rel)
        m = self.backlog_is(ck, tiers, "llama", "everything copied")
        self.assertEqual(tiers.backlog("llama"), 0)
        self.assertEqual(m.get("ckpt_drain_pending_checkpoints", tier="staging", training_job="llama"), 0)
        self.assertEqual(m.get("ckpt_drain_time_to_empty_seconds", tier="staging",
                               training_job="llama"), 0)

        # 6. A restart loads the tier samples and the drain observations back.
        ck.stop()
        ck2 = self.ws.ckptmon(self.config(tiers), name="ckptmon2.yml")
        loaded = ck2.wait_line(r'msg="rules history loaded" tier_samples=(\d+) drains=(\d+)')
        self.assertGreaterEqual(int(loaded.group(1)), 2)
        self.assertEqual(int(loaded.group(2)), 2)  # bert and llama
        ck2.wait_ready()
        m = self.backlog_is(ck2, tiers, "llama", "after the restart")
        self.assertIsNone(self.firing(m, "llama"))
        print(f"\nrules end to end: {time.monotonic() - started:.1f}s")


if __name__ == "__main__":
    harness.main()
