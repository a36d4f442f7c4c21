#!/usr/bin/python3
"""Slow connections must not deny scrapes: 600 connections from 127.0.0.2
(the whole of 127/8 is loopback on Linux) each trickling one header byte per
second, reconnecting whenever the daemon closes them, while a scraper on
127.0.0.1 asks for /metrics and /-/healthy. At least 99% of the scrapes
succeed. Bounded in time (the attack lasts ATTACK_SECONDS) and in count
(CONNECTIONS sockets, MAX_RECONNECTS in all)."""

import errno
import os
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

CONNECTIONS = 600
ATTACK_SECONDS = 12.0
MAX_RECONNECTS = 20000
HEAD = b"GET /metrics HTTP/1.1\r\nHost: ckptmon\r\nX-Slow: " + b"a" * 4000


class SlowAttacker(threading.Thread):
    """One thread, non-blocking sockets bound to 127.0.0.2: each open socket
    sends the next byte of HEAD once a second; a closed one is replaced."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.stop = threading.Event()
        self.reconnects = 0
        self.peak_open = 0
        self.refused = 0

    def connect(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.bind(("127.0.0.2", 0))
        try:
            s.connect(("127.0.0.1", self.port))
        except BlockingIOError:
            pass
        return s

    def run(self):
        socks = {}
        for _ in range(CONNECTIONS):
            socks[self.connect()] = 0
        next_tick = time.monotonic()
        while not self.stop.is_set():
            now = time.monotonic()
            if now >= next_tick:
                next_tick = now + 1.0
                for s in list(socks):
                    pos = socks[s]
                    try:
                        s.send(HEAD[pos:pos + 1])
                        socks[s] = pos + 1 if pos + 1 < len(HEAD) else 0
                    except (BlockingIOError, InterruptedError):
                        pass
                    except OSError:
                        self.replace(socks, s)
            # Notice closes (a 503 or EOF) and replace those sockets.
            for s in list(socks):
                try:
                    data = s.recv(65536)
                    # An answer (the 503 of a cap) or EOF: the daemon is done with it.
                    if data.startswith(b"HTTP/1.1 503"):
                        self.refused += 1
                    self.replace(socks, s)
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError as e:
                    if e.errno not in (errno.ENOTCONN,):
                        self.replace(socks, s)
            self.peak_open = max(self.peak_open, len(socks))
            time.sleep(0.05)
        for s in socks:
            s.close()

    def replace(self, socks, s):
        s.close()
        del socks[s]
        if self.reconnects < MAX_RECONNECTS and not self.stop.is_set():
            self.reconnects += 1
            socks[self.connect()] = 0


class SlowClients(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        a = self.ws.mkdir("a")
        self.ck = self.ws.ckptmon(harness.config_yaml([harness.tier_yaml("a", a)]))
        self.ck.wait_ready()

    def test_600_slow_connections_from_one_address_leave_scrapes_from_another(self):
        attacker = SlowAttacker(self.ck.port)
        attacker.start()
        self.addCleanup(attacker.join, 30)
        self.addCleanup(attacker.stop.set)
        ok = 0
        failed = []
        deadline = time.monotonic() + ATTACK_SECONDS
        n = 0
        while time.monotonic() < deadline:
            path = "/metrics" if n % 2 == 0 else "/-/healthy"
            n += 1
            try:
                r = harness.http_request(self.ck.port, path, timeout=2.0)
                if r.status == 200:
                    ok += 1
                else:
                    failed.append(f"{path}: {r.status}")
            except OSError as e:
                failed.append(f"{path}: {e}")
            time.sleep(0.05)
        attacker.stop.set()
        attacker.join(30)
        rate = ok / n
        print(f"scrapes: {ok}/{n} succeeded ({100 * rate:.2f}%); attacker: "
              f"{attacker.reconnects} reconnects, {attacker.refused} refused with 503",
              file=sys.stderr)
        self.assertGreaterEqual(rate, 0.99, failed[:10])
        self.assertGreater(attacker.reconnects, 0)
        m = self.ck.scrape()
        self.assertGreater(m.get("ckptmon_http_connections_rejected_per_peer_total"), 0)


if __name__ == "__main__":
    harness.main()
