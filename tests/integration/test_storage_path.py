#!/usr/bin/python3
"""The storage path end to end in a running daemon: a checkpoint whose save
window (from its event log) exceeds `storage_path.checkpoint_window` is
judged slow, shown in /api/v1/checkpoints with its window figures (unknown
as null, not 0: the daemon reads an empty sysfs, so the tier has no I/O
counters, and the save window ends before any sample anyway, so the cause is
`unknown` and the evidence says what is missing),
counted once in ckpt_slow_checkpoints_total (its write rate is the
checkpoint's bytes over its window, write_measure `events`), and fires CheckpointWindowMissed
with the cause in its annotations; the next, on-time checkpoint resolves it.
The restore estimate of the newest restorable checkpoint at the configured
read_bandwidth is checked against numbers worked out here, and exceeds its
objective: CheckpointRecoveryTimeObjectiveAtRisk fires."""

import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

MiB = 1 << 20


class StoragePath(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        self.tier = self.ws.mkdir("rapid")
        self.logs = self.ws.mkdir("logs")
        self.log = os.path.join(self.logs, "events.jsonl")
        open(self.log, "w").close()
        tier = harness.tier_yaml("rapid", self.tier).rstrip().rstrip("}") + \
            ", storage_path: {checkpoint_window: 30s, read_bandwidth: 1MiB," \
            " recovery_time_objective: 1ms}}\n"
        # An empty sysfs: whatever file system the test machine has, the
        # tier's block device cannot be resolved, so no read counters feed
        # the restore estimate, which then comes from read_bandwidth (the
        # counters' best read rate would otherwise take precedence).
        empty_sys = self.ws.mkdir("empty-sysfs")
        cfg = harness.config_yaml([tier]).replace(
            "global:\n", f"global:\n  sysfs: {json.dumps(empty_sys)}\n", 1) + (
            "manifests:\n"
            f"  - {{glob: {json.dumps(os.path.join(self.logs, '*.jsonl'))}, tier: rapid}}\n"
            "integrity: {enabled: false}\n"
            "alerting:\n  rules:\n"
            "    CheckpointRecoveryTimeObjectiveAtRisk: {for: 0s}\n")
        self.d = self.ws.start(harness.Ckptmon(self.ws.write("ckptmon.yml", cfg)))
        self.d.wait_ready()

    def save(self, step, start, commit, shard_bytes):
        """A committed DCP checkpoint of job llama and its events."""
        d = os.path.join(self.tier, "llama", f"step-{step}")
        os.makedirs(d)
        for rank in range(2):
            with open(os.path.join(d, f"__{rank}_0.distcp"), "wb") as f:
                f.write(b"\0" * shard_bytes)
        with open(os.path.join(d, ".metadata"), "wb") as f:
            f.write(b"m" * 100)
        with open(self.log, "a") as f:
            for ev in ({"v": 1, "ts": start, "event": "checkpoint_start", "job": "llama",
                        "step": step},
                       {"v": 1, "ts": commit, "event": "checkpoint_commit", "job": "llama",
                        "step": step, "files": 3, "bytes": 2 * shard_bytes + 100}):
                f.write(json.dumps(ev) + "\n")
        return 2 * shard_bytes + 100

    def checkpoint(self, step):
        r = self.d.get("/api/v1/checkpoints?tier=rapid&job=llama")
        self.assertEqual(r.status, 200)
        return next((c for c in r.json() if c["step"] == step), None)

    def alert(self, name):
        for a in self.d.get("/api/v1/alerts").json()["data"]["alerts"]:
            if a["labels"]["alertname"] == name:
                return a
        return None

    def test_slow_checkpoint_cause_alert_and_restore_estimate(self):
        now = time.time()
        # A 90 s save against a 30 s window.
        size = self.save(100, now - 100, now - 10, MiB)
        c = harness.wait_for(
            lambda: (lambda c: c if c and c.get("storage_path") else None)(self.checkpoint(100)),
            what="step 100 judged")
        sp = c["storage_path"]
        self.assertEqual(sp["window_source"], "events")
        self.assertAlmostEqual(sp["window_start"], now - 100, delta=1e-3)
        self.assertAlmostEqual(sp["window_end"], now - 10, delta=1e-3)
        # Block device, NFS or none, depending on where the test runs; the
        # window predates every counter sample either way.
        self.assertIn(sp["io_source"], ("none", "block", "nfs", "lustre"))
        # The tier's counters do not cover the window: the write rate is the
        # checkpoint's own bytes over its event-log window, and says so.
        self.assertAlmostEqual(sp["write_bytes_per_second"], size / 90, delta=1e-3)
        self.assertEqual(sp["write_measure"], "events")
        # Unknown, not zero.
        self.assertIsNone(sp["device_write_bytes_per_second"])
        self.assertIsNone(sp["memory_full_pressure"])
        self.assertIsNone(sp["metadata_ops_per_second"])
        self.assertIsNone(sp["network_utilisation"])
        slow = sp["slow"]
        self.assertTrue(slow["slow"])
        self.assertAlmostEqual(slow["duration_seconds"], 90, delta=1e-3)
        self.assertEqual(slow["checkpoint_window_seconds"], 30)
        self.assertEqual(slow["missed"], "checkpoint_window")
        self.assertEqual(slow["cause"], "unknown")
        # No reference bandwidth: none configured, none observed.
        self.assertIn("missing a reference write bandwidth", slow["evidence"])

        m = harness.wait_for(
            lambda: (lambda m: m if m.get("ckpt_slow_checkpoints_total", tier="rapid",
                                          training_job="llama", cause="unknown") == 1 else None)(
                self.d.scrape()), what="the slow checkpoint counted")
        self.assertEqual(m.get("ckpt_last_checkpoint_slow_cause", tier="rapid",
                               training_job="llama", cause="unknown"), 1)
        self.assertEqual(m.get("ckpt_last_checkpoint_slow_cause", tier="rapid",
                               training_job="llama", cause="storage_bandwidth"), 0)
        # bytes / 1 MiB/s + 3 files x 3 operations / 1000 ops/s.
        want = size / MiB + 3 * 3 / 1000
        self.assertAlmostEqual(m.get("ckpt_estimated_restore_seconds", tier="rapid",
                                     training_job="llama"), want, delta=1e-9)
        self.assertEqual(m.get("ckpt_recovery_time_objective_seconds", tier="rapid",
                               training_job="llama"), 0.001)

        a = harness.wait_for(lambda: self.alert("CheckpointWindowMissed"),
                             what="CheckpointWindowMissed")
        self.assertEqual(a["state"], "firing")
        self.assertEqual(a["labels"]["tier"], "rapid")
        self.assertEqual(a["annotations"]["cause"], "unknown")
        self.assertIn("checkpoint_window limit of 30s", a["annotations"]["description"])
        rto = harness.wait_for(lambda: self.alert("CheckpointRecoveryTimeObjectiveAtRisk"),
                               what="CheckpointRecoveryTimeObjectiveAtRisk")
        self.assertEqual(rto["state"], "firing")
        self.assertIn("(configured)", rto["annotations"]["description"])

        # The next save takes 5 s: on time. The alert resolves, the state set
        # goes to all 0, and the counter keeps its one slow checkpoint.
        now = time.time()
        self.save(200, now - 6, now - 1, MiB)
        harness.wait_for(lambda: self.alert("CheckpointWindowMissed") is None,
                         what="CheckpointWindowMissed resolved")
        m = self.d.scrape()
        for cause in ("unknown", "storage_bandwidth", "network", "metadata", "straggler",
                      "node_pressure", "application"):
            self.assertEqual(m.get("ckpt_last_checkpoint_slow_cause", tier="rapid",
                                   training_job="llama", cause=cause), 0, cause)
        self.assertEqual(m.get("ckpt_slow_checkpoints_total", tier="rapid",
                               training_job="llama", cause="unknown"), 1)
        on_time = self.checkpoint(200)["storage_path"]["slow"]
        self.assertFalse(on_time["slow"])
        self.assertIsNone(on_time["cause"])


if __name__ == "__main__":
    harness.main()
