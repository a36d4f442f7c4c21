#!/usr/bin/python3
"""Configuration files that are not regular files: a FIFO (which an open(2)
would wait on forever, as on a hung mount) and a directory. They are refused
with a message that says what they are, the running configuration stays, and
/metrics and /-/healthy keep answering while a reload is refused."""

import os
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


class HostileConfig(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        self.a = self.ws.mkdir("a")

    def test_a_fifo_at_reload_is_refused_and_the_daemon_keeps_answering(self):
        ck = self.ws.ckptmon(harness.config_yaml([harness.tier_yaml("a", self.a)]))
        cfg = self.ws.path("ckptmon.yml")
        ck.wait_ready()
        os.unlink(cfg)
        os.mkfifo(cfg)
        # SIGHUP first: on the loop thread an open(2) of the FIFO would never return.
        ck.proc.send_signal(signal.SIGHUP)
        ck.wait_line(r"config reload rejected.*is a FIFO, not a regular file")
        self.assertEqual(ck.get("/-/healthy", timeout=5).status, 200)
        m = ck.scrape()
        self.assertEqual(m.get("ckptmon_config_last_reload_successful"), 0.0)
        self.assertEqual(m.get("ckpt_tier_up", tier="a"), 1.0)
        r = ck.get("/-/reload", method="POST", timeout=5)
        self.assertEqual(r.status, 500)
        self.assertEqual(r.text(), f"{cfg}: is a FIFO, not a regular file; a configuration "
                                   "must be a regular file\n")
        self.assertEqual(ck.get("/-/healthy", timeout=5).status, 200)
        self.assertEqual(ck.get("/-/ready", timeout=5).status, 200)

    def test_a_directory_as_config_file_at_start_says_so(self):
        d = self.ws.mkdir("conf.d")
        r = subprocess.run([harness.BIN, "serve", "--config.file", d, "--web.listen-address",
                            "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"{d}: is a directory, not a regular file", r.stderr)
        self.assertNotIn("required key is missing", r.stderr)

    def test_a_fifo_as_web_config_file_at_start_says_so(self):
        cfg = self.ws.write("ckptmon.yml", harness.config_yaml([harness.tier_yaml("a", self.a)]))
        web = self.ws.path("web.yml")
        os.mkfifo(web)
        r = subprocess.run([harness.BIN, "serve", "--config.file", cfg, "--web.config.file", web,
                            "--web.listen-address", "127.0.0.1:0"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"{web}: is a FIFO, not a regular file", r.stderr)


if __name__ == "__main__":
    harness.main()
