"""Checkpoint event log writer for ckptmon (schema v1, docs/events.md).

Standard library only: copy this file next to a training script if that is
easier than installing it. Each event is one JSON line, appended with a single
os.write() on a descriptor opened with O_APPEND, so lines from several
processes on the same host never interleave.

Use one log per rank (or per node), e.g. ``events-rank{rank}.jsonl``: O_APPEND
is only atomic among writers on one host. Clients of a network file system
(NFS, and Lustre or GPFS across nodes) each compute "the end of the file"
themselves, so two nodes appending to one shared file can overwrite or split
each other's lines.

    log = EventLog(f"/lustre/ckpt/llama/events-rank{rank}.jsonl", job="llama", rank=rank)
    log.checkpoint_start(step=1000)
    with log.pause(step=1000):
        t0 = time.time()
        save_shard(path)
    log.shard_written(step=1000, path=path, bytes=os.path.getsize(path), start_ts=t0,
                      checksum=sha256_file(path))
    log.checkpoint_commit(step=1000, files=64, bytes=total)

By default a failure to write an event warns once and never raises: a
monitoring hook must not stop training. Pass ``raise_errors=True`` to get
exceptions instead (tests do).

Checksums are "algo:hex" with algo crc32c, sha256 or xxh64. Only sha256 is in
the standard library (``sha256_file``); for crc32c or xxh64 compute the digest
with a package you already have (for example ``crc32c.crc32c(data)`` or
``xxhash.xxh64_hexdigest(data)``) and pass ``checksum="crc32c:%08x" % value``
or ``checksum="xxh64:" + hexdigest``.
"""

import contextlib
import hashlib
import json
import os
import stat
import time
import warnings

SCHEMA_VERSION = 1
# ckptmon skips (and counts) longer lines; the newline is not counted.
MAX_LINE_BYTES = 64 * 1024

EVENT_TYPES = (
    "checkpoint_start",
    "shard_written",
    "checkpoint_commit",
    "checkpoint_failed",
    "pause_start",
    "pause_end",
    "drain_start",
    "shard_drained",
    "drain_done",
    "restore_start",
    "restore_locate_done",
    "restore_read_done",
    "restore_reshard_done",
    "restore_done",
    "restore_resume",
    "cleanup",
)


class EventLogError(RuntimeError):
    """An event could not be written (only raised with raise_errors=True)."""


