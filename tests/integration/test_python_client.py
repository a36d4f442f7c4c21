"""The reference writers (clients/python/ckptmon_events.py and `ckptmon emit`)
produce lines that `ckptmon events check` accepts, and concurrent appenders
never split or interleave a line.

Run by CTest with CKPTMON_BIN and CKPTMON_SOURCE_DIR, or by hand from the
source tree after a build (defaults: build/ckptmon, the current directory).
"""

import json
import multiprocessing
import os
import py_compile
import subprocess
import sys
import tempfile
import types
import unittest

import harness

SOURCE = os.environ.get("CKPTMON_SOURCE_DIR", os.getcwd())
BIN = os.environ.get("CKPTMON_BIN", os.path.join(SOURCE, "build", "ckptmon"))
CLIENT_DIR = os.path.join(SOURCE, "clients", "python")
sys.path.insert(0, CLIENT_DIR)
sys.path.insert(0, os.path.join(CLIENT_DIR, "examples"))

import ckptmon_events  # noqa: E402
from ckptmon_events import EventLog  # noqa: E402

SHA = "sha256:" + "ab" * 32


def check(*files):
    return subprocess.run([BIN, "events", "check", *files], capture_output=True, text=True,
                          timeout=60)


def emit(log, event, *args):
    return subprocess.run([BIN, "emit", "--log", log, event, *args], capture_output=True,
                          text=True, timeout=60)


def read_lines(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data.endswith(b"\n"), "log does not end in a newline"
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]


class Clock:
    """A fake clock: 1714564800.5, then one second later on every call."""

    def __init__(self):
        self.t = 1714564800.5

    def __call__(self):
        self.t += 1
        return self.t - 1


class PythonClientTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="ckptmon-pyclient-")
        self.log_path = os.path.join(self.dir.name, "events-rank3.jsonl")

    def tearDown(self):
        self.dir.cleanup()

    def test_every_event_type_is_accepted_by_events_check(self):
        shard = os.path.join(self.dir.name, "__3_0.distcp")
        with open(shard, "wb") as f:
            f.write(b"shard bytes")
        with EventLog(self.log_path, job="llama", rank=3, tier="staging", raise_errors=True,
                      clock=Clock()) as log:
            with log.checkpoint(100):
                with log.pause(100):
                    log.shard_written(100, shard, 11, start_ts=1714564790.25,
                                      checksum=ckptmon_events.sha256_file(shard))
            log.checkpoint_commit(100, files=1, bytes=11)
            log.checkpoint_failed(101, "ENOSPC")
            log.drain_start(100, from_tier="staging", to_tier="rapid")
            log.shard_drained(100, "staging", "rapid", 11, path=shard)
            log.drain_done(100, ok=True)
            log.restore_start(100)
            log.restore_locate_done(100)
            log.restore_read_done(100, bytes=11)
            log.restore_reshard_done(100)
            log.restore_done(100, bytes=11, ok=False)
            log.restore_resume(100)
            log.cleanup(shard, 11, step=50)
            log.emit("model_loaded", 100, extra={"x": 1})  # a type ckptmon does not know
        r = check(self.log_path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, f"{self.log_path}: 17 lines, 16 ok, 1 unknown event type, "
                                   "0 blank, 0 rejected\n")
        self.assertEqual(r.stderr, "")

        lines = read_lines(self.log_path)
        self.assertEqual([l["event"] for l in lines], [
            "checkpoint_start", "pause_start", "shard_written", "pause_end",
            "checkpoint_commit", "checkpoint_failed", "drain_start", "shard_drained",
            "drain_done", "restore_start", "restore_locate_done", "restore_read_done",
            "restore_reshard_done", "restore_done", "restore_resume", "cleanup", "model_loaded"])
        self.assertEqual(sorted(set(l["event"] for l in lines[:16])),
                         sorted(ckptmon_events.EVENT_TYPES))
        for i, l in enumerate(lines):
            self.assertEqual(l["v"], 1)
            self.assertEqual(l["job"], "llama")
            self.assertEqual(l["rank"], 3)
            self.assertEqual(l["tier"], "staging")
            self.assertEqual(l["ts"], 1714564800.5 + i)
        import hashlib
        self.assertEqual(lines[2]["checksum"],
                         "sha256:" + hashlib.sha256(b"shard bytes").hexdigest())
        self.assertEqual(lines[2]["bytes"], 11)
        self.assertEqual(lines[2]["start_ts"], 1714564790.25)
        self.assertEqual(lines[5]["reason"], "ENOSPC")
        self.assertIs(lines[13]["ok"], False)
        self.assertEqual(lines[11]["bytes"], 11)  # restore_read_done, rank 3 (the log's)
        self.assertEqual(lines[15]["step"], 50)

    def test_checkpoint_context_reports_failures(self):
        log = EventLog(self.log_path, job="j", raise_errors=True, clock=Clock())
        with self.assertRaises(OSError):
            with log.checkpoint(7):
                raise OSError("disk on fire")
        log.close()
        lines = read_lines(self.log_path)
        self.assertEqual([l["event"] for l in lines], ["checkpoint_start", "checkpoint_failed"])
        self.assertEqual(lines[1]["reason"], "OSError: disk on fire")
        self.assertEqual(check(self.log_path).returncode, 0)

    def test_writer_errors_warn_once_and_do_not_raise_by_default(self):
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            log = EventLog(os.path.join(self.dir.name, "no", "such", "dir.jsonl"), job="j")
            self.assertFalse(log.pause_start(1))
            self.assertFalse(log.pause_end(1))
        self.assertEqual(len(caught), 1, [str(w.message) for w in caught])
        strict = EventLog(self.log_path, job="j", raise_errors=True)
        with self.assertRaises(ckptmon_events.EventLogError):
            strict.emit("cleanup", path="/p", bytes=float("nan"))
        with self.assertRaises(ckptmon_events.EventLogError):
            strict.emit("cleanup", path="x" * (ckptmon_events.MAX_LINE_BYTES + 1), bytes=1)
        strict.close()
        self.assertFalse(os.path.getsize(self.log_path))

    def test_check_reports_file_line_reason(self):
        good = '{"v":1,"ts":5,"event":"pause_end","job":"j","step":1}\n'
        with open(self.log_path, "w") as f:
            f.write(good + '{"v":1,"ts":5,"event":"pause_end","job":"j"}\n' + good +
                    '{"v":1,"ts":5,"event":"cleanup","job":"j","path":"/p","bytes":-1}\n')
        r = check(self.log_path)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"{self.log_path}:2: missing_field: step: ", r.stderr)
        self.assertIn(f"{self.log_path}:4: bad_value: bytes: ", r.stderr)
        self.assertIn("4 lines, 2 ok, 0 unknown event type, 0 blank, 2 rejected "
                      "(missing_field 1, bad_value 1)", r.stdout)


class EmitTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="ckptmon-emit-")
        self.log = os.path.join(self.dir.name, "events.jsonl")

    def tearDown(self):
        self.dir.cleanup()

    def test_every_event_type_round_trips(self):
        common = ["--job", "llama", "--ts", "2024-05-01T12:00:00Z"]
        calls = [
            ("checkpoint_start", ["--step", "100", "--tier", "staging"]),
            ("pause_start", ["--step", "100"]),
            ("shard_written", ["--step", "100", "--rank", "7", "--path", "/c/__7_0.distcp",
                               "--bytes", "123", "--start-ts", "1714564790.5",
                               "--checksum", "crc32c:DEADBEEF"]),
            ("pause_end", ["--step", "100"]),
            ("checkpoint_commit", ["--step", "100", "--files", "2", "--bytes", "246"]),
            ("checkpoint_failed", ["--step", "101", "--reason", "rank 3 timed out"]),
            ("drain_start", ["--step", "100", "--from-tier", "staging", "--to-tier", "rapid"]),
            ("shard_drained", ["--step", "100", "--from-tier", "staging", "--to-tier", "rapid",
                               "--bytes", "123"]),
            ("drain_done", ["--step", "100", "--ok", "true"]),
            ("restore_start", ["--step", "100"]),
            ("restore_locate_done", ["--step", "100"]),
            ("restore_read_done", ["--step", "100", "--bytes", "123"]),
            ("restore_reshard_done", ["--step", "100"]),
            ("restore_done", ["--step", "100", "--bytes", "246", "--ok", "false"]),
            ("restore_resume", ["--step", "100"]),
            ("cleanup", ["--path", "/c/step-50", "--bytes", "999"]),
        ]
        for event, args in calls:
            r = emit(self.log, event, *common, *args)
            self.assertEqual(r.returncode, 0, f"{event}: {r.stderr}")
        r = check(self.log)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("16 lines, 16 ok, 0 unknown event type, 0 blank, 0 rejected", r.stdout)
        lines = read_lines(self.log)
        self.assertEqual([l["event"] for l in lines], [c[0] for c in calls])
        for l in lines:
            self.assertEqual(l["ts"], 1714564800)  # 2024-05-01T12:00:00Z
            self.assertEqual(l["job"], "llama")
        self.assertEqual(lines[2], {"v": 1, "ts": 1714564800, "event": "shard_written",
                                    "job": "llama", "step": 100, "rank": 7,
                                    "path": "/c/__7_0.distcp", "bytes": 123,
                                    "start_ts": 1714564790.5, "checksum": "crc32c:deadbeef"})
        self.assertIs(lines[8]["ok"], True)
        self.assertIs(lines[13]["ok"], False)
        self.assertEqual(lines[11]["bytes"], 123)
        self.assertEqual(lines[5]["reason"], "rank 3 timed out")

    def test_invalid_events_are_refused_and_nothing_is_written(self):
        for event, args, message in [
            ("shard_written", ["--step", "1", "--rank", "0", "--path", "/p", "--bytes", "1"],
             "missing_field: start_ts"),
            ("checkpoint_start", ["--step", "-1"], "bad_value: step"),
            ("checkpoint_start", ["--step", "one"], "--step"),
            ("cleanup", ["--path", "/p", "--bytes", "1", "--checksum", "md5:00"], "--checksum"),
            ("restore_done", ["--step", "1", "--bytes", "1", "--ok", "maybe"], "--ok"),
            ("checkpoint_begin", ["--step", "1"], "unknown event type"),
        ]:
            r = emit(self.log, event, "--job", "j", *args)
            self.assertEqual(r.returncode, 2, f"{event} {args}: {r.stderr}")
            self.assertIn(message, r.stderr)
        self.assertFalse(os.path.exists(self.log))

    def test_emit_refuses_a_fifo_without_blocking(self):
        fifo = os.path.join(self.dir.name, "events.jsonl")
        os.mkfifo(fifo)
        r = emit(fifo, "pause_end", "--job", "j", "--step", "1")
        self.assertEqual(r.returncode, 1)
        self.assertIn(fifo, r.stderr)

    def test_concurrent_emits_never_interleave(self):
        # Lines longer than PIPE_BUF (4096) and than one page, from many
        # processes at once; O_APPEND plus a single write(2) keeps each whole.
        writers, per_writer = 12, 25
        procs = []
        script = (
            'for i in $(seq 1 {n}); do "$BIN" emit --log "$LOG" cleanup --job "w{w}" '
            '--step "$i" --bytes "$i" --path "/{w}/$i/$PAD" || exit 1; done')
        env = dict(os.environ, BIN=BIN, LOG=self.log)
        for w in range(writers):
            env_w = dict(env, PAD="x" * (3000 + 1500 * (w % 4)))
            procs.append(subprocess.Popen(["/bin/sh", "-c", script.format(n=per_writer, w=w)],
                                          env=env_w))
        for p in procs:
            self.assertEqual(p.wait(timeout=240), 0)
        r = check(self.log)
        self.assertEqual(r.returncode, 0, r.stderr[:2000])
        total = writers * per_writer
        self.assertIn(f"{total} lines, {total} ok,", r.stdout)
        seen = set()
        for l in read_lines(self.log):
            w = l["job"]
            self.assertEqual(l["path"], f"/{w[1:]}/{l['step']}/" + "x" * (3000 + 1500 * (int(w[1:]) % 4)))
            seen.add((w, l["step"]))
        self.assertEqual(len(seen), total)


