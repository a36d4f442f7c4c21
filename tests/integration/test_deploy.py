#!/usr/bin/python3
"""What an operator installs next to ckptmon for Prometheus and Grafana,
checked with the real promtool (Debian's prometheus package):

- deploy/prometheus/*.yml: `promtool check rules`, `promtool check config`,
  and `promtool test rules` on the unit tests in deploy/prometheus/tests/;
- grafana/ckptmon-dashboard.json: its structure, every PromQL expression
  (template variables substituted) parsed by `promtool check rules` and
  evaluated by `promtool test rules` against a synthetic two-instance fleet
  built from the metric tables of docs/metrics.md, where each must return
  data: a label or label value the daemon does not export gives an empty
  result and fails;
- every metric name the dashboard, the rules and the rule tests use is one
  docs/metrics.md documents (plus Prometheus' own `up`), so renaming a metric
  without updating them fails here;
- every Prometheus-side alert has its annotations and a runbook section.
"""

import glob
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

PROMTOOL = "/usr/bin/promtool"
SRC = harness.SOURCE_DIR
PROM_DIR = os.path.join(SRC, "deploy", "prometheus")
RULE_FILES = [os.path.join(PROM_DIR, "ckptmon-recording-rules.yml"),
              os.path.join(PROM_DIR, "ckptmon-alerts.yml")]
PROM_CONFIG = os.path.join(PROM_DIR, "prometheus.yml")
RULE_TESTS = sorted(glob.glob(os.path.join(PROM_DIR, "tests", "*.yml")))
DASHBOARD = os.path.join(SRC, "grafana", "ckptmon-dashboard.json")
METRICS_DOC = os.path.join(SRC, "docs", "metrics.md")
RUNBOOK = os.path.join(SRC, "docs", "runbook.md")

# Concrete values for the dashboard's query variables; the synthetic fleet
# below holds series with exactly these.
VARIABLE_VALUES = {"instance": "n1:10025", "tier": "staging", "training_job": "llama"}
# Grafana's own variables.
GLOBAL_VARIABLES = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h"}
INSTANCES = ("n1:10025", "n2:10025")
# Label values for the synthetic fleet; a label not listed gets "x", and
# docs/metrics.md may list values in parentheses ("state (busy, idle)").
LABEL_VALUES = {
    "tier": ["staging", "rapid"],
    "to_tier": ["rapid"],
    "training_job": ["llama", "gpt"],
    "state": ["in_progress", "committed", "partial"],
    "kind": ["world_readable", "foreign_owner"],
    "collector": ["tier_stats", "tree_scan"],
    "alertname": ["CheckpointPartial"],
    "severity": ["warning"],
}
PROMQL_KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
                   "group_right", "bool", "offset", "inf", "nan"}
AGGREGATION = re.compile(r"\b(sum|min|max|count)\b\s*(by|without|\()")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def promtool(*args, cwd=None):
    return subprocess.run([PROMTOOL, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=120, cwd=cwd, text=True)


# --- docs/metrics.md ------------------------------------------------------------

class Metric:
    def __init__(self, name, kind, labels):
        self.name, self.kind, self.labels = name, kind, labels  # labels: {name: [values] or None}


def documented_metrics():
    """Every row `| `name` | type | labels | meaning |` of docs/metrics.md."""
    out = {}
    row = re.compile(r"^\|\s*`([A-Za-z_:][A-Za-z0-9_:*]*)`\s*\|\s*([a-z]*)\s*\|([^|]*)\|")
    for line in read(METRICS_DOC).splitlines():
        m = row.match(line)
        if not m:
            continue
        labels = {}
        for lm in re.finditer(r"([a-z_]+)(?:\s*\(([^)]*)\))?", m.group(3)):
            values = [v.strip() for v in lm.group(2).split(",")] if lm.group(2) else None
            labels[lm.group(1)] = values
        out[m.group(1)] = Metric(m.group(1), m.group(2), labels)
    return out


# Series Prometheus itself makes: the scrape's `up`, the rules' ALERTS (the
# hysteresis join of ckptmon-alerts.yml).
PROMETHEUS_OWN = {"up", "ALERTS"}


def is_documented(name, docs, extra=()):
    if name in PROMETHEUS_OWN or name in extra or name in docs:
        return name in PROMETHEUS_OWN or name in extra or docs[name].kind != "histogram"
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)] if name.endswith(suffix) else None
        if base and base in docs and docs[base].kind == "histogram":
            return True
    return any(d.endswith("*") and name.startswith(d[:-1]) for d in docs)


