"""Shared code for the integration tests: run the real ckptmon binary.

Python 3 standard library only. Each test_*.py is one CTest test that runs
with CKPTMON_BIN (the binary under test) and CKPTMON_SOURCE_DIR in its
environment. Everything a test starts or mounts is registered here and torn
down in reverse order, also when the test fails.
"""

import atexit
import http.client
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

SOURCE_DIR = os.environ.get(
    "CKPTMON_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BIN = os.environ.get("CKPTMON_BIN", os.path.join(SOURCE_DIR, "build", "ckptmon"))
HERE = os.path.dirname(os.path.abspath(__file__))


# --- prerequisites -------------------------------------------------------------
#
# Two kinds of skip. A missing *peer* (the ckptmon binary, a Debian package
# that `make test` installs, the fake NVML library it builds) is a skip on a
# developer's machine but a failure under CI (CI=true), where `make test` has
# installed or built it, so a broken install step cannot pass as green. A
# missing *capability* of the machine (root, /dev/fuse, loop devices) is a
# skip everywhere. Either way main() below makes the file exit 77, which
# CTest reports as skipped (SKIP_RETURN_CODE), not as passed.

def skip_peer(reason):
    """Skips (or, under CI, fails) a test whose peer is missing."""
    if os.environ.get("CI") == "true":
        raise AssertionError(f"{reason}: make test installs or builds it, so under CI=true "
                             "this is a failure, not a skip")
    raise unittest.SkipTest(reason)


def skip_machine(reason):
    """Skips a test this machine cannot run (no root, no /dev/fuse...)."""
    raise unittest.SkipTest(reason)


def require_binary():
    if not os.access(BIN, os.X_OK):
        skip_peer(f"ckptmon binary not found at {BIN} (set CKPTMON_BIN)")


def require_root(what):
    if os.geteuid() != 0:
        skip_machine(f"{what} needs root")


def require_executable(path, package):
    if not os.access(path, os.X_OK):
        skip_peer(f"{path} is missing (Debian package {package})")


def require_fuse():
    require_root("mounting a FUSE file system")
    if not os.path.exists("/dev/fuse"):
        skip_machine("/dev/fuse is missing")
    try:
        import fusepy  # noqa: F401
    except ImportError:
        skip_peer("python3 module fusepy is missing (Debian package python3-fusepy)")


def main():
    """Runs the file's tests (unittest) and exits as CTest reads it: 1 if any
    failed, 77 (skipped) if any was skipped, with the reasons, 0 otherwise."""
    import sys
    prog = unittest.main(verbosity=2, exit=False)
    result = prog.result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.testsRun == 0:
        print("no test ran", file=sys.stderr)
        sys.exit(1)
    if result.skipped:
        for test, why in result.skipped:
            print(f"SKIPPED {test.id()}: {why}", file=sys.stderr)
        sys.exit(77)
    sys.exit(0)


# --- waiting -------------------------------------------------------------------

def wait_for(pred, timeout=20.0, interval=0.02, what="condition"):
    """Polls `pred` until it returns a truthy value, which is returned.

    The timeout only turns a bug into a failure instead of a hang; no test
    asserts how long anything took.
    """
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago (for programs that
    cannot listen on port 0 and report back, such as node_exporter)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- HTTP and the exposition format --------------------------------------------

class Reply:
    def __init__(self, status, headers, body, seconds):
        self.status = status
        self.headers = headers
        self.body = body
        self.seconds = seconds

    def text(self):
        return self.body.decode("utf-8")

    def json(self):
        return json.loads(self.body)


def http_request(port, path, method="GET", body=None, timeout=5.0, host="127.0.0.1"):
    """One request on a fresh connection. Raises on a network error or when
    no answer came within `timeout` seconds."""
    start = time.monotonic()
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, path, body=body)
        r = conn.getresponse()
        data = r.read()
        return Reply(r.status, dict(r.getheaders()), data, time.monotonic() - start)
    finally:
        conn.close()


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?$')
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')


