#!/usr/bin/python3
"""The estate end to end (docs/rules.md "Durability and copies"): node-local
staging (role staging, durable by default false) draining slowly to a shared
rapid tier. PyTorch DCP checkpoints written here with commit times in the
past: while the newest steps are only on staging, ckpt_steps_at_risk is the
step difference, the durable lag is the age of the oldest waiting commit,
CheckpointRecoveryPointNotDurable and CheckpointUnderCopied fire, and
/api/v1/jobs shows both recovery points; a copy of another size is flagged
and not counted; once the drain catches up everything clears. An instance
that watches no durable tier exports no durable figure at all (unknown, not 0).
"""

import os
import shutil
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

NOT_DURABLE = "CheckpointRecoveryPointNotDurable"
UNDER_COPIED = "CheckpointUnderCopied"


def save(root, job, step, committed_at, shard=4096):
    """A DCP save whose files all carry the mtime `committed_at`."""
    d = os.path.join(root, job, f"step-{step}")
    os.makedirs(d, exist_ok=True)
    for rank in range(2):
        with open(os.path.join(d, f"__{rank}_0.distcp"), "wb") as f:
            f.write(os.urandom(shard))
    with open(os.path.join(d, ".metadata"), "wb") as f:
        f.write(os.urandom(100))
    for name in os.listdir(d):
        os.utime(os.path.join(d, name), (committed_at, committed_at))
    return d


def drain(staging, rapid, job, step):
    """What a drain agent does: copy the step's directory, times kept."""
    src = os.path.join(staging, job, f"step-{step}")
    shutil.copytree(src, os.path.join(rapid, job, f"step-{step}"), copy_function=shutil.copy2)


