"""Exactly-once ingestion of checkpoint event logs under kill -9 (issue 4).

A writer (clients/python/ckptmon_events.py, one log per rank) appends events
for several jobs, splits some lines across two writes, adds malformed, blank,
unknown and over-long lines, rotates logs by rename, truncates them, deletes
and re-creates them, while the test kills the daemon with SIGKILL at random
moments and restarts it, dozens of times. At the end the daemon's line and
error totals, file-change counts and event catalog must equal what the writer
wrote, counted independently here.

Truncating or deleting a log destroys what nobody has read yet, so before
those two operations the writer waits until the daemon (whichever instance is
alive) has counted every line written so far; rotations do not wait beyond
that, and lines written between that point and the rename must still be read,
from the rotated file, whether the daemon was alive at the rename or not.

Run by CTest with CKPTMON_BIN and CKPTMON_SOURCE_DIR.
"""

import http.client
import json
import os
import random
import signal
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

sys.path.insert(0, os.path.join(harness.SOURCE_DIR, "clients", "python"))
from ckptmon_events import EventLog  # noqa: E402

JOBS = ("llama-70b", "mixtral", "gpt-neox")
RANKS = 3
STEPS = 36            # per job; fewer than the 64 steps ckptmon keeps per job
MIN_RESTARTS = 30
SEED = int(os.environ.get("CKPTMON_TEST_SEED", "0")) or random.randrange(1, 1 << 30)


class Expected:
    """What the writer wrote, counted as it writes."""

    def __init__(self):
        self.lock = threading.Lock()
        self.lines = {"ok": 0, "unknown_event": 0, "rejected": 0, "blank": 0}
        self.errors = {}
        self.steps = {}        # (job, step) -> dict
        self.failures = {}     # job -> distinct failed steps
        self.restores = {}     # job -> restore_done count
        self.rotations = 0
        self.destructive = 0   # truncations + deletions

    def total(self):
        with self.lock:
            return sum(self.lines.values())

    def count(self, result, reason=None):
        with self.lock:
            self.lines[result] += 1
            if reason:
                self.errors[reason] = self.errors.get(reason, 0) + 1

    def step(self, job, step):
        return self.steps.setdefault((job, step), {"shards": 0, "shard_bytes": 0,
                                                   "committed": False, "failed": False,
                                                   "started": False})


class Daemons:
    """The daemon instance currently alive, restarted after every kill."""

    def __init__(self, ws, config):
        self.ws = ws
        self.config = config
        self.current = None
        self.lock = threading.Lock()
        self.restarts = 0
        self.all = []

    def start(self):
        d = harness.Ckptmon(self.config)
        with self.lock:
            self.current = d
            self.all.append(d)
        return d

    def history(self):
        """What every instance said about changed files, for failure messages."""
        out = []
        for i, d in enumerate(self.all):
            out += [f"#{i} {line}" for line in d.output().splitlines() if "change=" in line]
        return "\n".join(out)

    def kill(self):
        with self.lock:
            d, self.current = self.current, None
        if d is None:
            return
        d.proc.send_signal(signal.SIGKILL)
        d.wait(timeout=20)
        self.restarts += 1

    def port(self):
        with self.lock:
            return self.current.port if self.current else None

    def lines_total(self):
        port = self.port()
        if port is None:
            return None
        try:
            m = harness.scrape(port, timeout=2)
        except (OSError, http.client.HTTPException):
            # The daemon is being killed and restarted: no answer, or a cut one.
            return None
        return sum(v for _, v in m.samples.get("ckptmon_manifest_lines_total", []))


