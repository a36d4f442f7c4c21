#!/usr/bin/python3
"""/metrics answers gzip to a scraper that accepts it (as Prometheus asks on
every scrape) and plain text to the rest; the gzip body, decoded by Python's
gzip module, is the same exposition; `promtool check metrics` is happy with
it."""

import gzip
import http.client
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

PROMTOOL = "/usr/bin/promtool"
# Families read at scrape time: their values move between two requests.
LIVE = ("process_", "ckptmon_http_", "ckptmon_store_", "ckptmon_worker_",
        "ckptmon_integrity_pending", "ckptmon_integrity_stuck")


def fetch(port, accept_encoding):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {} if accept_encoding is None else {"Accept-Encoding": accept_encoding}
    conn.request("GET", "/metrics", headers=headers)
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, body


def published(text):
    """The lines of the families published with the snapshot."""
    out = []
    for line in text.splitlines():
        name = line.split()[2] if line.startswith("#") else line.split("{")[0].split(" ")[0]
        if not name.startswith(LIVE):
            out.append(line)
    return out


class GzipScrape(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)

    def test_gzip_and_plain(self):
        tier = self.ws.mkdir("rapid")
        # A long interval: no collector report lands between the two requests.
        ck = self.ws.ckptmon(harness.config_yaml([harness.tier_yaml("rapid", tier)],
                                                 scan_interval="1h"))
        ck.wait_ready()
        # Ready comes with the first collection's publish; the first rules
        # cycle publishes again just after it. Wait for its families, so both
        # requests below read the same snapshot.
        harness.wait_for(lambda: ck.scrape().get("ckptmon_rules_evaluations_total") == 1,
                         what="the first rules cycle's families")

        status, h, plain = fetch(ck.port, None)
        self.assertEqual(status, 200)
        self.assertNotIn("content-encoding", h)
        self.assertEqual(h.get("vary"), "Accept-Encoding")

        status, hz, zipped = fetch(ck.port, "gzip")
        self.assertEqual(status, 200)
        self.assertEqual(hz.get("content-encoding"), "gzip")
        self.assertEqual(hz.get("vary"), "Accept-Encoding")
        self.assertEqual(zipped[:2], b"\x1f\x8b")
        text = gzip.decompress(zipped).decode()
        self.assertGreater(len(published(text)), 50)
        self.assertEqual(published(text), published(plain.decode()))
        self.assertIn("ckpt_tier_up{tier=\"rapid\"} 1", text)
        self.assertIn("process_start_time_seconds", text)  # the live member is there too

        # What Prometheus sends; and a refusal of gzip.
        _, h2, body2 = fetch(ck.port, "gzip, deflate, br")
        self.assertEqual(h2.get("content-encoding"), "gzip")
        _, h3, body3 = fetch(ck.port, "gzip;q=0, identity")
        self.assertNotIn("content-encoding", h3)
        self.assertEqual(published(body3.decode()), published(plain.decode()))

        if os.path.exists(PROMTOOL):
            p = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            self.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode())


if __name__ == "__main__":
    harness.main()
