#!/usr/bin/python3
"""`ckptmon burst`: what it writes is read back by `ckptmon scan` (the layout
recognisers, independent of the burst engine) and by os.walk here; failed
writers, the fill level on a small tmpfs, bad input, cleanup, and
--expect-detection against a real daemon."""

import atexit
import json
import os
import pty
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

MiB = 1 << 20

# burst's manifest key (burst.key) goes here, not into the home of whoever runs the tests.
STATE_HOME = tempfile.mkdtemp(prefix="ckptmon-burst-state-")
os.chmod(STATE_HOME, 0o755)  # test_unwritable_target runs burst as nobody
atexit.register(shutil.rmtree, STATE_HOME, True)
os.environ["XDG_STATE_HOME"] = STATE_HOME


def ckptmon(*args, timeout=120):
    return subprocess.run([harness.BIN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def burst_json(*args, expect_rc=0):
    r = ckptmon("burst", "--format", "json", "--no-fsync", "--interval", "0s", *args)
    if r.returncode != expect_rc:
        raise AssertionError(f"burst exited {r.returncode}: {r.stderr}\n{r.stdout[:2000]}")
    return json.loads(r.stdout)


def scan(path, now=None, partial_after=None):
    args = ["scan", path, "--format", "json"]
    if now is not None:
        args += ["--now", repr(now)]
    if partial_after is not None:
        args += ["--partial-after", partial_after]
    r = ckptmon(*args)
    if r.returncode != 0:
        raise AssertionError(f"scan exited {r.returncode}: {r.stderr}")
    return {c["path"]: c for c in json.loads(r.stdout)}


def walk(path):
    """(files, bytes) under `path`, counted here."""
    files = size = 0
    for root, _, names in os.walk(path):
        for n in names:
            files += 1
            size += os.lstat(os.path.join(root, n)).st_size
    return files, size


def listing(path):
    out = []
    for root, dirs, names in os.walk(path):
        for n in dirs + names:
            out.append(os.path.relpath(os.path.join(root, n), path))
    return sorted(out)


# Files per committed checkpoint with R ranks, from ../shared/layouts.md:
# shards per rank plus the markers the framework writes inside the directory.
FILES = {
    "dcp": lambda r: r + 1,                 # __r_0.distcp + .metadata
    "megatron": lambda r: r + 2,            # __r_0.distcp + .metadata + metadata.json
    "deepspeed": lambda r: r + 1,           # zero_pp_rank_r optim + mp_rank_00_model_states
    "hf": lambda r: 2 * r + 2,              # model shards + rng_state_r + index + trainer_state.json
    "orbax": lambda r: r + 4,               # ocdbt.process_r + _METADATA + manifest.ocdbt
                                            # + _CHECKPOINT_METADATA + commit_success.txt
}
FRAMEWORK = {"dcp": "pytorch_dcp", "megatron": "megatron_torch_dist", "deepspeed": "deepspeed",
             "hf": "hf_trainer", "orbax": "orbax"}


class Layouts(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)

    def check_layout(self, layout):
        target = self.ws.mkdir(layout)
        ranks = 3
        rep = burst_json("--target", target, "--layout", layout, "--jobs", "2", "--ranks", str(ranks),
                         "--writers", "4", "--shard-size", "1MiB", "--checkpoints", "3",
                         "--fail-writer", "1@2")
        cks = rep["checkpoints"]
        self.assertEqual(len(cks), 6)
        committed = {c["path"]: c for c in cks if c["state"] == "committed"}
        partial = {c["path"]: c for c in cks if c["state"] == "partial"}
        self.assertEqual(len(committed), 5, cks)
        self.assertEqual(len(partial), 1, cks)
        self.assertEqual([c["job"] for c in partial.values()], ["job0"])
        self.assertEqual(rep["totals"], {**rep["totals"], "committed": 5, "partial": 1,
                                         "in_progress": 0})
        end = max(c["end_ts"] for c in cks)

        for path, c in committed.items():
            files, size = walk(os.path.join(target, path))
            self.assertEqual(files, FILES[layout](ranks), path)
            self.assertEqual((c["files"], c["bytes"]), (files, size), path)
        for path, c in partial.items():
            files, size = walk(os.path.join(target, path))
            self.assertEqual((c["files"], c["bytes"]), (files, size), path)
            # The killed writer stopped half-way through its first shard.
            self.assertLess(size, min(x["bytes"] for x in committed.values()) - MiB // 2 + 1)

        # Right after the burst: committed ones exactly; the failed save is
        # in progress or, where the layout proves it broken, partial already.
        now = scan(target, now=end + 1)
        self.assertEqual(set(now), set(committed) | set(partial))
        for path, c in committed.items():
            got = now[path]
            self.assertEqual(got["state"], "committed", got)
            self.assertEqual(got["framework"], FRAMEWORK[layout])
            self.assertEqual((got["files"], got["bytes"]), (c["files"], c["bytes"]), path)
        for path, c in partial.items():
            self.assertIn(now[path]["state"], ("in_progress", "partial"), now[path])
            self.assertEqual((now[path]["files"], now[path]["bytes"]), (c["files"], c["bytes"]))
        # Past partial_after (30m by default) the failed save is partial.
        later = scan(target, now=end + 3600)
        self.assertEqual({p for p, c in later.items() if c["state"] == "partial"}, set(partial))
        self.assertEqual({p for p, c in later.items() if c["state"] == "committed"}, set(committed))

    def test_dcp(self):
        self.check_layout("dcp")

    def test_dcp_metadata_is_a_real_pickle_of_the_shards(self):
        """Python's own unpickler (with torch's class names, dcp_fixture)
        reads the .metadata burst writes, its storage rows tile every shard
        file exactly, and the daemon's scan reads the same split."""
        import pickle
        import dcp_fixture  # noqa: F401  (defines the torch classes pickle resolves)
        for layout, ckpt in (("dcp", "job0/step-100"), ("megatron", "job0/iter_0000100")):
            target = self.ws.mkdir(layout + "-meta")
            shard = 100001  # odd: the two halves differ by a byte
            burst_json("--target", target, "--layout", layout, "--ranks", "3",
                       "--shard-size", str(shard), "--checkpoints", "1")
            d = os.path.join(target, ckpt)
            with open(os.path.join(d, ".metadata"), "rb") as f:
                meta = pickle.load(f)
            self.assertEqual(sorted(meta.state_dict_metadata),
                             ["model.weight", "optim.state.weight.exp_avg"])
            per_file = {}
            for idx, info in meta.storage_data.items():
                per_file.setdefault(info.relative_path, []).append((info.offset, info.length))
            self.assertEqual(sorted(per_file), [f"__{r}_0.distcp" for r in range(3)])
            for name, ranges in per_file.items():
                ranges.sort()
                self.assertEqual(ranges, [(0, shard // 2), (shard // 2, shard - shard // 2)])
                self.assertEqual(os.path.getsize(os.path.join(d, name)), shard)
            w = meta.state_dict_metadata["model.weight"]
            self.assertEqual(tuple(w.size), (3 * (shard // 2),))
            self.assertEqual([tuple(c.offsets) for c in w.chunks],
                             [(0,), (shard // 2,), (2 * (shard // 2),)])
            got = scan(target)[ckpt]
            self.assertEqual(got["component_source"], "metadata", got)
            self.assertEqual(got["component_bytes"]["model"], 3 * (shard // 2))
            self.assertEqual(got["component_bytes"]["optimizer"], 3 * (shard - shard // 2))

    def test_deepspeed(self):
        self.check_layout("deepspeed")

    def test_megatron(self):
        self.check_layout("megatron")

    def test_hf(self):
        self.check_layout("hf")

    def test_orbax(self):
        self.check_layout("orbax")


class Behaviour(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)

    def test_one_partial_per_failed_writer(self):
        target = self.ws.mkdir("t")
        rep = burst_json("--target", target, "--ranks", "4", "--shard-size", "256KiB",
                         "--checkpoints", "5", "--fail-writer", "0@1", "--fail-writer", "3@4")
        states = {c["index"]: (c["state"], c["failed_rank"]) for c in rep["checkpoints"]}
        self.assertEqual(states, {1: ("partial", 0), 2: ("committed", None), 3: ("committed", None),
                                  4: ("partial", 3), 5: ("committed", None)})
        end = max(c["end_ts"] for c in rep["checkpoints"])
        later = scan(target, now=end + 3600)
        self.assertEqual(sorted(p for p, c in later.items() if c["state"] == "partial"),
                         ["job0/step-100", "job0/step-400"])

    def test_restore_as_another_topology_reads_what_dcp_plans(self):
        """3 writers, 2 readers: each reader loads its half of dim 0 of both
        tensors, reading every stored chunk that overlaps it whole (DCP's
        FileSystemReader). Worked out by hand for 100001-byte shards:
        model.weight is 3 chunks of 50000 rows, rank 0 (rows 0-74999) and
        rank 1 (75000-149999) each overlap two: 100000 bytes; exp_avg is 3
        chunks of 50001, halves of 75002 rows: 2 x 50001 each. Rank 0 also
        reads .metadata."""
        target = self.ws.mkdir("t")
        events = self.ws.path("events.jsonl")
        rep = burst_json("--target", target, "--ranks", "3", "--shard-size", "100001",
                         "--checkpoints", "1", "--restore", "--restore-ranks", "2",
                         "--events", events)
        meta = os.path.getsize(os.path.join(target, "job0/step-100/.metadata"))
        (r,) = rep["restores"]
        self.assertEqual((r["ranks"], r["resharded"], r["ok"]), (2, True, True), r)
        self.assertEqual(r["bytes"], 2 * (100000 + 100002) + meta)
        with open(events) as f:
            lines = [json.loads(x) for x in f]
        reads = sorted((x["rank"], x["bytes"]) for x in lines if x["event"] == "restore_read_done")
        self.assertEqual(reads, [(0, 200002 + meta), (1, 200002)])
        kinds = [x["event"] for x in lines]
        for k in ("restore_start", "restore_locate_done", "restore_reshard_done", "restore_done"):
            self.assertEqual(kinds.count(k), 1, k)
        self.assertLess(kinds.index("restore_locate_done"), kinds.index("restore_read_done"))
        self.assertEqual(ckptmon("events", "check", events).returncode, 0)

        # The writers' own count reads each file whole, once: no reshard.
        again = self.ws.mkdir("t2")
        rep = burst_json("--target", again, "--ranks", "3", "--shard-size", "100001",
                         "--checkpoints", "1", "--restore")
        (r,) = rep["restores"]
        self.assertEqual((r["ranks"], r["resharded"]), (3, False))
        self.assertEqual(r["bytes"], walk(os.path.join(again, "job0/step-100"))[1])

        r = ckptmon("burst", "--target", self.ws.mkdir("t3"), "--restore-ranks", "2")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--restore-ranks needs --restore", r.stderr)

    def test_events_log_is_valid_and_complete(self):
        target = self.ws.mkdir("t")
        drain = self.ws.mkdir("d")
        events = self.ws.path("events.jsonl")
        rep = burst_json("--target", target, "--ranks", "2", "--shard-size", "64KiB",
                         "--checkpoints", "2", "--fail-writer", "1@1", "--drain-to", drain,
                         "--restore", "--events", events)
        r = ckptmon("events", "check", events)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(events) as f:
            lines = [json.loads(x) for x in f]
        kinds = [x["event"] for x in lines]
        # 2 saves: start + pause each; 2 shards of the good save, 1 of the failed one.
        self.assertEqual(kinds.count("checkpoint_start"), 2)
        self.assertEqual(kinds.count("pause_start"), 2)
        self.assertEqual(kinds.count("pause_end"), 2)
        self.assertEqual(kinds.count("shard_written"), 3)
        self.assertEqual(kinds.count("checkpoint_failed"), 1)
        self.assertEqual(kinds.count("checkpoint_commit"), 1)
        self.assertEqual(kinds.count("drain_done"), 1)
        self.assertEqual(kinds.count("shard_drained"), 3)  # 2 shards + .metadata
        self.assertEqual(kinds.count("restore_done"), 1)
        commit = next(x for x in lines if x["event"] == "checkpoint_commit")
        self.assertEqual((commit["files"], commit["bytes"]), walk(os.path.join(target, "job0/step-200")))
        # The checksums are the shards' real CRC32C... checked by the daemon's
        # integrity verifier elsewhere; here: every shard names an existing file.
        for x in lines:
            if x["event"] == "shard_written":
                self.assertTrue(os.path.isfile(x["path"]), x)
                self.assertTrue(x["checksum"].startswith("crc32c:"))
        # The drained copy is whole and the restore read it all.
        self.assertEqual(walk(os.path.join(drain, "job0/step-200")),
                         walk(os.path.join(target, "job0/step-200")))
        self.assertEqual(rep["restores"][0]["bytes"], walk(os.path.join(target, "job0/step-200"))[1])

    def test_cleanup_removes_only_its_own(self):
        target = self.ws.mkdir("t")
        self.ws.write("t/mine.txt", "user data\n")
        self.ws.write("t/userjob/step-1/x.bin", "user shard\n")
        before = listing(target)
        r = ckptmon("burst", "--target", target, "--checkpoints", "1", "--shard-size", "4KiB")
        self.assertEqual(r.returncode, 2)
        self.assertIn("not empty", r.stderr)
        self.assertEqual(listing(target), before)
        events = self.ws.path("t", "events.jsonl")
        burst_json("--target", target, "--force", "--checkpoints", "2", "--shard-size", "4KiB",
                   "--events", events)
        # Replace one of burst's files: cleanup must keep the replacement.
        replaced = os.path.join(target, "job0/step-100/__0_0.distcp")
        os.unlink(replaced)
        with open(replaced, "w") as f:
            f.write("not burst's\n")
        r = ckptmon("burst", "--target", target, "--cleanup")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)  # step-100 could not go
        self.assertIn("__0_0.distcp: not the file burst created", r.stderr)
        self.assertEqual(listing(target), sorted(before + ["job0", "job0/step-100",
                                                           "job0/step-100/__0_0.distcp",
                                                           ".ckptmon-burst.manifest"]))
        os.unlink(replaced)
        r = ckptmon("burst", "--target", target, "--cleanup")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(listing(target), before)

    def test_cleanup_trusts_no_planted_manifest(self):
        target = self.ws.mkdir("t")
        outside = self.ws.write("outside/victim.txt", "not burst's\n")
        mine = self.ws.write("t/mine.txt", "user data\n")
        burst_json("--target", target, "--force", "--checkpoints", "1", "--shard-size", "4KiB")
        manifest = os.path.join(target, ".ckptmon-burst.manifest")
        with open(manifest) as f:
            genuine = f.read()

        def ident(p):
            st = os.lstat(p)
            return f"{st.st_dev} {st.st_ino} {st.st_ctime_ns // 10**9}.{st.st_ctime_ns % 10**9:09d}"

        os.symlink(os.path.dirname(outside), os.path.join(target, "link"))
        planted = [f"e {ident(outside)} {outside}\n",
                   f"f {ident(outside)} link/victim.txt\n",
                   f"e {ident(outside)} job9/victim.txt\nm job9 {os.path.dirname(outside)}\n",
                   f"f {ident(mine)} mine.txt\n"]
        for text in planted:
            with open(manifest, "w") as f:
                f.write(genuine + text)  # added to burst's own, or alone
            before = listing(self.ws.dir)
            r = ckptmon("burst", "--target", target, "--cleanup")
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("manifest not trusted; deleted nothing", r.stdout)
            self.assertRegex(r.stderr, r"not trusted, deleted nothing: line \d+ carries no digest")
            self.assertEqual(listing(self.ws.dir), before)
        with open(manifest, "w") as f:
            f.write(genuine)
        os.unlink(os.path.join(target, "link"))
        r = ckptmon("burst", "--target", target, "--cleanup")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(listing(target), ["mine.txt"])
        self.assertTrue(os.path.exists(outside))

    def test_bad_input_exits_2_and_leaves_nothing(self):
        target = self.ws.mkdir("t")
        cases = [
            (["--target", self.ws.path("missing")], "No such file or directory"),
            (["--target", target, "--ranks", "0"], "--ranks"),
            (["--target", target, "--ranks", "many"], "--ranks"),
            (["--target", target, "--shard-size", "12XB"], "--shard-size"),
            (["--target", target, "--fill-to", "150%"], "--fill-to"),
            (["--target", target, "--interval", "soon"], "--interval"),
            (["--target", target, "--layout", "tensorflow"], "--layout"),
            (["--target", target, "--fail-writer", "9@1"], "rank 9 does not exist"),
            (["--target", target, "--drain-rate", "1MiB/s"], "--drain-to"),
            (["--target", target, "--expect-detection", f"http://127.0.0.1:{harness.free_port()}"],
             "not a reachable ckptmon"),
            (["--target", target, "--expect-detection", "ftp://x"], "--expect-detection"),
        ]
        for args, needle in cases:
            with self.subTest(args=args):
                r = ckptmon("burst", *args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(needle, r.stderr)
                self.assertEqual(listing(target), [])

    def test_sparse_writes_no_data(self):
        target = self.ws.mkdir("t")
        rep = burst_json("--target", target, "--ranks", "4", "--shard-size", "1GiB",
                         "--checkpoints", "2", "--sparse")
        found = scan(target)
        for c in rep["checkpoints"]:
            self.assertEqual(c["state"], "committed")
            got = found[c["path"]]
            self.assertEqual(got["bytes"], c["bytes"])
            self.assertGreaterEqual(got["bytes"], 4 << 30)
            # A few blocks for the markers, none for 4 GiB of shards.
            self.assertLess(got["allocated_bytes"], 1 << 20)

    def test_window_is_reported(self):
        target = self.ws.mkdir("t")
        rep = burst_json("--target", target, "--checkpoints", "1", "--shard-size", "4KiB",
                         "--window", "1h")
        self.assertIs(rep["checkpoints"][0]["window_met"], True)
        rep = burst_json("--target", self.ws.mkdir("t2"), "--checkpoints", "1",
                         "--shard-size", "4KiB")
        self.assertIsNone(rep["checkpoints"][0]["window_met"])  # no --window: not judged

    def test_table_and_progress_bar_on_a_terminal(self):
        target = self.ws.mkdir("t")
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(harness.BIN, [harness.BIN, "burst", "--target", target, "--ranks", "2",
                                   "--shard-size", "64KiB", "--checkpoints", "3",
                                   "--interval", "0s", "--no-fsync", "--restore"])
        out = b""
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0, out)
        text = out.decode()
        self.assertIn("\r[", text)  # the progress bar redraws itself
        self.assertIn("] 6/6 shards", text)
        self.assertRegex(text, r"CHECKPOINT +STATE +FILES +SIZE +TIME")
        self.assertRegex(text, r"job0/step-300 +committed +3 ")
        self.assertRegex(text, r"RESTORE +FILES +SIZE +LOCATE +READ +TOTAL +THROUGHPUT")

    def test_plain_lines_when_not_a_terminal(self):
        target = self.ws.mkdir("t")
        r = ckptmon("burst", "--target", target, "--ranks", "2", "--shard-size", "64KiB",
                    "--checkpoints", "2", "--interval", "0s", "--no-fsync")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        size = walk(os.path.join(target, "job0/step-100"))[1]  # 2 x 64 KiB + .metadata
        self.assertRegex(lines[0], rf"^checkpoint job0/step-100 committed files=3 bytes={size} ")
        self.assertRegex(lines[-1], r"^total: 2 committed, 0 partial, 0 in progress;")
        self.assertNotIn("\r", r.stdout + r.stderr)

    def test_interrupted_burst_is_cleaned_up_completely(self):
        target = self.ws.mkdir("t")
        p = harness.Process([harness.BIN, "burst", "--target", target, "--ranks", "4",
                             "--shard-size", "16MiB", "--checkpoints", "1000", "--interval", "0s",
                             "--no-fsync", "--format", "plain"])
        self.addCleanup(p.stop)
        p.wait_line(r"^checkpoint job0/step-100 committed", stream="stdout", timeout=60)
        p.proc.send_signal(signal.SIGINT)
        self.assertEqual(p.wait(timeout=60), 130, p.output())
        self.assertIn("interrupted (SIGINT)", p.output())
        self.assertRegex(p.output(), r"total: \d+ committed")
        self.assertNotEqual(listing(target), [])
        r = ckptmon("burst", "--target", target, "--cleanup")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(listing(target), [])

    def test_unwritable_target(self):
        harness.require_root("running burst as another user")
        harness.require_executable("/usr/bin/setpriv", "util-linux")
        target = self.ws.mkdir("t")  # root's, 0755
        os.chmod(self.ws.dir, 0o755)
        r = subprocess.run(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            harness.BIN, "burst", "--target", target], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("not writable: Permission denied", r.stderr)
        self.assertEqual(listing(target), [])

    def test_read_only_target(self):
        harness.require_root("a read-only bind mount")
        src = self.ws.mkdir("src")
        ro = self.ws.bind_readonly(src, "ro")
        r = ckptmon("burst", "--target", ro)
        self.assertEqual(r.returncode, 2)
        self.assertIn("read-only", r.stderr)
        self.assertEqual(listing(src), [])


class Fill(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        harness.require_root("mounting a tmpfs")
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)

    def test_fill_to_stops_at_the_threshold(self):
        target = self.ws.mount_tmpfs("tier", "size=64m")
        rep = burst_json("--target", target, "--ranks", "2", "--shard-size", "4MiB",
                         "--checkpoints", "100", "--fill-to", "45%")
        st = os.statvfs(target)
        used = (st.f_blocks - st.f_bfree) / (st.f_blocks - st.f_bfree + st.f_bavail)
        self.assertTrue(rep["fill"]["reached"])
        self.assertGreaterEqual(used, 0.45)
        # At most one 1 MiB chunk per writer past the threshold (2 writers, 64 MiB).
        self.assertLess(used, 0.45 + 2.5 / 64)
        cks = rep["checkpoints"]
        self.assertEqual(cks[-1]["state"], "in_progress")
        self.assertIn("--fill-to", cks[-1]["reason"])
        self.assertTrue(all(c["state"] == "committed" for c in cks[:-1]))
        # 8 MiB per save: 3 whole saves fit under 45% of 64 MiB (28.8 MiB), the 4th is cut.
        self.assertEqual(len(cks), 4)
        found = scan(target, now=cks[-1]["end_ts"] + 1)
        self.assertEqual({p: c["state"] for p, c in found.items()},
                         {c["path"]: c["state"] for c in cks})
        self.assertEqual(found[cks[-1]["path"]]["bytes"], cks[-1]["bytes"])

    def test_enospc_before_the_threshold(self):
        # Out of inodes long before 99% of the blocks are used.
        target = self.ws.mount_tmpfs("tier", "size=64m,nr_inodes=8")
        r = ckptmon("burst", "--target", target, "--ranks", "4", "--shard-size", "64KiB",
                    "--checkpoints", "3", "--interval", "0s", "--fill-to", "99%")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("No space left on device", r.stderr)
        self.assertIn("--cleanup", r.stderr)
        self.assertNotEqual(listing(target), [])
        r = ckptmon("burst", "--target", target, "--cleanup")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(listing(target), [])


class ExpectDetection(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        harness.require_root("mounting a tmpfs")
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)

    def daemon(self, staging_path, rapid_path, partial_after="2s"):
        cfg = harness.config_yaml([
            "  - {name: staging, path: %s, role: staging, drains_to: rapid, partial_after: %s}\n"
            % (json.dumps(staging_path), partial_after),
            harness.tier_yaml("rapid", rapid_path),
        ], scan_interval="500ms")
        ck = self.ws.ckptmon(cfg)
        ck.wait_ready()
        return ck

    def run_burst(self, port, target, drain, timeout="60s"):
        return ckptmon("burst", "--target", target, "--ranks", "2", "--shard-size", "2MiB",
                       "--checkpoints", "50", "--interval", "0s", "--no-fsync",
                       "--fail-writer", "1@1", "--fill-to", "90%", "--drain-to", drain,
                       "--drain-rate", "4MiB/s", "--format", "plain",
                       "--expect-detection", f"http://127.0.0.1:{port}", "--detect-timeout", timeout)

    def test_passes_against_the_daemon_watching_the_target(self):
        target = self.ws.mount_tmpfs("staging", "size=32m")
        drain = self.ws.mkdir("rapid")
        ck = self.daemon(target, drain)
        r = self.run_burst(ck.port, target, drain)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        checks = [l for l in r.stdout.splitlines() if l.startswith("check ")]
        self.assertEqual([l.split()[1:3] for l in checks],
                         [["ok", "tier:"], ["ok", "drain_backlog:"], ["ok", "partial:"], ["ok", "fill:"]],
                         r.stdout)

    def test_fails_against_a_daemon_watching_another_directory(self):
        target = self.ws.mount_tmpfs("staging", "size=32m")
        drain = self.ws.mkdir("rapid")
        ck = self.daemon(self.ws.mkdir("elsewhere"), self.ws.mkdir("elsewhere-rapid"))
        r = self.run_burst(ck.port, target, drain)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("check MISSING tier: the daemon watches no tier holding " + target, r.stdout)

    def test_fails_when_the_daemon_reports_partial_too_late(self):
        target = self.ws.mount_tmpfs("staging", "size=32m")
        drain = self.ws.mkdir("rapid")
        ck = self.daemon(target, drain, partial_after="1h")
        r = self.run_burst(ck.port, target, drain, timeout="10s")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("check MISSING partial: job0/step-100 is in_progress, not partial", r.stdout)


if __name__ == "__main__":
    harness.main()
