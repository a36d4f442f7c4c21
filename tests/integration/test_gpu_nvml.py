#!/usr/bin/python3
"""The GPU join end to end with the fake libnvidia-ml.so.1 (tests/fake_nvml):
two GPUs busy at 90 %, three checkpoints written to an event log by
`ckptmon emit`, each pausing training for 10 s while the scripted GPUs dip to
10 %. The daemon charges 2 x 0.8 x 10 = 16 GPU-seconds per checkpoint (48 in
all, worked out by hand from the script) and CheckpointStallingGPUs fires; a
fourth checkpoint without a dip resolves it. `promtool check metrics` accepts
the scrape with GPUs. A missing library is one logged error, counted, and the
daemon goes on serving.

The fake's samples reach 10 minutes into the past (buffer_s), so the whole
timeline lies before the daemon starts and nothing waits on wall time but
the daemon's own polls."""

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

PROMTOOL = "/usr/bin/promtool"
FAKE = os.environ.get("CKPTMON_FAKE_NVML",
                      os.path.join(os.path.dirname(harness.BIN), "fake_nvml", "libnvidia-ml.so.1"))
ALERT = "CheckpointStallingGPUs"


class GpuNvmlEndToEnd(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        if not os.path.exists(FAKE):
            harness.skip_peer(f"fake NVML library not built at {FAKE}")
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        self.addCleanup(os.environ.pop, "FAKE_NVML_SCRIPT", None)

    def checkpoint(self, log, step, a, b):
        harness.emit(log, "checkpoint_start", step, a - 1)
        harness.emit(log, "pause_start", step, a)
        harness.emit(log, "pause_end", step, b)
        harness.emit(log, "checkpoint_commit", step, b + 1, "--files", "2", "--bytes", "1024")

    def config(self, library, extra=""):
        text, self.log = harness.gpu_config(
            self.ws,
            f"gpu: {{source: nvml, nvml_library: \"{library}\", interval: 1s, max_window: 5m}}\n")
        return text + extra

    def test_dip_fires_then_resolves(self):
        t0 = float(int(time.time()))
        dips = [(-300, -290), (-200, -190), (-100, -90)]
        script = ["gpus 2", f"epoch {t0}", "period_ms 250", "buffer_s 600",
                  "memory 0 85899345920 1073741824", "util * -700 90"]
        for a, b in dips:
            script += [f"util * {a:+d} 10", f"util * {b:+d} 90"]
        os.environ["FAKE_NVML_SCRIPT"] = self.ws.write("fake-nvml.txt", "\n".join(script) + "\n")
        cfg = self.config(FAKE, "alerting:\n  rules:\n"
                          # 16 GPU-seconds a checkpoint: above a floor of 10.
                          "    CheckpointStallingGPUs: {for: 0s, consecutive: 3, min_drop_ratio: 0.5,"
                          " min_lost_gpu_seconds: 10, clear_lost_gpu_seconds: 5}\n"
                          "    CheckpointGoodputLow: {enabled: false}\n")
        for step, (a, b) in enumerate(dips, start=1):
            self.checkpoint(self.log, step * 100, t0 + a, t0 + b)
        ck = self.ws.ckptmon(cfg)
        ck.wait_ready()

        def firing():
            m = ck.scrape()
            return m if m.get("ckpt_alert", alertname=ALERT, training_job="llama") == 1 else None
        m = harness.wait_for(firing, timeout=30, interval=0.2, what=f"{ALERT} firing")
        self.assertEqual(m.get("ckptmon_gpu_source_up"), 1)
        self.assertEqual(len(m.labels_of("ckpt_gpu_info")), 2)
        self.assertEqual(m.labels_of("ckpt_gpu_info", gpu="0")[0]["uuid"], "GPU-fake-0000")
        self.assertEqual(m.get("ckpt_gpu_memory_used_bytes", gpu="0"), 1073741824)
        self.assertAlmostEqual(m.get("ckpt_gpu_utilization_ratio", gpu="1"), 0.9)
        # 3 checkpoints x 2 GPUs x (0.9 - 0.1) x 10 s.
        self.assertAlmostEqual(m.get("ckpt_checkpoint_gpu_idle_seconds_total", training_job="llama"), 48, 6)
        self.assertEqual(m.get("ckpt_checkpoint_gpu_idle_seconds_count", training_job="llama"), 3)
        self.assertAlmostEqual(m.get("ckpt_checkpoint_gpu_utilization_ratio", training_job="llama"), 0.1, 6)
        self.assertAlmostEqual(
            m.get("ckpt_checkpoint_gpu_baseline_utilization_ratio", training_job="llama"), 0.9, 6)
        self.assertEqual(m.get("ckpt_checkpoint_gpu_window_info", training_job="llama", window="pause"), 1)
        self.assertEqual(
            m.get("ckpt_checkpoint_gpu_attribution_info", training_job="llama", attribution="all_local"), 1)
        self.assertEqual(m.get("ckpt_checkpoint_gpu_unknown_total", training_job="llama"), 0)
        page = ck.get("/").text()
        self.assertIn("<h2>GPU cost of checkpoints</h2>", page)
        # job, GPUs, last step, during / before, drop, lost (last), lost (total), unknown
        self.assertIn("<tr><td>llama</td><td>2</td><td>300</td><td>10% / 90%</td><td>89%</td>"
                      "<td>16</td><td>48</td><td>0</td></tr>", page)
        alerts = ck.get("/api/v1/alerts").json()["data"]["alerts"]
        mine = [a for a in alerts if a["labels"]["alertname"] == ALERT]
        self.assertEqual(len(mine), 1)
        self.assertIn("dropped by 88.9%", mine[0]["annotations"]["description"])

        if os.access(PROMTOOL, os.X_OK):
            p = subprocess.run([PROMTOOL, "check", "metrics"], input=ck.get("/metrics").body,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            self.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode())
            self.assertEqual(p.stdout + p.stderr, b"")

        # A save that costs the GPUs nothing: the drop is 0, the alert resolves.
        self.checkpoint(self.log, 400, t0 - 50, t0 - 40)

        def resolved():
            m = ck.scrape()
            done = m.get("ckpt_checkpoint_gpu_idle_seconds_count", training_job="llama") == 4
            return m if done and m.get("ckpt_alert", alertname=ALERT, training_job="llama") is None else None
        m = harness.wait_for(resolved, timeout=30, interval=0.2, what=f"{ALERT} resolved")
        self.assertAlmostEqual(m.get("ckpt_checkpoint_gpu_idle_seconds_total", training_job="llama"), 48, 6)
        self.assertAlmostEqual(m.get("ckpt_last_checkpoint_gpu_idle_seconds", training_job="llama"), 0, 6)
        ck.wait_line(r"msg=\"alert inactive\".*alertname=" + ALERT)
        # The state database kept each checkpoint's cost: `ckptmon report`
        # gives the same 48 GPU-seconds over the four. The daemon lived
        # seconds, too short for the report's growth rate: two older tier
        # samples are written in beside its own.
        ck.stop()
        state = re.search(r"state_dir: (\S+)", cfg).group(1)
        db = sqlite3.connect(os.path.join(state, "ckptmon.db"))
        for age in (3000, 2000):
            db.execute("INSERT INTO tier_samples(tier, t, size_bytes, avail_bytes) VALUES('staging', ?, 1e12, 5e11)", (t0 - age,))
        db.commit()
        db.close()
        r = subprocess.run([harness.BIN, "report", "--state-dir", state, "--since", "2h",
                            "--min-history", "30m", "--format", "json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        jobs = {j["job"]: j for t in json.loads(r.stdout)["tiers"] for j in t["jobs"]}
        cost = jobs["llama"]["gpu_cost"]
        self.assertAlmostEqual(cost["lost_gpu_seconds"], 48, 6)
        self.assertEqual((cost["checkpoints_known"], cost["checkpoints_unknown"]), (4, 0))

    def test_missing_library_is_one_logged_counted_error(self):
        missing = self.ws.path("no-such", "libnvidia-ml.so.1")
        ck = self.ws.ckptmon(self.config(missing))
        ck.wait_ready()
        m = harness.wait_for(
            lambda: (lambda m: m if (m.get("ckptmon_gpu_source_errors_total") or 0) >= 3 else None)(
                ck.scrape()), timeout=30, interval=0.2, what="three failed polls")
        self.assertEqual(m.get("ckptmon_gpu_source_up"), 0)
        self.assertIsNone(m.get("ckpt_gpu_utilization_ratio", gpu="0"))
        self.assertEqual(m.get("ckpt_tier_up", tier="staging"), 1)  # the rest goes on
        ck.wait_line(r"GPU source down")
        lines = [l for l in ck.output().splitlines() if "GPU source down" in l]
        self.assertEqual(len(lines), 1, "\n".join(lines))
        self.assertIn("cannot load " + missing, lines[0])


if __name__ == "__main__":
    harness.main()
