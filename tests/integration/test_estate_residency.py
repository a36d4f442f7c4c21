#!/usr/bin/python3
"""Issue 28 items 5 and 7: residency follows every copy, and the lifecycle
rule (docs/rules.md "Residency of copies", "Lifecycle").

Two tiers: `eu` (residency eu-west), whose namespace rule says team-a may
live in eu-west only, draining to `us` (residency us-east), whose
configuration says nothing of team-a, with `drain.move_after: 1h`. PyTorch
DCP checkpoints written here with commit times in the past, and a drain
done as a drain agent does it (copytree, times kept):

- team-a's step 100, drained to us, is a copy outside its residency:
  ckpt_residency_violations{tier="us"} is 1, CheckpointOutsideAllowedResidency
  fires, /api/v1/findings?kind=residency names the copy (source estate) and
  the audit log records the finding opened; eu's own copy is allowed (0).
  /api/v1/versions lists the job's versions newest first with their copies.
- step 200, committed 2 h ago and never drained, is overdue by the
  lifecycle rule; step 300, committed 10 minutes ago, is not yet:
  ckpt_lifecycle_overdue_versions{tier="eu"} is 1.
- Removing the us copy (as a purge would) clears the violation and the
  alert, closes the finding in the audit log, and leaves step 100 overdue
  (it has no copy on us any more).
"""

import json
import os
import shutil
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from test_estate import drain, save  # noqa: E402

RESIDENCY = "CheckpointOutsideAllowedResidency"


class ResidencyAndLifecycle(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        self.eu, self.us = self.ws.mkdir("eu"), self.ws.mkdir("us")
        now = time.time()
        save(self.eu, "team-a-llama", 100, now - 3 * 3600)
        drain(self.eu, self.us, "team-a-llama", 100)
        save(self.eu, "team-a-llama", 200, now - 2 * 3600)
        save(self.eu, "team-a-llama", 300, now - 600)
        self.audit = self.ws.path("audit", "audit.log")
        os.makedirs(os.path.dirname(self.audit))
        cfg = harness.config_yaml([
            f"  - name: eu\n    path: {json.dumps(self.eu)}\n    role: rapid\n"
            "    drains_to: us\n    residency: eu-west\n"
            "    namespaces:\n      '^team-a-': {residency: [eu-west]}\n"
            "    retention: {keep_last: 10}\n"
            "    drain: {move_after: 1h}\n",
            f"  - name: us\n    path: {json.dumps(self.us)}\n    role: capacity\n"
            "    residency: us-east\n",
        ], scan_interval="300ms") + (
            f"audit:\n  log_file: {self.audit}\n"
            "alerting:\n  rules:\n"
            f"    {RESIDENCY}: {{for: 0s}}\n")
        self.ck = self.ws.ckptmon(cfg)
        self.ck.wait_ready()

    def scrape_when(self, pred, what):
        return harness.wait_for(lambda: (lambda m: m if pred(m) else None)(self.ck.scrape()),
                                what=what)

    def audit_records(self, event):
        with open(self.audit) as f:
            return [r for r in map(json.loads, f) if r["event"] == event]

    def alert_states(self):
        return {(a["labels"].get("tier"), a["labels"].get("training_job")): a["state"]
                for a in json.loads(self.ck.get("/api/v1/alerts").body)["data"]["alerts"]
                if a["labels"]["alertname"] == RESIDENCY}

    def test_a_drain_across_residencies_then_its_removal(self):
        m = self.scrape_when(
            lambda m: m.get("ckpt_residency_violations", tier="us",
                            training_job="team-a-llama") == 1,
            "the us copy of step 100 to violate team-a's residency")
        self.assertEqual(m.get("ckpt_residency_violations", tier="eu",
                               training_job="team-a-llama"), 0)
        self.assertEqual(m.get("ckpt_lifecycle_overdue_versions", tier="eu",
                               training_job="team-a-llama"), 1)  # step 200
        self.assertEqual(m.get("ckpt_lifecycle_move_after_seconds", tier="eu"), 3600)
        # us has no lifecycle rule: no series.
        self.assertIsNone(m.get("ckpt_lifecycle_overdue_versions", tier="us",
                                training_job="team-a-llama"))

        # /api/v1/versions: newest first, each with its copies on every tier.
        versions = json.loads(self.ck.get("/api/v1/versions?job=team-a-llama").body)
        self.assertEqual([v["step"] for v in versions], [300, 200, 100])
        v100 = versions[2]
        self.assertEqual(sorted(c["tier"] for c in v100["copies"]), ["eu", "us"])
        self.assertEqual(v100["durable_copies"], 2)
        self.assertEqual(v100["copies_required"], 1)
        for c in v100["copies"]:
            self.assertEqual(c["state"], "committed")
            self.assertEqual(c["bytes"], 2 * 4096 + 100)  # two shards and .metadata, as saved
            self.assertTrue(c["restorable"])
            self.assertIsNone(c["verified"])  # no verifier runs here: unknown, not passed
        self.assertEqual([c["tier"] for c in versions[0]["copies"]], ["eu"])
        self.assertEqual(self.ck.get("/api/v1/versions").status, 400)

        findings = json.loads(self.ck.get("/api/v1/findings?kind=residency").body)
        self.assertEqual(len(findings), 1, findings)
        f = findings[0]
        self.assertEqual((f["tier"], f["job"], f["path"], f["source"]),
                         ("us", "team-a-llama", "team-a-llama/step-100", "estate"))
        self.assertIn("residency 'us-east'", f["detail"])
        self.assertIn("allow: eu-west", f["detail"])
        harness.wait_for(lambda: self.alert_states().get(("us", "team-a-llama")) == "firing",
                         what=f"{RESIDENCY} firing for us/team-a-llama")
        harness.wait_for(lambda: any(r["tier"] == "us" and r["kind"] == "residency"
                                     for r in self.audit_records("finding_opened")),
                         what="the audit log to record the residency finding opened")

        # The purge removes the copy outside the residency.
        shutil.rmtree(os.path.join(self.us, "team-a-llama", "step-100"))
        m = self.scrape_when(
            lambda m: m.get("ckpt_residency_violations", tier="us",
                            training_job="team-a-llama") in (0, None),
            "the violation to clear once the us copy is gone")
        # Step 100 now has no copy on us: overdue too.
        self.assertEqual(m.get("ckpt_lifecycle_overdue_versions", tier="eu",
                               training_job="team-a-llama"), 2)
        self.assertEqual(json.loads(self.ck.get("/api/v1/findings?kind=residency").body), [])
        harness.wait_for(lambda: any(r["tier"] == "us" and r["kind"] == "residency"
                                     for r in self.audit_records("finding_closed")),
                         what="the audit log to record the residency finding closed")
        harness.wait_for(lambda: ("us", "team-a-llama") not in self.alert_states(),
                         what=f"{RESIDENCY} to resolve")


if __name__ == "__main__":
    unittest.main()