class Writer(threading.Thread):
    def __init__(self, root, expected, daemons, rng):
        super().__init__(daemon=True)
        self.root = root
        self.exp = expected
        self.daemons = daemons
        self.rng = rng
        self.error = None
        self.logs = {}
        self.raw = {}
        self.generation = {}
        self.seq = 0
        self.ops = []

    # --- files --------------------------------------------------------------

    def path(self, job, rank):
        return os.path.join(self.root, job, f"events-rank{rank}.jsonl")

    def open(self, job, rank):
        p = self.path(job, rank)
        self.logs[(job, rank)] = EventLog(p, job=job, rank=rank, raise_errors=True)
        self.raw[(job, rank)] = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)

    def close(self, job, rank):
        self.logs.pop((job, rank)).close()
        os.close(self.raw.pop((job, rank)))

    def write_raw(self, job, rank, data):
        os.write(self.raw[(job, rank)], data)

    def wait_consumed(self):
        """Until the live daemon has counted every line written so far."""
        want = self.exp.total()
        deadline = time.monotonic() + 60
        while self.daemons.lines_total() != want:
            if time.monotonic() > deadline:
                raise AssertionError(f"daemon never caught up with {want} lines")
            time.sleep(0.01)

    # --- events -------------------------------------------------------------

    def event(self, job, rank, name, step, **fields):
        self.seq += 1
        log = self.logs[(job, rank)]
        if self.rng.random() < 0.05:
            # Split across two writes: the first half must not be read alone.
            record = {"v": 1, "ts": time.time(), "event": name, "job": job, "step": step,
                      "rank": rank, "seq": self.seq, **fields}
            data = (json.dumps(record, separators=(",", ":")) + "\n").encode()
            cut = self.rng.randrange(1, len(data) - 1)
            self.write_raw(job, rank, data[:cut])
            time.sleep(0.003)
            self.write_raw(job, rank, data[cut:])
        else:
            log.emit(name, step, seq=self.seq, **fields)
        self.exp.count("ok")

    def garbage(self, job, rank):
        kind = self.rng.randrange(5)
        if kind == 0:
            self.write_raw(job, rank, b"{not json\n")
            self.exp.count("rejected", "invalid_json")
        elif kind == 1:
            self.write_raw(job, rank, b'{"v":1,"ts":1714564800,"event":"shard_written","job":"x",'
                                      b'"step":1}\n')
            self.exp.count("rejected", "missing_field")
        elif kind == 2:
            self.write_raw(job, rank, b'{"v":1,"ts":1714564800,"event":"gpu_hiccup","job":"x"}\n')
            self.exp.count("unknown_event")
        elif kind == 3:
            self.write_raw(job, rank, b"   \n")
            self.exp.count("blank")
        else:
            self.write_raw(job, rank, b'{"pad":"' + b"z" * 70000 + b'"}\n')
            self.exp.count("rejected", "too_long")

    def save(self, job, step):
        e = self.exp.step(job, step)
        e["started"] = True
        fail = self.rng.random() < 0.1
        for rank in range(RANKS):
            self.event(job, rank, "checkpoint_start", step)
            self.event(job, rank, "pause_start", step)
            size = self.rng.randrange(1, 1 << 30)
            t0 = time.time()
            self.event(job, rank, "shard_written", step, path=f"/ckpt/{job}/{step}/{rank}.distcp",
                       bytes=size, start_ts=t0 - 1)
            e["shards"] += 1
            e["shard_bytes"] += size
            self.event(job, rank, "pause_end", step)
            if self.rng.random() < 0.08:
                self.garbage(job, rank)
        if fail:
            self.event(job, 1, "checkpoint_failed", step, reason="rank 1 lost its NVMe")
            e["failed"] = True
            self.exp.failures[job] = self.exp.failures.get(job, 0) + 1
        else:
            self.event(job, 0, "checkpoint_commit", step, files=RANKS + 1, bytes=e["shard_bytes"])
            e["committed"] = True
        if self.rng.random() < 0.1:
            self.event(job, 0, "restore_start", step)
            self.event(job, 0, "restore_done", step, bytes=e["shard_bytes"], ok=True)
            self.exp.restores[job] = self.exp.restores.get(job, 0) + 1

    # --- what happens to files ------------------------------------------------

    def rotate(self, job, rank):
        self.wait_consumed()
        for _ in range(2):  # after the daemon last caught up, before the rename
            self.event(job, rank, "checkpoint_start", 10_000 + self.seq)
            self.exp.step(job, 10_000 + self.seq - 1)["started"] = True
        n = self.generation[(job, rank)] = self.generation.get((job, rank), 0) + 1
        os.rename(self.path(job, rank), self.path(job, rank) + f".{n}")
        self.ops.append(("rotate", job, rank))
        self.close(job, rank)
        self.open(job, rank)
        self.exp.rotations += 1

    def truncate(self, job, rank):
        self.wait_consumed()
        os.truncate(self.path(job, rank), 0)
        self.ops.append(("truncate", job, rank))
        self.exp.destructive += 1

    def delete(self, job, rank):
        self.wait_consumed()
        self.close(job, rank)
        os.unlink(self.path(job, rank))
        self.ops.append(("delete", job, rank))
        self.open(job, rank)
        self.exp.destructive += 1

    def run(self):
        try:
            for job in JOBS:
                os.makedirs(os.path.join(self.root, job), exist_ok=True)
                for rank in range(RANKS):
                    self.open(job, rank)
            for step in range(1, STEPS + 1):
                for job in JOBS:
                    self.save(job, step * 100)
                if step % 3 == 0:
                    op = (self.rotate, self.truncate, self.delete)[(step // 3) % 3]
                    op(self.rng.choice(JOBS), self.rng.randrange(RANKS))
                time.sleep(0.2)
            for key in list(self.logs):
                self.close(*key)
        except BaseException as e:  # reported by the test thread
            self.error = e


class ExactlyOnceTest(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)

    def config(self, tail_interval):
        tier = self.ws.mkdir("tier")
        logs = self.ws.mkdir("logs")
        return self.ws.write("ckptmon.yml", (
            "global:\n"
            f"  state_dir: {self.ws.path('state')}\n"
            "  scan_interval: 1h\n"
            f"  tail_interval: {tail_interval}\n"
            "tiers:\n" + harness.tier_yaml("rapid", tier) +
            "manifests:\n"
            f"  - {{glob: {json.dumps(os.path.join(logs, '*', 'events*.jsonl'))}, tier: rapid}}\n"
            "integrity: {enabled: false}\n"))

    def test_kill_9_at_random_moments_counts_every_line_once(self):
        rng = random.Random(SEED)
        print(f"seed {SEED} (set CKPTMON_TEST_SEED to repeat)", file=sys.stderr)
        config = self.config("100ms")
        logs = self.ws.path("logs")
        os.makedirs(os.path.join(logs, JOBS[0]), exist_ok=True)
        os.mkfifo(os.path.join(logs, JOBS[0], "events-fifo.jsonl"))  # must not hang anything

        exp = Expected()
        daemons = Daemons(self.ws, config)
        self.addCleanup(lambda: daemons.current and daemons.current.stop())
        writer = Writer(logs, exp, daemons, rng)
        daemons.start()
        writer.start()
        deadline = time.monotonic() + 120
        while writer.is_alive() or daemons.restarts < MIN_RESTARTS:
            self.assertLess(time.monotonic(), deadline, "the test ran out of time")
            time.sleep(rng.uniform(0.05, 0.5))
            daemons.kill()
            daemons.start()
        writer.join()
        if writer.error:
            raise writer.error
        d = daemons.current
        want = exp.total()
        harness.wait_for(lambda: daemons.lines_total() == want, timeout=60,
                         what=f"{want} lines counted")
        print(f"{daemons.restarts} kill -9 restarts, {want} lines, "
              f"{exp.rotations} rotations, {exp.destructive} truncations/deletions",
              file=sys.stderr)

        m = d.scrape()
        for result, n in exp.lines.items():
            self.assertEqual(m.get("ckptmon_manifest_lines_total", result=result), n, result)
        for labels, value in m.samples["ckptmon_manifest_errors_total"]:
            self.assertEqual(value, exp.errors.get(labels["reason"], 0), labels["reason"])
        changes = {l["change"]: v for l, v in m.samples["ckptmon_manifest_file_changes_total"]}
        self.assertEqual(changes["rotated"], exp.rotations)
        # A truncation is seen as one when the log is still open, as a new file
        # (replaced) when ckptmon restarted in between; a deletion as deleted,
        # or as replaced when the re-created log got the same inode.
        self.assertEqual(changes["truncated"] + changes["replaced"] + changes["deleted"],
                         exp.destructive, f"{changes}\n{daemons.history()}\n{writer.ops}")
        self.assertEqual(m.get("ckptmon_manifest_stale_events_total"), 0)
        self.assertEqual(m.get("ckptmon_manifest_refused_files", reason="fifo"), 1)
        self.assertEqual(m.get("ckptmon_manifest_files"), len(JOBS) * RANKS)  # rotated: out of the glob

        rows = d.get("/api/v1/events/checkpoints").json()
        got = {(r["job"], r["step"]): r for r in rows}
        self.assertEqual(set(got), set(exp.steps))
        for key, e in exp.steps.items():
            r = got[key]
            self.assertEqual(r["tier"], "rapid")
            self.assertEqual(r["shards"], e["shards"], key)
            self.assertEqual(r["shard_bytes"], e["shard_bytes"], key)
            self.assertEqual(r["committed"], e["committed"], key)
            self.assertEqual(r["failed"], e["failed"], key)
            if e["shards"]:
                self.assertEqual(r["pauses"], RANKS, key)
        summary = d.get("/api/v1/events/summary").json()
        jobs = {j["job"]: j for j in summary["jobs"]}
        for job in JOBS:
            committed = sum(1 for (j, _), e in exp.steps.items() if j == job and e["committed"])
            self.assertEqual(jobs[job]["committed"], committed, job)
            self.assertEqual(jobs[job]["failures_total"], exp.failures.get(job, 0), job)
            # Every committed save had a start: one duration each, once.
            self.assertEqual(jobs[job]["durations"]["count"], committed, job)
            self.assertEqual(m.get("ckpt_checkpoint_duration_seconds_count", tier="rapid", training_job=job),
                             committed)
            self.assertEqual(m.get("ckpt_checkpoint_failures_total", tier="rapid", training_job=job),
                             exp.failures.get(job, 0))
            saves = sum(1 for (j, s), e in exp.steps.items() if j == job and e["shards"])
            self.assertEqual(jobs[job]["pauses"]["count"], saves, job)
            self.assertLessEqual(len(jobs[job]["slow_ranks"]), 5)
        restores = {r["job"]: r for r in summary["restores"]}
        for job, n in exp.restores.items():
            self.assertEqual(restores[job]["restores"], n, job)
            self.assertEqual(m.get("ckpt_restore_duration_seconds_count", training_job=job), n)

    def test_inotify_wakes_the_tailer_between_polls(self):
        # Polling every hour: only inotify can make these lines show up.
        config = self.config("1h")
        job_dir = self.ws.mkdir("logs", "j")
        d = self.ws.start(harness.Ckptmon(config))
        d.wait_ready()
        with EventLog(os.path.join(job_dir, "events.jsonl"), job="j", raise_errors=True) as log:
            for step in range(5):
                log.checkpoint_start(step)
        harness.wait_for(lambda: d.scrape().get("ckptmon_manifest_lines_total", result="ok") == 5,
                         timeout=30, what="5 lines read after an inotify wake")


if __name__ == "__main__":
    harness.main()