def _python_writer(path, w, n):
    log = EventLog(path, job=f"py{w}", rank=w, raise_errors=True)
    for i in range(n):
        log.cleanup("/" + str(w) * (2000 + 700 * w), i, step=i)
    log.close()


class ConcurrentPythonWritersTest(unittest.TestCase):
    def test_python_writers_never_interleave(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "shared.jsonl")
            ctx = multiprocessing.get_context("fork")
            procs = [ctx.Process(target=_python_writer, args=(path, w, 300)) for w in range(8)]
            for p in procs:
                p.start()
            for p in procs:
                p.join(120)
                self.assertEqual(p.exitcode, 0)
            r = check(path)
            self.assertEqual(r.returncode, 0, r.stderr[:2000])
            counts = {}
            for l in read_lines(path):
                w = l["rank"]
                self.assertEqual(l["path"], "/" + str(w) * (2000 + 700 * w))
                counts[w] = counts.get(w, 0) + 1
            self.assertEqual(counts, {w: 300 for w in range(8)})


class ExamplesTest(unittest.TestCase):
    """The examples import torch / transformers lazily; here they run against
    small stand-ins that behave like the real APIs they call."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="ckptmon-examples-")
        self.saved_modules = dict(sys.modules)

    def tearDown(self):
        for name in list(sys.modules):
            if name not in self.saved_modules:
                del sys.modules[name]
        self.dir.cleanup()

    def test_examples_compile_and_import_without_torch(self):
        for name in ("dcp_hook.py", "hf_trainer_callback.py"):
            py_compile.compile(os.path.join(CLIENT_DIR, "examples", name), doraise=True,
                               cfile=os.path.join(self.dir.name, name + "c"))
        code = ("import sys; sys.path.insert(0, %r); import dcp_hook, hf_trainer_callback; "
                "assert 'torch' not in sys.modules and 'transformers' not in sys.modules"
                % os.path.join(CLIENT_DIR, "examples"))
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    def install_fake_torch(self, fail=False):
        def save(state_dict, checkpoint_id, **kw):
            if fail:
                raise RuntimeError("NCCL timeout")
            os.makedirs(checkpoint_id, exist_ok=True)
            for n, data in enumerate([b"a" * 10, b"b" * 20]):
                with open(os.path.join(checkpoint_id, f"__0_{n}.distcp"), "wb") as f:
                    f.write(data)
            with open(os.path.join(checkpoint_id, "__1_0.distcp"), "wb") as f:
                f.write(b"c" * 5)  # another rank's shard: not reported by rank 0
            with open(os.path.join(checkpoint_id, ".metadata"), "wb") as f:
                f.write(b"m" * 3)
            return "metadata"

        torch = types.ModuleType("torch")
        dist = types.ModuleType("torch.distributed")
        dist.is_available = lambda: True
        dist.is_initialized = lambda: False
        dcp = types.ModuleType("torch.distributed.checkpoint")
        dcp.save = save
        torch.distributed = dist
        dist.checkpoint = dcp
        sys.modules.update({"torch": torch, "torch.distributed": dist,
                            "torch.distributed.checkpoint": dcp})

    def test_dcp_hook(self):
        import dcp_hook
        self.install_fake_torch()
        log_path = os.path.join(self.dir.name, "events-rank0.jsonl")
        ckpt = os.path.join(self.dir.name, "step-100")
        with EventLog(log_path, job="llama", rank=0, raise_errors=True) as log:
            self.assertEqual(dcp_hook.save_with_events({}, ckpt, 100, log, checksums=True),
                             "metadata")
        r = check(log_path)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = read_lines(log_path)
        self.assertEqual([l["event"] for l in lines],
                         ["checkpoint_start", "pause_start", "pause_end", "shard_written",
                          "shard_written", "checkpoint_commit"])
        self.assertEqual([(l["path"], l["bytes"]) for l in lines[3:5]],
                         [(os.path.join(ckpt, "__0_0.distcp"), 10),
                          (os.path.join(ckpt, "__0_1.distcp"), 20)])
        self.assertTrue(all(l["checksum"].startswith("sha256:") for l in lines[3:5]))
        self.assertEqual((lines[5]["files"], lines[5]["bytes"]), (4, 10 + 20 + 5 + 3))

    def test_dcp_hook_reports_failure(self):
        import dcp_hook
        self.install_fake_torch(fail=True)
        log_path = os.path.join(self.dir.name, "events-rank0.jsonl")
        with EventLog(log_path, job="llama", rank=0, raise_errors=True) as log:
            with self.assertRaises(RuntimeError):
                dcp_hook.save_with_events({}, os.path.join(self.dir.name, "s"), 5, log)
        lines = read_lines(log_path)
        self.assertEqual([l["event"] for l in lines],
                         ["checkpoint_start", "pause_start", "pause_end", "checkpoint_failed"])
        self.assertEqual(lines[-1]["reason"], "RuntimeError: NCCL timeout")
        self.assertEqual(check(log_path).returncode, 0)

    def test_hf_trainer_callback(self):
        transformers = types.ModuleType("transformers")

        class TrainerCallback:  # the real base class only provides no-op hooks
            pass

        transformers.TrainerCallback = TrainerCallback
        sys.modules["transformers"] = transformers
        import hf_trainer_callback

        out = os.path.join(self.dir.name, "out")
        args = types.SimpleNamespace(output_dir=out, process_index=0)
        state = types.SimpleNamespace(global_step=500, is_world_process_zero=True)
        control = types.SimpleNamespace(should_save=False)
        cb = hf_trainer_callback.make_ckptmon_callback("sft", tier="rapid")
        self.assertIsInstance(cb, TrainerCallback)
        cb.on_step_end(args, state, control)  # no save due: nothing written
        control.should_save = True
        cb.on_step_end(args, state, control)
        ckpt = os.path.join(out, "checkpoint-500")
        os.makedirs(ckpt)
        for name, size in [("model.safetensors", 40), ("optimizer.pt", 20),
                           ("trainer_state.json", 2)]:
            with open(os.path.join(ckpt, name), "wb") as f:
                f.write(b"z" * size)
        cb.on_save(args, state, control)
        cb.on_train_end(args, state, control)
        log_path = os.path.join(out, "ckptmon-events-rank0.jsonl")
        r = check(log_path)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = read_lines(log_path)
        self.assertEqual([l["event"] for l in lines],
                         ["checkpoint_start", "pause_start", "pause_end", "shard_written",
                          "shard_written", "shard_written", "checkpoint_commit"])
        self.assertEqual(sorted(l["bytes"] for l in lines[3:6]), [2, 20, 40])
        self.assertEqual((lines[6]["files"], lines[6]["bytes"]), (3, 62))
        self.assertTrue(all(l["tier"] == "rapid" and l["step"] == 500 for l in lines))


if __name__ == "__main__":
    harness.main()
