#!/usr/bin/python3
"""gpu.source dcgm end to end over real HTTP: a local http.server on
127.0.0.1 (a free port) plays dcgm-exporter for two GPUs, and a daemon with
gpu.source dcgm scrapes it every 250 ms.

The endpoint stamps every series with a timestamp (the exposition format
allows one and the source honours it) from its own clock: each answer is
dated one 250 ms bucket after the last, in the middle of the bucket, and
never ahead of the wall clock. A poll the daemon makes late (a loaded CI
machine) therefore leaves no hole in the samples and no sample near a
bucket's edge, and the values follow that clock: 90 % busy, except 10 %
during a 5 s checkpoint pause the test writes with `ckptmon emit`, placed on
the endpoint's clock once the daemon has read its first samples. GPU 0 reports DCGM_FI_PROF_GR_ENGINE_ACTIVE
(0.9 / 0.1) next to a DCGM_FI_PROF_SM_ACTIVE that must be ignored (0.5);
GPU 1 only DCGM_FI_DEV_GPU_UTIL (90 / 10 %). The pause and its baseline are
aligned to the 250 ms buckets, so the GPU-seconds lost are exactly
2 GPUs x (0.9 - 0.1) x 5 s = 8, worked out by hand. The live scrape
takes the few seconds of the timeline; the only wall-time bound left is the
join's grace (5 polls plus the 5 s timeout), which the endpoint's clock
would pass only if the daemon fell that far behind its polls.

Bad input: the same endpoint then answers HTML, 100 MB (with and without a
Content-Length), slower than the
interval, series with a new unknown label value and bad gpu labels every
scrape, and finally is down. Each is counted, logged once, the source is down
(ckptmon_gpu_source_up 0, readings gone, never 0), the tier keeps being
served, and no label grows."""

import http.server
import math
import os
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

PROMTOOL = "/usr/bin/promtool"
INTERVAL = 0.25


def assert_dip_joined(test, m, idle_gpu_seconds):
    """The join of one checkpoint of job llama whose pause dipped two GPUs
    from 90 % to 10 %: `idle_gpu_seconds` lost (2 x 0.8 x the pause, worked
    out by the caller), none unknown, GPUs found by the source's labels."""
    test.assertEqual(m.get("ckpt_checkpoint_gpu_unknown_total", training_job="llama"), 0)
    test.assertAlmostEqual(m.get("ckpt_checkpoint_gpu_idle_seconds_total", training_job="llama"),
                           idle_gpu_seconds, 6)
    test.assertAlmostEqual(m.get("ckpt_checkpoint_gpu_utilization_ratio", training_job="llama"), 0.1, 6)
    test.assertAlmostEqual(
        m.get("ckpt_checkpoint_gpu_baseline_utilization_ratio", training_job="llama"), 0.9, 6)
    test.assertEqual(m.get("ckpt_checkpoint_gpu_attribution_info", training_job="llama",
                           attribution="source_labels"), 1)


