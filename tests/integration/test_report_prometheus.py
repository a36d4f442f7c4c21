#!/usr/bin/python3
"""`ckptmon report --prometheus` against Debian's prometheus holding 30 days
of ckptmon's series, backfilled with `promtool tsdb create-blocks-from
openmetrics` from OpenMetrics text written here with a known growth rate and
fill date: the report's growth rate and time to full are within 1 % of the
values worked out below; a sharded tier's required capacity is its shards'
sum; the same samples written into a state database give the same numbers
through `report --state-dir`; an unreachable Prometheus, an API error, a
non-JSON answer and an empty period exit 2 naming the source."""

import http.server
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

PROMTOOL = "/usr/bin/promtool"
PROM_DIR = os.path.join(harness.SOURCE_DIR, "deploy", "prometheus")

TiB = 1024.0 ** 4
DAY = 86400.0
T_END = 1767225600.0          # 2026-01-01T00:00:00Z, far older than Prometheus' 2 h head
T_START = T_END - 30 * DAY
INTERVAL = 300                # one sample per 5 minutes, as a scrape would
N = int(30 * DAY / INTERVAL)  # samples 0..N inclusive

# Tier "rapid" (instance a, unsharded): 100 TiB; avail falls 0.5 TiB per day
# from 50 TiB, so it is 35 TiB at T_END and the tier is full 70 days later.
# Job llm on it stores 0.1 TiB more per day.
# Tier "shared" (shard 0/2 on a, 1/2 on b: one file system): 200 TiB; avail
# falls 1 TiB per day from 150 TiB (120 TiB at T_END: full in 120 days); a's
# jobs need 30 TiB, b's 50 TiB: the tier needs 80 TiB. Job big writes on both
# shards: 20 TiB + 0.2 TiB/day on a, 5 TiB + 0.3 TiB/day on b.
# CheckpointTierFillingUp fired on rapid 10 days before T_END, for 1 hour.
RAPID_GROWTH = 0.5 * TiB
RAPID_TTF = 70 * DAY
SHARED_TTF = 120 * DAY
ALERT_AT = T_END - 10 * DAY
ALERT_FOR = 3600


def rapid_avail(t):
    return 50 * TiB - 0.5 * TiB * (t - T_START) / DAY


def llm_stored(t):
    return 10 * TiB + 0.1 * TiB * (t - T_START) / DAY


def llm_checkpoint(t):
    return 100 * 2.0 ** 30 + 2.0 ** 30 * (t - T_START) / DAY


def times():
    return [T_START + i * INTERVAL for i in range(N + 1)]


