#!/usr/bin/python3
"""Reloading the configuration: SIGHUP and POST /-/reload. A broken file is
refused with its file:line:column, the old configuration keeps serving, and
the reload gauges say so."""

import os
import re
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


class Reload(harness.TwoTierTest):
    def setUp(self):
        super().setUp()
        self.cfg_text = harness.config_yaml([harness.tier_yaml("a", self.a)])
        self.ck = self.ws.ckptmon(self.cfg_text)
        self.cfg = self.ws.path("ckptmon.yml")
        self.ck.wait_ready()

    def write(self, text):
        with open(self.cfg, "w") as f:
            f.write(text)

    def broken(self):
        """A config whose second tier has an unknown role; returns the text and
        the error line ckptmon must print, built from the text itself."""
        good = harness.tier_yaml("a", self.a)
        bad = harness.tier_yaml("b", self.b, role="fastest")
        text = harness.config_yaml([good, bad])
        lines = text.splitlines()
        line_no = lines.index(bad.rstrip("\n")) + 1
        column = lines[line_no - 1].index("fastest") + 1
        expected = (f"{self.cfg}:{line_no}:{column}: tiers[1].role: expected one of staging, "
                    f"rapid, milestone, capacity, deletion, got \"fastest\"")
        return text, expected

    def gauges(self):
        m = self.ck.scrape()
        return (m.get("ckptmon_config_last_reload_successful"),
                m.get("ckptmon_config_last_reload_success_timestamp_seconds"), m)

    def test_sighup_with_a_broken_file_keeps_the_old_config(self):
        ok, ts0, m = self.gauges()
        self.assertEqual(ok, 1.0)
        self.assertGreater(ts0, 0)
        text, expected = self.broken()
        self.write(text)
        self.ck.proc.send_signal(signal.SIGHUP)
        _, _, m = harness.wait_for(
            lambda: (lambda g: g if g[0] == 0.0 else None)(self.gauges()),
            what="the reload gauge to drop to 0")
        self.assertEqual(m.get("ckpt_tier_up", tier="a"), 1.0)
        self.assertEqual(m.labels_of("ckpt_tier_up"), [{"tier": "a"}])
        self.assertEqual(m.get("ckptmon_config_last_reload_success_timestamp_seconds"), ts0)
        # The log names the error exactly.
        self.ck.wait_line(re.escape(expected.replace('"', '\\"')))
        self.assertEqual(self.ck.get("/-/healthy").status, 200)
        self.assertIn("last reload failed", self.ck.get("/").text())

        # Fixed file, reloaded over HTTP: the new tier appears.
        self.write(harness.config_yaml([harness.tier_yaml("a", self.a),
                                        harness.tier_yaml("b", self.b, role="capacity")]))
        r = self.ck.get("/-/reload", method="POST")
        self.assertEqual(r.status, 200, r.text())
        m = harness.wait_for(
            lambda: (lambda m: m if m.get("ckpt_tier_up", tier="b") == 1.0 else None)(
                self.ck.scrape()),
            what="tier b to be up")
        self.assertEqual(m.get("ckptmon_config_last_reload_successful"), 1.0)
        self.assertGreater(m.get("ckptmon_config_last_reload_success_timestamp_seconds"), ts0)
        self.assertEqual(m.get("ckpt_tier_info", tier="b", role="capacity"), 1.0)
        self.assertEqual(m.get("ckpt_tier_up", tier="a"), 1.0)
        names = [t["name"] for t in self.ck.get("/api/v1/tiers").json()]
        self.assertEqual(names, ["a", "b"])

    def test_http_reload_with_a_broken_file_is_500_with_the_error(self):
        text, expected = self.broken()
        self.write(text)
        r = self.ck.get("/-/reload", method="POST")
        self.assertEqual(r.status, 500)
        self.assertEqual(r.text(), expected + "\n")
        ok, _, m = self.gauges()
        self.assertEqual(ok, 0.0)
        self.assertEqual(m.labels_of("ckpt_tier_up"), [{"tier": "a"}])

    def test_reload_of_a_vanished_file_is_refused(self):
        os.unlink(self.cfg)
        r = self.ck.get("/-/reload", method="POST")
        self.assertEqual(r.status, 500)
        self.assertIn(self.cfg, r.text())
        self.assertEqual(self.ck.scrape().get("ckpt_tier_up", tier="a"), 1.0)

    def test_reload_removes_a_tier(self):
        self.write(harness.config_yaml([harness.tier_yaml("b", self.b)]))
        self.assertEqual(self.ck.get("/-/reload", method="PUT").status, 200)
        m = harness.wait_for(
            lambda: (lambda m: m if m.get("ckpt_tier_up", tier="b") == 1.0 else None)(
                self.ck.scrape()),
            what="tier b to be up")
        self.assertEqual(m.labels_of("ckpt_tier_up"), [{"tier": "b"}])
        self.assertEqual(m.labels_of("ckpt_tier_info", tier="a"), [])

    def test_get_reload_is_405(self):
        r = self.ck.get("/-/reload")
        self.assertEqual(r.status, 405)
        self.assertEqual(r.headers.get("Allow"), "POST, PUT")
        ok, _, _ = self.gauges()
        self.assertEqual(ok, 1.0)


if __name__ == "__main__":
    harness.main()