def _unescape_label(v):
    out = []
    i = 0
    while i < len(v):
        c = v[i]
        if c == "\\" and i + 1 < len(v):
            n = v[i + 1]
            out.append({"n": "\n", "\\": "\\", '"': '"'}.get(n, "\\" + n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


class Metrics:
    """A parsed text exposition: samples by name, each a (labels, value) pair."""

    def __init__(self, text):
        self.text = text
        self.samples = {}
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            m = _SAMPLE.match(line)
            if not m:
                raise ValueError(f"cannot parse sample line: {line!r}")
            name, _, labels_text, value = m.group(1), m.group(2), m.group(3), m.group(4)
            labels = {}
            if labels_text:
                pos = 0
                while pos < len(labels_text):
                    lm = _LABEL.match(labels_text, pos)
                    if not lm:
                        raise ValueError(f"cannot parse labels in: {line!r}")
                    labels[lm.group(1)] = _unescape_label(lm.group(2))
                    pos = lm.end()
            self.samples.setdefault(name, []).append((labels, float(value)))

    def get(self, name, **labels):
        """The value of the one sample of `name` whose labels include `labels`,
        or None. Fails when several match."""
        found = [v for l, v in self.samples.get(name, [])
                 if all(l.get(k) == want for k, want in labels.items())]
        if len(found) > 1:
            raise AssertionError(f"{name}{labels} matches {len(found)} samples")
        return found[0] if found else None

    def labels_of(self, name, **labels):
        return [l for l, _ in self.samples.get(name, [])
                if all(l.get(k) == want for k, want in labels.items())]


def scrape(port, timeout=5.0):
    r = http_request(port, "/metrics", timeout=timeout)
    if r.status != 200:
        raise AssertionError(f"/metrics answered {r.status}: {r.text()[:200]}")
    return Metrics(r.text())


# --- the daemon ----------------------------------------------------------------

class Process:
    """A child process whose stdout and stderr are collected by threads, so
    its pipes never fill up and a test can wait for a line."""

    def __init__(self, argv, env=None):
        self.argv = argv
        self.lines = {"stdout": [], "stderr": []}
        self._cv = threading.Condition()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, env=env)
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, "stdout"), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, "stderr"), daemon=True),
        ]
        for t in self._readers:
            t.start()

    def _read(self, pipe, name):
        for raw in iter(pipe.readline, b""):
            with self._cv:
                self.lines[name].append(raw.decode("utf-8", "replace").rstrip("\n"))
                self._cv.notify_all()
        pipe.close()

    def wait_line(self, pattern, stream="stderr", timeout=20.0):
        """The first match of regex `pattern` in a line of `stream`."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                for line in self.lines[stream]:
                    m = rx.search(line)
                    if m:
                        return m
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._readers_alive()):
                    raise AssertionError(
                        f"no line matching {pattern!r} on {stream} of {self.argv[:2]}; "
                        f"exit status {self.proc.poll()}; output:\n{self.output()}")
                self._cv.wait(min(left, 0.1))

    def _readers_alive(self):
        return any(t.is_alive() for t in self._readers)

    def output(self):
        with self._cv:
            return "\n".join(self.lines["stdout"] + self.lines["stderr"])

    def wait(self, timeout):
        """Exit status; raises subprocess.TimeoutExpired."""
        rc = self.proc.wait(timeout=timeout)
        for t in self._readers:
            t.join(timeout=5)
        return rc

    def stop(self):
        """Ends the process if it still runs: SIGTERM, then SIGKILL."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        for t in self._readers:
            t.join(timeout=5)


class Ckptmon(Process):
    """`ckptmon serve` on 127.0.0.1:0; `port` is read back from its log."""

    def __init__(self, config_file, extra_args=(), serve_args=()):
        super().__init__([BIN, *extra_args, "serve", "--config.file", config_file,
                          "--web.listen-address", "127.0.0.1:0", *serve_args])
        try:
            m = self.wait_line(r"msg=listening .*\bport=(\d+)")
        except BaseException:
            self.stop()
            raise
        self.port = int(m.group(1))

    def scrape(self, timeout=5.0):
        return scrape(self.port, timeout)

    def get(self, path, method="GET", body=None, timeout=5.0):
        return http_request(self.port, path, method=method, body=body, timeout=timeout)

    def wait_ready(self, timeout=20.0):
        wait_for(lambda: self.get("/-/ready").status == 200, timeout=timeout, what="/-/ready")


PROMETHEUS = "/usr/bin/prometheus"


