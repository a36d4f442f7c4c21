#!/usr/bin/python3
"""Issue 28 item 6: the deletion queue, and removal verified by the walk.

Two tiers: `rapid` holding PyTorch DCP checkpoints, and `trash`, a
`role: deletion` tier holding one checkpoint. An event log (written with
`ckptmon emit`) says step 100 on rapid was cleaned up two minutes ago, and it
is still on disk: ckpt_cleanup_unverified_checkpoints{tier="rapid"} is 1,
ckpt_cleanup_unverified_total counts it once (not once per cycle), and
/api/v1/findings lists a cleanup_unverified finding (source estate) naming
its path.
Everything on trash is pending removal (ckpt_deletion_queue_bytes is its
bytes, counted by Python here), trash exports no cleanup series and the
sizing rule asks nothing of it. Then the cleanup really happens (the test
deletes step 100): the gauge goes away and ckpt_removed_checkpoints_total
and ckpt_removed_bytes_total{tier="rapid"} count it.
"""

import os
import json
import shutil
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from test_estate import save  # noqa: E402  (a DCP save with its mtimes)


def tree_bytes(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)


class DeletionQueue(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        self.rapid = self.ws.mkdir("rapid")
        self.trash = self.ws.mkdir("trash")
        now = time.time()
        self.old = save(self.rapid, "llama", 100, now - 600)
        save(self.rapid, "llama", 200, now - 300)
        self.trashed = save(self.trash, "llama", 50, now - 9000)
        log = self.ws.path("events", "llama.jsonl")
        os.makedirs(os.path.dirname(log))
        # The job's own story of step 100: saved, then cleaned up (a step
        # the log never saw saved has no record to attach a cleanup to).
        harness.emit(log, "checkpoint_start", 100, now - 610, "--tier", "rapid")
        harness.emit(log, "checkpoint_commit", 100, now - 600, "--tier", "rapid",
                     "--bytes", str(tree_bytes(self.old)), "--files", "3")
        harness.emit(log, "cleanup", 100, now - 120, "--tier", "rapid", "--path", self.old,
                     "--bytes", str(tree_bytes(self.old)))
        cfg = (harness.config_yaml([harness.tier_yaml("rapid", self.rapid),
                                    harness.tier_yaml("trash", self.trash, role="deletion")])
               + f"manifests:\n  - {{glob: \"{self.ws.path('events')}/*.jsonl\"}}\n")
        self.started = time.monotonic()
        self.ck = self.ws.ckptmon(cfg)
        self.ck.wait_ready()

    def scrape_when(self, pred, what):
        return harness.wait_for(lambda: (lambda m: m if pred(m) else None)(self.ck.scrape()),
                                what=what)

    def test_an_unverified_cleanup_then_a_verified_removal(self):
        m = self.scrape_when(
            lambda m: m.get("ckpt_cleanup_unverified_checkpoints", tier="rapid",
                            training_job="llama") == 1.0,
            "the cleanup of step 100 to be unverified")
        # The deletion tier: all of it pending, nothing asked of it, no cleanup series.
        self.assertEqual(m.get("ckpt_deletion_queue_bytes", tier="trash"),
                         float(tree_bytes(self.trashed)))
        self.assertEqual(m.get("ckpt_deletion_queue_checkpoints", tier="trash"), 1.0)
        # Counted from when the walk first saw it there (this daemon's start),
        # not from its 9000 s old mtime.
        age = m.get("ckpt_deletion_queue_oldest_age_seconds", tier="trash")
        self.assertGreaterEqual(age, 0)
        self.assertLessEqual(age, time.monotonic() - self.started + 1)
        self.assertEqual(m.get("ckpt_tier_required_capacity_bytes", tier="trash"), 0.0)
        self.assertIsNone(m.get("ckpt_cleanup_oldest_age_seconds", tier="trash"))
        self.assertIsNone(m.get("ckpt_deletion_queue_bytes", tier="rapid"))
        self.assertEqual(m.get("ckpt_removed_checkpoints_total", tier="rapid"), 0.0)
        # The counter: once, however many cycles it stays unverified.
        self.assertEqual(m.get("ckpt_cleanup_unverified_total", tier="rapid",
                               training_job="llama"), 1.0)
        cycles = m.get("ckptmon_rules_evaluations_total")
        m = self.scrape_when(
            lambda m: m.get("ckptmon_rules_evaluations_total") >= cycles + 2,
            "two more rules cycles")
        self.assertEqual(m.get("ckpt_cleanup_unverified_total", tier="rapid",
                               training_job="llama"), 1.0)
        self.assertEqual(m.get("ckpt_cleanup_unverified_checkpoints", tier="rapid",
                               training_job="llama"), 1.0)
        found = json.loads(self.ck.get("/api/v1/findings?kind=cleanup_unverified").body)
        self.assertEqual(len(found), 1, found)
        self.assertEqual(found[0]["tier"], "rapid")
        self.assertEqual(found[0]["source"], "estate")
        self.assertEqual(found[0]["path"], os.path.relpath(self.old, self.rapid))
        self.assertIn("a cleanup event said step 100 of job llama was removed from tier rapid",
                      found[0]["detail"])
        # Not a walk's finding: the access-findings gauge has no such kind.
        self.assertIsNone(m.get("ckpt_access_findings", tier="rapid", kind="cleanup_unverified"))

        size = tree_bytes(self.old)
        shutil.rmtree(self.old)
        m = self.scrape_when(
            lambda m: m.get("ckpt_removed_checkpoints_total", tier="rapid") == 1.0
            and m.get("ckpt_cleanup_unverified_checkpoints", tier="rapid",
                      training_job="llama") is None,
            "the removal to be verified")
        self.assertEqual(m.get("ckpt_removed_bytes_total", tier="rapid"), float(size))
        self.assertEqual(m.get("ckpt_removed_checkpoints_total", tier="trash"), 0.0)
        # The counter stays: it counted a removal that was late, not undone.
        self.assertEqual(m.get("ckpt_cleanup_unverified_total", tier="rapid",
                               training_job="llama"), 1.0)


if __name__ == "__main__":
    harness.main()