def openmetrics():
    """The series as ckptmon exports them, as a scrape of two instances
    every 5 minutes for 30 days would have stored them."""
    a = 'instance="a:9184",job="ckptmon"'
    b = 'instance="b:9184",job="ckptmon"'
    ts = times()
    fams = {
        "ckpt_tier_size_bytes": [
            (f'{a},tier="rapid"', lambda t: 100 * TiB),
            (f'{a},tier="shared"', lambda t: 200 * TiB),
            (f'{b},tier="shared"', lambda t: 200 * TiB)],
        "ckpt_tier_avail_bytes": [
            (f'{a},tier="rapid"', rapid_avail),
            (f'{a},tier="shared"', lambda t: 150 * TiB - TiB * (t - T_START) / DAY),
            (f'{b},tier="shared"', lambda t: 150 * TiB - TiB * (t - T_START) / DAY)],
        "ckpt_tier_shards": [
            (f'{a},tier="rapid"', lambda t: 1),
            (f'{a},tier="shared"', lambda t: 2),
            (f'{b},tier="shared"', lambda t: 2)],
        "ckpt_tier_required_capacity_bytes": [
            (f'{a},tier="rapid"', lambda t: 10 * TiB),
            (f'{a},tier="shared"', lambda t: 30 * TiB),
            (f'{b},tier="shared"', lambda t: 50 * TiB)],
        # rapid: 2 TiB waited for cleanup for one day (15 to 14 days before
        # T_END), its oldest entry up to that day's age; 0.2 TiB of partial
        # checkpoints throughout. llm's checkpoint grows 1 GiB per day from 100 GiB.
        "ckpt_cleanup_pending_bytes": [
            (f'{a},tier="rapid",training_job="llm"',
             lambda t: 2 * TiB if T_END - 15 * DAY <= t < T_END - 14 * DAY else 0.0)],
        "ckpt_cleanup_oldest_age_seconds": [
            (f'{a},tier="rapid"',
             lambda t: t - (T_END - 15 * DAY) if T_END - 15 * DAY <= t < T_END - 14 * DAY
             else 0.0)],
        "ckpt_partial_bytes": [(f'{a},tier="rapid",training_job="llm"', lambda t: 0.2 * TiB)],
        "ckpt_job_stored_bytes": [
            (f'{a},tier="rapid",training_job="llm"', llm_stored),
            (f'{a},tier="shared",training_job="big"',
             lambda t: 20 * TiB + 0.2 * TiB * (t - T_START) / DAY),
            (f'{b},tier="shared",training_job="big"',
             lambda t: 5 * TiB + 0.3 * TiB * (t - T_START) / DAY)],
    }
    out = []
    for name, series in fams.items():
        out.append(f"# TYPE {name} gauge\n")
        for labels, f in series:
            out.extend(f"{name}{{{labels}}} {f(t)!r} {int(t)}\n" for t in ts)
    # What `plan --prometheus --now T_END` reads, for the last hour only.
    # shared: shard a holds job x (1 TiB, 3 versions), shard b job y (2 TiB,
    # 3 versions); residue 0.5 + 0.25 TiB; one job and one writer each.
    # local (unsharded, a file system per node): a holds z (1 TiB), b holds
    # z (4 TiB): the plan is b's, the node the rule asks most of.
    last_hour = [t for t in ts if t >= T_END - 3600]
    plan_fams = {
        "ckpt_last_checkpoint_bytes": [
            (f'{a},tier="rapid",training_job="llm"', None),
            (f'{a},tier="shared",training_job="x"', TiB),
            (f'{b},tier="shared",training_job="y"', 2 * TiB),
            (f'{a},tier="local",training_job="z"', TiB),
            (f'{b},tier="local",training_job="z"', 4 * TiB)],
        "ckpt_job_retained_versions": [
            (f'{a},tier="rapid",training_job="llm"', 3),
            (f'{a},tier="shared",training_job="x"', 3),
            (f'{b},tier="shared",training_job="y"', 3),
            (f'{a},tier="local",training_job="z"', 2),
            (f'{b},tier="local",training_job="z"', 2)],
        "ckpt_tier_residue_bytes": [
            (f'{a},tier="shared"', 0.5 * TiB), (f'{b},tier="shared"', 0.25 * TiB),
            (f'{a},tier="local"', 0), (f'{b},tier="local"', 0)],
        "ckpt_tier_concurrent_jobs": [
            (f'{a},tier="rapid"', 0),
            (f'{a},tier="shared"', 1), (f'{b},tier="shared"', 1),
            (f'{a},tier="local"', 1), (f'{b},tier="local"', 1)],
        "ckpt_tier_concurrent_writers": [
            (f'{a},tier="rapid"', 0),
            (f'{a},tier="shared"', 1), (f'{b},tier="shared"', 1),
            (f'{a},tier="local"', 1), (f'{b},tier="local"', 1)],
    }
    for name, series in plan_fams.items():
        out.append(f"# TYPE {name} gauge\n")
        for labels, v in series:
            if v is None:  # llm: the whole 30 days
                out.extend(f"{name}{{{labels}}} {llm_checkpoint(t)!r} {int(t)}\n" for t in ts)
                continue
            out.extend(f"{name}{{{labels}}} {float(v)!r} {int(t)}\n" for t in last_hour)
    out.append("# TYPE ALERTS gauge\n")
    labels = ('alertname="CheckpointTierFillingUp",alertstate="firing",severity="warning",'
              'tier="rapid"')
    out.extend(f"ALERTS{{{labels}}} 1 {int(t)}\n" for t in ts if ALERT_AT <= t <= ALERT_AT + ALERT_FOR)
    # Not ckptmon's: left out of the review.
    out.extend(f'ALERTS{{alertname="NodeDiskFull",alertstate="firing",tier="rapid"}} 1 {int(t)}\n'
               for t in ts if ALERT_AT <= t <= ALERT_AT + ALERT_FOR)
    # The daemon's own evaluator: the same alert on rapid (one run, not two),
    # and CheckpointPartial of job big on shared for 2 hours, 5 days before T_END.
    out.append("# TYPE ckpt_alert gauge\n")
    labels = f'{a},alertname="CheckpointTierFillingUp",severity="warning",tier="rapid"'
    out.extend(f"ckpt_alert{{{labels}}} 1 {int(t)}\n" for t in ts
               if ALERT_AT <= t <= ALERT_AT + ALERT_FOR)
    labels = f'{b},alertname="CheckpointPartial",severity="warning",tier="shared",training_job="big"'
    out.extend(f"ckpt_alert{{{labels}}} 1 {int(t)}\n" for t in ts
               if T_END - 5 * DAY <= t <= T_END - 5 * DAY + 7200)
    out.append("# EOF\n")
    return "".join(out)