# --- PromQL ---------------------------------------------------------------------

def metric_names(expr):
    """Metric names an expression selects. Without a PromQL parser at hand:
    drop strings, label matchers, ranges and label lists, then every
    identifier not followed by '(' (a function or aggregation) and not a
    keyword is a metric name."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)
    s = re.sub(r"\{[^}]*\}", " ", s)
    s = re.sub(r"\[[^\]]*\]", " ", s)
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", s)
    names = set()
    for m in re.finditer(r"(?<![\w.:])([A-Za-z_:][\w:]*)", s):
        rest = s[m.end():].lstrip()
        if rest.startswith("(") or m.group(1).lower() in PROMQL_KEYWORDS:
            continue
        names.add(m.group(1))
    return names


def substitute(expr, variables):
    """Grafana's variable forms $x, ${x}, ${x:fmt} and [[x]] replaced by concrete values."""
    def value(m):
        name = m.group(1) or m.group(2) or m.group(3)
        if name not in variables:
            raise KeyError(f"undefined variable ${name} in {expr!r}")
        return variables[name]
    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)", value, expr)


# --- rule files (the style written in this repository) ---------------------------

def rule_entries(path):
    """(kind, name, expr, text) of each rule: kind 'record' or 'alert'."""
    lines = read(path).splitlines()
    starts = [(i, m) for i, line in enumerate(lines)
              if (m := re.match(r"^\s*- (record|alert):\s*(\S+)\s*$", line))]
    out = []
    for n, (i, m) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        block = lines[i:end]
        expr = None
        for j, line in enumerate(block):
            em = re.match(r"^(\s*)expr:\s*(.*)$", line)
            if not em:
                continue
            if em.group(2) in ("|", "|-", ">", ">-"):
                indent = len(em.group(1))
                body = []
                for cont in block[j + 1:]:
                    if cont.strip() and len(cont) - len(cont.lstrip()) <= indent:
                        break
                    body.append(cont.strip())
                expr = " ".join(x for x in body if x)
            else:
                expr = em.group(2).strip().strip("'\"")
            break
        out.append((m.group(1), m.group(2), expr, "\n".join(block)))
    return out


def input_series_names(path):
    return {re.match(r"[A-Za-z_:][\w:]*", s).group(0)
            for s in re.findall(r"series:\s*['\"]([^'\"]+)['\"]", read(path))}


# --- the dashboard ---------------------------------------------------------------

def load_dashboard():
    with open(DASHBOARD, encoding="utf-8") as f:
        return json.load(f)


def all_panels(dash):
    for p in dash["panels"]:
        yield p
        yield from p.get("panels", [])  # collapsed rows hold their panels


def variable_query(v):
    q = v.get("query")
    return q.get("query", "") if isinstance(q, dict) else (q or "")


def dashboard_variables(dash):
    values = dict(GLOBAL_VARIABLES)
    for v in dash["templating"]["list"]:
        if v["type"] == "query":
            values[v["name"]] = VARIABLE_VALUES[v["name"]]
        elif v["type"] in ("interval", "custom", "constant"):
            values[v["name"]] = v["current"]["value"]
    return values


def dashboard_expressions(dash):
    """(where, PromQL with variables substituted) for every panel target and
    every label_values() variable query."""
    variables = dashboard_variables(dash)
    out = []
    for p in all_panels(dash):
        for t in p.get("targets", []):
            out.append((f"panel {p['id']} {p['title']!r} target {t['refId']}",
                        substitute(t["expr"], variables)))
    for v in dash["templating"]["list"]:
        if v["type"] == "query":
            m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\)\s*", variable_query(v))
            out.append((f"variable {v['name']}", substitute(m.group(1), variables)))
    return out


# --- a synthetic fleet from docs/metrics.md --------------------------------------

