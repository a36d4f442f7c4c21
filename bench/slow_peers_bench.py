#!/usr/bin/env python3
"""Slow peers from many addresses (issue 27, item 10).

Opens 30 connections from each of 20 loopback addresses (127.0.0.2 ...
127.0.0.21), 600 in all against the global cap of 512, each trickling the head
of its first request one byte at a time and never finishing it. Meanwhile a
scraper from a fresh address (127.0.0.100) asks for /metrics 104 times. Prints
how many scrapes got 200 and the daemon's counters. Before the fix, 25 of 104
succeeded (the issue's run).

Usage: bench/slow_peers_bench.py [BUILD]   (run as any user; loopback only)
"""
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

build = sys.argv[1] if len(sys.argv) > 1 else "build"
here = os.path.dirname(os.path.abspath(__file__))
binary = os.path.join(here, "..", build, "ckptmon")
ADDRS, PER_ADDR, SCRAPES = 20, 30, 104

work = tempfile.mkdtemp(prefix="ckptmon-slowpeers-")
os.makedirs(os.path.join(work, "tier"))
cfg = os.path.join(work, "ckptmon.yml")
with open(cfg, "w") as f:
    f.write(f"global:\n  state_dir: {work}/state\n  scan_interval: 1h\n"
            f"tiers:\n  - {{name: rapid, path: {work}/tier, role: rapid}}\n"
            "integrity: {enabled: false}\n")
log = open(os.path.join(work, "serve.log"), "w+")
d = subprocess.Popen([binary, "serve", "--config.file", cfg,
                      "--web.listen-address", "0.0.0.0:0"], stderr=log)
port = None
for _ in range(300):
    log.seek(0)
    m = re.search(r"port=(\d+)", log.read())
    if m:
        port = int(m.group(1))
        break
    time.sleep(0.1)
assert port, "the daemon did not say its port"

stop = threading.Event()
slow = []
for a in range(ADDRS):
    for _ in range(PER_ADDR):
        s = socket.socket()
        s.bind((f"127.0.0.{2 + a}", 0))
        try:
            s.connect(("127.0.0.1", port))
            s.send(b"GET /metrics HTTP/1.1\r\n")
            slow.append(s)
        except OSError:
            s.close()


def trickle():
    while not stop.is_set():
        for s in list(slow):
            try:
                s.send(b"X")
            except OSError:
                slow.remove(s)
        stop.wait(1.0)


threading.Thread(target=trickle, daemon=True).start()
time.sleep(1.0)
ok = 0
for _ in range(SCRAPES):
    try:
        c = socket.create_connection(("127.0.0.1", port), timeout=5,
                                     source_address=("127.0.0.100", 0))
        c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        head = c.recv(64)
        ok += head.startswith(b"HTTP/1.1 200")
        c.close()
    except OSError:
        pass
stop.set()
with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
    text = r.read().decode()
d.terminate()
d.wait()
print(f"slow connections opened: {ADDRS * PER_ADDR} from {ADDRS} addresses")
print(f"scrapes from a fresh address answered 200: {ok} of {SCRAPES}")
for name in ("ckptmon_http_slow_heads_closed_total", "ckptmon_http_connections_rejected_total"):
    for line in text.splitlines():
        if line.startswith(name):
            print(line)