class Dcgm:
    """A scripted dcgm-exporter: mode and dip window are set by the test.

    Its clock (`stamp()`) dates the answers `step` seconds apart, each in the
    middle of a bucket of that width, never ahead of the wall clock: the
    samples are contiguous whatever the pace of the polls."""

    def __init__(self, step=INTERVAL):
        self.mode = "ok"
        self.dip = (0.0, 0.0)
        self.requests = 0
        self.counter = 0
        self.step = step
        self.last = None  # the newest answer's timestamp
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                outer.requests += 1
                outer.serve(self)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/metrics"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def stamp(self):
        """The next answer's timestamp: one step after the last, or the same
        bucket again when the wall clock has not reached the next one."""
        now = time.time()
        with self.lock:
            if self.last is None:
                self.last = (math.floor(now / self.step) - 0.5) * self.step
            elif self.last + self.step <= now:
                self.last += self.step
            return self.last

    def bucket_end(self):
        """The end of the newest answered bucket (a whole number of steps)."""
        with self.lock:
            return None if self.last is None else math.ceil(self.last / self.step) * self.step

    def text(self):
        t = self.stamp()
        ts = int(round(t * 1000))
        busy = not (self.dip[0] < t <= self.dip[1])
        ratio, pct = (0.9, 90) if busy else (0.1, 10)
        common = 'modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-node-07",pod="",namespace="",hpc_job="llama"'
        lines = [
            "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).",
            "# TYPE DCGM_FI_DEV_GPU_UTIL gauge",
            f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="GPU-aaaa",{common}}} 100 {ts}',
            f'DCGM_FI_DEV_GPU_UTIL{{gpu="1", UUID="GPU-bbbb",{common}}} {pct} {ts}',
            "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).",
            "# TYPE DCGM_FI_DEV_FB_USED gauge",
            f'DCGM_FI_DEV_FB_USED{{gpu="0",UUID="GPU-aaaa",{common}}} 40960 {ts}',
            f'DCGM_FI_DEV_FB_USED{{gpu="1",UUID="GPU-bbbb",{common}}} 0 {ts}',
            "# HELP DCGM_FI_PROF_GR_ENGINE_ACTIVE Ratio of time the graphics engine is active.",
            "# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge",
            f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu="0",UUID="GPU-aaaa",{common}}} {ratio:.6f} {ts}',
            f'DCGM_FI_PROF_SM_ACTIVE{{gpu="0",UUID="GPU-aaaa",{common}}} 0.500000 {ts}',
        ]
        if self.mode == "labels":
            self.counter += 1
            lines.append(f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="GPU-aaaa",{common},'
                         f'new_label_{self.counter}="v{self.counter}"}} 90 {ts}')
            lines.append(f'DCGM_FI_DEV_GPU_UTIL{{gpu="gpu-{self.counter}",{common}}} 90 {ts}')
        return ("\n".join(lines) + "\n").encode()

    def serve(self, h):
        mode = self.mode
        try:
            if mode == "html":
                body = b"<!DOCTYPE html>\n<html><body><h1>Sign in</h1></body></html>\n"
                h.send_response(200)
                h.send_header("Content-Type", "text/html; charset=utf-8")
                h.send_header("Content-Length", str(len(body)))
                h.end_headers()
                h.wfile.write(body)
                return
            if mode in ("huge", "stream"):
                # 100 MB, announced (huge) or only ended by closing (stream).
                size = 100 * 1000 * 1000
                h.send_response(200)
                h.send_header("Content-Type", "text/plain; version=0.0.4")
                if mode == "huge":
                    h.send_header("Content-Length", str(size))
                h.end_headers()
                chunk = b"DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 1\n" * 2048
                sent = 0
                while sent < size:
                    h.wfile.write(chunk)
                    sent += len(chunk)
                return
            if mode == "slow":
                time.sleep(4 * INTERVAL)  # the server's own pace, not the test's
            body = self.text()
            h.send_response(200)
            h.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            h.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass


