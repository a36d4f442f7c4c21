#!/usr/bin/env python3
"""Generates a PyTorch-DCP-shaped checkpoint tree for the scan benchmark.

OUT/<job>/step-<N>/__<rank>_<k>.distcp (+ .metadata), zero-filled sparse files.
Default: 4 jobs x 25 checkpoints x 1024 ranks x 2 files = 204,800 shard files.
"""
import argparse
import os
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--checkpoints", type=int, default=25)
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--files-per-rank", type=int, default=2)
    ap.add_argument("--shard-bytes", type=int, default=64 * 1024 * 1024)
    a = ap.parse_args()
    t0 = 1_700_000_000
    n = 0
    for j in range(a.jobs):
        for c in range(a.checkpoints):
            step = (c + 1) * 1000
            d = os.path.join(a.out, f"job-{j}", f"step-{step}")
            os.makedirs(d, exist_ok=True)
            ts = t0 + c * 3600
            for r in range(a.ranks):
                for k in range(a.files_per_rank):
                    p = os.path.join(d, f"__{r}_{k}.distcp")
                    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                    os.ftruncate(fd, a.shard_bytes)
                    os.close(fd)
                    os.utime(p, (ts + r * 0.01, ts + r * 0.01))
                    n += 1
            m = os.path.join(d, ".metadata")
            with open(m, "wb") as f:
                f.write(b"\0" * 4096)
            os.utime(m, (ts + 60, ts + 60))
    print(f"{n} shard files under {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
