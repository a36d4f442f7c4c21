#!/usr/bin/python3
"""End to end with the real neighbours: Debian's prometheus runs the shipped
deploy/prometheus/prometheus.yml and its rule files, scraping a running
`ckptmon demo`, and sends its alerts to Debian's Alertmanager.

What the copy of the shipped files changes, and only that: the target and
Alertmanager addresses (free ports on 127.0.0.1), the scrape and evaluation
intervals (1s instead of 15s) and, in the ckptmon-checkpoints group only,
every `for:` (0s), so that a domain alert fires within the test instead of
after 5 to 30 minutes. The test then sees through Prometheus' HTTP API:
ckptmon's series (with job="ckptmon" from the scrape config), a recording
rule's result, a domain alert firing, and Alertmanager holding that alert;
per-job series carry training_job next to job="ckptmon" (no honor_labels).

The demo's workload is not assumed: the test accepts whichever domain alert
the demo makes fire (it abandons saves, which become partial, and overlaps
drains).
"""

import json
import os
import re
import shutil
import sys
import unittest
import urllib.parse

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import test_rules_e2e  # noqa: E402  (Debian's Alertmanager on 127.0.0.1)

PROM_DIR = os.path.join(harness.SOURCE_DIR, "deploy", "prometheus")


def domain_alert_names():
    names, in_group = [], False
    with open(os.path.join(PROM_DIR, "ckptmon-alerts.yml")) as f:
        for line in f:
            m = re.match(r"\s*- name:\s*(\S+)", line)
            if m:
                in_group = m.group(1) == "ckptmon-checkpoints"
            m = re.match(r"\s*- alert:\s*(\S+)", line)
            if m and in_group:
                names.append(m.group(1))
    return names


def domain_alert_exprs():
    with open(os.path.join(PROM_DIR, "ckptmon-alerts.yml")) as f:
        doc = yaml.safe_load(f)
    return {r["alert"]: r["expr"] for g in doc["groups"]
            if g["name"] == "ckptmon-checkpoints" for r in g["rules"] if "alert" in r}


def ckpt_names(expr):
    return sorted(set(re.findall(r"\bckpt_[a-z0-9_]+", expr)))


