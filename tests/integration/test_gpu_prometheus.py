#!/usr/bin/python3
"""gpu.source prometheus end to end: Debian's prometheus (127.0.0.1, a free
port, tmp storage, 1 s scrape interval) scrapes a local http.server that
plays dcgm-exporter for two GPUs (test_gpu_dcgm.Dcgm on a 1 s clock: its
timestamps, which Prometheus honours, are contiguous seconds whatever the
pace of the scrapes), and a ckptmon daemon with gpu.source prometheus reads the raw samples back
through the HTTP API with the configured selector {job="dcgm"}.

The GPUs are 90 % busy except during a 10 s checkpoint pause written with
`ckptmon emit` (10 % busy), placed on the endpoint's clock. The pause is
aligned to whole seconds, the daemon's 1 s buckets, and every sample sits in
the middle of one, so the loss is 2 GPUs x (0.9 - 0.1) x 10 s = 16
GPU-seconds, worked out by hand. The live timeline takes about 25 s of
Prometheus scrapes; nothing else waits on wall time.

A Prometheus that answers errors, HTML, or too slowly: counted, logged once,
the source down (readings unknown, not 0), the rest serving."""

import http.server
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from test_gpu_dcgm import Dcgm, assert_dip_joined  # noqa: E402

class FakeApi:
    """A Prometheus HTTP API that misbehaves on purpose (mode set by the test)."""

    def __init__(self):
        self.mode = "error"
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                try:
                    if outer.mode == "slow":
                        time.sleep(3)  # the server's own pace, past the client's deadline
                    if outer.mode == "html":
                        status, ctype = 200, "text/html"
                        body = b"<html><body>Grafana login</body></html>"
                    else:
                        status, ctype = 422, "application/json"
                        body = (b'{"status":"error","errorType":"execution",'
                                b'"error":"query processing would load too many samples"}')
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class GpuPrometheusEndToEnd(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)

    def emit(self, event, step, ts, *extra):
        harness.emit(self.log, event, step, ts, *extra)

    def config(self, url, selector):
        text, self.log = harness.gpu_config(
            self.ws, f"gpu:\n  source: prometheus\n  interval: 1s\n  max_window: 1m\n"
                     f"  prometheus: {{url: \"{url}\", selector: '{selector}'}}\n")
        return text

    def test_dip_through_a_real_prometheus(self):
        harness.require_executable(harness.PROMETHEUS, "prometheus")
        dcgm = Dcgm(step=1.0)
        self.addCleanup(dcgm.close)
        cfg = self.ws.write("prometheus.yml", (
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n"
            f"  - job_name: dcgm\n    static_configs: [{{targets: ['127.0.0.1:{dcgm.port}']}}]\n"))
        prom = self.ws.start(harness.Prometheus(cfg, self.ws.mkdir("tsdb")))
        harness.wait_for(lambda: prom.query('up{job="dcgm"} == 1'), timeout=60,
                         interval=0.2, what="Prometheus scraping the dcgm endpoint")
        # The pause starts on a whole second, 11 s ahead on the endpoint's
        # clock: 10 s of baseline are scraped first.
        a = dcgm.bucket_end() + 11.0
        b = a + 10.0
        dcgm.dip = (a, b)
        ck = self.ws.ckptmon(self.config(prom.url, '{job="dcgm"}'))
        ck.wait_ready()
        self.emit("checkpoint_start", 100, a - 0.5)
        self.emit("pause_start", 100, a)
        self.emit("pause_end", 100, b)
        self.emit("checkpoint_commit", 100, b + 0.5, "--files", "2", "--bytes", "1024")

        def joined():
            m = ck.scrape()
            return m if m.get("ckpt_checkpoint_gpu_idle_seconds_count", training_job="llama") == 1 else None
        try:
            m = harness.wait_for(joined, timeout=90, interval=0.5, what="the checkpoint joined")
        except AssertionError:
            print(ck.get("/metrics").text(), file=sys.stderr)
            raise
        self.assertEqual(m.get("ckptmon_gpu_source_up"), 1)
        assert_dip_joined(self, m, 16)  # 2 GPUs x (0.9 - 0.1) x 10 s
        info = sorted((l["uuid"], l["source"]) for l in m.labels_of("ckpt_gpu_info"))
        self.assertEqual(info, [("GPU-aaaa", "prometheus"), ("GPU-bbbb", "prometheus")])

    def test_bad_prometheus_is_counted_logged_once_and_down(self):
        api = FakeApi()
        self.addCleanup(api.close)
        ck = self.ws.ckptmon(self.config(api.url, '{job="dcgm"}'))
        ck.wait_ready()
        errors = 0
        for mode, wording in [("error", "HTTP 422: Prometheus answered execution: query processing would load too many samples"),
                              ("html", "text/html, not the Prometheus HTTP API"),
                              ("slow", "timeout")]:
            api.mode = mode

            def counted():
                m = ck.scrape()
                return m if (m.get("ckptmon_gpu_source_errors_total") or 0) >= errors + 3 else None
            m = harness.wait_for(counted, timeout=40, interval=0.2, what=f"{mode}: three errors")
            errors = m.get("ckptmon_gpu_source_errors_total")
            self.assertEqual(m.get("ckptmon_gpu_source_up"), 0)
            self.assertIsNone(m.get("ckpt_gpu_utilization_ratio", gpu="0"))  # unknown, not 0
            self.assertEqual(m.get("ckpt_tier_up", tier="staging"), 1)
            lines = [l for l in ck.output().splitlines() if "GPU source down" in l and wording in l]
            self.assertEqual(len(lines), 1, mode + "\n" + ck.output())


if __name__ == "__main__":
    harness.main()
