#!/usr/bin/python3
"""`promtool check metrics` (Debian's prometheus package) has nothing to say
about a live scrape of ckptmon, with an up and a down tier so that every
family, labels and all, is present."""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

PROMTOOL = "/usr/bin/promtool"


class PromtoolCheckMetrics(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        harness.require_executable(PROMTOOL, "prometheus")
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)

    def promtool(self, body):
        return subprocess.run([PROMTOOL, "check", "metrics"], input=body,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)

    def test_live_scrape_is_clean(self):
        up = self.ws.mkdir("tier with spaces")
        ck = self.ws.ckptmon(harness.config_yaml([
            harness.tier_yaml("staging", up, role="staging", drains_to="gone"),
            harness.tier_yaml("gone", self.ws.path("does-not-exist"), role="capacity"),
        ]))
        ck.wait_ready()
        # Two scrapes so the request counter has a /metrics sample as well.
        ck.scrape()
        r = ck.get("/metrics")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.headers.get("Content-Type"), "text/plain; version=0.0.4; charset=utf-8")
        m = harness.Metrics(r.text())
        # The scrape holds what the check is meant to cover.
        self.assertEqual(m.get("ckpt_tier_up", tier="staging"), 1.0)
        self.assertEqual(m.get("ckpt_tier_up", tier="gone"), 0.0)
        for family in ("ckpt_tier_info", "ckpt_tier_size_bytes", "ckpt_tier_avail_bytes",
                       "ckpt_tier_free_bytes", "ckpt_tier_files", "ckpt_tier_files_free",
                       "ckpt_tier_readonly", "ckpt_tier_last_success_timestamp_seconds",
                       "ckptmon_collector_duration_seconds", "ckptmon_collector_success",
                       "ckptmon_build_info", "ckptmon_config_last_reload_successful",
                       "ckptmon_config_last_reload_success_timestamp_seconds",
                       "ckptmon_http_requests_total", "process_start_time_seconds"):
            self.assertIn(family, m.samples, f"{family} missing from the scrape")
        self.assertEqual(m.get("ckptmon_build_info"), 1.0)

        p = self.promtool(r.body)
        print(f"\npromtool check metrics: exit {p.returncode}, "
              f"{len(r.body)} bytes, {sum(len(v) for v in m.samples.values())} samples")
        self.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode())
        self.assertEqual(p.stdout.decode().strip(), "")
        self.assertEqual(p.stderr.decode().strip(), "")

    def test_promtool_is_a_real_check(self):
        # Guard against a promtool that accepts anything: a counter without
        # _total and a family without HELP must be flagged.
        p = self.promtool(b"# TYPE bad_counter counter\nbad_counter 1\n")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(b"bad_counter", p.stdout + p.stderr)


if __name__ == "__main__":
    harness.main()
