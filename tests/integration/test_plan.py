#!/usr/bin/python3
"""`ckptmon plan` against a running daemon: `plan --from` (GET /api/v1/plan)
and `plan --state-dir` (the daemon's SQLite file, read-only, while it runs)
give the daemon's own ckpt_tier_required_capacity_bytes and
ckpt_tier_required_write_bandwidth_bytes_per_second; a what-if is checked
against numbers worked out here from the bytes this test wrote; bad flags and
unusable sources exit 2 with a message naming the flag or the source."""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def ckptmon(*args, timeout=60):
    return subprocess.run([harness.BIN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


class Plan(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        # A tmpfs tier: no block device, so no I/O counters, and the restore
        # estimate reads at the configured read_bandwidth. On the host's disk
        # the tests running beside this one (and anything else reading it)
        # made the counters' read rate the estimate's source now and then.
        harness.require_root("a tmpfs tier")
        self.tier = self.ws.mount_tmpfs("rapid", "size=64m,mode=0755")
        self.latest = {}  # job -> bytes of its newest committed checkpoint
        for i, job in enumerate(["a", "b", "c"]):
            for step in (100, 200):
                d = os.path.join(self.tier, job, f"step-{step}")
                os.makedirs(d)
                total = 0
                for rank in range(2):
                    size = 10000 * (i + 1) + step + rank
                    with open(os.path.join(d, f"__{rank}_0.distcp"), "wb") as f:
                        f.write(b"\0" * size)
                    total += size
                with open(os.path.join(d, ".metadata"), "wb") as f:
                    f.write(b"m" * 77)
                total += 77
                self.latest[job] = total  # step 200 comes last
        self.state = self.ws.mkdir("state")
        tier = harness.tier_yaml("rapid", self.tier).rstrip().rstrip("}") + \
            ", sizing: {replicas: 2, growth_headroom_ratio: 0.25}" + \
            ", storage_path: {read_bandwidth: 1MiB, recovery_time_objective: 10m," + \
            " jobs: {c: {recovery_time_objective: 10ms}}}}\n"
        self.cfg = self.ws.write("ckptmon.yml", harness.config_yaml([tier], state_dir=self.state))
        self.d = self.ws.start(harness.Ckptmon(self.cfg))
        self.d.wait_ready()
        self.url = f"http://127.0.0.1:{self.d.port}"

        def evaluated():
            m = self.d.scrape()
            v = m.get("ckpt_tier_required_capacity_bytes", tier="rapid")
            return v is not None and v > 0 and all(
                m.get("ckpt_checkpoints", tier="rapid", training_job=j, state="committed") == 2
                for j in "abc")
        harness.wait_for(evaluated, what="the rules over six committed checkpoints")
        self.metrics = self.d.scrape()

    def plan_json(self, *args):
        r = ckptmon("plan", *args, "--format", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(len(doc["tiers"]), 1, r.stdout)
        return doc["tiers"][0]

    def test_from_and_state_dir_give_the_daemons_figures(self):
        want_cap = self.metrics.get("ckpt_tier_required_capacity_bytes", tier="rapid")
        want_bw = self.metrics.get("ckpt_tier_required_write_bandwidth_bytes_per_second",
                                   tier="rapid")
        self.assertGreater(want_bw, 0)
        for args in (["--from", self.url], ["--state-dir", self.state, "--config.file", self.cfg]):
            p = self.plan_json(*args)
            self.assertAlmostEqual(p["required_capacity_bytes"], want_cap, delta=want_cap * 1e-12,
                                   msg=args)
            self.assertAlmostEqual(p["bandwidth"]["required_write_bytes_per_second"], want_bw,
                                   delta=want_bw * 1e-12, msg=args)
            self.assertEqual(sorted(j["job"] for j in p["jobs"]), ["a", "b", "c"])
            for j in p["jobs"]:
                self.assertEqual(j["latest_bytes"], self.latest[j["job"]], args)
        # /api/v1/plan is the same JSON as `plan --format json`.
        api = self.d.get("/api/v1/plan").json()
        self.assertEqual(api["tiers"][0]["required_capacity_bytes"], want_cap)

    def test_what_ifs_worked_by_hand(self):
        p = self.plan_json("--from", self.url, "--retain", "4", "--replicas", "3",
                           "--temp-allowance", "10%", "--growth", "5%", "--jobs", "3",
                           "--window", "1m", "--nodes", "2")
        total = sum(self.latest.values())
        retained = total * 4 * 3          # every job's latest x 4 versions x 3 replicas
        temp = 0.10 * total               # all three write at once
        growth = 0.05 * retained
        self.assertAlmostEqual(p["retained_required_bytes"], retained, delta=1e-6)
        self.assertAlmostEqual(p["temp_write_allowance_bytes"], temp, delta=1e-6)
        self.assertAlmostEqual(p["growth_headroom_bytes"], growth, delta=1e-6)
        # No partial checkpoints: no residue.
        self.assertEqual(p["residue_bytes"], 0)
        self.assertAlmostEqual(p["required_capacity_bytes"], retained + temp + growth, delta=1e-6)
        # Mean of the three latest / 60 s x 3 writers x 1.1 (default overhead), over 2 nodes.
        bw = total / 3 / 60 * 3 * 1.1
        self.assertAlmostEqual(p["bandwidth"]["required_write_bytes_per_second"], bw, delta=1e-6)
        self.assertAlmostEqual(p["bandwidth"]["required_write_bytes_per_second_per_node"], bw / 2,
                               delta=1e-6)
        self.assertIn("--replicas 3", p["what_ifs"])
        # The table and markdown carry the terms in words.
        r = ckptmon("plan", "--from", self.url, "--retain", "4", "--format", "markdown")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("| required capacity |", r.stdout)
        self.assertIn("`--retain 4`", r.stdout)
        r = ckptmon("plan", "--from", self.url)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("temporary-write allowance", r.stdout)

    def test_spare_capacity_counts_what_is_on_the_disk(self):
        """The sizing rule spares most of the 64 MiB tier, but 40 MiB of
        something else (not a checkpoint) sits on it: the plan says how
        little is free now, with the used share statvfs gives here."""
        with open(os.path.join(self.tier, "scratch.bin"), "wb") as f:
            f.write(b"\1" * (40 << 20))

        # Waited for in /api/v1/plan itself: the rules cycle renders it, on
        # its own beat after the tier's statfs (the scrape's
        # ckpt_tier_avail_bytes) has seen the file.
        def seen():
            p = self.plan_json("--from", self.url)
            return p if p["avail_bytes"] is not None and p["avail_bytes"] < 30 << 20 else None
        p = harness.wait_for(seen, interval=0.2, what="the plan seeing the 40 MiB file")
        spare = p["size_bytes"] - p["required_capacity_bytes"]
        self.assertGreater(spare, 60 << 20)  # the rule alone: nearly all of it
        r = ckptmon("plan", "--from", self.url)
        self.assertEqual(r.returncode, 0, r.stderr)
        st = os.statvfs(self.tier)
        used = 100 * (1 - st.f_bavail / st.f_blocks)
        self.assertIn("to spare by the sizing rule, but only ", r.stdout)
        self.assertIn(f"free now ({used:.3g} % used)", r.stdout)
        self.assertNotIn("e+", r.stdout)  # no percentage in exponent notation

    def test_restore_time_against_the_objective(self):
        # Each latest checkpoint: its bytes at the configured 1 MiB/s, plus 3
        # files (two shards and .metadata) x 3 operations / 1000 ops/s.
        want = {j: b / (1 << 20) + 3 * 3 / 1000 for j, b in self.latest.items()}
        for j in "abc":
            got = self.metrics.get("ckpt_estimated_restore_seconds", tier="rapid", training_job=j)
            self.assertAlmostEqual(got, want[j], delta=1e-9, msg=j)
        self.assertEqual(self.metrics.get("ckpt_recovery_time_objective_seconds", tier="rapid",
                                          training_job="c"), 0.01)
        for args in (["--from", self.url], ["--state-dir", self.state, "--config.file", self.cfg]):
            p = self.plan_json(*args)
            rows = {r["job"]: r for r in p["restore"]}
            self.assertEqual(sorted(rows), ["a", "b", "c"], args)
            for j in "abc":
                self.assertAlmostEqual(rows[j]["estimated_seconds"], want[j], delta=1e-9, msg=args)
                self.assertEqual(rows[j]["read_source"], "configured")
                self.assertEqual(rows[j]["step"], 200)
            self.assertEqual(rows["a"]["objective_seconds"], 600)
            self.assertTrue(rows["a"]["meets_objective"])
            self.assertFalse(rows["c"]["meets_objective"])  # ~0.03 s against 10 ms
        r = ckptmon("plan", "--from", self.url)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"RESTORE +STEP +CHECKPOINT +ESTIMATE +OBJECTIVE +VERDICT")
        self.assertRegex(r.stdout, r"\bc +200 .*\(configured\) +0.01 s +MISSES")
        self.assertRegex(r.stdout, r"\ba +200 .*\(configured\) +600.0 s +meets")
        r = ckptmon("plan", "--from", self.url, "--format", "markdown")
        self.assertIn("| restore of job | step | checkpoint | estimate | objective | verdict |",
                      r.stdout)
        # A what-if on the jobs replaces the rows: --jobs 1 keeps the biggest
        # job, and its own measured row only.
        biggest = max(self.latest, key=self.latest.get)
        rows = self.plan_json("--from", self.url, "--jobs", "1")["restore"]
        self.assertEqual([r["job"] for r in rows], [biggest])
        self.assertAlmostEqual(rows[0]["estimated_seconds"], want[biggest], delta=1e-9)

    def test_bad_input_exits_2_naming_the_flag_or_source(self):
        r = ckptmon("plan", "--from", self.url, "--replicas", "0")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--replicas: ", r.stderr)
        r = ckptmon("plan", "--from", self.url, "--retain", "-3")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--retain: ", r.stderr)
        port = harness.free_port()
        r = ckptmon("plan", "--from", f"http://127.0.0.1:{port}")
        self.assertEqual(r.returncode, 2)
        self.assertIn(f"--from http://127.0.0.1:{port}: cannot connect", r.stderr)
        self.assertNotIn("terminate", r.stderr)
        junk, newer = harness.foreign_state_dirs(self.ws)
        r = ckptmon("plan", "--state-dir", junk)
        self.assertEqual(r.returncode, 2)
        self.assertIn("not a ckptmon state database", r.stderr)
        r = ckptmon("plan", "--state-dir", newer)
        self.assertEqual(r.returncode, 2)
        self.assertIn("schema 99 is newer than this ckptmon understands", r.stderr)
        r = ckptmon("plan", "--state-dir", self.ws.mkdir("empty"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("no ckptmon state database here", r.stderr)
        # `report --from` asks the daemon for its report (/api/v1/report): a
        # daemon seconds old has a sample or two, not a growth rate.
        r = ckptmon("report", "--from", self.url, "--format", "json")
        self.assertEqual(r.returncode, 2, r.stdout)
        self.assertRegex(r.stderr, r"not enough history: \d+ samples? over \d+ seconds")
        r = ckptmon("report", "--state-dir", self.state, "--since", "10y-ago")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--since: expected a duration", r.stderr)
        r = ckptmon("plan", "--from", self.url, "--tier", "nope")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--tier: no tier \"nope\"", r.stderr)


if __name__ == "__main__":
    harness.main()