def ckptmon(*args, timeout=60):
    return subprocess.run([harness.BIN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


class StubPrometheus(http.server.BaseHTTPRequestHandler):
    """A peer at a Prometheus URL that answers badly (the bad-input cases)."""
    mode = "error"

    def do_GET(self):
        if self.server.mode == "error":
            body = json.dumps({"status": "error", "errorType": "bad_data",
                               "error": "invalid parameter \"query\""}).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
        else:
            body = b"<html><body>a login page</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class ReportPrometheus(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.require_binary()
        harness.require_executable(harness.PROMETHEUS, "prometheus")
        harness.require_executable(PROMTOOL, "prometheus")
        cls.ws = harness.Workspace()
        try:
            om = cls.ws.write("ckptmon.om", openmetrics())
            tsdb = cls.ws.mkdir("tsdb")
            harness.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", "-q", om, tsdb],
                        timeout=300)
            # The shipped recording rules, loaded: they record from now on,
            # so over the backfilled period the report uses the expressions
            # they record (`or`), and says nothing is missing.
            shutil.copy(os.path.join(PROM_DIR, "ckptmon-recording-rules.yml"), cls.ws.path())
            cfg = cls.ws.write("prometheus.yml", "global:\n  scrape_interval: 1m\n"
                               "rule_files: [ckptmon-recording-rules.yml]\n")
            # Retention counts back from the newest block: keep all 30 days.
            cls.prom = cls.ws.start(harness.Prometheus(
                cfg, tsdb, ["--storage.tsdb.retention.time=3650d"]))
            harness.wait_for(cls.prom.ready, timeout=120, what="Prometheus ready")
            cls.url = cls.prom.url
            cls.state = cls.write_state_db()
        except BaseException:
            cls.ws.close()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.ws.close()

    @classmethod
    def write_state_db(cls):
        """The same samples of tier rapid, and the alert, in a state database
        the daemon created (its schema), written here with sqlite3."""
        state = cls.ws.mkdir("state")
        boot = cls.ws.mkdir("boot")
        cfg = cls.ws.write("ckptmon.yml",
                           harness.config_yaml([harness.tier_yaml("boot", boot)], state_dir=state))
        d = harness.Ckptmon(cfg)
        try:
            d.wait_ready()
        finally:
            d.stop()
        db = sqlite3.connect(os.path.join(state, "ckptmon.db"))
        ts = times()
        db.executemany("INSERT INTO tier_samples(tier, t, size_bytes, avail_bytes) VALUES(?,?,?,?)",
                       [("rapid", t, 100 * TiB, rapid_avail(t)) for t in ts])
        db.executemany("INSERT INTO tier_job_samples(tier, t, job, stored_bytes) VALUES(?,?,?,?)",
                       [("rapid", t, "llm", llm_stored(t)) for t in ts])
        for at, frm, to in ((ALERT_AT, "pending", "firing"),
                            (ALERT_AT + ALERT_FOR, "firing", "inactive")):
            db.execute("INSERT INTO alert_transitions(at, alertname, severity, tier, job, "
                       "from_state, to_state, value, summary, description) "
                       "VALUES(?,?,?,?,?,?,?,?,?,?)",
                       (at, "CheckpointTierFillingUp", "warning", "rapid", "", frm, to, 1.0,
                        "rapid fills", ""))
        db.commit()
        db.close()
        return state

    def report(self, *args):
        r = ckptmon("report", *args, "--now", str(int(T_END)), "--format", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout), r.stderr

    @staticmethod
    def tier(doc, name):
        return next(t for t in doc["tiers"] if t["tier"] == name)

    def assertWithin(self, got, want, rel, msg=None):
        self.assertIsNotNone(got, msg)
        self.assertLessEqual(abs(got - want), abs(want) * rel, f"{got} vs {want}: {msg}")

    def test_growth_and_time_to_full_within_1_percent(self):
        doc, err = self.report("--prometheus", self.url)
        self.assertEqual(doc["source"], f"Prometheus {self.url}")
        self.assertEqual(err, "")  # the recording rules are loaded
        # local: only its checkpoints' sizes of the last hour (the plan's data).
        self.assertEqual(sorted(t["tier"] for t in doc["tiers"]), ["local", "rapid", "shared"])
        rapid = self.tier(doc, "rapid")
        self.assertWithin(rapid["growth_bytes_per_day"], RAPID_GROWTH, 0.01)
        self.assertWithin(rapid["time_to_full_seconds"], RAPID_TTF, 0.01)
        self.assertEqual(rapid["size_bytes"], 100 * TiB)
        self.assertWithin(rapid["avail_bytes"], 35 * TiB, 0.01)
        self.assertEqual(rapid["required_capacity_bytes"], 10 * TiB)
        self.assertEqual([j["job"] for j in rapid["jobs"]], ["llm"])
        llm = rapid["jobs"][0]
        self.assertWithin(llm["growth_bytes_per_day"], 0.1 * TiB, 0.01)
        self.assertWithin(llm["checkpoint_size_growth_bytes_per_day"], 2.0 ** 30, 0.01)
        self.assertEqual(llm["checkpoint_first_bytes"], 100 * 2.0 ** 30)
        self.assertWithin(llm["checkpoint_last_bytes"], 130 * 2.0 ** 30, 0.01)
        self.assertEqual(rapid["cleanup_pending_peak_bytes"], 2 * TiB)
        self.assertEqual(rapid["cleanup_pending_bytes"], 0)
        self.assertWithin(rapid["cleanup_oldest_age_peak_seconds"], DAY, 0.01)
        self.assertEqual(rapid["partial_bytes"], 0.2 * TiB)
        self.assertEqual(rapid["partial_peak_bytes"], 0.2 * TiB)
        # One Prometheus query stays under 11,000 points: 30 days at a 260 s step.
        self.assertLessEqual(rapid["samples"], 11000)
        self.assertGreater(rapid["samples"], 9000)

        # The sharded tier: one tier, one figure; its shards' needs summed.
        shared = self.tier(doc, "shared")
        self.assertEqual(shared["required_capacity_bytes"], 80 * TiB)
        self.assertEqual(shared["size_minus_required_bytes"], 120 * TiB)
        self.assertFalse(shared["partial"])
        self.assertWithin(shared["time_to_full_seconds"], SHARED_TTF, 0.01)
        big = shared["jobs"][0]
        self.assertEqual(big["job"], "big")
        self.assertWithin(big["growth_bytes_per_day"], 0.5 * TiB, 0.01)   # 0.2 + 0.3
        self.assertWithin(big["last_stored_bytes"], 25 * TiB + 15 * TiB, 0.01)

        # The alert, to the query's step (260 s) and Prometheus' 5-minute lookback.
        alerts = [a for a in doc["alerts"] if a["tier"] == "rapid"]
        self.assertEqual(len(alerts), 1, doc["alerts"])
        self.assertEqual(alerts[0]["alertname"], "CheckpointTierFillingUp")
        self.assertLessEqual(abs(alerts[0]["fired_at"] - ALERT_AT), 260)
        self.assertGreaterEqual(alerts[0]["duration_seconds"], ALERT_FOR - 260)
        self.assertLessEqual(alerts[0]["duration_seconds"], ALERT_FOR + 300 + 2 * 260)
        self.assertTrue(any("rapid fills in 70" in f for f in doc["findings"]), doc["findings"])
        partial = [a for a in doc["alerts"] if a["tier"] == "shared"]
        self.assertEqual([(a["alertname"], a["job"]) for a in partial],
                         [("CheckpointPartial", "big")])
        self.assertGreaterEqual(partial[0]["duration_seconds"], 7200 - 260)
        self.assertLessEqual(partial[0]["duration_seconds"], 7200 + 300 + 2 * 260)
        self.assertEqual(len(doc["alerts"]), 2, doc["alerts"])  # not NodeDiskFull

    def test_state_dir_gives_the_same_numbers(self):
        prom, _ = self.report("--prometheus", self.url, "--tier", "rapid")
        state, _ = self.report("--state-dir", self.state, "--tier", "rapid")
        p, s = prom["tiers"][0], state["tiers"][0]
        self.assertEqual((p["tier"], s["tier"]), ("rapid", "rapid"))
        for key in ("growth_bytes_per_day", "time_to_full_seconds", "size_bytes", "avail_bytes",
                    "used_bytes"):
            self.assertWithin(p[key], s[key], 1e-3, key)
        self.assertWithin(s["growth_bytes_per_day"], RAPID_GROWTH, 0.01)
        self.assertWithin(s["time_to_full_seconds"], RAPID_TTF, 0.01)
        self.assertWithin(p["jobs"][0]["growth_bytes_per_day"],
                          s["jobs"][0]["growth_bytes_per_day"], 1e-3)
        self.assertEqual(s["samples"], N + 1)
        # The state database keeps no cleanup or partial history: unknown, not 0.
        self.assertIsNone(s["cleanup_pending_peak_bytes"])
        self.assertIsNone(s["partial_bytes"])
        self.assertEqual(p["partial_bytes"], 0.2 * TiB)
        self.assertEqual([a["alertname"] for a in state["alerts"]],
                         [a["alertname"] for a in prom["alerts"]])
        self.assertEqual(state["alerts"][0]["duration_seconds"], ALERT_FOR)

    def test_plan_sums_shards_and_takes_the_worst_node(self):
        r = ckptmon("plan", "--prometheus", self.url, "--now", str(int(T_END)), "--format", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        tiers = {t["tier"]: t for t in json.loads(r.stdout)["tiers"]}
        self.assertEqual(sorted(tiers), ["local", "rapid", "shared"])
        sh = tiers["shared"]
        self.assertFalse(sh["partial"])  # the whole tier: both shards' jobs
        self.assertEqual([(j["job"], j["latest_bytes"], j["retained_versions"]) for j in sh["jobs"]],
                         [("x", TiB, 3), ("y", 2 * TiB, 3)])
        self.assertEqual(sh["size_bytes"], 200 * TiB)
        self.assertEqual(sh["concurrent_jobs"], 2)
        self.assertEqual(sh["bandwidth"]["concurrent_writers"], 2)
        replicas, temp, growth = (sh["replicas"], sh["temp_write_allowance_ratio"],
                                  sh["growth_headroom_ratio"])
        retained = (1 + 2) * TiB * 3 * replicas
        want = retained + temp * 3 * TiB + 0.75 * TiB + growth * retained
        self.assertEqual(sh["residue_bytes"], 0.75 * TiB)
        self.assertAlmostEqual(sh["required_capacity_bytes"], want, delta=want * 1e-12)
        # local: the node whose z is 4 TiB.
        lo = tiers["local"]
        self.assertEqual([(j["job"], j["latest_bytes"]) for j in lo["jobs"]], [("z", 4 * TiB)])
        self.assertAlmostEqual(lo["retained_required_bytes"], 4 * TiB * 2 * lo["replicas"],
                               delta=1)
        # A what-if applies to the fleet's plan as to any other source.
        r = ckptmon("plan", "--prometheus", self.url, "--now", str(int(T_END)), "--format", "json",
                    "--tier", "shared", "--retain", "5")
        self.assertEqual(r.returncode, 0, r.stderr)
        sh5 = json.loads(r.stdout)["tiers"][0]
        self.assertAlmostEqual(sh5["retained_required_bytes"], 3 * TiB * 5 * replicas, delta=1)

    def test_tier_job_and_since_apply(self):
        doc, _ = self.report("--prometheus", self.url, "--tier", "shared", "--job", "nope")
        self.assertEqual([t["tier"] for t in doc["tiers"]], ["shared"])
        self.assertEqual(doc["tiers"][0]["jobs"], [])
        self.assertEqual(doc["alerts"], [])  # rapid's alert is not shared's
        doc, _ = self.report("--prometheus", self.url, "--since", "7d")
        rapid = self.tier(doc, "rapid")
        self.assertEqual(doc["since"], T_END - 7 * DAY)
        self.assertLessEqual(rapid["span_seconds"], 7 * DAY)
        self.assertGreater(rapid["span_seconds"], 7 * DAY - 600)
        self.assertWithin(rapid["growth_bytes_per_day"], RAPID_GROWTH, 0.01)
        # rapid's alert fired 10 days ago; shared's 5 days ago.
        self.assertEqual([a["alertname"] for a in doc["alerts"]], ["CheckpointPartial"])

    def test_bad_sources_exit_2_naming_the_source(self):
        port = harness.free_port()
        r = ckptmon("report", "--prometheus", f"http://127.0.0.1:{port}")
        self.assertEqual(r.returncode, 2)
        self.assertIn(f"--prometheus http://127.0.0.1:{port}: cannot connect", r.stderr)
        self.assertNotIn("terminate", r.stderr)
        r = ckptmon("report", "--prometheus", "ftp://x")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--prometheus: ", r.stderr)
        r = ckptmon("report", "--prometheus", self.url, "--state-dir", self.state)
        self.assertEqual(r.returncode, 2)
        self.assertIn("give one source", r.stderr)
        # A period before the backfilled data: nothing to fit.
        r = ckptmon("report", "--prometheus", self.url, "--now", str(int(T_START - 40 * DAY)))
        self.assertEqual(r.returncode, 2, r.stdout)
        self.assertIn(f"Prometheus {self.url}: not enough history: 0 samples", r.stderr)
        for mode, want in (("error", "answered 400: Prometheus answered bad_data: invalid "
                                     "parameter \"query\""),
                           ("html", "the answer is not JSON")):
            srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StubPrometheus)
            srv.mode = mode
            threading.Thread(target=srv.serve_forever, daemon=True).start()
            try:
                url = f"http://127.0.0.1:{srv.server_address[1]}"
                runs = {cmd: ckptmon(cmd, "--prometheus", url) for cmd in ("report", "plan")}
            finally:
                srv.shutdown()
                srv.server_close()
            for cmd, r in runs.items():
                self.assertEqual(r.returncode, 2, (cmd, mode))
                self.assertIn(f"ckptmon {cmd}: --prometheus {url}: ", r.stderr)
                self.assertIn(want, r.stderr)
                self.assertEqual(r.stderr.count("\n"), 1, r.stderr)


class PlanPrometheus(unittest.TestCase):
    """`plan --prometheus` over a real Prometheus scraping a running daemon:
    the same plan as `plan --from` that daemon (same terms, same what-ifs)."""

    def setUp(self):
        harness.require_binary()
        harness.require_executable(harness.PROMETHEUS, "prometheus")
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        tier = self.ws.mkdir("rapid")
        for i, job in enumerate(["a", "b"]):
            for step in (100, 200, 300):
                d = os.path.join(tier, job, f"step-{step}")
                os.makedirs(d)
                for rank in range(2):
                    with open(os.path.join(d, f"__{rank}_0.distcp"), "wb") as f:
                        f.write(b"\0" * (20000 * (i + 1) + step + rank))
                with open(os.path.join(d, ".metadata"), "wb") as f:
                    f.write(b"m" * 77)
        line = harness.tier_yaml("rapid", tier).rstrip().rstrip("}") + \
            ", retention: {keep_last: 2}, sizing: {replicas: 2, growth_headroom_ratio: 0.25}}\n"
        self.cfg = self.ws.write("ckptmon.yml", harness.config_yaml([line]))
        self.d = self.ws.start(harness.Ckptmon(self.cfg))
        self.d.wait_ready()
        self.url = f"http://127.0.0.1:{self.d.port}"
        harness.wait_for(lambda: self.d.scrape().get("ckpt_job_retained_versions", tier="rapid",
                                                     training_job="b") is not None,
                         what="the rules over the catalog")
        pcfg = self.ws.write("prometheus.yml", (
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            "scrape_configs:\n  - job_name: ckptmon\n"
            f"    static_configs: [{{targets: ['127.0.0.1:{self.d.port}']}}]\n"))
        prom = self.ws.start(harness.Prometheus(pcfg, self.ws.mkdir("tsdb")))
        self.prom = prom.url
        harness.wait_for(lambda: len(prom.query("ckpt_job_retained_versions", timeout=2) or []) == 2,
                         timeout=60, what="Prometheus scraped the daemon")

    def plan(self, *args):
        r = ckptmon("plan", *args, "--format", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)["tiers"], r.stderr

    def test_same_plan_as_from_the_daemon(self):
        for what_if in ([], ["--replicas", "3", "--retain", "4", "--window", "1m"]):
            want, _ = self.plan("--from", self.url, *what_if)
            got, err = self.plan("--prometheus", self.prom, "--config.file", self.cfg, *what_if)
            self.assertEqual(err, "")
            self.assertEqual([t["tier"] for t in got], ["rapid"])
            w, g = want[0], got[0]
            for key in ("required_capacity_bytes", "retained_required_bytes",
                        "temp_write_allowance_bytes", "growth_headroom_bytes", "residue_bytes",
                        "replicas", "concurrent_jobs"):
                self.assertEqual(g[key], w[key], (key, what_if))
            self.assertEqual(g["bandwidth"]["required_write_bytes_per_second"],
                             w["bandwidth"]["required_write_bytes_per_second"], what_if)
            self.assertEqual([(j["job"], j["latest_bytes"], j["retained_versions"])
                              for j in g["jobs"]],
                             [(j["job"], j["latest_bytes"], j["retained_versions"])
                              for j in w["jobs"]])
        # Worked by hand: b's newest (step 300) is 2 x (40000 + 300) + 1 + 77 bytes.
        b = next(j for j in got[0]["jobs"] if j["job"] == "b")
        self.assertEqual(b["latest_bytes"], 2 * 40300 + 1 + 77)
        # Table output from this source too.
        r = ckptmon("plan", "--prometheus", self.prom, "--config.file", self.cfg)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("temporary-write allowance", r.stdout)

    def test_report_names_the_recording_rules_not_loaded(self):
        # This Prometheus has no rule files, and seconds of history.
        r = ckptmon("report", "--prometheus", self.prom)
        self.assertEqual(r.returncode, 2, r.stdout)
        self.assertIn(f"--prometheus {self.prom}: recording rules not loaded", r.stderr)
        self.assertIn("tier_training_job:ckpt_job_stored_bytes:sum", r.stderr)
        self.assertIn("tier:ckpt_tier_required_capacity_bytes:sum", r.stderr)
        self.assertIn("using the raw series", r.stderr)
        self.assertRegex(r.stderr, r"not enough history: \d+ samples? over \d+ seconds")

    def test_bad_sources_exit_2(self):
        port = harness.free_port()
        r = ckptmon("plan", "--prometheus", f"http://127.0.0.1:{port}")
        self.assertEqual(r.returncode, 2)
        self.assertIn(f"ckptmon plan: --prometheus http://127.0.0.1:{port}: cannot connect",
                      r.stderr)
        r = ckptmon("plan", "--prometheus", self.prom, "--from", self.url)
        self.assertEqual(r.returncode, 2)
        self.assertIn("give one source", r.stderr)
        # A time before anything was scraped: no ckptmon series.
        r = ckptmon("plan", "--prometheus", self.prom, "--now", "1000000000")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no ckptmon series", r.stderr)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)


if __name__ == "__main__":
    harness.main()