class EstateEndToEnd(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)

    def scrape_when(self, ck, pred, what):
        found = {}

        def check():
            m = ck.scrape()
            found["last"] = m
            return pred(m)

        try:
            harness.wait_for(check, timeout=20, interval=0.05, what=what)
        except AssertionError:
            last = found.get("last")
            rows = [l for l in (last.text.splitlines() if last else [])
                    if l.startswith(("ckpt_steps", "ckpt_durable", "ckpt_recovery_point_durable",
                                     "ckpt_versions", "ckpt_copies", "ckpt_alert"))]
            raise AssertionError(f"timed out waiting for {what}; last scrape:\n" + "\n".join(rows))
        return found["last"]

    def test_node_local_staging_draining_slowly_puts_steps_at_risk(self):
        staging, rapid = self.ws.mkdir("staging"), self.ws.mkdir("rapid")
        now = time.time()
        # Step 100 drained long ago; 200 and 300 committed 90 and 80 minutes
        # ago, still only on node-local staging.
        save(staging, "llama", 100, now - 7200)
        drain(staging, rapid, "llama", 100)
        save(staging, "llama", 200, now - 5400)
        save(staging, "llama", 300, now - 4800)
        cfg = harness.config_yaml([
            harness.tier_yaml("staging", staging, role="staging", drains_to="rapid"),
            harness.tier_yaml("rapid", rapid, role="rapid"),
        ], scan_interval="300ms") + (
            "estate:\n"
            "  durable_within: 30m\n"
            "alerting:\n"
            "  rules:\n"
            f"    {NOT_DURABLE}: {{for: 0s}}\n"
            f"    {UNDER_COPIED}: {{for: 0s}}\n")
        ck = self.ws.ckptmon(cfg)
        ck.wait_ready()

        m = self.scrape_when(ck, lambda m: m.get("ckpt_steps_at_risk", training_job="llama") == 200,
                             "ckpt_steps_at_risk 200 (300 anywhere, 100 durable)")
        self.assertEqual(m.get("ckpt_restorable_step", training_job="llama"), 300)
        self.assertEqual(m.get("ckpt_durable_restorable_step", training_job="llama"), 100)
        self.assertAlmostEqual(m.get("ckpt_durable_restorable_timestamp_seconds",
                                     training_job="llama"), now - 7200, delta=1)
        # The oldest commit waiting for a durable copy is step 200's, 5400 s ago.
        lag = m.get("ckpt_recovery_point_durable_lag_seconds", training_job="llama")
        self.assertGreaterEqual(lag, 5400 - 1)
        self.assertLess(lag, 5400 + 60)
        self.assertEqual(m.get("ckpt_durable_within_seconds", training_job="llama"), 1800)
        self.assertEqual(m.get("ckpt_versions", training_job="llama"), 3)
        self.assertEqual(m.get("ckpt_versions_under_copied", training_job="llama"), 2)
        self.assertEqual(m.get("ckpt_copies_mismatched", training_job="llama"), 0)
        self.assertEqual(m.get("ckpt_alert", alertname=NOT_DURABLE, training_job="llama"), 1)
        self.assertEqual(m.get("ckpt_alert", alertname=UNDER_COPIED, training_job="llama"), 1)

        alerts = {a["labels"]["alertname"]: a for a in ck.get("/api/v1/alerts").json()["data"]["alerts"]}
        self.assertIn("A node loss now costs 200 steps", alerts[NOT_DURABLE]["annotations"]["description"])
        self.assertIn("(step 100 on tier rapid)", alerts[NOT_DURABLE]["annotations"]["description"])

        rows = [r for r in ck.get("/api/v1/jobs").json() if r["job"] == "llama"]
        self.assertEqual(sorted(r["tier"] for r in rows), ["rapid", "staging"])
        rp = rows[0]["recovery_point"]
        self.assertEqual(rp["any"]["step"], 300)
        self.assertEqual(rp["any"]["tier"], "staging")
        self.assertTrue(rp["durable"]["known"])
        self.assertEqual(rp["durable"]["point"]["step"], 100)
        self.assertEqual(rp["durable"]["point"]["tier"], "rapid")
        self.assertEqual(rp["durable"]["steps_at_risk"], 200)
        self.assertEqual(rp["durable"]["versions_under_copied"], 2)
        page = ck.get("/").text()
        self.assertIn("steps at risk", page)

        # 2. Step 200 drains, but its copy of shard 1 comes out short: flagged,
        # not a copy.
        drain(staging, rapid, "llama", 200)
        short = os.path.join(rapid, "llama", "step-200", "__1_0.distcp")
        st = os.stat(short)
        os.truncate(short, 1000)
        os.utime(short, (st.st_atime, st.st_mtime))
        m = self.scrape_when(ck, lambda m: m.get("ckpt_copies_mismatched", training_job="llama") == 1,
                             "the short copy of step 200 flagged")
        self.assertEqual(m.get("ckpt_versions_under_copied", training_job="llama"), 2)
        # Nor is it the durable recovery point: a commit marker over a short
        # shard restores nothing. Step 100 stays the durable one.
        self.assertEqual(m.get("ckpt_durable_restorable_step", training_job="llama"), 100)
        self.assertEqual(m.get("ckpt_steps_at_risk", training_job="llama"), 200)

        # 3. The drain catches up with good copies: nothing at risk, alerts resolve.
        shutil.rmtree(os.path.join(rapid, "llama", "step-200"))
        drain(staging, rapid, "llama", 200)
        drain(staging, rapid, "llama", 300)
        m = self.scrape_when(ck, lambda m: m.get("ckpt_steps_at_risk", training_job="llama") == 0
                             and m.get("ckpt_copies_mismatched", training_job="llama") == 0,
                             "everything durable")
        self.assertEqual(m.get("ckpt_recovery_point_durable_lag_seconds", training_job="llama"), 0)
        self.assertEqual(m.get("ckpt_versions_under_copied", training_job="llama"), 0)
        self.assertIsNone(m.get("ckpt_alert", alertname=NOT_DURABLE, training_job="llama"))
        self.assertIsNone(m.get("ckpt_alert", alertname=UNDER_COPIED, training_job="llama"))

    def test_no_durable_tier_watched_exports_no_durable_figure(self):
        staging = self.ws.mkdir("staging")
        save(staging, "llama", 100, time.time() - 7200)
        cfg = harness.config_yaml([harness.tier_yaml("staging", staging, role="staging")],
                                  scan_interval="300ms") + (
            "alerting:\n  rules:\n"
            f"    {NOT_DURABLE}: {{for: 0s}}\n")
        ck = self.ws.ckptmon(cfg)
        ck.wait_ready()
        m = self.scrape_when(ck, lambda m: m.get("ckpt_restorable_step", training_job="llama") == 100,
                             "the recovery point of llama")
        for name in ("ckpt_steps_at_risk", "ckpt_durable_restorable_step",
                     "ckpt_recovery_point_durable_lag_seconds", "ckpt_versions_under_copied"):
            self.assertNotIn(name, m.samples, name)
        self.assertIsNone(m.get("ckpt_alert", alertname=NOT_DURABLE))
        rows = ck.get("/api/v1/jobs").json()
        self.assertEqual(rows[0]["recovery_point"]["durable"], {"known": False})


if __name__ == "__main__":
    harness.main()
