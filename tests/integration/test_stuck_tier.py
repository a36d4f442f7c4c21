#!/usr/bin/python3
"""A tier whose statfs hangs never delays a scrape, is marked down, comes back,
and does not keep the daemon from stopping.

The stuck tier is a FUSE file system (blockfs.py) whose statfs blocks while a
control file outside the mount exists: the same thing a hung NFS or Lustre
mount does to statvfs().
"""

import os
import signal
import statistics
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

# Every scrape must come back within this; it guards liveness, it is not a
# latency assertion (the measured figures are printed).
SCRAPE_TIMEOUT = 2.0


class StuckTier(unittest.TestCase):
    WORKER_THREADS = None  # the default pool
    def setUp(self):
        harness.require_binary()
        harness.require_fuse()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        self.control = self.ws.path("block-statfs")
        self.mnt = self.ws.mkdir("stuck")
        self.healthy = self.ws.mkdir("healthy")

        # Undo order (reverse of registration): unblock, stop ckptmon, then
        # unmount, then stop the FUSE process.
        harness.mount_fuse(self.ws, "blockfs.py", [self.mnt, self.control], self.mnt)
        config = harness.config_yaml([
            harness.tier_yaml("stuck", self.mnt, role="staging", drains_to="healthy"),
            harness.tier_yaml("healthy", self.healthy, role="rapid"),
        ], scan_interval="500ms", probe_timeout="300ms")
        if self.WORKER_THREADS is not None:
            config = config.replace("global:\n",
                                    f"global:\n  worker_threads: {self.WORKER_THREADS}\n", 1)
        self.ck = self.ws.ckptmon(config)
        # Runs first at cleanup: a process with a thread in a FUSE request
        # cannot be reaped until the request is answered.
        self.ws.on_close(self.unblock)
        self.latencies = []

    def block(self):
        open(self.control, "w").close()

    def unblock(self):
        if os.path.exists(self.control):
            os.unlink(self.control)

    def timed_scrape(self):
        """A scrape that must answer within SCRAPE_TIMEOUT; records its latency."""
        start = time.monotonic()
        m = harness.scrape(self.ck.port, timeout=SCRAPE_TIMEOUT)
        self.latencies.append(time.monotonic() - start)
        return m

    def wait_tier(self, tier, value, what):
        seen = []

        def check():
            m = self.timed_scrape()
            v = m.get("ckpt_tier_up", tier=tier)
            seen.append(m)
            return m if v == value else None
        m = harness.wait_for(check, timeout=30, interval=0.05, what=what)
        return m, seen

    def test_stuck_tier_goes_down_without_stalling_scrapes_and_recovers(self):
        self.ck.wait_ready()
        m, _ = self.wait_tier("stuck", 1.0, "the FUSE tier to be up")
        # blockfs answers statfs with fixed figures: 1000 blocks of 4096 bytes.
        self.assertEqual(m.get("ckpt_tier_size_bytes", tier="stuck"), 4096 * 1000)
        self.assertEqual(m.get("ckpt_tier_avail_bytes", tier="stuck"), 4096 * 400)
        self.assertEqual(m.get("ckpt_tier_files", tier="stuck"), 100)
        self.assertEqual(m.get("ckptmon_collector_success", collector="tier_stats"), 1.0)

        self.block()
        self.latencies.clear()
        blocked_at = time.monotonic()
        m, seen = self.wait_tier("stuck", 0.0, "the stuck tier to be marked down")
        down_after = time.monotonic() - blocked_at
        # Meanwhile, every scrape answered (else harness.scrape raised) and the
        # healthy tier never wavered.
        for s in seen:
            self.assertEqual(s.get("ckpt_tier_up", tier="healthy"), 1.0)
        # A stuck tier exports no stale figures, keeps its identity, and the
        # collector says a run passed its deadline.
        self.assertIsNone(m.get("ckpt_tier_size_bytes", tier="stuck"))
        self.assertEqual(m.get("ckpt_tier_info", tier="stuck", fstype="fuse.blockfs"), 1.0)
        self.assertEqual(m.get("ckptmon_collector_success", collector="tier_stats"), 0.0)
        self.assertGreaterEqual(m.get("ckptmon_collector_timeouts_total", collector="tier_stats"), 1)
        tiers = self.ck.get("/api/v1/tiers", timeout=SCRAPE_TIMEOUT).json()
        stuck = next(t for t in tiers if t["name"] == "stuck")
        self.assertFalse(stuck["up"])
        self.assertIn("did not return within 300ms", stuck["down_reason"])

        # Keep scraping while it stays stuck over several scan intervals: the
        # single in-flight probe is not multiplied, scrapes keep answering.
        first = self.timed_scrape()
        threads_before = (first.get("ckptmon_worker_threads", state="busy")
                          + first.get("ckptmon_worker_threads", state="idle"))
        skipped_before = first.get("ckptmon_collector_skipped_total", collector="tier_stats")

        def skipped_three_more():
            m = self.timed_scrape()
            self.assertEqual(m.get("ckpt_tier_up", tier="stuck"), 0.0)
            self.assertEqual(m.get("ckpt_tier_up", tier="healthy"), 1.0)
            skipped = m.get("ckptmon_collector_skipped_total", collector="tier_stats")
            return m if skipped - skipped_before >= 3 else None
        m = harness.wait_for(skipped_three_more, timeout=30, interval=0.05,
                             what="three scan intervals to skip the stuck tier")
        busy = m.get("ckptmon_worker_threads", state="busy")
        idle = m.get("ckptmon_worker_threads", state="idle")
        self.assertGreaterEqual(busy, 1.0, "a thread is stuck on the in-flight probe")
        # Three scan intervals passed while stuck: each skipped the stuck tier
        # instead of starting a second statfs that would block a thread of its
        # own (the pool would have had to grow by one per interval). One
        # extra thread is allowed for another collector's job overlapping.
        self.assertGreaterEqual(
            m.get("ckptmon_collector_skipped_total", collector="tier_stats") - skipped_before, 3)
        self.assertLessEqual(busy + idle, threads_before + 1)
        self.assertEqual(self.ck.get("/-/healthy", timeout=SCRAPE_TIMEOUT).status, 200)
        self.report("scrape latency while the tier was stuck", self.latencies)

        self.unblock()
        unblocked_at = time.monotonic()
        m, _ = self.wait_tier("stuck", 1.0, "the tier to come back after unblocking")
        print(f"stuck tier: seen down {down_after * 1000:.0f} ms after blocking "
              f"(probe_timeout 300ms, scan_interval 500ms); seen up again "
              f"{(time.monotonic() - unblocked_at) * 1000:.0f} ms after unblocking")
        self.assertEqual(m.get("ckpt_tier_size_bytes", tier="stuck"), 4096 * 1000)
        self.assertEqual(m.get("ckptmon_collector_success", collector="tier_stats"), 1.0)

    def test_sigterm_with_a_stuck_tier_exits_cleanly(self):
        self.ck.wait_ready()
        self.wait_tier("stuck", 1.0, "the FUSE tier to be up")
        self.block()
        self.wait_tier("stuck", 0.0, "the stuck tier to be marked down")
        pid = self.ck.proc.pid
        start = time.monotonic()
        self.ck.proc.send_signal(signal.SIGTERM)
        # The daemon has done its part once main() has returned and every
        # thread it controls is gone. One thread cannot go: it sits in
        # fstatfs() on the FUSE mount, and once the FUSE server has read a
        # request the kernel waits for the answer uninterruptibly, SIGKILL
        # included (fs/fuse/dev.c, request_wait_answer). No process with such
        # a thread can be reaped, whatever it does in user space; a hung NFS
        # hard mount waits killably instead and lets the process go at once.
        try:
            tasks = harness.wait_for(lambda: self.finished_except_kernel_waits(pid),
                                     timeout=30, interval=0.01,
                                     what="ckptmon to finish after SIGTERM")
        except AssertionError:
            self.fail(f"ckptmon did not finish within 30s of SIGTERM:\n{self.ck.output()}")
        finished = time.monotonic() - start
        self.ck.wait_line(r'msg="signal received" signal=SIGTERM')
        self.ck.wait_line(r"msg=stopping")
        with self.assertRaises(OSError, msg="the listener is closed"):
            harness.http_request(self.ck.port, "/-/healthy", timeout=SCRAPE_TIMEOUT)
        # The kernel lets the last thread go once statfs answers; then the
        # exit status becomes visible.
        unblocked = time.monotonic()
        self.unblock()
        try:
            rc = self.ck.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.fail(f"ckptmon was not reaped within 30s of unblocking:\n{self.ck.output()}")
        reaped = time.monotonic() - unblocked
        print(f"\nSIGTERM with a stuck tier: main() returned and all but {tasks} stuck "
              f"kernel thread(s) gone after {finished * 1000:.0f} ms; reaped with status {rc} "
              f"{reaped * 1000:.0f} ms after statfs was unblocked")
        self.assertEqual(rc, 0, self.ck.output())

    @staticmethod
    def finished_except_kernel_waits(pid):
        """The number of threads left when the process is gone or its main
        thread has exited (zombie) and the rest are in uninterruptible kernel
        waits (D); None otherwise."""
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
            states = {}
            for t in tasks:
                with open(f"/proc/{pid}/task/{t}/stat") as f:
                    states[int(t)] = f.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            # A thread (or the process) went between listing and reading
            # (ESRCH); reaped meanwhile is caught by wait() below, not here.
            return None
        if states.get(pid) != "Z":
            return None
        others = [s for t, s in states.items() if t != pid]
        return len(others) if others and all(s == "D" for s in others) else None

    def report(self, what, xs):
        if not xs:
            return
        xs = sorted(xs)
        p95 = xs[min(len(xs) - 1, int(0.95 * len(xs)))]
        print(f"\n{what}: n={len(xs)} median={statistics.median(xs) * 1000:.1f} ms "
              f"p95={p95 * 1000:.1f} ms max={xs[-1] * 1000:.1f} ms")


