#!/usr/bin/env python3
"""clang-tidy over a build's translation units, skipping those it passed before.

make lint and make check run it (scripts/lint.sh). A translation unit is
skipped when clang-tidy passed it before on exactly the same input: the key
is a SHA-256 of the clang-tidy version, every .clang-tidy file, the unit's
compile command (paths under the source and build trees written relative to
them, so a fresh clone elsewhere finds the same keys) and the content of
every file the unit includes, as the build's dependency log (ninja -t deps)
lists them. So a change to a header re-checks every unit that includes it,
and only those. Only passes are remembered; a unit with findings is checked
again every time. A unit the build has not compiled yet (no dependency
record, or a stale one) is always checked.

Usage: tidy_cached.py BUILD_DIR JOBS REGEX [--tidy PATH] [--cache DIR]
The cache lives in $CKPTMON_TIDY_CACHE, else $XDG_CACHE_HOME/ckptmon/clang-tidy,
else ~/.cache/ckptmon/clang-tidy. CKPTMON_TIDY_CACHE=off checks every unit.
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import time


def ninja_deps(build):
    """output (relative to BUILD) -> list of dependency paths, VALID records only."""
    out = subprocess.run(["ninja", "-C", build, "-t", "deps"], capture_output=True, text=True)
    deps, cur = {}, None
    for line in out.stdout.splitlines():
        if not line.strip():
            cur = None
            continue
        if not line.startswith(" "):
            m = re.match(r"^(.*): #deps \d+, deps mtime \d+ \((\w+)\)$", line)
            cur = None
            if m and m.group(2) == "VALID":
                cur = m.group(1)
                deps[cur] = []
            continue
        if cur is not None:
            deps[cur].append(line.strip())
    return deps


def output_of(entry):
    """The object file a compile_commands.json entry writes (its -o argument)."""
    args = entry.get("arguments") or shlex.split(entry.get("command", ""))
    for i, arg in enumerate(args[:-1]):
        if arg == "-o":
            return args[i + 1]
    return None


class Hasher:
    def __init__(self, src, build):
        self.src, self.build, self.memo = src, build, {}

    def rel(self, text):
        return text.replace(self.build, "<build>").replace(self.src, "<src>")

    def file(self, path):
        h = self.memo.get(path)
        if h is None:
            try:
                with open(path, "rb") as f:
                    h = hashlib.sha256(f.read()).hexdigest()
            except OSError:
                h = "missing"
            self.memo[path] = h
        return h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("jobs", type=int)
    ap.add_argument("regex")
    ap.add_argument("--tidy", default="clang-tidy")
    ap.add_argument("--cache", default=None)
    a = ap.parse_args()

    src = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
    build = os.path.realpath(a.build)
    cache = a.cache or os.environ.get("CKPTMON_TIDY_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ckptmon", "clang-tidy")
    use_cache = cache != "off"
    if use_cache:
        os.makedirs(cache, exist_ok=True)

    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = [e for e in json.load(f) if re.search(a.regex, e["file"])]
    version = subprocess.run([a.tidy, "--version"], capture_output=True, text=True).stdout
    configs = subprocess.run(["git", "-C", src, "ls-files", "-z", "*.clang-tidy", ".clang-tidy"],
                             capture_output=True, text=True).stdout.split("\0")
    hasher = Hasher(src, build)
    base = hashlib.sha256(version.encode())
    for c in sorted(x for x in configs if x):
        base.update(c.encode() + hasher.file(os.path.join(src, c)).encode())
    deps = ninja_deps(build) if use_cache else {}

    todo, cached = [], 0
    for e in entries:
        key = None
        out = e.get("output") or output_of(e)
        if out is not None and out in deps:
            h = base.copy()
            h.update(hasher.rel(e.get("command") or " ".join(e.get("arguments", []))).encode())
            for d in sorted(deps[out]):
                p = d if os.path.isabs(d) else os.path.normpath(os.path.join(build, d))
                h.update(hasher.rel(p).encode() + b"\0" + hasher.file(p).encode())
            key = h.hexdigest()
            if os.path.exists(os.path.join(cache, key)):
                cached += 1
                continue
        todo.append((e["file"], key))

    print(f"lint: clang-tidy: {len(entries)} units, {cached} passed before with the same input,"
          f" {len(todo)} to check (-j {a.jobs})", flush=True)

    def check(item):
        path, key = item
        r = subprocess.run([a.tidy, "-quiet", "-p", build, path], capture_output=True, text=True)
        text = r.stdout + r.stderr
        ok = r.returncode == 0 and not re.search(r"(warning|error):", r.stdout)
        if ok and key and use_cache:
            tmp = os.path.join(cache, f".{key}.{os.getpid()}")
            with open(tmp, "w") as f:
                f.write(os.path.relpath(path, src) + "\n")
            os.replace(tmp, os.path.join(cache, key))
        return path, ok, text

    failed = []
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        for path, ok, text in pool.map(check, todo):
            if not ok:
                failed.append(path)
                sys.stderr.write(text)
    if failed:
        print(f"lint: clang-tidy found problems in {len(failed)} units:", file=sys.stderr)
        for p in failed:
            print(f"  {os.path.relpath(p, src)}", file=sys.stderr)
        return 1
    print(f"lint: clang-tidy checked {len(todo)} units in {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