class GpuDcgmEndToEnd(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        self.dcgm = Dcgm()
        self.addCleanup(self.dcgm.close)

    def emit(self, event, step, ts, *extra):
        harness.emit(self.log, event, step, ts, *extra)

    def config(self, extra=""):
        text, self.log = harness.gpu_config(
            self.ws,
            f"gpu: {{source: dcgm, dcgm_url: \"{self.dcgm.url}\", interval: 250ms, max_window: 1m}}\n")
        return text + extra

    def test_dip_costs_gpu_seconds(self):
        # The daemon reads its first samples, then a 5 s pause starts 6 s
        # ahead on the endpoint's clock: 5 s of baseline (20 buckets) after
        # the first sample are scraped live first.
        ck = self.ws.ckptmon(self.config())
        ck.wait_ready()
        harness.wait_for(lambda: ck.scrape().get("ckpt_gpu_utilization_ratio", gpu="1") is not None,
                         timeout=30, interval=0.1, what="the first GPU samples")
        a = self.dcgm.bucket_end() + 6.0
        b = a + 5.0
        self.dcgm.dip = (a, b)
        self.emit("checkpoint_start", 100, a - 0.5)
        self.emit("pause_start", 100, a)
        self.emit("pause_end", 100, b)
        self.emit("checkpoint_commit", 100, b + 0.5, "--files", "2", "--bytes", "1024")

        def joined():
            m = ck.scrape()
            # Joined, and a sample after the pause has been read (the join may
            # come with the pause's last sample still the newest reading).
            done = m.get("ckpt_checkpoint_gpu_idle_seconds_count", training_job="llama") == 1
            return m if done and abs((m.get("ckpt_gpu_utilization_ratio", gpu="1") or 0) - 0.9) < 1e-9 else None
        try:
            m = harness.wait_for(joined, timeout=40, interval=0.2, what="the checkpoint joined")
        except AssertionError:
            print(ck.get("/metrics").text(), file=sys.stderr)
            raise
        self.assertEqual(m.get("ckptmon_gpu_source_up"), 1)
        self.assertEqual(m.get("ckptmon_gpu_source_errors_total"), 0)
        assert_dip_joined(self, m, 8)  # 2 GPUs x (0.9 - 0.1) x 5 s
        info = sorted(m.labels_of("ckpt_gpu_info"), key=lambda l: l["gpu"])
        self.assertEqual([(l["gpu"], l["uuid"], l["model"], l["source"]) for l in info],
                         [("0", "GPU-aaaa", "NVIDIA H100 80GB HBM3", "dcgm"),
                          ("1", "GPU-bbbb", "NVIDIA H100 80GB HBM3", "dcgm")])
        self.assertEqual(m.get("ckpt_gpu_memory_used_bytes", gpu="0"), 40960 * 1024 * 1024)
        self.assertAlmostEqual(m.get("ckpt_gpu_utilization_ratio", gpu="0"), 0.9)  # not SM_ACTIVE's 0.5
        self.assertAlmostEqual(m.get("ckpt_gpu_utilization_ratio", gpu="1"), 0.9)  # 90 % as a ratio
        if os.access(PROMTOOL, os.X_OK):
            p = subprocess.run([PROMTOOL, "check", "metrics"], input=ck.get("/metrics").body,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            self.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode())
            self.assertEqual(p.stdout + p.stderr, b"")

    def test_bad_endpoints_are_counted_logged_once_and_down(self):
        ck = self.ws.ckptmon(self.config())
        ck.wait_ready()
        harness.wait_for(lambda: ck.scrape().get("ckptmon_gpu_source_up") == 1, timeout=20,
                         interval=0.1, what="source up")
        expected = {
            "html": "answered text/html; charset=utf-8, not the Prometheus text format",
            "huge": "larger than 16777216 bytes",
            "slow": "",  # the client's own timeout wording
            "down": "",
        }
        seen_errors = ck.scrape().get("ckptmon_gpu_source_errors_total")
        for mode in ["html", "huge", "stream", "slow", "labels", "down"]:
            if mode == "down":
                self.dcgm.close()
            else:
                self.dcgm.mode = mode
            before = self.dcgm.requests

            def counted():
                m = ck.scrape()
                grown = m.get("ckptmon_gpu_source_errors_total") >= seen_errors + 3
                return m if grown and (mode == "down" or self.dcgm.requests >= before + 3) else None
            m = harness.wait_for(counted, timeout=30, interval=0.1, what=f"{mode}: three errors")
            seen_errors = m.get("ckptmon_gpu_source_errors_total")
            self.assertEqual(m.get("ckpt_tier_up", tier="staging"), 1, mode)  # the rest goes on
            self.assertLessEqual(len(m.labels_of("ckpt_gpu_info")), 2, mode)  # no label grows
            self.assertLessEqual(len(m.labels_of("ckpt_gpu_utilization_ratio")), 2, mode)
            if mode == "labels":  # the poll works; the bad series are call errors
                self.assertEqual(m.get("ckptmon_gpu_source_up"), 1)
                self.assertEqual(len(m.labels_of("ckpt_gpu_info")), 2)
                continue
            self.assertEqual(m.get("ckptmon_gpu_source_up"), 0, mode)
            self.assertIsNone(m.get("ckpt_gpu_utilization_ratio", gpu="0"), mode)  # unknown, not 0
            if expected.get(mode):
                ck.wait_line(r"GPU source down.*" + expected[mode].replace("(", r"\("))
        out = ck.output().splitlines()
        down = [l for l in out if "GPU source down" in l]
        # Each distinct failure logged once, counted every time (closing the
        # server may add a "reset by peer" before "refused").
        errs = [l.split(" err=", 1)[1] for l in down]
        self.assertEqual(len(errs), len(set(errs)), "\n".join(down))
        for want in ["text/html", "larger than 16777216 bytes", "timeout", "Connection refused"]:
            self.assertEqual(len([e for e in errs if want in e]), 1, want + "\n" + "\n".join(down))
        calls = [l for l in out if "GPU source call failed" in l]
        self.assertEqual(len(calls), 1, "\n".join(calls))  # the first bad gpu label only
        self.assertIn("series whose gpu label is no GPU index below 64 ignored", calls[0])


if __name__ == "__main__":
    harness.main()