class Prometheus(Process):
    """Debian's Prometheus on a free port of 127.0.0.1 with `config_file`
    and its TSDB in `tsdb`; `extra_args` go before the listen address. The
    caller checks require_executable(PROMETHEUS, "prometheus") first."""

    def __init__(self, config_file, tsdb, extra_args=()):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        super().__init__([PROMETHEUS, f"--config.file={config_file}",
                          f"--storage.tsdb.path={tsdb}", *extra_args,
                          f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"])

    def ready(self):
        """Whether /-/ready answers 200 (False while not listening yet)."""
        try:
            return http_request(self.port, "/-/ready", timeout=2).status == 200
        except OSError:
            return False

    def api(self, path, timeout=5.0, **params):
        """The `data` of a successful HTTP API answer; None while not
        listening yet, on an error status or a failed query."""
        q = f"{path}?{urllib.parse.urlencode(params)}" if params else path
        try:
            r = http_request(self.port, q, timeout=timeout)
        except OSError:
            return None
        if r.status != 200:
            return None
        body = r.json()
        return body["data"] if body.get("status") == "success" else None

    def query(self, expr, timeout=5.0):
        """The result list of an instant query of `expr`, or None as api()."""
        data = self.api("/api/v1/query", timeout=timeout, query=expr)
        return None if data is None else data["result"]


NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"


def start_node_exporter(ws, collector_args):
    """Debian's node_exporter with `collector_args` on 127.0.0.1, started
    under `ws`; returns its port. It cannot listen on port 0 and say which
    port it got, so a free one is picked, and another tried (5 in all) if a
    process takes it first."""
    p = None
    for _ in range(5):
        port = free_port()
        p = ws.start(Process([NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{port}",
                              *collector_args]))

        def answers():
            if p.proc.poll() is not None:
                return "exited"
            try:
                return "up" if http_request(port, "/metrics").status == 200 else None
            except OSError:
                return None
        if wait_for(answers, what="node_exporter to answer") == "up":
            return port
    raise AssertionError(f"node_exporter did not start: {p.output()}")


def emit(log, event, step, ts, *extra, job="llama"):
    """`ckptmon emit` one event of `job` at unix time `ts` to `log`."""
    run([BIN, "emit", "--log", log, "--job", job, "--step", str(step), "--ts", repr(ts), *extra,
         event])


def gpu_config(ws, gpu):
    """A daemon configuration for the GPU tests: one staging tier whose event
    logs are ws/events/*.jsonl, plus `gpu` (the YAML of the gpu: section).
    Returns (config text, the event log to emit to)."""
    tier = ws.mkdir("staging")
    log = ws.path("events", "llama.jsonl")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    return (config_yaml([tier_yaml("staging", tier, role="staging")]) +
            f"manifests:\n  - {{glob: \"{ws.path('events')}/*.jsonl\", tier: staging}}\n" + gpu,
            log)


def tier_yaml(name, path, role="rapid", drains_to=None):
    extra = f", drains_to: {drains_to}" if drains_to else ""
    return f"  - {{name: {name}, path: {json.dumps(path)}, role: {role}{extra}}}\n"


_STATE_DIRS = []


def _remove_state_dirs():
    for d in _STATE_DIRS:
        shutil.rmtree(d, ignore_errors=True)


atexit.register(_remove_state_dirs)


def config_yaml(tiers, scan_interval="500ms", probe_timeout="2s", state_dir=None):
    """`tiers`: lines from tier_yaml(). Without `state_dir`, a fresh one per
    call: tests never share a state database."""
    if state_dir is None:
        state_dir = tempfile.mkdtemp(prefix="ckptmon-state-")
        _STATE_DIRS.append(state_dir)
    return ("global:\n"
            f"  state_dir: {state_dir}\n"
            f"  scan_interval: {scan_interval}\n"
            f"  probe_timeout: {probe_timeout}\n"
            "tiers:\n" + "".join(tiers))


# --- mounts and cleanup --------------------------------------------------------

def foreign_state_dirs(ws):
    """Two state directories `plan` and `report` must refuse: one whose
    ckptmon.db is not SQLite, one whose schema (99) is newer than any
    ckptmon. Returns (not_sqlite, newer)."""
    junk = ws.mkdir("junk")
    with open(os.path.join(junk, "ckptmon.db"), "wb") as f:
        f.write(b"this is not sqlite at all, just bytes" * 100)
    newer = ws.mkdir("newer")
    db = sqlite3.connect(os.path.join(newer, "ckptmon.db"))
    db.execute("PRAGMA user_version = 99")
    db.execute("CREATE TABLE checkpoints(x)")
    db.commit()
    db.close()
    return junk, newer


def run(argv, check=True, timeout=60):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {r.returncode}: {r.stderr.strip()}")
    return r


def mount_points():
    """Mount points in this process's mount table, escapes decoded."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split(" ")
            if len(fields) > 4:
                out.append(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4]))
    return out


def mounted(path):
    """True when `path` is a mount point (without touching the path itself,
    which may be a stuck mount)."""
    return os.path.abspath(path) in mount_points()


def unmount(path):
    """Unmounts everything stacked on `path`; lazily when a plain unmount fails
    (e.g. a process still holds a descriptor on a stuck FUSE mount)."""
    for _ in range(8):
        if not mounted(path):
            return
        r = run(["umount", path], check=False)
        if r.returncode != 0:
            if shutil.which("fusermount") and run(["fusermount", "-u", path], check=False).returncode == 0:
                continue
            run(["umount", "-l", path], check=False)


def mount_fuse(ws, script, args, mountpoint):
    """Starts tests/integration/`script` (a fusepy file system) with `args`,
    mounted on `mountpoint`; the workspace unmounts it, then stops it, at
    close. Fails the test when it does not mount. Returns the Process."""
    fs = Process([sys.executable, os.path.join(HERE, script), *args])
    ws.on_close(fs.stop)
    ws.on_close(lambda: unmount(mountpoint))
    wait_for(lambda: mounted(mountpoint) or fs.proc.poll() is not None,
             what=f"the FUSE mount of {script}")
    if not mounted(mountpoint):
        raise AssertionError(f"{script} did not mount:\n{fs.output()}")
    return fs


class Workspace:
    """A temporary directory plus everything started or mounted in it, undone
    in reverse order by close(). Use from setUp/tearDown or addCleanup."""

    def __init__(self, prefix="ckptmon-it-"):
        self.dir = os.path.realpath(tempfile.mkdtemp(prefix=prefix))
        self._undo = []

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def mkdir(self, *parts):
        p = self.path(*parts)
        os.makedirs(p, exist_ok=True)
        return p

    def write(self, rel, text):
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        return p

    def on_close(self, fn):
        self._undo.append(fn)

    def mount_tmpfs(self, rel, options):
        p = self.mkdir(rel)
        run(["mount", "-t", "tmpfs", "-o", options, "ckptmon-test", p])
        self.on_close(lambda: unmount(p))
        return p

    def mount_loop_ext4(self, rel, size_mb, mkfs_options=()):
        """An ext4 file system made on a loop device over an image in the
        workspace and mounted at `rel` (as root); (device, mount point).
        Skips where loop devices are impossible; the tools missing is a
        missing peer (make test installs them)."""
        for tool, pkg in (("losetup", "mount"), ("mkfs.ext4", "e2fsprogs")):
            if shutil.which(tool) is None:
                skip_peer(f"{tool} is missing (Debian package {pkg})")
        if not os.path.exists("/dev/loop-control"):
            skip_machine("loop devices are impossible here: /dev/loop-control is missing")
        image = self.path(rel + ".img")
        with open(image, "wb") as f:
            f.truncate(size_mb * 1024 * 1024)
        r = run(["losetup", "--find", "--show", image], check=False)
        if r.returncode != 0:
            skip_machine(f"loop devices are impossible here: losetup: {r.stderr.strip()}")
        loop = r.stdout.strip()
        self.on_close(lambda: run(["losetup", "-d", loop], check=False))
        run(["mkfs.ext4", "-q", "-F", *mkfs_options, loop])
        mnt = self.mkdir(rel)
        run(["mount", "-t", "ext4", loop, mnt])
        self.on_close(lambda: unmount(mnt))
        return loop, mnt

    def bind_readonly(self, src, rel):
        p = self.mkdir(rel)
        run(["mount", "--bind", src, p])
        self.on_close(lambda: unmount(p))
        run(["mount", "-o", "remount,bind,ro", p])
        return p

    def start(self, process):
        self.on_close(process.stop)
        return process

    def ckptmon(self, config_text, name="ckptmon.yml", extra_args=()):
        cfg = self.write(name, config_text)
        return self.start(Ckptmon(cfg, extra_args))

    def close(self):
        errors = []
        while self._undo:
            fn = self._undo.pop()
            try:
                fn()
            except Exception as e:  # keep undoing the rest
                errors.append(e)
        # Never recurse into something still mounted.
        if not any(mp == self.dir or mp.startswith(self.dir + "/") for mp in mount_points()):
            shutil.rmtree(self.dir, ignore_errors=True)
        if errors:
            raise errors[0]


class TwoTierTest(unittest.TestCase):
    """A test case with a workspace (self.ws, closed after the test) holding
    two empty tier directories, self.a and self.b."""

    def setUp(self):
        require_binary()
        self.ws = Workspace()
        self.addCleanup(self.ws.close)
        self.a = self.ws.mkdir("a")
        self.b = self.ws.mkdir("b")
