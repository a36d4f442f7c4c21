#!/usr/bin/python3
"""The alert table (rules/alert_table.cpp) as `ckptmon alerts` renders it:
the Prometheus rules it generates pass the real promtool, carry every alert
of the table once, each with a runbook section in docs/runbook.md, and take
their thresholds from --config.file.
"""

import os
import re
import subprocess
import sys
import tempfile
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def alerts(*args):
    return subprocess.run([harness.BIN, "alerts", *args], check=True,
                          capture_output=True, text=True, timeout=60).stdout


class AlertTableTest(unittest.TestCase):
    def test_generated_rules_pass_promtool_and_match_the_runbook(self):
        names = re.findall(r"^(\S+)  ", alerts(), re.M)
        self.assertEqual(len(names), 31, names)
        self.assertEqual(len(set(names)), len(names))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "rules.yml")
            with open(path, "w") as f:
                f.write(alerts("--format", "prometheus-rules"))
            r = subprocess.run(["promtool", "check", "rules", path], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("SUCCESS: 31 rules found", r.stdout)
            with open(path) as f:
                doc = yaml.safe_load(f)
        rules = [r for g in doc["groups"] for r in g["rules"]]
        self.assertEqual(sorted(r["alert"] for r in rules), sorted(names))
        with open(os.path.join(ROOT, "docs", "runbook.md")) as f:
            headings = set(re.findall(r"^## (\S+)$", f.read(), re.M))
        for n in names:
            self.assertIn(n, headings)
        for r in rules:
            self.assertNotIn("${", r["expr"] + str(r["annotations"]), r["alert"])
            self.assertTrue(r["annotations"]["runbook_url"].endswith("#" + r["alert"].lower()))
        index = alerts("--format", "runbook-index")
        self.assertEqual(len([l for l in index.splitlines() if l.startswith("| [")]), 31)

    def test_shipped_files_are_the_generated_ones_and_name_the_same_alerts(self):
        names = set(re.findall(r"^(\S+)  ", alerts(), re.M))
        # The shipped rule file is the defaults' output, byte for byte.
        with open(os.path.join(ROOT, "deploy", "prometheus", "ckptmon-alerts.yml")) as f:
            shipped = f.read()
        self.assertEqual(shipped, alerts("--format", "prometheus-rules"),
                         "deploy/prometheus/ckptmon-alerts.yml is out of date: rerun "
                         "`ckptmon alerts --format prometheus-rules` into it")
        # The runbook's index is the generated one.
        with open(os.path.join(ROOT, "docs", "runbook.md")) as f:
            runbook = f.read()
        m = re.search(r"<!-- alert-index:begin[^>]*-->\n(.*?)<!-- alert-index:end -->", runbook, re.S)
        self.assertIsNotNone(m, "docs/runbook.md has no alert-index markers")
        self.assertEqual(m.group(1), alerts("--format", "runbook-index"))
        # The same names everywhere an alert is defined or tested.
        with open(os.path.join(ROOT, "deploy", "kubernetes", "prometheusrule.yaml")) as f:
            k8s = yaml.safe_load(f)
        k8s_names = {r["alert"] for g in k8s["spec"]["groups"] for r in g["rules"] if "alert" in r}
        self.assertEqual(k8s_names, names)
        tested = set()
        for t in ("alerts.test.yml", "domain-alerts.test.yml"):
            with open(os.path.join(ROOT, "deploy", "prometheus", "tests", t)) as f:
                tested |= set(re.findall(r"^\s*alertname:\s*(\S+)\s*$", f.read(), re.M))
        self.assertEqual(tested, names)
        headings = set(re.findall(r"^## (\S+)$", runbook, re.M))
        self.assertEqual(names - headings, set())
        index_names = set(re.findall(r"^\| \[(\S+)\]\(#", m.group(1), re.M))
        self.assertEqual(index_names, names)

    def test_thresholds_and_disabled_rules_come_from_the_config(self):
        with tempfile.TemporaryDirectory() as d:
            cfg = os.path.join(d, "ckptmon.yml")
            tier = os.path.join(d, "tier")
            os.mkdir(tier)
            with open(cfg, "w") as f:
                f.write(f"""tiers:
  - name: rapid
    path: {tier}
    role: staging
alerting:
  rules:
    CheckpointCompletionSkewHigh:
      max_skew: 5m
      clear_skew: 4m
      for: 2m
    CheckpointTierDown:
      enabled: false
""")
            out = alerts("--format", "prometheus-rules", "--config.file", cfg)
        doc = yaml.safe_load(out)
        rules = {r["alert"]: r for g in doc["groups"] for r in g["rules"]}
        self.assertNotIn("CheckpointTierDown", rules)
        skew = rules["CheckpointCompletionSkewHigh"]
        self.assertIn("ckpt_last_checkpoint_completion_skew_seconds > 300)", skew["expr"])
        self.assertIn("ckpt_last_checkpoint_completion_skew_seconds > 240)", skew["expr"])
        self.assertEqual(skew["for"], "2m")
        self.assertIn("(over 5m)", skew["annotations"]["description"])


if __name__ == "__main__":
    unittest.main()
