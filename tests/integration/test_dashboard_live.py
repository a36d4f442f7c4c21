#!/usr/bin/python3
"""grafana/: every metric a dashboard query uses is exported by a running
`ckptmon demo` (its /metrics, scraped live), so a panel cannot be left
reading a metric ckptmon does not have; and the provisioning files load the
dashboard from where `cmake --install`/the .deb puts it. Metric names are
read from the queries and the scrape generically (test_deploy's parser), not
from a list of what the demo does.

A few metrics appear only after things the demo does not do (an event log
with restores, a firing alert, 30 minutes of trend): they are listed in
ONLY_AFTER with the reason, and must be documented in docs/metrics.md; the
test prints any of them the demo does export, so the list can shrink.
Grafana itself is not packaged for Debian 12, so the provisioning files are
checked for structure and paths, not loaded into a real Grafana.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import test_deploy  # noqa: E402  (the dashboard and PromQL helpers)

ONLY_AFTER = {
    "up": "Prometheus' own series for every target",
    "ckpt_alert": "present only while a ckptmon alert fires",
    "ckpt_tier_time_to_full_seconds": "needs sizing.min_trend_span (30m) of tier samples",
    "ckpt_restore_duration_seconds_bucket": "observed from restore_start/restore_done events",
    "ckpt_last_restore_timestamp_seconds": "set by restore_done events",
    # The tier I/O collector's counters (docs/metrics.md): only for tiers with
    # an I/O source (block device, NFS, Lustre; the demo's temporary
    # directories may sit on tmpfs, which has none) and for the interfaces
    # named in network.interfaces (the demo names none).
    "ckpt_tier_written_bytes_total": "needs a tier with an I/O source",
    "ckpt_tier_read_bytes_total": "needs a tier with an I/O source",
    "ckpt_tier_metadata_operations_total": "needs a tier with an I/O source",
    "ckpt_network_receive_bytes_total": "needs network.interfaces",
    "ckpt_network_transmit_bytes_total": "needs network.interfaces",
    "ckpt_network_link_speed_bytes_per_second": "needs network.interfaces",
}
SCRAPE_NAME = re.compile(r"(?m)^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{| )")


class DemoDashboard(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.require_binary()
        names = set()
        for _, expr in test_deploy.dashboard_expressions(test_deploy.load_dashboard()):
            names |= test_deploy.metric_names(expr)
        cls.used = names

    def test_every_dashboard_metric_is_in_a_live_demo_scrape(self):
        demo = harness.Process([harness.BIN, "demo", "--web.listen-address", "127.0.0.1:0",
                                "--exit-after", "120s"])
        self.addCleanup(demo.stop)
        port = int(demo.wait_line(r"msg=listening .*\bport=(\d+)").group(1))
        harness.wait_for(lambda: harness.http_request(port, "/-/ready").status == 200,
                         what="demo ready")
        want = self.used - set(ONLY_AFTER)
        self.assertGreaterEqual(len(want), 40, sorted(want))
        seen = set()

        def all_seen():
            seen.update(SCRAPE_NAME.findall(harness.http_request(port, "/metrics").text()))
            return want <= seen
        try:
            harness.wait_for(all_seen, timeout=30, interval=0.5, what="every dashboard metric")
        except AssertionError:
            self.fail(f"dashboard metrics not in the demo's scrape: {sorted(want - seen)}")
        now_exported = sorted(n for n in ONLY_AFTER if n in seen)
        if now_exported:
            print(f"\nthe demo now exports {now_exported}: remove them from ONLY_AFTER")
        print(f"\n{len(want)} dashboard metrics in the demo's scrape; "
              f"{len(self.used & set(ONLY_AFTER))} only after events (ONLY_AFTER)")

    def test_only_after_metrics_are_used_and_documented(self):
        docs = test_deploy.documented_metrics()
        for name in ONLY_AFTER:
            with self.subTest(metric=name):
                self.assertIn(name, self.used, "not used by the dashboard: drop it from ONLY_AFTER")
                if name != "up":
                    self.assertTrue(test_deploy.is_documented(name, docs), name)

    def test_scrape_name_parser(self):
        text = ('# HELP a_total x\n# TYPE a_total counter\na_total{x="1"} 2\nb 3\n'
                'c_bucket{le="+Inf"} 1\n')
        self.assertEqual(set(SCRAPE_NAME.findall(text)), {"a_total", "b", "c_bucket"})


class Provisioning(unittest.TestCase):
    def read_yaml(self, rel):
        try:
            import yaml
        except ImportError:
            harness.skip_peer("python3-yaml is missing")
        with open(os.path.join(harness.SOURCE_DIR, "grafana", "provisioning", rel)) as f:
            return yaml.safe_load(f)

    def test_dashboard_provider_points_at_the_installed_dashboard(self):
        p = self.read_yaml("dashboards/ckptmon.yml")
        self.assertEqual(p["apiVersion"], 1)
        (prov,) = p["providers"]
        self.assertEqual(prov["type"], "file")
        path = prov["options"]["path"]
        self.assertEqual(path, "/usr/share/ckptmon/grafana")
        # Where the install puts the dashboard and the provisioning files.
        build = os.path.dirname(os.path.abspath(harness.BIN))
        if not os.path.exists(os.path.join(build, "cmake_install.cmake")):
            harness.skip_peer("no CMake build directory")
        dest = tempfile.mkdtemp(prefix="ckptmon-destdir-")
        self.addCleanup(shutil.rmtree, dest, True)
        subprocess.run(["cmake", "--install", build, "--prefix", "/usr"], check=True,
                       env=dict(os.environ, DESTDIR=dest), stdout=subprocess.DEVNULL, timeout=120)
        self.assertTrue(os.path.isfile(dest + path + "/ckptmon-dashboard.json"))
        for rel in ("dashboards/ckptmon.yml", "datasources/prometheus.yml"):
            self.assertTrue(os.path.isfile(
                os.path.join(dest, "usr/share/ckptmon/grafana/provisioning", rel)), rel)

    def test_datasource_is_prometheus(self):
        d = self.read_yaml("datasources/prometheus.yml")
        (ds,) = d["datasources"]
        self.assertEqual(ds["type"], "prometheus")  # what the dashboard's variable lists
        self.assertEqual(test_deploy.load_dashboard()["templating"]["list"][0]["query"],
                         "prometheus")


if __name__ == "__main__":
    harness.main()