class StuckTierOneWorker(StuckTier):
    """With a single worker thread, the stuck statfs holds it: the healthy
    tier's probe must still run (on a spare thread) and the healthy tier must
    never be reported down with "hung mount?" for a probe that never ran."""
    WORKER_THREADS = 1
    # The base class's cases are not rerun here.
    test_stuck_tier_goes_down_without_stalling_scrapes_and_recovers = None
    test_sigterm_with_a_stuck_tier_exits_cleanly = None

    def test_healthy_tier_keeps_being_probed_while_the_only_worker_is_stuck(self):
        self.ck.wait_ready()
        self.wait_tier("stuck", 1.0, "the FUSE tier to be up")
        self.wait_tier("healthy", 1.0, "the healthy tier to be up")
        self.block()
        m, seen = self.wait_tier("stuck", 0.0, "the stuck tier to be marked down")
        for s in seen:
            self.assertEqual(s.get("ckpt_tier_up", tier="healthy"), 1.0)
        first = harness.wait_for(
            lambda: (lambda m: m if m.get("ckptmon_worker_threads_stuck") == 1.0 else None)(
                self.timed_scrape()),
            timeout=30, interval=0.05, what="the stuck worker to be exported")
        skipped_before = first.get("ckptmon_collector_skipped_total", collector="tier_stats")
        success_before = first.get("ckpt_tier_last_success_timestamp_seconds", tier="healthy")

        def three_intervals_later():
            m = self.timed_scrape()
            self.assertEqual(m.get("ckpt_tier_up", tier="stuck"), 0.0)
            self.assertEqual(m.get("ckpt_tier_up", tier="healthy"), 1.0)
            # One stuck worker, at most one spare: the bound is worker_threads.
            total = (m.get("ckptmon_worker_threads", state="busy")
                     + m.get("ckptmon_worker_threads", state="idle"))
            self.assertLessEqual(total, 2.0)
            skipped = m.get("ckptmon_collector_skipped_total", collector="tier_stats")
            ok = m.get("ckpt_tier_last_success_timestamp_seconds", tier="healthy")
            return m if skipped - skipped_before >= 3 and ok > success_before else None
        harness.wait_for(three_intervals_later, timeout=30, interval=0.05,
                         what="the healthy tier to be probed again while the other is stuck")
        tiers = self.ck.get("/api/v1/tiers", timeout=SCRAPE_TIMEOUT).json()
        healthy = next(t for t in tiers if t["name"] == "healthy")
        self.assertTrue(healthy["up"])
        self.assertNotIn("hung mount", healthy.get("down_reason", "") or "")
        stuck = next(t for t in tiers if t["name"] == "stuck")
        self.assertIn("hung mount?", stuck["down_reason"])
        # The log never said the healthy tier's probe passed its deadline.
        for line in self.ck.output().splitlines():
            if "target=healthy" in line:
                self.assertNotIn("passed its deadline", line)


if __name__ == "__main__":
    harness.main()
