#!/usr/bin/env python3
"""make check's choice of unit tests: the layers a change touched, and those above them.

Compares every tracked or untracked (not ignored) file with STAMP, the file
hashes recorded by the last make check that passed, and prints the layers
whose unit tests must run, one per line: the layer of each changed file and
every layer that may include it (cmake/check_layers.py's table). A changed
unit test runs its own layer (BUILD_ASAN/unit_test_layers.txt); a change to
anything the build reads that is not a layer's (CMakeLists.txt, cmake/,
a test helper header or fixture, the fake NVML library, scripts/) runs every
layer; docs, deployment files, bench/, fuzz/ and the integration tests run none (make check runs every integration test anyway).
No stamp: every layer.

Usage: touched_layers.py STAMP UNIT_TEST_LAYERS    (prints the layers)
       touched_layers.py STAMP --record            (records the tree as passed)
"""
import os
import subprocess
import sys

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "cmake"))
import check_layers  # noqa: E402


def tree_hashes():
    files = subprocess.run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard", "-z"],
                           capture_output=True, text=True, check=True).stdout.split("\0")
    files = [f for f in files if f and os.path.isfile(os.path.join(ROOT, f))]
    out = subprocess.run(["git", "-C", ROOT, "hash-object", "--stdin-paths"], input="\n".join(files),
                         capture_output=True, text=True, check=True).stdout.split()
    return dict(zip(files, out))


def main():
    stamp = sys.argv[1]
    now = tree_hashes()
    if sys.argv[2] == "--record":
        with open(stamp + ".tmp", "w") as f:
            for k in sorted(now):
                f.write(f"{now[k]} {k}\n")
        os.replace(stamp + ".tmp", stamp)
        return 0
    layers = check_layers.LAYERS
    if not os.path.exists(stamp):
        print("\n".join(layers))
        return 0
    before = {}
    with open(stamp) as f:
        for line in f:
            h, _, path = line.rstrip("\n").partition(" ")
            before[path] = h
    changed = {p for p in set(now) | set(before) if now.get(p) != before.get(p)}
    test_layer = {}
    if os.path.exists(sys.argv[2]):
        with open(sys.argv[2]) as f:
            for line in f:
                path, _, layer = line.strip().partition(" ")
                test_layer[path] = layer
    touched = set()
    for p in changed:
        top = check_layers.layer_of(p)
        if top is not None:
            touched.add(top)
        elif p in test_layer:
            touched.add(test_layer[p])
        elif p.endswith(".md") or p.startswith(("docs/", "tests/integration/", "grafana/", "deploy/",
                                                 "clients/", "packaging/", "systemd/", ".ci/",
                                                 "bench/", "fuzz/")):
            continue
        else:
            touched.update(layers)
    above = {l for l in layers for t in touched if t in check_layers.ALLOWED[l]}
    print("\n".join(l for l in layers if l in above))
    return 0


if __name__ == "__main__":
    sys.exit(main())
