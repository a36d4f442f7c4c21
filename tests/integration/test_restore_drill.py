#!/usr/bin/python3
"""Issue 30 item 2: `ckptmon restore-drill` reads a checkpoint back as ranks would.

The checkpoints are DCP directories written by dcp_fixture.py (Python's own
pickler, torch's dataclass names). Checked here, each figure worked out by
hand from the fixture's layout:
- by default the readers are the ranks that wrote it: four, each reading its
  own shard (the coordinator also .metadata), the bytes the files' sizes;
- with --ranks 3 the readers read the stored chunks the .metadata plans for
  three new ranks (dim 0 split by torch.chunk), each chunk whole;
- an objective the drill meets exits 0; a rate cap that cannot finish within
  the objective is refused up front (exit 2); an unknown job exits 2;
- a shard replaced by a symlink to a FIFO outside the tier is refused, never
  opened (opening the FIFO would block the command);
- on a FUSE tier whose every getattr takes 2 ms (faultfs.py), the
  metadata-bound phases (locate's walk and the opens) are at least 80 % of
  the drill, as the seed warns for many small shards;
- with --events, the verify phase hashes each file a shard_written event
  gave a checksum for (sha256 by hashlib in the test) and compares: all
  equal exits 0; one wrong digest fails naming the file; an --events FIFO is
  skipped, never waited on;
- on ext4 over a loop device (root), --cold drops the pages first: the
  device's read sectors grow by the bytes read (within 5 %), and mincore
  finds nothing resident; a warm drill right after reads the device for
  almost nothing.
"""

import hashlib
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dcp_fixture  # noqa: E402
import harness  # noqa: E402

# 64 rows split over 4 writers: 16 rows a chunk. bf16 rows of 1024: 2 KiB;
# fp32: 4 KiB. So a model chunk is 32 KiB, an optimizer chunk 64 KiB.
STATE = {
    "model.w": ("tensor", "bfloat16", 64, 1024),
    "optim.state.w.exp_avg": ("tensor", "float32", 64, 1024),
    "lr_scheduler": ("bytes", 100),
}