def synthetic_series(docs):
    """input_series for `promtool test rules`: two ckptmon instances scraped by
    the job "ckptmon", every documented family with every documented label."""
    series = []

    def add(name, labels, values):
        body = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        series.append({"series": f"{name}{{{body}}}", "values": values})

    for inst in INSTANCES:
        add("up", {"job": "ckptmon", "instance": inst}, "1x30")
        for m in docs.values():
            if "*" in m.name:
                continue
            names = list(m.labels)
            choices = [m.labels[n] or LABEL_VALUES.get(n, ["x"]) for n in names]
            for combo in itertools.product(*choices):
                labels = dict(zip(names, combo))
                labels["instance"] = inst
                # The scrape job: ckptmon's own labels never include `job`.
                assert "job" not in labels, m.name
                labels["job"] = "ckptmon"
                if m.kind == "histogram":
                    for k, le in enumerate(("1", "10", "+Inf"), start=1):
                        add(m.name + "_bucket", {**labels, "le": le}, f"0+{k}x30")
                    add(m.name + "_count", labels, "0+3x30")
                    add(m.name + "_sum", labels, "0+5x30")
                elif m.kind == "counter":
                    add(m.name, labels, "0+10x30")
                else:
                    add(m.name, labels, "1x30")
    return series


class Deploy(unittest.TestCase):
    def setUp(self):
        harness.require_executable(PROMTOOL, "prometheus")
        self.tmp = tempfile.TemporaryDirectory(prefix="ckptmon-deploy-")
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, obj):
        # JSON is YAML: promtool reads it as a rule or test file.
        path = os.path.join(self.tmp.name, name)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=1)
        return path

    # --- Prometheus rules and config ----------------------------------------------

    def test_rule_files_pass_promtool_check_rules(self):
        for path in RULE_FILES:
            n = len(rule_entries(path))
            self.assertGreater(n, 0, path)
            p = promtool("check", "rules", path)
            print(f"\npromtool check rules {os.path.basename(path)}: exit {p.returncode}, {n} rules")
            self.assertEqual(p.returncode, 0, p.stdout)
            self.assertIn(f"SUCCESS: {n} rules found", p.stdout)

    def test_rule_unit_tests_pass(self):
        self.assertGreaterEqual(len(RULE_TESTS), 2, "deploy/prometheus/tests/*.yml")
        p = promtool("test", "rules", *RULE_TESTS)
        print(f"\npromtool test rules {' '.join(os.path.basename(t) for t in RULE_TESTS)}: "
              f"exit {p.returncode}")
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertEqual(p.stdout.count("SUCCESS"), len(RULE_TESTS), p.stdout)
        # Every rule is exercised: recorded names are queried, alerts are named.
        tests_text = "\n".join(read(t) for t in RULE_TESTS)
        for path in RULE_FILES:
            for kind, name, _, _ in rule_entries(path):
                pattern = (rf"expr:\s*{re.escape(name)}\s*$" if kind == "record"
                           else rf"alertname:\s*{re.escape(name)}\s*$")
                self.assertRegex(tests_text, re.compile(pattern, re.M), f"no unit test for {name}")

    def test_every_alert_is_tested_firing_and_quiet(self):
        tests_text = "\n".join(read(t) for t in RULE_TESTS)
        for kind, name, _, _ in rule_entries(RULE_FILES[1]):
            if kind != "alert":
                continue
            cases = re.findall(rf"alertname:\s*{re.escape(name)}\s*\n\s*exp_alerts:[ \t]*(\S*)",
                               tests_text)
            self.assertIn("[]", cases, f"{name}: no case where it must not fire")
            self.assertIn("", cases, f"{name}: no case where it fires")

    def test_promtool_test_rules_is_a_real_check(self):
        # Guard: a wrong expected value must fail, so the suites above prove something.
        rules = self.write("r.yml", {"groups": [{"name": "g", "rules": [
            {"record": "tier:ckpt_tier_up:min", "expr": "min by (tier) (ckpt_tier_up)"}]}]})
        test = self.write("t.yml", {"rule_files": [rules], "evaluation_interval": "1m", "tests": [{
            "interval": "1m",
            "input_series": [{"series": 'ckpt_tier_up{instance="a",tier="t"}', "values": "1x5"},
                             {"series": 'ckpt_tier_up{instance="b",tier="t"}', "values": "0x5"}],
            "promql_expr_test": [{"expr": "tier:ckpt_tier_up:min", "eval_time": "2m",
                                  "exp_samples": [{"labels": 'tier:ckpt_tier_up:min{tier="t"}',
                                                   "value": 1}]}]}]})
        p = promtool("test", "rules", test)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn("got: {__name__=\"tier:ckpt_tier_up:min\", tier=\"t\"} 0", p.stdout)

    def test_prometheus_config_is_valid_and_loads_both_rule_files(self):
        p = promtool("check", "config", PROM_CONFIG)
        print(f"\npromtool check config prometheus.yml: exit {p.returncode}")
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("SUCCESS: 2 rule files found", p.stdout)
        for path in RULE_FILES:
            self.assertIn(f"Checking {os.path.join(PROM_DIR, os.path.basename(path))}", p.stdout)
        text = read(PROM_CONFIG)
        self.assertRegex(text, r"(?m)^\s*- job_name: ckptmon\b")
        # `job` is Prometheus' own: ckptmon's training job is training_job.
        self.assertNotRegex(text, r"(?m)^\s*honor_labels:")
        self.assertRegex(text, r":10025['\"]")

    def test_alerts_have_annotations_and_a_runbook_section(self):
        sections = set(re.findall(r"(?m)^## (\S+)$", read(RUNBOOK)))
        alerts = [e for e in rule_entries(RULE_FILES[1]) if e[0] == "alert"]
        self.assertIn("CkptmonDown", [name for _, name, _, _ in alerts])
        for _, name, expr, text in alerts:
            with self.subTest(alert=name):
                self.assertRegex(text, r"(?m)^\s*severity: (critical|warning|info)$")
                for key in ("summary", "description"):
                    self.assertRegex(text, rf'(?m)^\s*{key}: "(?:[^"\\]|\\.)+"$')
                self.assertIn(f'runbook_url: "docs/runbook.md#{name.lower()}"', text)
                self.assertIn(name, sections, "no section in docs/runbook.md")
        down = [e for e in alerts if e[1] == "CkptmonDown"][0]
        self.assertEqual(down[2], 'up{job="ckptmon"} == 0')

    # --- the dashboard --------------------------------------------------------------

    def test_dashboard_structure(self):
        dash = load_dashboard()
        self.assertGreaterEqual(dash["schemaVersion"], 36)
        variables = {v["name"]: v for v in dash["templating"]["list"]}
        ds = variables["datasource"]
        self.assertEqual((ds["type"], ds["query"]), ("datasource", "prometheus"))
        for name in ("instance", "tier", "training_job"):
            v = variables[name]
            self.assertEqual(v["type"], "query", name)
            self.assertEqual(v["datasource"], {"type": "prometheus", "uid": "${datasource}"}, name)
            self.assertRegex(variable_query(v), r"^label_values\(.+,\s*" + name + r"\)$")
            self.assertTrue(v["includeAll"] and v["multi"], name)
        ids = [p["id"] for p in all_panels(dash)]
        self.assertEqual(len(ids), len(set(ids)), "panel ids are unique")
        n_panels = n_targets = 0
        for p in all_panels(dash):
            where = f"panel {p['id']} {p.get('title')!r}"
            g = p["gridPos"]
            self.assertLessEqual(g["x"] + g["w"], 24, where)
            self.assertTrue(p.get("title", "").strip(), where)
            if p["type"] == "row":
                continue
            n_panels += 1
            self.assertTrue(p.get("description", "").strip(), f"{where} has no description")
            self.assertEqual(p.get("datasource"), {"type": "prometheus", "uid": "${datasource}"}, where)
            self.assertGreaterEqual(len(p.get("targets", [])), 1, f"{where} has no target")
            refs = [t["refId"] for t in p["targets"]]
            self.assertEqual(len(refs), len(set(refs)), where)
            for t in p["targets"]:
                n_targets += 1
                self.assertEqual(t.get("datasource"), p["datasource"], where)
                self.assertTrue(t.get("expr", "").strip(), f"{where} target {t['refId']}")
                # Meaningful across instances: every query aggregates (sum, max,
                # min or count), never lists raw per-instance series.
                self.assertRegex(t["expr"], AGGREGATION, f"{where} target {t['refId']}")
        print(f"\ndashboard: {n_panels} panels, {n_targets} queries, "
              f"{sum(1 for p in all_panels(dash) if p['type'] == 'row')} rows")
        self.assertGreaterEqual(n_panels, 20)

    def test_dashboard_promql_parses(self):
        exprs = dashboard_expressions(load_dashboard())
        for where, expr in exprs:
            self.assertNotIn("$", expr, where)
        rules = self.write("dashboard-rules.yml", {"groups": [{"name": "dashboard", "rules": [
            {"record": f"dashboard:query_{i}", "expr": expr} for i, (_, expr) in enumerate(exprs)]}]})
        p = promtool("check", "rules", rules)
        print(f"\npromtool check rules on {len(exprs)} dashboard expressions: exit {p.returncode}")
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn(f"SUCCESS: {len(exprs)} rules found", p.stdout)

    def test_dashboard_promql_parse_check_is_real(self):
        rules = self.write("bad.yml", {"groups": [{"name": "g", "rules": [
            {"record": "dashboard:bad", "expr": "sum by (tier (ckpt_tier_up)"}]}]})
        self.assertNotEqual(promtool("check", "rules", rules).returncode, 0)

    def fleet_test(self, exprs):
        rules = self.write("empty-rules.yml", {"groups": []})
        test = self.write("fleet-test.yml", {
            "rule_files": [rules], "evaluation_interval": "1m",
            "tests": [{"interval": "1m", "input_series": synthetic_series(documented_metrics()),
                       # absent() is empty exactly when the query returns data.
                       "promql_expr_test": [{"expr": f"absent({e})", "eval_time": "30m",
                                             "exp_samples": []} for e in exprs]}]})
        return promtool("test", "rules", test)

    def test_dashboard_queries_return_data_on_a_synthetic_fleet(self):
        exprs = dashboard_expressions(load_dashboard())
        series = synthetic_series(documented_metrics())
        p = self.fleet_test([e for _, e in exprs])
        print(f"\npromtool test rules: {len(exprs)} dashboard expressions on {len(series)} "
              f"synthetic series: exit {p.returncode}")
        self.assertEqual(p.returncode, 0, p.stdout)

    def test_synthetic_fleet_check_is_real(self):
        # A label value ckptmon never exports, and a label it does not have,
        # both return nothing and must fail.
        p = self.fleet_test(['sum(ckpt_checkpoints{state="comitted"})',
                             'sum by (tier) (ckpt_tier_up{job="llama"})'])
        self.assertNotEqual(p.returncode, 0)
        self.assertEqual(p.stdout.count("got: {} 1"), 2, p.stdout)

    # --- metric names -----------------------------------------------------------------

    def test_metric_name_extraction(self):
        self.assertEqual(
            metric_names('max by (tier) (1 - a_bytes{x="y(z)"} / (b_bytes{t=~"$tier"} > 0)) '
                         'or on (instance) histogram_quantile(0.9, sum by (le) '
                         '(rate(c_bucket[5m] offset 1h))) unless ignoring (state) '
                         'label_replace(d, "job", "", "job", "e_f") < +Inf'),
            {"a_bytes", "b_bytes", "c_bucket", "d"})
        self.assertEqual(metric_names("tier:ckpt_tier_up:min == bool 1"), {"tier:ckpt_tier_up:min"})

    def test_every_metric_used_is_documented(self):
        docs = documented_metrics()
        self.assertIn("ckpt_tier_up", docs)
        self.assertEqual(docs["ckptmon_worker_threads"].labels, {"state": ["busy", "idle"]})
        used = {}
        for where, expr in dashboard_expressions(load_dashboard()):
            for name in metric_names(expr):
                used.setdefault(name, where)
        recorded = set()
        for path in RULE_FILES:
            for kind, name, expr, _ in rule_entries(path):
                if kind == "record":
                    recorded.add(name)
                for metric in metric_names(expr):
                    used.setdefault(metric, f"{os.path.basename(path)} {name}")
        for path in RULE_TESTS:
            for name in input_series_names(path):
                used.setdefault(name, f"input series of {os.path.basename(path)}")
        print(f"\n{len(used)} metric names used, {len(docs)} documented")
        self.assertIn("ckpt_checkpoint_pause_seconds_bucket", used)
        undocumented = {n: w for n, w in used.items() if not is_documented(n, docs, recorded)}
        self.assertEqual(undocumented, {}, "used but not in docs/metrics.md")
        # The check sees a rename.
        self.assertFalse(is_documented("ckpt_tier_avail_byte", docs))
        self.assertFalse(is_documented("ckpt_tier_up_bucket", docs))


if __name__ == "__main__":
    harness.main()
