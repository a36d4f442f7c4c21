"""Under systemd (Type=notify): READY once listening, WATCHDOG pings from the
event loop at half of WatchdogSec, RELOADING/READY around a reload and
STOPPING on SIGTERM. The test plays systemd's part: it owns the notification
socket and sets NOTIFY_SOCKET and WATCHDOG_USEC as systemd would.
"""

import os
import signal
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


class Notify(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        self.sock_path = self.ws.path("notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.sock_path)
        self.addCleanup(self.sock.close)
        self.sock.settimeout(0.1)
        self.received = []

    def messages_until(self, want, timeout=10.0):
        """Collects datagrams until one contains `want`; returns all so far."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                data = self.sock.recv(4096).decode()
            except socket.timeout:
                continue
            self.received.append(data)
            if want in data:
                return self.received
        self.fail(f"no {want!r} from the daemon; got {self.received}")

    def test_ready_watchdog_reload_stopping(self):
        tier = self.ws.mkdir("tier")
        cfg = self.ws.write("c.yml", harness.config_yaml(
            [harness.tier_yaml("t", tier)], state_dir=self.ws.path("state")))
        env = dict(os.environ, NOTIFY_SOCKET=self.sock_path, WATCHDOG_USEC="200000")
        proc = self.ws.start(harness.Process(
            [harness.BIN, "serve", "--config.file", cfg, "--web.listen-address", "127.0.0.1:0"],
            env=env))
        self.messages_until("READY=1")
        # Several pings: they come from the loop's timer, every 100 ms here.
        before = len([m for m in self.received if "WATCHDOG=1" in m])
        for _ in range(3):
            self.messages_until("WATCHDOG=1")
        self.assertGreaterEqual(len([m for m in self.received if "WATCHDOG=1" in m]), before + 3)

        proc.proc.send_signal(signal.SIGHUP)
        self.messages_until("RELOADING=1")
        self.messages_until("READY=1")

        proc.proc.send_signal(signal.SIGTERM)
        self.messages_until("STOPPING=1")
        self.assertEqual(proc.wait(timeout=10), 0)

    def test_no_watchdog_pings_without_watchdog_usec(self):
        tier = self.ws.mkdir("tier")
        cfg = self.ws.write("c.yml", harness.config_yaml(
            [harness.tier_yaml("t", tier)], state_dir=self.ws.path("state")))
        env = dict(os.environ, NOTIFY_SOCKET=self.sock_path)
        env.pop("WATCHDOG_USEC", None)
        proc = self.ws.start(harness.Process(
            [harness.BIN, "serve", "--config.file", cfg, "--web.listen-address", "127.0.0.1:0"],
            env=env))
        self.messages_until("READY=1")
        proc.proc.send_signal(signal.SIGTERM)
        self.messages_until("STOPPING=1")
        self.assertEqual(proc.wait(timeout=10), 0)
        self.assertFalse(any("WATCHDOG=1" in m for m in self.received), self.received)


if __name__ == "__main__":
    harness.main()
