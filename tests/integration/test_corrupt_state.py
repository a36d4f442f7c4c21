#!/usr/bin/python3
"""A state database with garbage pages: at start ckptmon finds it corrupt,
moves it aside (ckptmon.db.corrupt-<timestamp>), starts a new one and
rebuilds it from a rescan and the event logs read from their start; it is
ready, writes succeed, and every event line is counted once, as before."""

import glob
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

LINES = 40


class CorruptState(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        self.rapid = self.ws.mkdir("rapid")
        self.state = self.ws.mkdir("state")
        self.log = self.ws.path("rapid", "job", "events.jsonl")
        os.makedirs(os.path.dirname(self.log))
        for step in range(1, LINES // 2 + 1):
            for event, extra in (("checkpoint_start", []),
                                 ("checkpoint_commit", ["--bytes", "1000", "--files", "2"])):
                subprocess.run([harness.BIN, "emit", "--log", self.log, event, "--job", "job",
                                "--step", str(step), "--tier", "rapid", *extra], check=True,
                               timeout=30, stdout=subprocess.DEVNULL)
        text = harness.config_yaml([harness.tier_yaml("rapid", self.rapid)],
                                   state_dir=self.state)
        text += ("manifests:\n"
                 f"  - {{glob: {json.dumps(os.path.join(self.rapid, '*', 'events*.jsonl'))}}}\n")
        self.cfg = self.ws.write("ckptmon.yml", text)

    def lines_ok(self, ck):
        return ck.scrape().get("ckptmon_manifest_lines_total", result="ok")

    def test_garbage_pages_are_moved_aside_and_the_state_rebuilt(self):
        first = self.ws.start(harness.Ckptmon(self.cfg))
        first.wait_ready()
        harness.wait_for(lambda: self.lines_ok(first) == LINES, what=f"{LINES} lines read")
        first.stop()
        db = os.path.join(self.state, "ckptmon.db")
        size = os.path.getsize(db)
        self.assertGreater(size, 8 * 4096)
        # Garbage over every page but the first (the header stays, so the
        # file still opens as a database; quick_check must find the rest).
        with open(db, "r+b") as f:
            for page in range(1, size // 4096):
                f.seek(page * 4096)
                f.write(bytes([0xA5]) * 4096)

        second = self.ws.start(harness.Ckptmon(self.cfg))
        second.wait_line(r"state database is corrupt; moved aside")
        second.wait_ready()
        m = harness.wait_for(
            lambda: (lambda m: m if m.get("ckptmon_manifest_lines_total", result="ok") == LINES
                     else None)(second.scrape()), what="the event log read again from its start")
        self.assertEqual(m.get("ckptmon_store_rebuilt_total"), 1.0)
        self.assertEqual(m.get("ckptmon_store_errors_total"), 0.0)
        self.assertEqual(m.get("ckpt_tier_up", tier="rapid"), 1.0)
        moved = [p for p in glob.glob(db + ".corrupt-*") if not p.endswith(("-wal", "-shm"))]
        self.assertEqual(len(moved), 1, moved)
        self.assertEqual(os.path.getsize(moved[0]), size)
        self.assertEqual(second.get("/-/ready").status, 200)
        second.stop()
        self.assertNotIn("state database write failed", second.output())

        # The new database is sound: the next start rebuilds nothing and
        # counts nothing twice.
        third = self.ws.start(harness.Ckptmon(self.cfg))
        third.wait_ready()
        m = third.scrape()
        self.assertEqual(m.get("ckptmon_store_rebuilt_total"), 0.0)
        self.assertEqual(m.get("ckptmon_manifest_lines_total", result="ok"), LINES)


if __name__ == "__main__":
    harness.main()