class EventLog:
    """Appends schema-v1 events to one log file. Safe to share between threads
    and forked processes (every event is a single os.write)."""

    def __init__(self, path, job, *, tier=None, rank=None, raise_errors=False, fsync=False,
                 clock=time.time):
        self.path = os.fspath(path)
        self.job = job
        self.tier = tier
        self.rank = rank
        self.raise_errors = raise_errors
        self.fsync = fsync
        self._clock = clock
        self._warned = False
        self._fd = None
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        try:
            self._fd = os.open(self.path, flags, 0o644)
        except OSError as e:
            self._fail(f"cannot open {self.path}: {e}")

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def emit(self, event, step=None, *, ts=None, **fields):
        """Writes one event. Fields that are None are left out. Returns True
        when the line was written."""
        record = {"v": SCHEMA_VERSION, "ts": self._clock() if ts is None else ts,
                  "event": event, "job": self.job}
        if step is not None:
            record["step"] = step
        if self.tier is not None and "tier" not in fields:
            record["tier"] = self.tier
        if self.rank is not None and "rank" not in fields:
            record["rank"] = self.rank
        for key, value in fields.items():
            if value is not None:
                record[key] = value
        try:
            line = json.dumps(record, separators=(",", ":"), ensure_ascii=False,
                              allow_nan=False) + "\n"
            data = line.encode("utf-8")
        except (TypeError, ValueError) as e:
            return self._fail(f"cannot encode {event}: {e}")
        if len(data) - 1 > MAX_LINE_BYTES:
            return self._fail(f"{event} line is {len(data) - 1} bytes, over {MAX_LINE_BYTES}")
        if self._fd is None:
            return self._fail(f"{self.path} is not open")
        try:
            written = os.write(self._fd, data)  # one write(2): one whole line
            if self.fsync:
                os.fsync(self._fd)
        except OSError as e:
            return self._fail(f"cannot write to {self.path}: {e}")
        if written != len(data):
            return self._fail(f"short write to {self.path}: {written} of {len(data)} bytes")
        return True

    def _fail(self, message):
        if self.raise_errors:
            raise EventLogError(message)
        if not self._warned:
            self._warned = True
            warnings.warn(f"ckptmon events: {message} (further errors are not reported)")
        return False

    # One helper per event type; the arguments are the fields the schema requires.

    def checkpoint_start(self, step, **kw):
        return self.emit("checkpoint_start", step, **kw)

    def shard_written(self, step, path, bytes, start_ts, *, rank=None, checksum=None, **kw):
        rank = self.rank if rank is None else rank
        return self.emit("shard_written", step, path=os.fspath(path), bytes=bytes,
                         start_ts=start_ts, rank=rank, checksum=checksum, **kw)

    def checkpoint_commit(self, step, files, bytes, **kw):
        return self.emit("checkpoint_commit", step, files=files, bytes=bytes, **kw)

    def checkpoint_failed(self, step, reason, **kw):
        return self.emit("checkpoint_failed", step, reason=str(reason), **kw)

    def pause_start(self, step, **kw):
        return self.emit("pause_start", step, **kw)

    def pause_end(self, step, **kw):
        return self.emit("pause_end", step, **kw)

    def drain_start(self, step, *, from_tier=None, to_tier=None, **kw):
        return self.emit("drain_start", step, from_tier=from_tier, to_tier=to_tier, **kw)

    def shard_drained(self, step, from_tier, to_tier, bytes, **kw):
        return self.emit("shard_drained", step, from_tier=from_tier, to_tier=to_tier,
                         bytes=bytes, **kw)

    def drain_done(self, step, **kw):
        return self.emit("drain_done", step, **kw)

    def restore_start(self, step, **kw):
        return self.emit("restore_start", step, **kw)

    def restore_locate_done(self, step, **kw):
        return self.emit("restore_locate_done", step, **kw)

    def restore_read_done(self, step, *, bytes=None, **kw):
        """One rank has read its shards (rank: the log's, or rank=...)."""
        return self.emit("restore_read_done", step, bytes=bytes, **kw)

    def restore_reshard_done(self, step, **kw):
        return self.emit("restore_reshard_done", step, **kw)

    def restore_done(self, step, bytes, ok, **kw):
        return self.emit("restore_done", step, bytes=bytes, ok=bool(ok), **kw)

    def restore_resume(self, step, **kw):
        return self.emit("restore_resume", step, **kw)

    def cleanup(self, path, bytes, *, step=None, **kw):
        return self.emit("cleanup", step, path=os.fspath(path), bytes=bytes, **kw)

    @contextlib.contextmanager
    def pause(self, step, **kw):
        """pause_start on entry, pause_end on exit (also when the body raises)."""
        self.pause_start(step, **kw)
        try:
            yield self
        finally:
            self.pause_end(step, **kw)

    @contextlib.contextmanager
    def checkpoint(self, step, **kw):
        """checkpoint_start on entry; checkpoint_failed if the body raises (the
        exception propagates). Commit explicitly with checkpoint_commit."""
        self.checkpoint_start(step, **kw)
        try:
            yield self
        except BaseException as e:
            self.checkpoint_failed(step, f"{type(e).__name__}: {e}", **kw)
            raise


def sha256_file(path, bufsize=1 << 20):
    """'sha256:<hex>' of a file's contents. Reads the whole file: on large
    shards this costs a full read, so do it off the training critical path."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            block = f.read(bufsize)
            if not block:
                break
            h.update(block)
    return "sha256:" + h.hexdigest()


def sha256_bytes(data):
    """'sha256:<hex>' of a bytes-like object already in memory."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def dir_totals(path):
    """(files, bytes) of the regular files under a checkpoint directory."""
    files = total = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            try:
                st = os.stat(os.path.join(root, name), follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                files += 1
                total += st.st_size
    return files, total
