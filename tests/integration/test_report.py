#!/usr/bin/python3
"""`ckptmon report` over a real daemon's state database: a daemon walks real
Hugging Face checkpoint directories whose shard mtimes this test set (so it
knows each save's duration and completion skew and each optimizer share),
one checkpoint is deleted while it runs (the history keeps it), then the test
writes ten days of tier samples with a known growth into the same database
(a test helper: the daemon cannot be made to live ten days). The report's
per-job p50/p90/max and optimizer shares are checked against numbers worked
out here; markdown and CSV carry the JSON's numbers; the HTML page renders in
headless Chromium with every chart drawn and both axes on each; no progress
line when stderr is not a terminal, one when it is; bad input exits 2 naming
the flag or the source."""

import csv
import io
import json
import os
import pty
import re
import select
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

DAY = 86400.0
# Completion skews (= save durations: no event log, so last shard minus
# first) of job llama's six checkpoints, and its optimizer bytes.
SKEWS = [10, 20, 30, 40, 50, 600]
MODEL = 4000
OPTIM = [8000 + 1000 * i for i in range(6)]
STATE_JSON = 50  # trainer_state.json
# Job mixed: two checkpoints of unnamed shards (optimizer share not known).
MIXED_SKEWS = [5, 7]


def ckptmon(*args, timeout=60, **kw):
    return subprocess.run([harness.BIN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL, **kw)


def write_file(path, size, mtime):
    with open(path, "wb") as f:
        f.write(b"x" * size)
    os.utime(path, (mtime, mtime))


def json_num(v):
    """A number as the report's JSON writes it (nlohmann and Python agree on
    the shortest round-trip form)."""
    if v is None:
        return ""
    return v if isinstance(v, str) else json.dumps(v)


def png_pixels(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB or RGBA PNG, with
    the stdlib only."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        ftype, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if ftype == 1:
                line[x] = (line[x] + a) & 255
            elif ftype == 2:
                line[x] = (line[x] + b) & 255
            elif ftype == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, bpp)])
        prev = line
    return width, height, rows


