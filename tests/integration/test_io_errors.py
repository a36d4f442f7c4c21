#!/usr/bin/python3
"""Issue 27.1 on a real file system: EIO and ESTALE on the stat of a job
directory are "unreadable, not deleted".

The tier is a FUSE passthrough (faultfs.py) of a real tree whose getattr of
/jobA fails with EIO, then ESTALE, on demand: what a flaky NFS or Lustre
server does (the kernel caches nothing, so each walk's stat reaches it).
Before the fix each flap recorded jobA's checkpoints deleted, dropped its
recovery point and counted its skew histogram again (3 -> 6 -> 9 ...). Here,
through two flaps of each errno: the checkpoints stay with the same counts
and bytes, the skew histogram does not count them again, the recovery point
stays (flagged by ckpt_restorable_unreadable), ckpt_job_unreadable says 1
then 0, the checkpoints API says why, and the log names the errno once per
transition.
"""

import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def make_checkpoint(job_dir, step, size):
    ck = os.path.join(job_dir, f"save_{step}")
    os.makedirs(ck)
    for rank in range(2):
        with open(os.path.join(ck, f"rank{rank}.bin"), "wb") as f:
            f.write(b"x" * size)
    with open(os.path.join(ck, "COMMITTED"), "wb"):
        pass


class IoErrorsOnAJobDirectory(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        harness.require_fuse()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        source = self.ws.mkdir("source")
        for step, size in ((100, 1000), (200, 2000), (300, 3000)):
            make_checkpoint(os.path.join(source, "jobA"), step, size)
        make_checkpoint(os.path.join(source, "jobB"), 100, 500)
        self.control = self.ws.path("fault")
        self.mnt = self.ws.mkdir("tier")
        harness.mount_fuse(self.ws, "faultfs.py", [source, self.mnt, self.control], self.mnt)
        config = harness.config_yaml([
            "  - name: rapid\n"
            f"    path: {json.dumps(self.mnt)}\n"
            "    role: rapid\n"
            "    jobs: {depth: 1}\n"
            "    layout: {shard_glob: 'rank*.bin', marker: COMMITTED, "
            "step_regex: '^save_(\\d+)$'}\n",
        ], scan_interval="200ms")
        self.ck = self.ws.ckptmon(config)
        self.ws.on_close(self.clear)  # runs first: the daemon stops on a sane tree
        self.ck.wait_ready()

    def fault(self, name):
        with open(self.control, "w") as f:
            f.write(f"{name} /jobA\n")

    def clear(self):
        if os.path.exists(self.control):
            os.unlink(self.control)

    def wait_unreadable(self, want):
        def ok():
            m = self.ck.scrape()
            return m if (m.get("ckpt_job_unreadable", tier="rapid", training_job="jobA") == want
                         and m.get("ckpt_restorable_unreadable", training_job="jobA") == want) \
                else None
        return harness.wait_for(ok, timeout=20, what=f"jobA unreadable == {want}")

    @staticmethod
    def figures(m):
        return {
            "committed": m.get("ckpt_checkpoints", tier="rapid", training_job="jobA",
                               state="committed"),
            "stored": m.get("ckpt_job_stored_bytes", tier="rapid", training_job="jobA"),
            "latest_step": m.get("ckpt_latest_committed_step", tier="rapid", training_job="jobA"),
            "skew_count": m.get("ckpt_completion_skew_seconds_count", tier="rapid",
                                training_job="jobA"),
            "restorable_step": m.get("ckpt_restorable_step", training_job="jobA"),
            "jobB_stored": m.get("ckpt_job_stored_bytes", tier="rapid", training_job="jobB"),
        }

    def test_eio_and_estale_on_a_job_directory_keep_its_catalog(self):
        harness.wait_for(lambda: self.ck.scrape().get("ckpt_restorable_step",
                                                      training_job="jobA") == 300,
                         what="jobA's recovery point")
        before = self.figures(self.wait_unreadable(0))
        # By hand from the tree above: 3 committed checkpoints of 2 x 1000,
        # 2 x 2000 and 2 x 3000 bytes, each counted once; jobB 2 x 500.
        self.assertEqual(before, {"committed": 3, "stored": 12000, "latest_step": 300,
                                  "skew_count": 3, "restorable_step": 300,
                                  "jobB_stored": 1000})
        # The fault is real: a stat through the mount fails with it.
        self.fault("EIO")
        with self.assertRaises(OSError) as err:
            os.stat(os.path.join(self.mnt, "jobA"))
        self.assertEqual(err.exception.errno, 5)
        self.clear()

        for name, text in (("EIO", "Input/output error"), ("ESTALE", "Stale file handle")) * 2:
            self.fault(name)
            m = self.wait_unreadable(1)
            self.assertEqual(self.figures(m), before, f"{name}: while failing")
            cks = self.ck.get("/api/v1/checkpoints?tier=rapid&job=jobA").json()
            self.assertEqual(sorted((c["step"], c["state"], c["unreadable"]) for c in cks),
                             [(100, "committed", True), (200, "committed", True),
                              (300, "committed", True)], name)
            self.clear()
            m = self.wait_unreadable(0)
            self.assertEqual(self.figures(m), before, f"{name}: answering again")

        # Once per transition, each naming the errno, not once per walk.
        lines = [l for l in self.ck.output().splitlines()
                 if re.search(r'msg="directory unreadable', l) and "jobA" in l]
        self.assertEqual(len(lines), 4, self.ck.output())
        self.assertEqual(sum("Input/output error" in l for l in lines), 2, lines)
        self.assertEqual(sum("Stale file handle" in l for l in lines), 2, lines)
        back = [l for l in self.ck.output().splitlines()
                if 'msg="directory no longer unreadable"' in l and "jobA" in l]
        self.assertEqual(len(back), 4, self.ck.output())


if __name__ == "__main__":
    harness.main()
