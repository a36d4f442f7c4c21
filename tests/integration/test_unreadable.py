#!/usr/bin/python3
"""Issue 9.2: unreadable is not deleted.

ckptmon runs as an unprivileged user (`setpriv --reuid=nobody`: root would
read through any mode) on a root-owned tier. A job directory that was read
before is made unreadable (chmod 000) and readable again three times. Each
time the job's checkpoints stay in the catalog with the same counts, the
"once per checkpoint" skew histogram does not count them again, the recovery
point stays (flagged stale by ckpt_restorable_unreadable), ckpt_job_unreadable
says 1 then 0, and the log names the path once per transition. A checkpoint
directory unreadable from the start is reported (ckpt_job_unreadable, an
`unreadable` access finding), not silently omitted.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

SETPRIV = "/usr/bin/setpriv"
NOBODY = ["--reuid=nobody", "--regid=nogroup", "--clear-groups"]


class Unprivileged(harness.Process):
    """`ckptmon serve` as nobody on 127.0.0.1:0."""

    def __init__(self, binary, config_file):
        super().__init__([SETPRIV, *NOBODY, binary, "serve", "--config.file", config_file,
                          "--web.listen-address", "127.0.0.1:0"])
        try:
            self.port = int(self.wait_line(r"msg=listening .*\bport=(\d+)").group(1))
        except BaseException:
            self.stop()
            raise

    def get(self, path):
        return harness.http_request(self.port, path)

    def scrape(self):
        return harness.scrape(self.port)


def make_checkpoint(job_dir, step, size):
    ck = os.path.join(job_dir, f"save_{step}")
    os.makedirs(ck)
    with open(os.path.join(ck, "rank0.bin"), "wb") as f:
        f.write(b"x" * size)
    with open(os.path.join(ck, "rank1.bin"), "wb") as f:
        f.write(b"y" * size)
    with open(os.path.join(ck, "COMMITTED"), "wb"):
        pass
    return ck


class UnreadableIsNotDeleted(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        harness.require_root("running ckptmon as another user")
        harness.require_executable(SETPRIV, "util-linux")
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        os.chmod(self.ws.dir, 0o755)
        binary = harness.BIN
        if subprocess.run([SETPRIV, *NOBODY, "test", "-x", binary]).returncode != 0:
            binary = shutil.copy(harness.BIN, self.ws.path("ckptmon"))
            os.chmod(binary, 0o755)
        self.tier = self.ws.mkdir("tier")
        self.job_a = os.path.join(self.tier, "jobA")
        make_checkpoint(self.job_a, 100, 1000)
        make_checkpoint(self.job_a, 200, 2000)
        self.job_b = os.path.join(self.tier, "jobB")
        make_checkpoint(self.job_b, 100, 1000)
        self.hidden = make_checkpoint(self.job_b, 200, 2000)
        os.chmod(self.hidden, 0)  # unreadable from the start
        # Restore modes before the workspace is removed.
        self.addCleanup(lambda: os.chmod(self.job_a, 0o755))
        self.addCleanup(lambda: os.chmod(self.hidden, 0o755))
        state = self.ws.mkdir("state")
        os.chown(state, 65534, 65534)
        cfg = self.ws.write("ckptmon.yml", (
            "global:\n"
            f"  state_dir: {state}\n"
            "  scan_interval: 200ms\n"
            "tiers:\n"
            "  - name: rapid\n"
            f"    path: {json.dumps(self.tier)}\n"
            "    role: rapid\n"
            "    jobs: {depth: 1}\n"
            "    layout: {shard_glob: 'rank*.bin', marker: COMMITTED, "
            "step_regex: '^save_(\\d+)$'}\n"))
        os.chmod(cfg, 0o644)
        self.ck = self.ws.start(Unprivileged(binary, cfg))
        harness.wait_for(lambda: self.ck.get("/-/ready").status == 200, what="/-/ready")

    def wait_unreadable(self, job, want):
        """The scan (ckpt_job_unreadable) and the rules after it
        (ckpt_restorable_unreadable) both say `want`."""
        def ok():
            m = self.ck.scrape()
            return m if (m.get("ckpt_job_unreadable", tier="rapid", training_job=job) == want and
                         m.get("ckpt_restorable_unreadable", training_job=job) == want) else None
        return harness.wait_for(ok, timeout=20, what=f"{job} unreadable == {want}")

    def figures(self, m, job):
        """What must not change while the job is unreadable."""
        return {
            "committed": m.get("ckpt_checkpoints", tier="rapid", training_job=job, state="committed"),
            "partial": m.get("ckpt_checkpoints", tier="rapid", training_job=job, state="partial"),
            "stored": m.get("ckpt_job_stored_bytes", tier="rapid", training_job=job),
            "latest_step": m.get("ckpt_latest_committed_step", tier="rapid", training_job=job),
            "skew_count": m.get("ckpt_completion_skew_seconds_count", tier="rapid", training_job=job),
            "restorable_ts": m.get("ckpt_restorable_timestamp_seconds", training_job=job),
            "restorable_step": m.get("ckpt_restorable_step", training_job=job),
        }

    def log_lines(self, pattern):
        return [l for l in self.ck.output().splitlines() if re.search(pattern, l)]

    def test_flapping_access_keeps_the_catalog(self):
        harness.wait_for(lambda: self.ck.scrape().get("ckpt_restorable_step", training_job="jobA") == 200,
                         what="jobA's recovery point")
        m = self.wait_unreadable("jobA", 0)
        before = self.figures(m, "jobA")
        # Computed by hand from the tree built above: two committed
        # checkpoints of 2 x 1000 and 2 x 2000 bytes, each counted once.
        self.assertEqual(before["committed"], 2)
        self.assertEqual(before["partial"], 0)
        self.assertEqual(before["stored"], 6000)
        self.assertEqual(before["skew_count"], 2)
        self.assertEqual(before["restorable_step"], 200)
        self.assertEqual(m.get("ckpt_job_unreadable", tier="rapid", training_job="jobA"), 0)
        self.assertEqual(m.get("ckpt_restorable_unreadable", training_job="jobA"), 0)

        # Unreadable from the start: reported, and the newest readable step
        # is what it is, flagged.
        self.assertEqual(m.get("ckpt_job_unreadable", tier="rapid", training_job="jobB"), 1)
        self.assertEqual(m.get("ckpt_latest_committed_step", tier="rapid", training_job="jobB"), 100)
        self.assertEqual(m.get("ckpt_access_findings", tier="rapid", kind="unreadable"), 1)
        findings = self.ck.get("/api/v1/findings?kind=unreadable").json()
        self.assertEqual([(f["job"], f["path"]) for f in findings], [("jobB", "jobB/save_200")])
        self.assertIn("Permission denied", findings[0]["detail"])

        for flap in range(3):
            os.chmod(self.job_a, 0)
            m = self.wait_unreadable("jobA", 1)
            self.assertEqual(self.figures(m, "jobA"), before, f"flap {flap}: while unreadable")
            self.assertEqual(m.get("ckpt_restorable_unreadable", training_job="jobA"), 1)
            cks = self.ck.get("/api/v1/checkpoints?tier=rapid&job=jobA").json()
            self.assertEqual(sorted((c["step"], c["state"], c["unreadable"]) for c in cks),
                             [(100, "committed", True), (200, "committed", True)])
            self.assertEqual(m.get("ckpt_access_findings", tier="rapid", kind="unreadable"), 2)

            os.chmod(self.job_a, 0o755)
            m = self.wait_unreadable("jobA", 0)
            self.assertEqual(self.figures(m, "jobA"), before, f"flap {flap}: readable again")
            self.assertEqual(m.get("ckpt_restorable_unreadable", training_job="jobA"), 0)
            cks = self.ck.get("/api/v1/checkpoints?tier=rapid&job=jobA").json()
            self.assertEqual([c["unreadable"] for c in cks], [False, False])

        # Once per transition, not once per walk (a walk every 200 ms).
        path_a = re.escape(self.job_a)
        self.assertEqual(len(self.log_lines(r"msg=\"directory unreadable.*path=" + path_a + r"\b")),
                         3, self.ck.output())
        self.assertEqual(len(self.log_lines(r"msg=\"directory no longer unreadable\".*path=" +
                                            path_a + r"\b")), 3, self.ck.output())
        self.assertEqual(len(self.log_lines(r"msg=\"directory unreadable.*path=" +
                                            re.escape(self.hidden))), 1, self.ck.output())


if __name__ == "__main__":
    harness.main()