class Report(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.require_binary()
        cls.ws = harness.Workspace()
        ws = cls.ws
        cls.now = float(int(time.time()))
        cls.tier = ws.mkdir("rapid")
        cls.commits = []  # (job, commit time)
        for i, skew in enumerate(SKEWS):
            d = ws.mkdir("rapid", "llama", f"checkpoint-{100 * (i + 1)}")
            t = cls.now - (9 - i) * DAY  # days -9 .. -4
            write_file(os.path.join(d, "model.safetensors"), MODEL, t - skew)
            write_file(os.path.join(d, "optimizer.pt"), OPTIM[i], t)
            write_file(os.path.join(d, "trainer_state.json"), STATE_JSON, t)
            cls.commits.append(("llama", t))
        for i, skew in enumerate(MIXED_SKEWS):
            d = ws.mkdir("rapid", "mixed", f"checkpoint-{10 * (i + 1)}")
            t = cls.now - (3 - i) * DAY
            write_file(os.path.join(d, "blob-0.bin"), 1000, t - skew)
            write_file(os.path.join(d, "blob-1.bin"), 1000, t)
            write_file(os.path.join(d, "trainer_state.json"), STATE_JSON, t)
        cls.state = ws.mkdir("state")
        cls.cfg = ws.write("ckptmon.yml",
                           harness.config_yaml([harness.tier_yaml("rapid", cls.tier)],
                                               state_dir=cls.state))
        d = harness.Ckptmon(cls.cfg)
        try:
            d.wait_ready()

            def committed(job):
                doc = d.get("/api/v1/checkpoints?tier=rapid").json()
                items = doc["checkpoints"] if isinstance(doc, dict) else doc
                return sum(1 for c in items if c["job"] == job and c["state"] == "committed")
            harness.wait_for(lambda: committed("llama") == 6 and committed("mixed") == 2,
                             what="eight committed checkpoints")
            cls.catalog = d.get("/api/v1/checkpoints?tier=rapid").json()
            # Deleted while the daemon runs: gone from the tier, kept in the history.
            shutil.rmtree(os.path.join(cls.tier, "llama", "checkpoint-100"))
            harness.wait_for(lambda: committed("llama") == 5, what="the deletion seen")
        finally:
            d.stop()
        # Ten days of hourly tier samples: 1 TB size, use growing 1 GB a day.
        db = sqlite3.connect(os.path.join(cls.state, "ckptmon.db"))
        db.execute("DELETE FROM tier_samples")
        db.execute("DELETE FROM tier_job_samples")
        start = cls.now - 10 * DAY
        for h in range(10 * 24 + 1):
            t = start + h * 3600
            used = 1e11 + 1e9 * (t - start) / DAY
            # The rules' figures (schema 6) from the sixth day on; the first
            # five days' samples were taken by a ckptmon that kept none.
            fig = (None,) * 4
            if h >= 120:
                fig = (5e6 + 1e5 * (h - 120), 60.0 * (h - 120), 2e6 if h < 200 else 0.0,
                       3e11 + 1e8 * (h - 120))
            db.execute("INSERT INTO tier_samples(tier, t, size_bytes, avail_bytes, "
                       "cleanup_pending_bytes, cleanup_oldest_age_seconds, partial_bytes, "
                       "required_capacity_bytes) VALUES('rapid', ?, 1e12, ?, ?, ?, ?, ?)",
                       (t, 1e12 - used) + fig)
            db.execute("INSERT INTO tier_job_samples VALUES('rapid', ?, 'llama', ?)",
                       (t, 1e6 + 1e4 * h))
        # Hourly drain peaks (what write_history keeps from the drain
        # observations, tested in history_test.cpp): the highest, first
        # reached two days ago, ties a later hour; one is before the period.
        for days, peak, offset in ((3, 5e6, 100), (2, 9e6, 200), (1, 9e6, 50), (20, 1e9, 0)):
            h0 = cls.hour(days)
            db.execute("INSERT INTO drain_peaks VALUES('rapid', 'capacity', 'llama', ?, ?, ?)",
                       (h0, peak, h0 + offset))
        # Checkpoint GPU costs (what the rules cycle stores from the GPU cost
        # tracker, tested in history_test.cpp): 12.5 + 30 known, one unknown,
        # one whose window ended before the period.
        for step, days, lost in ((100, 9, 12.5), (200, 8, 30.0), (300, 7, None), (1, 30, 99.0)):
            end = cls.now - days * DAY
            db.execute("INSERT INTO checkpoint_gpu_costs VALUES('rapid', 'llama', ?, ?, ?, 8, ?,"
                       " ?)", (step, end - 20, end, lost, "" if lost is not None else "samples"))
        db.commit()
        db.close()

    @classmethod
    def hour(cls, days):
        """The start of the UTC hour `days` before now."""
        return (cls.now - days * DAY) // 3600 * 3600

    @classmethod
    def tearDownClass(cls):
        cls.ws.close()

    def report(self, *args, fmt="json"):
        since = [] if "--since" in args else ["--since", "10d"]
        r = ckptmon("report", "--state-dir", self.state, "--config.file", self.cfg, "--now",
                    str(self.now), *since, "--format", fmt, *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def job(self, doc, name):
        (t,) = doc["tiers"]
        return next(j for j in t["jobs"] if j["job"] == name)

    def test_cleanup_partial_and_required_capacity_over_the_period(self):
        # Hourly samples h = 120..240 carry the figures (see setUpClass).
        (t,) = json.loads(self.report().stdout)["tiers"]
        self.assertEqual(t["cleanup_pending_bytes"], 5e6 + 1e5 * 120)  # the last sample
        self.assertEqual(t["cleanup_pending_peak_bytes"], 5e6 + 1e5 * 120)
        self.assertEqual(t["cleanup_oldest_age_peak_seconds"], 60.0 * 120)
        self.assertEqual(t["partial_bytes"], 0)  # cleaned up at h = 200: known to be none
        self.assertEqual(t["partial_peak_bytes"], 2e6)
        # The sizing rule at the end of the period, not the one-shot "now".
        self.assertEqual(t["required_capacity_as_of"], "period_end")
        self.assertEqual(t["required_capacity_bytes"], 3e11 + 1e8 * 120)
        self.assertEqual(t["size_minus_required_bytes"], 1e12 - (3e11 + 1e8 * 120))
        # Over the first five days only samples without figures: unknown, not 0.
        r = ckptmon("report", "--state-dir", self.state, "--config.file", self.cfg, "--now",
                    str(self.now - 6 * DAY), "--since", str(self.now - 10 * DAY), "--format",
                    "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        (early,) = json.loads(r.stdout)["tiers"]
        for k in ("cleanup_pending_bytes", "cleanup_pending_peak_bytes",
                  "cleanup_oldest_age_peak_seconds", "partial_bytes", "partial_peak_bytes"):
            self.assertIsNone(early[k], k)
        self.assertEqual(early["required_capacity_as_of"], "now")
        # Markdown shows them in human units: 1.7e7 B, 7200 s, 0 and 2e6 B.
        md = self.report(fmt="markdown").stdout
        self.assertIn("| rapid | 16.2 MiB | 16.2 MiB | 2.0 hours | 0 B | 1.9 MiB |", md)
        # The HTML page charts size against the required capacity.
        html = self.report(fmt="html").stdout
        self.assertIn("rapid: size and required capacity (sizing rule)", html)

    def test_job_percentiles_and_optimizer_share_worked_by_hand(self):
        doc = json.loads(self.report().stdout)
        (t,) = doc["tiers"]
        self.assertAlmostEqual(t["growth_bytes_per_day"], 1e9, delta=1e9 * 1e-9)
        llama = self.job(doc, "llama")
        # Six committed in the period, the deleted one included.
        self.assertEqual(llama["checkpoints_committed"], 6)
        # Nearest rank over 10, 20, 30, 40, 50, 600: p50 the 3rd (ceil 3),
        # p90 the 6th (ceil 5.4), max 600.
        want = {"samples": 6, "p50": 30, "p90": 600, "max": 600}
        self.assertEqual(llama["completion_skew_seconds"], want)
        self.assertEqual(llama["save_duration_seconds"], want)
        sizes = sorted(MODEL + o + STATE_JSON for o in OPTIM)
        self.assertEqual(llama["checkpoint_bytes"],
                         {"samples": 6, "p50": sizes[2], "p90": sizes[5], "max": sizes[5]})
        share = llama["optimizer_share"]
        first = OPTIM[0] / (MODEL + OPTIM[0] + STATE_JSON)
        last = OPTIM[5] / (MODEL + OPTIM[5] + STATE_JSON)
        self.assertEqual(share["samples"], 6)
        self.assertAlmostEqual(share["first"], first, places=12)
        self.assertAlmostEqual(share["last"], last, places=12)
        self.assertAlmostEqual(share["min"], first, places=12)
        self.assertAlmostEqual(share["max"], last, places=12)
        self.assertEqual(share["first_at"], self.commits[0][1])
        self.assertEqual(share["last_at"], self.commits[5][1])
        # Checkpoint size grows 1000 bytes a day (one checkpoint a day).
        self.assertAlmostEqual(llama["checkpoint_size_growth_bytes_per_day"], 1000, delta=1e-6)
        # The alert history stops at --now: an alert the daemon raised after
        # it is not in the period.
        for a in doc["alerts"]:
            self.assertLessEqual(a["fired_at"], doc["until"], a)
            self.assertGreaterEqual(a["duration_seconds"], 0, a)
        self.assertEqual(llama["drain_backlog"],
                         {"to_tier": "capacity", "peak_bytes": 9e6,
                          "peak_at": self.hour(2) + 200, "hours_observed": 3})
        self.assertEqual(llama["gpu_cost"], {"lost_gpu_seconds": 42.5, "checkpoints_known": 2,
                                             "checkpoints_unknown": 1})
        mixed = self.job(doc, "mixed")
        self.assertIsNone(mixed["drain_backlog"])  # no drain observed
        self.assertIsNone(mixed["gpu_cost"])  # no GPU history for it
        self.assertEqual(mixed["checkpoints_committed"], 2)
        # Two values 5 and 7: p50 the 1st, p90 the 2nd.
        self.assertEqual(mixed["completion_skew_seconds"],
                         {"samples": 2, "p50": 5, "p90": 7, "max": 7})
        # Unnamed shards: the optimizer's share is not known, not 0.
        self.assertEqual(mixed["optimizer_share"]["samples"], 0)
        self.assertIsNone(mixed["optimizer_share"]["first"])
        # --since 5d keeps the commits at days -5 (the bound is inclusive) and -4.
        doc5 = json.loads(self.report("--since", "5d").stdout)
        self.assertEqual(self.job(doc5, "llama")["checkpoints_committed"], 2)
        self.assertEqual(self.job(doc5, "llama")["completion_skew_seconds"],
                         {"samples": 2, "p50": 50, "p90": 600, "max": 600})

    def test_compliance_lists_copies_outside_their_residency_over_the_period(self):
        # The same tier, now labelled us-east, with a namespace that keeps
        # llama's jobs in eu-west: all six of llama's checkpoints committed
        # in the period (the deleted one included) lay outside it; mixed is
        # claimed by no rule.
        cfg = self.ws.write("residency.yml", harness.config_yaml(
            [f"  - name: rapid\n    path: {json.dumps(self.tier)}\n    role: rapid\n"
             "    residency: us-east\n    namespaces: {'^llama$': {residency: [eu-west]}}\n"],
            state_dir=self.state))
        r = ckptmon("report", "--state-dir", self.state, "--config.file", cfg, "--now",
                    str(self.now), "--since", "10d", "--format", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        c = json.loads(r.stdout)["compliance"]
        self.assertTrue(c["known"])
        times = [t for _, t in self.commits]
        self.assertEqual(c["outside_residency"], [{
            "tier": "rapid", "job": "llama", "residency": "us-east", "allowed": ["eu-west"],
            "copies": 6, "bytes": float(sum(MODEL + o + STATE_JSON for o in OPTIM)),
            "first_step": 100, "first_committed_at": times[0],
            "last_step": 600, "last_committed_at": times[5]}])
        md = ckptmon("report", "--state-dir", self.state, "--config.file", cfg, "--now",
                     str(self.now), "--since", "10d").stdout
        self.assertIn("## Compliance: copies outside their allowed residency", md)
        self.assertIn("| rapid | us-east | llama | eu-west | 6 |", md)
        self.assertIn("6 copies of job llama lay on tier rapid (residency 'us-east')", md)
        # Where every copy is allowed the list is empty: a fact, not unknown.
        c = json.loads(self.report().stdout)["compliance"]
        self.assertEqual(c, {"known": True, "outside_residency": []})
        # Without the configuration where tiers live is not known: said so.
        r = ckptmon("report", "--state-dir", self.state, "--now", str(self.now), "--since",
                    "10d", "--format", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        c = json.loads(r.stdout)["compliance"]
        self.assertFalse(c["known"])
        self.assertIn("--config.file", c["reason"])

    def test_markdown_and_csv_carry_the_json_numbers(self):
        doc = json.loads(self.report().stdout)
        rows = list(csv.DictReader(io.StringIO(self.report(fmt="csv").stdout)))
        md = self.report(fmt="markdown").stdout
        csv_job = {(r["job"], r["figure"]): r["value"] for r in rows if r["section"] == "job"}
        checked = 0
        for j in doc["tiers"][0]["jobs"]:
            for k, v in j.items():
                if k == "job":
                    continue
                for fig, val in (v.items() if isinstance(v, dict) else [(None, v)]):
                    key = k if fig is None else f"{k}.{fig}"
                    self.assertEqual(csv_job[(j["job"], key)], json_num(val), key)
                    checked += 1
            for f in ("checkpoint_bytes", "save_duration_seconds", "completion_skew_seconds"):
                q = j[f]
                row = (f"| rapid | {j['job']} | {f} | {json_num(q['p50'])} | "
                       f"{json_num(q['p90'])} | {json_num(q['max'])} |")
                self.assertIn(row, md)
            s = j["optimizer_share"]
            self.assertIn(f"| rapid | {j['job']} | optimizer_share first / last / max | "
                          f"{json_num(s['first'])} | {json_num(s['last'])} | "
                          f"{json_num(s['max'])} |", md)
        self.assertGreater(checked, 30)
        d = self.job(doc, "llama")["drain_backlog"]
        self.assertIn(f"| rapid | capacity | llama | 8.6 MiB | {json_num(d['peak_bytes'])} |", md)
        self.assertIn("| rapid | llama | 42.5 | 2 | 1 |", md)
        self.assertIn("## Checkpoints per job", md)
        # The words: 30 seconds / 10.0 minutes for llama's skew.
        self.assertIn("| rapid | llama | 6 |", md)

    def test_html_renders_in_chromium_with_axes_and_no_requests(self):
        chromium = shutil.which("chromium")
        if chromium is None:
            harness.skip_peer("chromium is not installed (scripts/install-deps.sh test)")
        out = os.path.join(self.ws.path(), "report.html")
        self.report("--output", out, fmt="html")
        with open(out, encoding="utf-8") as f:
            html = f.read()
        self.assertTrue(html.startswith("<!DOCTYPE html>"))
        self.assertIn("@media print", html)
        # Self-contained: no fetch of anything, no script.
        self.assertNotRegex(html, r"(?i)\b(src|href)\s*=\s*[\"']?\s*(https?:)?//")
        self.assertNotRegex(html, r"(?i)<script|<link|<img|@import|url\(")
        svgs = re.findall(r"<svg\b.*?</svg>", html, re.S)
        # One tier: used/available, size/required (the samples keep the
        # sizing rule), checkpoint size, optimizer share, stored bytes.
        self.assertEqual(len(svgs), 5, [re.search(r"<title>(.*?)</title>", s).group(1)
                                        for s in svgs])
        for s in svgs:
            for axis in ("x-axis", "y-axis"):
                # The axis: its line, then at least three ticks, each labelled.
                m = re.search(r'<g class="%s"><line [^>]*/>(.*?)</g>' % axis, s, re.S)
                self.assertIsNotNone(m, axis)
                ticks = re.findall(r'<line class="tick"[^>]*/><text class="tick-label"[^>]*>'
                                   r'([^<]+)</text>', m.group(1))
                self.assertGreaterEqual(len(ticks), 3, (axis, ticks))
            self.assertIn('<polyline class="series"', s)
        # The y axis of the used/available chart reads in bytes up to the
        # tier's 1 TB (931 GiB): a tick at 1000 GiB or 1 TiB closes it.
        self.assertRegex(svgs[0], r">(1000(\.0)? GiB|1(\.0)? TiB)<")
        home = tempfile.mkdtemp(prefix="ckptmon-chromium-")
        self.addCleanup(shutil.rmtree, home, True)
        png = os.path.join(home, "shot.png")
        env = dict(os.environ, HOME=home)
        try:
            r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                                f"--user-data-dir={home}/profile", "--hide-scrollbars",
                                "--window-size=1200,3000", f"--screenshot={png}",
                                "file://" + out],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120,
                               env=env, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            self.fail("chromium did not finish in 120 s")
        self.assertTrue(os.path.exists(png), r.stderr.decode(errors="replace")[-2000:])
        width, height, rows = png_pixels(png)
        self.assertEqual((width, height), (1200, 3000))

        def non_white(y0, y1):
            return sum(1 for row in rows[y0:y1] for p in row if min(p) < 200)
        self.assertGreater(non_white(0, height), 20000, "screenshot nearly blank")
        # Each chart's x axis is a dark horizontal line 790 pixels long (the
        # grid lines are light grey, table borders lighter than #333): find
        # them, one per <svg>.
        axes = []
        for y, row in enumerate(rows):
            run = best = 0
            for p in row:
                run = run + 1 if max(p) < 150 else 0
                best = max(best, run)
            if best >= 700 and (not axes or y - axes[-1] > 5):
                axes.append(y)
        self.assertEqual(len(axes), len(svgs), axes)
        # Above each axis, the plot area has coloured series pixels (the
        # lines and points are saturated colours, the text grey or black).
        for y in axes:
            band = rows[max(0, y - 200):y]
            coloured = sum(1 for row in band for (r_, g, b) in row
                           if max(r_, g, b) - min(r_, g, b) > 80)
            self.assertGreater(coloured, 300, f"chart above y={y} drew no series")

    def test_progress_line_only_on_a_terminal(self):
        # Not a terminal (a pipe): nothing on stderr at all.
        r = self.report(fmt="json")
        self.assertEqual(r.stderr, "")
        # A terminal: the progress line, then it is wiped.
        master, slave = pty.openpty()
        try:
            p = subprocess.Popen([harness.BIN, "report", "--state-dir", self.state, "--config.file",
                                  self.cfg, "--now", str(self.now), "--format", "json"],
                                 stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
            os.close(slave)
            slave = None
            out, _ = p.communicate(timeout=60)
            seen = b""
            while select.select([master], [], [], 0.5)[0]:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
        finally:
            os.close(master)
            if slave is not None:
                os.close(slave)
        self.assertEqual(p.returncode, 0)
        json.loads(out)  # stdout is still just the report
        self.assertIn(b"ckptmon report: reading state directory", seen)

    def test_from_a_running_daemon_equals_the_state_directory(self):
        # The daemon builds the report from its own database (GET
        # /api/v1/report): the same figures as --state-dir, the checkpoint
        # history, drain peaks, GPU costs and alerts included.
        d = harness.Ckptmon(self.cfg)
        try:
            d.wait_ready()
            url = f"http://127.0.0.1:{d.port}"
            harness.wait_for(lambda: d.get("/api/v1/plan").status == 200, what="a rules cycle")
            for fmt in ("json", "markdown"):
                args = ("--now", str(self.now), "--since", "10d", "--format", fmt)
                live = ckptmon("report", "--from", url, *args)
                self.assertEqual(live.returncode, 0, live.stderr)
                local = ckptmon("report", "--state-dir", self.state, "--config.file", self.cfg,
                                *args)
                self.assertEqual(local.returncode, 0, local.stderr)
                if fmt == "json":
                    a, b = json.loads(live.stdout), json.loads(local.stdout)
                    self.assertEqual(a.pop("source"), url)
                    b.pop("source")
                    self.maxDiff = None
                    self.assertEqual(a, b)
                    llama = self.job(a, "llama")  # not null, as it was over the history API
                    self.assertEqual(llama["checkpoints_committed"], 6)
                    self.assertEqual(llama["gpu_cost"]["lost_gpu_seconds"], 42.5)
                    self.assertEqual(llama["drain_backlog"]["peak_bytes"], 9e6)
                else:
                    self.assertEqual(live.stdout.replace(url, "X"),
                                     local.stdout.replace("state directory " + self.state, "X"))
            # A filter, and the daemon's own errors as the CLI's.
            r = ckptmon("report", "--from", url, "--now", str(self.now), "--since", "10d",
                        "--format", "json", "--job", "mixed")
            self.assertEqual(r.returncode, 0, r.stderr)
            (t,) = json.loads(r.stdout)["tiers"]
            self.assertEqual([j["job"] for j in t["jobs"]], ["mixed"])
            r = ckptmon("report", "--from", url, "--now", str(self.now), "--tier", "nosuch")
            self.assertEqual(r.returncode, 2)
            self.assertIn("answered 400: --tier: no history of tier \"nosuch\"", r.stderr)
            r = ckptmon("report", "--from", url, "--now", str(self.now), "--since", "90m")
            self.assertEqual(r.returncode, 2)
            self.assertIn("not enough history: 2 samples over 60 minutes", r.stderr)
            r = d.get("/api/v1/report?since=yesterday")
            self.assertEqual(r.status, 400)
            self.assertIn("since: expected a duration", r.json()["error"])
        finally:
            d.stop()

    def test_from_a_daemon_without_the_report_route_reads_its_history_api(self):
        # An older daemon: /api/v1/report is 404; its history and plan give
        # the tier figures, the per-job checkpoint figures stay unknown.
        import http.server
        import threading
        now = self.now
        history = {"series": [
            {"tier": "t", "job": None, "series": name,
             "points": [[now - 7200 + 3600 * i, v(i)] for i in range(3)]}
            for name, v in (("size_bytes", lambda i: 1e12),
                            ("avail_bytes", lambda i: 5e11 - 1e9 * i),
                            ("used_bytes", lambda i: 5e11 + 1e9 * i))]}
        seen = []

        class Old(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                seen.append(self.path.split("?")[0])
                body = {"/api/v1/history": history, "/api/v1/plan": {"tiers": []}}.get(
                    self.path.split("?")[0])
                data = json.dumps(body).encode() if body is not None else b"404 page not found"
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Old)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        try:
            r = ckptmon("report", "--from", f"http://127.0.0.1:{srv.server_port}", "--now",
                        str(now), "--since", "3h", "--min-history", "1h", "--format", "json")
        finally:
            srv.shutdown()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(seen, ["/api/v1/report", "/api/v1/history", "/api/v1/plan"])
        (t,) = json.loads(r.stdout)["tiers"]
        # Used grows 1 GB an hour: 24 GB a day, by hand.
        self.assertAlmostEqual(t["growth_bytes_per_day"], 24e9, delta=1)
        self.assertIsNone(t["required_capacity_bytes"])  # the plan named no tier

    def test_bad_input_exits_2_naming_the_flag_or_source(self):
        port = harness.free_port()
        r = ckptmon("report", "--from", f"http://127.0.0.1:{port}")
        self.assertEqual(r.returncode, 2)
        self.assertIn(f"--from http://127.0.0.1:{port}: cannot connect", r.stderr)
        self.assertNotIn("terminate", r.stderr)
        junk, newer = harness.foreign_state_dirs(self.ws)
        r = ckptmon("report", "--state-dir", junk)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--state-dir: ", r.stderr)
        self.assertIn("not a ckptmon state database", r.stderr)
        r = ckptmon("report", "--state-dir", newer)
        self.assertEqual(r.returncode, 2)
        self.assertIn("schema 99 is newer than this ckptmon understands", r.stderr)
        # Too little history: the last 90 minutes hold two hourly samples.
        r = ckptmon("report", "--state-dir", self.state, "--config.file", self.cfg, "--now",
                    str(self.now), "--since", "90m")
        self.assertEqual(r.returncode, 2)
        self.assertIn("not enough history: 2 samples over 60 minutes", r.stderr)
        r = ckptmon("report", "--state-dir", self.state, "--config.file", self.cfg, "--now",
                    str(self.now), "--since", "90m", "--min-history", "10m")
        self.assertEqual(r.returncode, 2)
        self.assertIn("not enough history: 2 samples over 60 minutes", r.stderr)
        self.assertIn("at least 3 samples over 10 minutes; --min-history", r.stderr)
        # Three hourly samples over two hours: enough once --min-history allows it.
        r = ckptmon("report", "--state-dir", self.state, "--config.file", self.cfg, "--now",
                    str(self.now), "--since", "150m", "--min-history", "2h", "--format", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertAlmostEqual(json.loads(r.stdout)["tiers"][0]["growth_bytes_per_day"], 1e9,
                               delta=1)
        r = ckptmon("report", "--state-dir", self.state, "--min-history", "0s")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--min-history: expected a duration", r.stderr)
        r = ckptmon("report", "--state-dir", self.state, "--since", str(self.now + 3600),
                    "--now", str(self.now))
        self.assertEqual(r.returncode, 2)
        self.assertIn("--since: ", r.stderr)
        self.assertIn("is in the future", r.stderr)
        r = ckptmon("report", "--state-dir", self.state, "--since", "yesterday")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--since: expected a duration", r.stderr)
        r = ckptmon("report", "--state-dir", self.state, "--format", "pdf")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--format: expected markdown, csv, json or html", r.stderr)


if __name__ == "__main__":
    harness.main()
