#!/usr/bin/python3
"""Issue 30 item 3: the daemon's scheduled restore drills.

A daemon with `restore_drill: {every: 1h}` on a tier holding DCP
checkpoints (dcp_fixture.py) of three jobs:
- llama: drilled once. Its ckpt_restore_drill_* series give the step read,
  the bytes (the sum of the files' sizes, os.path.getsize), ok 1 within its
  recovery_time_objective, and the phases, whose total is their sum. It is
  not drilled again within the hour, also not after a restart on the same
  state directory (the stored drill is served as it was);
- gpt: 64 MiB of optimizer state against a recovery_time_objective of 1 ms
  (no storage reads 64 GB/s): the drill reads it all and is over the
  objective (ckpt_restore_drill_ok 0, logged), and
  CheckpointRestoreDrillFailed fires (`rate: 0`, no cap: with one, the
  drill would be refused up front as unable to finish in time). (A version that vanished between the
  walk and the drill is drill_collector_test's, on an injected clock.);
- mistral: an event log shows a save started and not committed: it is not
  drilled while saving (ckptmon_restore_drills_total{outcome=
  "deferred_saving"} grows, no series of its own); once the save commits it
  is drilled;
- falcon: saving all along (never committed). Each pass of the scheduler
  defers it, so deferred_saving counts the passes: the tests wait on it to
  know that passes happened in which nothing else was drilled.
Waits are on the daemon's own counters; nothing sleeps on wall time."""

import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dcp_fixture  # noqa: E402
import harness  # noqa: E402

STATE = {
    "model.w": ("tensor", "bfloat16", 64, 1024),
    "optim.state.w.exp_avg": ("tensor", "float32", 64, 1024),
}


