"""Issue 3 end to end: the checkpoint catalog on real trees.

- `ckptmon scan` on the fixture generator's trees (tests/fixtures/gen_layouts.py)
  finds every checkpoint the generator's oracle (expected.json) lists, with the
  same framework, step, state, file count and bytes; per checkpoint directory
  the figures equal `find -type f | wc -l` and `du --apparent-size -B1`.
- The daemon serves the same catalog (API and metrics), keeps it across a
  restart (first_seen survives), drops a deleted checkpoint from the metrics
  within a scan interval, and reports access-audit findings.
"""

import json
import os
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

GEN = os.path.join(harness.SOURCE_DIR, "tests", "fixtures", "gen_layouts.py")
GOLDEN = os.path.join(harness.SOURCE_DIR, "tests", "fixtures", "golden", "scan_layouts.json")
# CKPTMON_UPDATE_GOLDEN=1 rewrites the golden file instead of comparing (then
# review the diff: the oracle test below checks the same output independently).
UPDATE_GOLDEN = os.environ.get("CKPTMON_UPDATE_GOLDEN") == "1"


def generate(out, now, ranks=8):
    harness.run(["/usr/bin/python3", GEN, out, "--now", str(int(now)), "--ranks", str(ranks)])
    with open(os.path.join(out, "expected.json")) as f:
        return json.load(f)


def tier_config(name, path, expected, state_dir, extra=""):
    g = expected["generic_layout"]
    return (
        "global:\n"
        f"  state_dir: {state_dir}\n"
        "  scan_interval: 300ms\n"
        "tiers:\n"
        f"  - name: {name}\n"
        f"    path: {json.dumps(path)}\n"
        "    role: rapid\n"
        f"    partial_after: {int(expected['partial_after_seconds'])}s\n"
        f"    layout: {{shard_glob: {json.dumps(g['shard_glob'])}, marker: {json.dumps(g['marker'])}, "
        f"step_regex: {json.dumps(g['step_regex'])}}}\n" + extra)


def find_count(path):
    r = harness.run(["find", path, "-type", "f"])
    return len([l for l in r.stdout.splitlines() if l])


def du_files_bytes(path):
    """`du --apparent-size -B1` over the regular files only (du also counts
    directory entries' own sizes, which no checkpoint holds)."""
    files = subprocess.run(["find", path, "-type", "f", "-print0"], stdout=subprocess.PIPE,
                           check=True).stdout
    if not files:
        return 0
    r = subprocess.run(["du", "--apparent-size", "-B1", "-c", "--files0-from=-"], input=files,
                       stdout=subprocess.PIPE, check=True)
    return int(r.stdout.decode().splitlines()[-1].split()[0])