class RestoreDrill(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)

    def drill(self, tier, *args, check=None):
        r = harness.run([harness.BIN, "restore-drill", tier, "--format", "json", *args],
                        check=False, timeout=30)
        if check is not None:
            self.assertEqual(r.returncode, check, r.stderr + r.stdout)
        return r

    def make(self, tier, step=100, state=STATE, ranks=4):
        d = os.path.join(tier, "llama", f"step-{step}")
        dcp_fixture.write_dcp(d, state, ranks=ranks)
        return d

    def test_writer_ranks_read_their_own_shards(self):
        tier = self.ws.mkdir("tier")
        self.make(tier, 100)
        d = self.make(tier, 200)  # the newest is the one read
        r = json.loads(self.drill(tier, "--objective", "1h", check=0).stdout)
        self.assertEqual(r["path"], "llama/step-200")
        self.assertEqual(r["writer_ranks"], 4)
        self.assertEqual(r["reader_ranks"], 4)
        self.assertFalse(r["planned_by_metadata"])
        sizes = {f: os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)}
        self.assertEqual(r["files"], 5)
        self.assertEqual(r["bytes"], sum(sizes.values()))
        meta = sizes[".metadata"]
        # Rank r: its 32 KiB model chunk and 64 KiB optimizer chunk; rank 0
        # also lr_scheduler's 100 bytes and .metadata.
        self.assertEqual([k["bytes"] for k in r["ranks"]],
                         [32768 + 65536 + 100 + meta, 98304, 98304, 98304])
        self.assertEqual(r["within_objective"], True)
        self.assertIsNone(r["failure"])
        for phase in ("locate", "metadata", "read"):
            self.assertGreaterEqual(r["phases"][phase], 0)
        self.assertAlmostEqual(r["seconds"], sum(r["phases"][p] for p in ("locate", "metadata", "read")))

    def test_resharded_reads_follow_the_metadata_plan(self):
        tier = self.ws.mkdir("tier")
        d = self.make(tier)
        meta = os.path.getsize(os.path.join(d, ".metadata"))
        r = json.loads(self.drill(tier, "--ranks", "3", check=0).stdout)
        self.assertTrue(r["planned_by_metadata"])
        self.assertEqual(r["reader_ranks"], 3)
        # 22 rows per new rank: rank 0 rows 0-21 overlaps stored chunks 0 and 1,
        # rank 1 (22-43) chunks 1 and 2, rank 2 (44-63) chunks 2 and 3; each
        # chunk read whole: 2 x (32 KiB + 64 KiB). Every rank reads the
        # lr_scheduler bytes (100); the coordinator .metadata.
        self.assertEqual([k["bytes"] for k in r["ranks"]],
                         [196608 + 100 + meta, 196608 + 100, 196608 + 100])
        self.assertEqual([k["ranges"] for k in r["ranks"]], [6, 5, 5])

    def test_refusals_and_bad_input(self):
        tier = self.ws.mkdir("tier")
        self.make(tier)
        r = self.drill(tier, "--rate", "1KiB/s", "--objective", "1s", check=2)
        self.assertIn("refused: reading", r.stderr)
        self.assertIn("over the objective of 1s", r.stderr)
        r = self.drill(tier, "--job", "nope", check=2)
        self.assertIn("no committed checkpoint of job nope", r.stderr)
        r = self.drill(tier, "--rate", "fast", check=2)
        self.assertIn("--rate", r.stderr)

    def shard_events(self, d, job="llama", step=200, corrupt=None):
        """An event log with one shard_written per .distcp file of `d`, each
        with the sha256 of the file as written (hashlib, not ckptmon);
        `corrupt`: a file whose digest is given wrong."""
        log = self.ws.path("events", "llama.jsonl")
        os.makedirs(os.path.dirname(log), exist_ok=True)
        with open(log, "w") as f:
            for rank, name in enumerate(sorted(n for n in os.listdir(d) if n.endswith(".distcp"))):
                with open(os.path.join(d, name), "rb") as shard:
                    digest = hashlib.sha256(shard.read()).hexdigest()
                if name == corrupt:
                    digest = ("0" if digest[0] != "0" else "1") + digest[1:]
                f.write(json.dumps({"v": 1, "ts": 1000.0 + rank, "event": "shard_written",
                                    "job": job, "step": step, "rank": rank,
                                    "path": os.path.join(d, name), "bytes": 1,
                                    "start_ts": 999.0, "checksum": "sha256:" + digest}) + "\n")
            f.write("this line is not JSON\n")
        return log

    def test_verify_compares_the_event_logs_checksums(self):
        tier = self.ws.mkdir("tier")
        d = self.make(tier, 200)
        log = self.shard_events(d)
        r = self.drill(tier, "--events", log, check=0)
        j = json.loads(r.stdout)
        # The four shards hashed and equal; .metadata has no shard_written.
        self.assertEqual(j["verify"], {"verified_files": 4, "files_without_checksum": 1})
        self.assertGreaterEqual(j["phases"]["verify"], 0)
        self.assertAlmostEqual(j["seconds"], sum(j["phases"].values()), 6)
        self.assertIn("1 lines rejected by the event parser", r.stderr)
        # One digest wrong: the drill fails naming the file (exit 1).
        log = self.shard_events(d, corrupt="__2_0.distcp")
        r = self.drill(tier, "--events", log, check=1)
        j = json.loads(r.stdout)
        self.assertIn("llama/step-200/__2_0.distcp: mismatch", j["failure"])
        # Without --events: no verify phase, and it says so.
        j = json.loads(self.drill(tier, check=0).stdout)
        self.assertIsNone(j["phases"]["verify"])
        self.assertEqual(j["verify"], "not done: no checksums given (--events)")

    def test_events_that_are_a_fifo_are_skipped_not_waited_on(self):
        tier = self.ws.mkdir("tier")
        self.make(tier, 200)
        fifo = self.ws.path("events.fifo")
        os.mkfifo(fifo)
        r = self.drill(tier, "--events", fifo, check=0)
        self.assertIn("skipped (not a regular file)", r.stderr)
        # No checksum came from it: nothing to compare, no verify phase.
        self.assertEqual(json.loads(r.stdout)["verify"], "not done: no checksums given (--events)")

    def test_a_symlinked_shard_is_never_followed(self):
        tier = self.ws.mkdir("tier")
        d = self.make(tier)
        fifo = self.ws.path("outside.fifo")
        os.mkfifo(fifo)
        shard = os.path.join(d, "__3_0.distcp")
        os.unlink(shard)
        os.symlink(fifo, shard)
        r = self.drill(tier, "--job", "llama")
        # Either the walk no longer calls it committed (its chunks are not in
        # a regular file) or the drill refuses the link; it never opens the FIFO.
        self.assertIn(r.returncode, (1, 2), r.stdout + r.stderr)
        out = r.stdout + r.stderr
        self.assertTrue("__3_0.distcp" in out or "no committed checkpoint" in out, out)

    def test_a_slow_metadata_server_dominates_a_small_file_restore(self):
        harness.require_fuse()
        source = self.ws.mkdir("source")
        # 128 writers, each a 2 KiB shard: 128 small files.
        self.make(source, state={"model.w": ("tensor", "float32", 128, 512)}, ranks=128)
        control = self.ws.write("control", "DELAY 0.002")
        mnt = self.ws.mkdir("mnt")
        harness.mount_fuse(self.ws, "faultfs.py", [source, mnt, control], mnt)
        r = json.loads(self.drill(mnt, check=0).stdout)
        self.assertEqual(r["files"], 129)
        self.assertEqual(r["reader_ranks"], 128)
        p = r["phases"]
        share = (p["locate"] + p["metadata"]) / r["seconds"]
        self.assertGreaterEqual(share, 0.8, p)

    def test_cold_reads_come_from_the_device(self):
        harness.require_root("making a loop device and mounting ext4")
        loop, mnt = self.ws.mount_loop_ext4("mnt", 160)
        tier = os.path.join(mnt, "tier")
        state = {"model.w": ("tensor", "float32", 4096, 1024),
                 "optim.state.w.exp_avg": ("tensor", "float32", 4096, 1024)}
        self.make(tier, state=state)
        os.sync()  # POSIX_FADV_DONTNEED drops clean pages only
        dev = os.path.basename(loop)

        def sectors_read():
            with open(f"/sys/block/{dev}/stat") as f:
                return int(f.read().split()[2])

        before = sectors_read()
        cold = json.loads(self.drill(tier, "--cold", check=0).stdout)
        cold_dev = (sectors_read() - before) * 512
        self.assertEqual(cold["resident_after_drop_bytes"], 0)
        self.assertGreater(cold["bytes"], 32 << 20)
        self.assertLess(abs(cold_dev - cold["bytes"]), 0.05 * cold["bytes"],
                        f"device read {cold_dev} bytes for a drill of {cold['bytes']}")
        before = sectors_read()
        warm = json.loads(self.drill(tier, check=0).stdout)
        warm_dev = (sectors_read() - before) * 512
        self.assertEqual(warm["bytes"], cold["bytes"])
        self.assertLess(warm_dev, 0.05 * warm["bytes"])


if __name__ == "__main__":
    harness.main()