class PrometheusEndToEnd(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        harness.require_executable(harness.PROMETHEUS, "prometheus")
        harness.require_executable(test_rules_e2e.ALERTMANAGER, "prometheus-alertmanager")
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        self.am = self.ws.start(test_rules_e2e.Alertmanager(self.ws))
        self.demo = self.ws.start(harness.Process(
            [harness.BIN, "demo", "--web.listen-address", "127.0.0.1:0", "--exit-after", "240s"]))
        self.demo_port = int(self.demo.wait_line(r"msg=listening .*\bport=(\d+)").group(1))
        self.prom = self.ws.start(harness.Prometheus(self.copy_config(), self.ws.mkdir("tsdb")))

    def copy_config(self):
        d = self.ws.mkdir("prometheus")
        with open(os.path.join(PROM_DIR, "prometheus.yml")) as f:
            text = f.read()
        rewritten = (text.replace("'localhost:10025'", f"'127.0.0.1:{self.demo_port}'")
                         .replace("'localhost:9093'", f"'127.0.0.1:{self.am.port}'"))
        rewritten = re.sub(r"(?m)^(\s*(scrape|evaluation)_interval:)\s*15s", r"\1 1s", rewritten)
        rewritten = re.sub(r"(?m)^(\s*scrape_timeout:)\s*10s", r"\1 1s", rewritten)
        self.assertNotIn("localhost:", rewritten)
        self.assertEqual(rewritten.count(" 1s"), 4, rewritten)
        with open(os.path.join(d, "prometheus.yml"), "w") as f:
            f.write(rewritten)
        shutil.copy(os.path.join(PROM_DIR, "ckptmon-recording-rules.yml"), d)
        with open(os.path.join(PROM_DIR, "ckptmon-alerts.yml")) as f:
            alerts = f.read()
        head, sep, domain = alerts.partition("  - name: ckptmon-checkpoints\n")
        self.assertTrue(sep)
        domain, n = re.subn(r"(?m)^(\s+for:)\s*\S+$", r"\1 0s", domain)
        # Every ckptmon-checkpoints alert has a for:, and so may those of the
        # groups after it (ckptmon-storage-path).
        self.assertGreaterEqual(n, len(domain_alert_names()))
        with open(os.path.join(d, "ckptmon-alerts.yml"), "w") as f:
            f.write(head + sep + domain)
        return os.path.join(d, "prometheus.yml")

    def test_scrape_rules_alerts_and_alertmanager(self):
        harness.wait_for(lambda: self.prom.api("/api/v1/status/config"), timeout=60,
                         what="Prometheus answering")
        # ckptmon's own series, scraped under job="ckptmon".
        up = harness.wait_for(lambda: self.prom.query('up{job="ckptmon"} == 1'),
                              timeout=60, what="the demo scraped")
        self.assertEqual(up[0]["metric"]["instance"], f"127.0.0.1:{self.demo_port}")
        tiers = harness.wait_for(
            lambda: self.prom.query('ckpt_tier_up{job="ckptmon"}'),
            timeout=60, what="ckpt_tier_up scraped")
        demo_tiers = sorted(t["name"] for t in
                            harness.http_request(self.demo_port, "/api/v1/tiers").json())
        self.assertEqual(sorted(s["metric"]["tier"] for s in tiers), demo_tiers)

        # Per-job series keep the training job next to job="ckptmon" with the
        # default scrape config (no honor_labels): nothing became exported_job.
        per_job = harness.wait_for(
            lambda: self.prom.query('ckpt_checkpoints{job="ckptmon", training_job!=""}'),
            timeout=60, what="per-job series with training_job")
        self.assertTrue(all(s["metric"]["job"] == "ckptmon" for s in per_job))
        self.assertEqual(self.prom.query('{exported_job!=""}'), [])

        # A recording rule's result: tier:ckpt_tier_up:min, one series per tier.
        rec = harness.wait_for(lambda: self.prom.query("tier:ckpt_tier_up:min"),
                               timeout=60, what="the recording rule evaluated")
        self.assertEqual(sorted(s["metric"]["tier"] for s in rec), demo_tiers)
        by_tier = {s["metric"]["tier"]: float(s["value"][1]) for s in tiers}
        for s in rec:
            self.assertEqual(float(s["value"][1]), by_tier[s["metric"]["tier"]])

        # A domain alert (PromQL over the metrics) firing in Prometheus.
        names = set(domain_alert_names())
        self.assertGreaterEqual(len(names), 5)

        def firing_domain():
            data = self.prom.api("/api/v1/alerts")
            if not data:
                return None
            return [a for a in data["alerts"]
                    if a["labels"]["alertname"] in names and a["state"] == "firing"]
        firing = harness.wait_for(firing_domain, timeout=120, interval=0.5,
                                  what="a domain alert firing in Prometheus")
        alert = firing[0]
        self.assertTrue(alert["annotations"]["runbook_url"].startswith("docs/runbook.md#"))
        self.assertIn(alert["labels"]["severity"], ("warning", "critical"))

        # And Alertmanager received it from Prometheus.
        def in_alertmanager():
            for a in self.am.alerts() or []:
                if (a["labels"].get("alertname") == alert["labels"]["alertname"]
                        and all(a["labels"].get(k) == v for k, v in alert["labels"].items())):
                    return a
            return None
        got = harness.wait_for(in_alertmanager, timeout=60, interval=0.5,
                               what=f"{alert['labels']['alertname']} in Alertmanager")
        self.assertEqual(got["status"]["state"], "active")
        # Sent by this Prometheus: its generatorURL names its port and the
        # rule's expression. Prometheus prints the parsed expression again, so
        # compare the metric names in it with those in the shipped rule, not
        # the text (an expression may start with "(1 - ckpt_...").
        url = urllib.parse.urlsplit(got["generatorURL"])
        self.assertEqual(url.port, self.prom.port)
        self.assertEqual(url.path, "/graph")
        expr = urllib.parse.parse_qs(url.query)["g0.expr"][0]
        self.assertEqual(ckpt_names(expr),
                         ckpt_names(domain_alert_exprs()[alert["labels"]["alertname"]]))
        print(f"\nfiring in Prometheus and received by Alertmanager: "
              f"{json.dumps(alert['labels'], sort_keys=True)}")


if __name__ == "__main__":
    harness.main()
