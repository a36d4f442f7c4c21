#!/usr/bin/python3
"""`ckptmon report --prometheus` against a second Prometheus-API engine:
Debian's VictoriaMetrics, holding the same 30 days of ckptmon's series as
test_report_prometheus.py (imported through its /api/v1/import/prometheus
with the same samples and timestamps). The report gives the growth, time to
full, sharded required capacity and alerts worked out in that test, within
1 %, as Prometheus does. VictoriaMetrics answers /api/v1/rules with no
groups, so the report names the recording rules as not loaded and goes on
from the raw series."""

import json
import os
import subprocess
import sys
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import test_report_prometheus as trp  # noqa: E402

VICTORIA = "/usr/bin/victoria-metrics"


def import_text():
    """trp.openmetrics() as the Prometheus text format VictoriaMetrics
    imports: the same series and values, timestamps in milliseconds."""
    out = []
    for line in trp.openmetrics().splitlines():
        if not line or line.startswith("#"):
            continue
        series, value, ts = line.rsplit(" ", 2)
        out.append(f"{series} {value} {int(ts) * 1000}\n")
    return "".join(out).encode()


class ReportVictoriaMetrics(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.require_binary()
        harness.require_executable(VICTORIA, "victoria-metrics")
        cls.ws = harness.Workspace()
        try:
            cls.port = harness.free_port()
            cls.url = f"http://127.0.0.1:{cls.port}"
            cls.ws.start(harness.Process([
                VICTORIA, f"-storageDataPath={cls.ws.mkdir('vm')}",
                f"-httpListenAddr=127.0.0.1:{cls.port}", "-retentionPeriod=100y",
                "-loggerLevel=ERROR"]))
            harness.wait_for(cls.healthy, timeout=60, what="VictoriaMetrics healthy")
            req = urllib.request.Request(cls.url + "/api/v1/import/prometheus",
                                         data=import_text(), method="POST")
            with urllib.request.urlopen(req, timeout=120) as r:
                assert r.status == 204, r.status
            # What was imported is searchable once flushed.
            urllib.request.urlopen(cls.url + "/internal/force_flush", timeout=60).read()
            harness.wait_for(cls.imported, timeout=60, what="the imported series searchable")
        except BaseException:
            cls.ws.close()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.ws.close()

    @classmethod
    def healthy(cls):
        try:
            with urllib.request.urlopen(cls.url + "/health", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    @classmethod
    def imported(cls):
        q = f"/api/v1/query?query=count(ckpt_tier_size_bytes)&time={int(trp.T_END)}"
        with urllib.request.urlopen(cls.url + q, timeout=10) as r:
            result = json.load(r)["data"]["result"]
        return bool(result) and result[0]["value"][1] == "3"

    def test_same_growth_as_prometheus_within_1_percent(self):
        r = subprocess.run([harness.BIN, "report", "--prometheus", self.url, "--now",
                            str(int(trp.T_END)), "--format", "json"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=120,
                           stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("recording rules not loaded", r.stderr)
        doc = json.loads(r.stdout)
        tiers = {t["tier"]: t for t in doc["tiers"]}
        rapid, shared = tiers["rapid"], tiers["shared"]

        def within(got, want, what):
            self.assertIsNotNone(got, what)
            self.assertLessEqual(abs(got - want), abs(want) * 0.01, f"{what}: {got} vs {want}")

        within(rapid["growth_bytes_per_day"], trp.RAPID_GROWTH, "rapid growth")
        within(rapid["time_to_full_seconds"], trp.RAPID_TTF, "rapid time to full")
        within(rapid["avail_bytes"], 35 * trp.TiB, "rapid avail")
        self.assertEqual(rapid["size_bytes"], 100 * trp.TiB)
        within(rapid["jobs"][0]["growth_bytes_per_day"], 0.1 * trp.TiB, "llm growth")
        within(shared["time_to_full_seconds"], trp.SHARED_TTF, "shared time to full")
        self.assertEqual(shared["required_capacity_bytes"], 80 * trp.TiB)  # shards summed
        within(shared["jobs"][0]["growth_bytes_per_day"], 0.5 * trp.TiB, "big growth")
        self.assertLessEqual(rapid["samples"], 11000)
        # The two alerts of ckptmon (not NodeDiskFull), at the step's resolution.
        got = sorted((a["alertname"], a["tier"], a["job"]) for a in doc["alerts"])
        self.assertEqual(got, [("CheckpointPartial", "shared", "big"),
                               ("CheckpointTierFillingUp", "rapid", "")])
        filling = next(a for a in doc["alerts"] if a["tier"] == "rapid")
        self.assertLessEqual(abs(filling["fired_at"] - trp.ALERT_AT), 260)


if __name__ == "__main__":
    harness.main()