class ScanMatchesTheOracle(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.require_binary()
        cls.ws = harness.Workspace()
        cls.tier = cls.ws.mkdir("fixtures")
        # Hundreds of ranks where the layout has one file per rank.
        cls.expected = generate(cls.tier, time.time(), ranks=256)
        cls.cfg = cls.ws.write("scan.yml", tier_config("fixtures", cls.tier, cls.expected,
                                                       cls.ws.path("state")))
        r = harness.run([harness.BIN, "scan", "--config.file", cls.cfg, "fixtures", "--format",
                         "json"])
        cls.found = {c["path"]: c for c in json.loads(r.stdout)}

    @classmethod
    def tearDownClass(cls):
        cls.ws.close()

    def test_every_checkpoint_of_the_oracle_is_found_as_described(self):
        want = {c["path"]: c for c in self.expected["checkpoints"]}
        self.assertEqual(sorted(self.found), sorted(want))
        for path, e in want.items():
            with self.subTest(path):
                c = self.found[path]
                self.assertEqual(c["tier"], "fixtures")
                self.assertEqual(c["job"], e["job"])
                self.assertEqual(c["framework"], e["framework"])
                self.assertEqual(c["step"], e["step"])
                self.assertEqual(c["state"], e["state"], c["reason"])
                self.assertEqual(c["files"], e["files"])
                self.assertEqual(c["bytes"], e["bytes"])
                if "reason_contains" in e:
                    self.assertIn(e["reason_contains"], c["reason"])
                for key in ("allocated_bytes", "first_write", "last_write",
                            "completion_skew_seconds"):
                    self.assertIn(key, c)
                self.assertAlmostEqual(c["completion_skew_seconds"],
                                       max(0.0, c["last_write"] - c["first_write"]), places=3)

    def test_directory_checkpoints_equal_find_and_du(self):
        checked = 0
        for path, c in self.found.items():
            full = os.path.join(self.tier, path)
            if not os.path.isdir(full) or os.path.islink(full):
                continue
            with self.subTest(path):
                self.assertEqual(c["files"], find_count(full))
                self.assertEqual(c["bytes"], du_files_bytes(full))
            checked += 1
        self.assertGreater(checked, 40)

    def test_table_format_lists_each_checkpoint_once(self):
        r = harness.run([harness.BIN, "scan", "--config.file", self.cfg, "fixtures"])
        lines = r.stdout.splitlines()
        self.assertTrue(lines[0].startswith("TIER"))
        self.assertEqual(len(lines) - 1, len(self.found))

    def test_a_plain_directory_is_a_tier_named_after_it(self):
        r = harness.run([harness.BIN, "scan", self.tier, "--format", "json"])
        got = json.loads(r.stdout)
        self.assertTrue(got)
        self.assertEqual({c["tier"] for c in got}, {"fixtures"})
        # Without the configured generic layout, in-house checkpoints are not recognised.
        self.assertFalse(any(c["framework"] == "generic" for c in got))
        self.assertEqual({c["job"] for c in got},
                         {c["job"] for c in self.expected["checkpoints"]
                          if c["framework"] != "generic"})

    def test_a_missing_path_is_an_error_not_a_crash(self):
        r = harness.run([harness.BIN, "scan", self.ws.path("nope")], check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("No such file or directory", r.stderr)


class GoldenScan(unittest.TestCase):
    """The whole `ckptmon scan --format json` output for the generator's trees
    at a fixed time, against a reviewed golden file: any change in what is
    reported (reasons, figures, keys) shows up as a diff."""

    def test_scan_output_matches_the_golden_file(self):
        harness.require_binary()
        ws = harness.Workspace()
        self.addCleanup(ws.close)
        tier = ws.mkdir("fixtures")
        now = 1700000000
        expected = generate(tier, now)
        cfg = ws.write("scan.yml", tier_config("fixtures", tier, expected, ws.path("state")))
        r = harness.run([harness.BIN, "scan", "--config.file", cfg, "fixtures", "--format", "json",
                         "--now", str(now)])
        got = json.loads(r.stdout)
        for c in got:
            # Blocks allocated depend on the file system the test runs on.
            self.assertGreaterEqual(c.pop("allocated_bytes"), 0)
        if UPDATE_GOLDEN:
            os.makedirs(os.path.dirname(GOLDEN), exist_ok=True)
            with open(GOLDEN, "w") as f:
                json.dump(got, f, indent=1, sort_keys=True)
                f.write("\n")
            self.skipTest(f"rewrote {GOLDEN}")
        with open(GOLDEN) as f:
            want = json.load(f)
        self.assertEqual(len(got), len(want))
        for g, w in zip(got, want):
            self.assertEqual(g, w)


class DaemonCatalog(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        self.tier = self.ws.mkdir("tier")
        self.expected = generate(self.tier, time.time())
        self.state = self.ws.path("state")
        dcp_jobs = sorted({c["job"] for c in self.expected["checkpoints"]
                           if c["job"].startswith("dcp-")})
        self.dcp_jobs = dcp_jobs
        self.config = tier_config(
            "rapid", self.tier, self.expected, self.state,
            extra="    namespaces:\n      '^dcp-': {owner: root}\n")

    def wait_catalog(self, ck, n):
        return harness.wait_for(
            lambda: (lambda r: r if len(r) == n else None)(
                ck.get("/api/v1/checkpoints?tier=rapid").json()),
            what=f"{n} checkpoints in the API")

    def test_api_metrics_restart_and_deletion(self):
        n = len(self.expected["checkpoints"])
        ck = self.ws.ckptmon(self.config)
        listed = self.wait_catalog(ck, n)
        by_path = {c["path"]: c for c in listed}

        # Filters.
        committed = ck.get("/api/v1/checkpoints?state=committed&tier=rapid").json()
        self.assertEqual(len(committed),
                         sum(1 for c in self.expected["checkpoints"] if c["state"] == "committed"))
        self.assertEqual(ck.get("/api/v1/checkpoints?state=bogus").status, 400)
        job = self.dcp_jobs[0]
        self.assertEqual({c["job"] for c in ck.get(f"/api/v1/checkpoints?job={job}").json()}, {job})

        # Metrics: counts per (job, state) and bytes per job, from the oracle.
        m = ck.scrape()
        per = {}
        stored = {}
        for c in self.expected["checkpoints"]:
            per[(c["job"], c["state"])] = per.get((c["job"], c["state"]), 0) + 1
            stored[c["job"]] = stored.get(c["job"], 0) + c["bytes"]
        for (j, state), count in per.items():
            self.assertEqual(m.get("ckpt_checkpoints", tier="rapid", training_job=j, state=state), count,
                             (j, state))
        for j, b in stored.items():
            self.assertEqual(m.get("ckpt_job_stored_bytes", tier="rapid", training_job=j), b, j)
        partial = sum(1 for c in self.expected["checkpoints"] if c["state"] == "partial")
        self.assertEqual(sum(v for l, v in m.samples["ckpt_partial_checkpoints"]
                             if l["tier"] == "rapid"), partial)
        self.assertGreater(m.get("ckptmon_scan_stat_calls_total", tier="rapid"), 0)
        # Access audit: jobs outside the one namespace are reported, with paths.
        jobs = {c["job"] for c in self.expected["checkpoints"]}
        outside = sorted(j for j in jobs if not j.startswith("dcp-"))
        self.assertEqual(m.get("ckpt_access_findings", tier="rapid", kind="outside_namespace"),
                         len(outside))
        findings = ck.get("/api/v1/findings?kind=outside_namespace").json()
        self.assertEqual(sorted(f["path"] for f in findings), outside)
        r = subprocess.run(["promtool", "check", "metrics"], input=ck.get("/metrics").body,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.assertEqual(r.returncode, 0, r.stdout.decode())

        # Restart: the catalog comes back from the state database with its history.
        ck.stop()
        ck = self.ws.ckptmon(self.config, name="again.yml")
        again = {c["path"]: c for c in self.wait_catalog(ck, n)}
        for path, c in by_path.items():
            self.assertEqual(again[path]["first_seen"], c["first_seen"], path)

        # Deletion: gone from the API and the metrics within a scan interval or two.
        victim = next(c for c in listed if c["job"] == job and c["state"] == "committed")
        before = ck.scrape().get("ckpt_checkpoints", tier="rapid", training_job=job, state="committed")
        shutil.rmtree(os.path.join(self.tier, victim["path"]))
        harness.wait_for(
            lambda: ck.scrape().get("ckpt_checkpoints", tier="rapid", training_job=job,
                                    state="committed") == before - 1,
            timeout=10, what="the deleted checkpoint to leave the metrics")
        paths = {c["path"] for c in ck.get("/api/v1/checkpoints").json()}
        self.assertNotIn(victim["path"], paths)


class InotifyOnLocalTiers(unittest.TestCase):
    """A local tier is watched: a new checkpoint shows up long before the
    (hour-long) scan interval would have found it."""

    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)

    def test_new_checkpoint_is_seen_without_waiting_for_the_interval(self):
        tier = self.ws.mkdir("local")
        os.makedirs(os.path.join(tier, "job-a"))
        ck = self.ws.ckptmon(
            "global:\n"
            f"  state_dir: {self.ws.path('state')}\n"
            "  scan_interval: 1h\n"
            "tiers:\n"
            f"  - {{name: local, path: {json.dumps(tier)}, role: staging, watch: inotify}}\n")
        ck.wait_ready()
        self.assertEqual(ck.get("/api/v1/checkpoints").json(), [])
        step = os.path.join(tier, "job-a", "step-100")
        os.makedirs(step)
        for r in range(4):
            with open(os.path.join(step, f"__{r}_0.distcp"), "wb") as f:
                f.write(b"x" * 1000)
        with open(os.path.join(step, ".metadata"), "wb") as f:
            f.write(b"m" * 10)
        got = harness.wait_for(
            lambda: [c for c in ck.get("/api/v1/checkpoints").json() if c["state"] == "committed"],
            timeout=15, what="the new checkpoint to be catalogued through inotify")
        self.assertEqual(got[0]["path"], "job-a/step-100")
        self.assertEqual(got[0]["files"], 5)
        self.assertEqual(got[0]["bytes"], 4010)


if __name__ == "__main__":
    harness.main()
