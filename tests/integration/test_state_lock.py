#!/usr/bin/python3
"""Two daemons on one state directory: the second `serve` exits non-zero
naming the PID of the first, which keeps serving; `scan` needs no lock; once
the first is gone (kill -9 included) the directory can be taken again."""

import os
import re
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


class StateLock(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        self.a = self.ws.mkdir("a")
        self.state = self.ws.mkdir("state")
        self.cfg = self.ws.write("ckptmon.yml", harness.config_yaml(
            [harness.tier_yaml("a", self.a)], state_dir=self.state))

    def serve(self):
        return subprocess.run([harness.BIN, "serve", "--config.file", self.cfg,
                               "--web.listen-address", "127.0.0.1:0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=60)

    def test_a_second_serve_on_the_same_state_dir_is_refused(self):
        first = self.ws.start(harness.Ckptmon(self.cfg))
        first.wait_ready()
        with open(os.path.join(self.state, "ckptmon.lock")) as f:
            self.assertEqual(f.read(), f"{first.proc.pid}\n")

        second = self.serve()
        self.assertNotEqual(second.returncode, 0)
        self.assertIn(f"state_dir {self.state} is in use by another ckptmon "
                      f"(PID {first.proc.pid}", second.stderr)
        self.assertEqual(first.get("/-/healthy").status, 200)
        self.assertEqual(first.scrape().get("ckpt_tier_up", tier="a"), 1.0)

        # A read-only tool takes no lock.
        scan = subprocess.run([harness.BIN, "scan", "--config.file", self.cfg, "a"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=60)
        self.assertEqual(scan.returncode, 0, scan.stderr)

        # kill -9 leaves the file behind but not the lock.
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(timeout=10)
        third = self.ws.start(harness.Ckptmon(self.cfg))
        third.wait_ready()
        with open(os.path.join(self.state, "ckptmon.lock")) as f:
            self.assertEqual(f.read(), f"{third.proc.pid}\n")


if __name__ == "__main__":
    harness.main()
