#!/usr/bin/python3
"""Issue 9.1: directory names are bytes. A tier whose job directories are not
valid UTF-8, hold control characters or are very long still gives a scrape
that `promtool check metrics` (Debian's prometheus package) accepts, and each
job's checkpoint is found under the label value docs/metrics.md promises:

- invalid UTF-8 replaced by U+FFFD per maximal subpart (what Python's
  bytes.decode("utf-8", "replace") does), C0 controls and DEL as well;
- at most 128 bytes;
- when anything was replaced or cut: the kept part (at most 119 bytes, on a
  character boundary) + "~" + the first 8 hex digits of SHA-256 of the raw
  name, so two names never share a label.

The expected labels are computed here from those rules with Python's own
decoder and hashlib, not by ckptmon.
"""

import hashlib
import json
import os
import subprocess
import sys
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

PROMTOOL = "/usr/bin/promtool"
MAX = 128


def expected_label(raw):
    text = raw.decode("utf-8", "replace")
    text = "".join("\ufffd" if ord(c) < 0x20 or ord(c) == 0x7f else c for c in text)
    if text.encode() == raw and len(raw) <= MAX:
        return text
    kept = b""
    for c in text:
        if len(kept) + len(c.encode()) > MAX - 9:
            break
        kept += c.encode()
    return kept.decode() + "~" + hashlib.sha256(raw).hexdigest()[:8]


# Job directory name -> step of its one committed checkpoint.
JOBS = {
    b"j\xf6b": 100,            # latin-1 o-umlaut
    b"j\xfcb": 200,            # latin-1 u-umlaut: same shape, must not share the label
    b"bad\xe2\x82tail": 300,   # a truncated 3-byte sequence: one U+FFFD
    b"new\nline\ttab": 400,     # control characters
    b'q"uote\\back': 500,      # valid; the exposition escapes it
    b"a" * 250: 600,           # too long
    "é".encode() * 120: 700,   # too long (240 bytes), cut on a character boundary
    b"plain-job": 800,         # unchanged
}


class LabelValues(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        harness.require_executable(PROMTOOL, "prometheus")
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        tier = self.ws.mkdir("tier").encode()
        for name, step in JOBS.items():
            ck = os.path.join(tier, name, b"save_%d" % step)
            os.makedirs(ck)
            with open(os.path.join(ck, b"rank0.bin"), "wb") as f:
                f.write(b"x" * step)
            with open(os.path.join(ck, b"COMMITTED"), "wb"):
                pass
        state = self.ws.mkdir("state")
        cfg = ("global:\n"
               f"  state_dir: {state}\n"
               "  scan_interval: 300ms\n"
               "tiers:\n"
               "  - name: rapid\n"
               f"    path: {json.dumps(tier.decode())}\n"
               "    role: rapid\n"
               "    jobs: {depth: 1}\n"
               "    layout: {shard_glob: 'rank*.bin', marker: COMMITTED, "
               "step_regex: '^save_(\\d+)$'}\n")
        self.ck = self.ws.ckptmon(cfg)
        self.ck.wait_ready()

    def scrape_with_all_jobs(self):
        def ready():
            r = self.ck.get("/metrics")
            if r.status != 200:
                return None
            try:
                m = harness.Metrics(r.text())
            except (UnicodeDecodeError, ValueError):
                return r  # let promtool say what is wrong
            return r if len(m.labels_of("ckpt_latest_committed_step", tier="rapid")) >= \
                len(JOBS) else None
        return harness.wait_for(ready, what="every job in the scrape")

    def test_promtool_clean_and_each_checkpoint_under_its_label(self):
        r = self.scrape_with_all_jobs()
        p = subprocess.run([PROMTOOL, "check", "metrics"], input=r.body, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode())
        self.assertEqual((p.stdout + p.stderr).decode().strip(), "")

        m = harness.Metrics(r.text())
        labels = {}
        for raw, step in JOBS.items():
            want = expected_label(raw)
            labels[raw] = want
            self.assertLessEqual(len(want.encode()), MAX)
            self.assertEqual(m.get("ckpt_latest_committed_step", tier="rapid", training_job=want), step,
                             f"job {raw!r}: no checkpoint under label {want!r}")
            self.assertEqual(m.get("ckpt_last_checkpoint_bytes", tier="rapid", training_job=want), step)
            self.assertEqual(m.get("ckpt_checkpoints", tier="rapid", training_job=want,
                                   state="committed"), 1)
        self.assertEqual(labels[b"plain-job"], "plain-job")
        self.assertEqual(labels[b'q"uote\\back'], 'q"uote\\back')
        self.assertEqual(len(set(labels.values())), len(JOBS), "two jobs share a label")
        self.assertEqual(len(m.labels_of("ckpt_latest_committed_step", tier="rapid")), len(JOBS))

        # Where a person reads it: the API keeps the name (invalid bytes as
        # \xNN) next to the label that finds it in Prometheus, and filters by
        # either; the landing page shows the escaped name and links the raw one.
        jobs = self.ck.get("/api/v1/jobs").json()
        by_label = {j["job_label"]: j for j in jobs}
        self.assertEqual(by_label[labels[b"j\xf6b"]]["job"], "j\\xf6b")
        self.assertEqual(by_label[labels[b"bad\xe2\x82tail"]]["job"], "bad\\xe2\\x82tail")
        self.assertEqual(by_label[labels[b"a" * 250]]["job"], "a" * 250)
        self.assertEqual(by_label[labels[b"new\nline\ttab"]]["job"], "new\nline\ttab")
        for query in (urllib.parse.quote(b"j\xf6b"), urllib.parse.quote(labels[b"j\xf6b"])):
            cks = self.ck.get(f"/api/v1/checkpoints?tier=rapid&job={query}").json()
            self.assertEqual([c["step"] for c in cks], [100], query)
        page = self.ck.get("/").text()
        self.assertIn("j\\xf6b", page)
        self.assertIn("job=j%F6b", page)


if __name__ == "__main__":
    harness.main()