class DrillSchedule(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        self.tier = self.ws.mkdir("rapid")
        self.events = self.ws.mkdir("events")
        self.state_dir = self.ws.mkdir("state")

    def config(self):
        return (harness.config_yaml([], state_dir=self.state_dir) +
                f"  - name: rapid\n    path: {json.dumps(self.tier)}\n    role: rapid\n"
                "    restore_drill: {every: 1h, rate: 0, ranks: auto, deadline: 5m}\n"
                "    storage_path: {recovery_time_objective: 1h,"
                " jobs: {gpt: {recovery_time_objective: 1ms}}}\n"
                f"manifests:\n  - {{glob: \"{self.events}/*.jsonl\", tier: rapid}}\n")

    def make(self, job, step):
        d = os.path.join(self.tier, job, f"step-{step}")
        dcp_fixture.write_dcp(d, STATE, ranks=2)
        return d

    def test_drills_on_schedule(self):
        llama = self.make("llama", 100)
        gpt = os.path.join(self.tier, "gpt", "step-50")
        dcp_fixture.write_dcp(gpt, {"optim.state.w.exp_avg": ("tensor", "float32", 16384, 1024)},
                              ranks=2)
        self.make("mistral", 10)
        log = os.path.join(self.events, "mistral.jsonl")
        now = time.time()
        harness.emit(log, "checkpoint_start", 20, now, job="mistral")
        self.make("falcon", 1)
        harness.emit(os.path.join(self.events, "falcon.jsonl"), "checkpoint_start", 2, now,
                     job="falcon")

        ck = self.ws.ckptmon(self.config())
        ck.wait_ready()

        def drilled():
            m = ck.scrape()
            done = (m.get("ckpt_restore_drill_ok", tier="rapid", training_job="llama") is not None
                    and m.get("ckpt_restore_drill_ok", tier="rapid", training_job="gpt") is not None
                    and (m.get("ckptmon_restore_drills_total", tier="rapid",
                               outcome="deferred_saving") or 0) >= 1)
            return m if done else None
        try:
            m = harness.wait_for(drilled, timeout=60, interval=0.2, what="llama and gpt drilled")
        except AssertionError:
            print(ck.output(), file=sys.stderr)
            raise
        tj = {"tier": "rapid", "training_job": "llama"}
        self.assertEqual(m.get("ckpt_restore_drill_ok", **tj), 1)
        self.assertEqual(m.get("ckpt_restore_drill_step", **tj), 100)
        size = sum(os.path.getsize(os.path.join(llama, f)) for f in os.listdir(llama))
        self.assertEqual(m.get("ckpt_restore_drill_bytes", **tj), size)
        phases = {p: m.get("ckpt_restore_drill_seconds", phase=p, **tj)
                  for p in ("locate", "metadata", "read", "total")}
        for p, v in phases.items():
            self.assertIsNotNone(v, p)
            self.assertGreaterEqual(v, 0, p)
        self.assertAlmostEqual(phases["total"],
                               phases["locate"] + phases["metadata"] + phases["read"], 6)
        self.assertGreater(m.get("ckpt_restore_drill_read_bytes_per_second", **tj), 0)
        when = m.get("ckpt_restore_drill_timestamp_seconds", **tj)
        self.assertGreaterEqual(when, now - 1)

        # The drill is now the restore figure: for the checkpoint it read,
        # bytes / its read rate + files x its seconds per file = its own time.
        # Waited for in the plan: a rules cycle from before the drill may have
        # estimated from the tier's read counters.
        def by_drill():
            plan = ck.get("/api/v1/plan").json()
            rows = [r for t in plan["tiers"] for r in t.get("restore", []) if r["job"] == "llama"]
            return rows if [r["read_source"] for r in rows] == ["drill"] else None
        harness.wait_for(by_drill, timeout=30, interval=0.2, what="the estimate from the drill")
        est = ck.scrape().get("ckpt_estimated_restore_seconds", **tj)
        self.assertAlmostEqual(est, phases["total"], delta=1e-6 * max(1.0, phases["total"]))

        gj = {"tier": "rapid", "training_job": "gpt"}
        self.assertEqual(m.get("ckpt_restore_drill_ok", **gj), 0)
        self.assertEqual(m.get("ckpt_restore_drill_step", **gj), 50)
        gsize = sum(os.path.getsize(os.path.join(gpt, f)) for f in os.listdir(gpt))
        self.assertGreaterEqual(gsize, 64 * 1024 * 1024)
        self.assertEqual(m.get("ckpt_restore_drill_bytes", **gj), gsize)
        self.assertGreater(m.get("ckpt_restore_drill_seconds", phase="total", **gj), 0.001)
        ck.wait_line(r"msg=\"restore drill failed\".*job=gpt.*"
                     r"result=\"over the recovery_time_objective\"")
        # Nothing of mistral while it saves.
        self.assertIsNone(m.get("ckpt_restore_drill_ok", tier="rapid", training_job="mistral"))

        def fired():
            a = ck.scrape()
            return a if a.get("ckpt_alert", alertname="CheckpointRestoreDrillFailed", tier="rapid",
                              training_job="gpt") == 1 else None
        harness.wait_for(fired, timeout=30, interval=0.2, what="CheckpointRestoreDrillFailed")

        # mistral commits: drilled on a later pass.
        harness.emit(log, "checkpoint_commit", 20, now + 1, "--files", "3", "--bytes", "1",
                     job="mistral")
        harness.wait_for(lambda: ck.scrape().get("ckpt_restore_drill_ok", tier="rapid",
                                                 training_job="mistral") == 1,
                         timeout=60, interval=0.2, what="mistral drilled after its commit")

        # Not again within the hour: four more passes (falcon deferred each
        # time), the same drills.
        def passes(ck, n):
            return harness.wait_for(
                lambda: (lambda x: x if (x.get("ckptmon_restore_drills_total", tier="rapid",
                                               outcome="deferred_saving") or 0) >= n else None)(
                    ck.scrape()),
                timeout=30, interval=0.2, what=f"{n} deferrals")
        deferred = ck.scrape().get("ckptmon_restore_drills_total", tier="rapid",
                                   outcome="deferred_saving")
        later = passes(ck, deferred + 4)
        self.assertEqual(later.get("ckptmon_restore_drills_total", tier="rapid", outcome="ok"), 2)
        self.assertEqual(later.get("ckptmon_restore_drills_total", tier="rapid", outcome="failed"),
                         1)
        self.assertEqual(later.get("ckpt_restore_drill_timestamp_seconds", **tj), when)
        self.assertIsNone(later.get("ckpt_restore_drill_ok", tier="rapid", training_job="falcon"))
        # The landing page's Restore section: gpt's drill over its objective.
        page = ck.get("/").text()
        self.assertIn("<h2>Restore</h2>", page)
        self.assertRegex(page, r'<td>rapid</td><td>gpt</td>.*<td class="down">over the objective</td>')
        self.assertRegex(page, r'<td>rapid</td><td>llama</td>.*<td>drill</td>.*<td>ok</td>')
        ck.stop()

        # A restart on the same state: the stored drills, and no new one.
        ck2 = self.ws.ckptmon(self.config(), name="ckptmon2.yml")
        ck2.wait_ready()
        back = passes(ck2, 3)
        self.assertEqual(back.get("ckpt_restore_drill_timestamp_seconds", **tj), when)
        self.assertEqual(back.get("ckpt_restore_drill_bytes", **tj), size)
        self.assertEqual(back.get("ckpt_restore_drill_ok", **gj), 0)
        for outcome in ("ok", "failed", "refused"):
            self.assertEqual(back.get("ckptmon_restore_drills_total", tier="rapid",
                                      outcome=outcome), 0, outcome)


        ck2.stop()

        # The report reads the drills back from the state database.
        r = harness.run([harness.BIN, "report", "--state-dir", self.state_dir, "--since", "1d",
                         "--min-history", "1ms", "--format", "json"], check=False, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        jobs = {j["job"]: j for t in json.loads(r.stdout)["tiers"] if t["tier"] == "rapid"
                for j in t["jobs"]}
        d = jobs["llama"]["restore_drills"]
        self.assertEqual((d["drills"], d["ok"], d["failed"]), (1, 1, 0))
        self.assertEqual(d["last"]["step"], 100)
        self.assertEqual(d["last"]["bytes"], size)
        self.assertAlmostEqual(d["last"]["seconds"], phases["total"], 6)
        g = jobs["gpt"]["restore_drills"]
        self.assertEqual((g["drills"], g["ok"], g["failed"]), (1, 0, 1))
        self.assertFalse(g["last"]["ok"])
        self.assertIsNone(g["last"]["failure"])  # read it all: over the objective, not a failure
        self.assertEqual(g["last"]["objective_seconds"], 0.001)
        self.assertIsNone(jobs.get("falcon", {}).get("restore_drills"))
        md = harness.run([harness.BIN, "report", "--state-dir", self.state_dir, "--since", "1d",
                          "--min-history", "1ms", "--format", "markdown"], check=False, timeout=60)
        self.assertEqual(md.returncode, 0, md.stderr)
        self.assertIn("## Restore drills", md.stdout)
        self.assertIn("over the objective", md.stdout)
        page = harness.run([harness.BIN, "report", "--state-dir", self.state_dir, "--since", "1d",
                            "--min-history", "1ms", "--format", "html"], check=False, timeout=60)
        self.assertEqual(page.returncode, 0, page.stderr)
        self.assertIn("<h2>Restore drills</h2>", page.stdout)


if __name__ == "__main__":
    harness.main()
