#!/usr/bin/env python3
"""The layer check (cmake/check_layers.py) fails on a wrong include.

Runs the checker on a copy of the source folders: unchanged it passes; with
one wrong project include, one wrong third-party include, or a stale exception
it fails and names file:line and the rule. Expected lines are written out
here by hand from the table, not produced by the checker.
"""

import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CHECKER = os.path.join(HERE, "check_layers.py")
sys.path.insert(0, HERE)
import check_layers  # noqa: E402

LAYERS = check_layers.LAYERS


def run(root):
    p = subprocess.run([sys.executable, CHECKER, "--root", root], capture_output=True, text=True)
    return p.returncode, p.stdout


def copy_tree(dst):
    for layer in LAYERS:
        if not os.path.isdir(os.path.join(ROOT, layer)):
            continue
        shutil.copytree(os.path.join(ROOT, layer), os.path.join(dst, layer),
                        ignore=shutil.ignore_patterns("CMakeLists.txt"))


def inject(root, rel, line):
    """Adds `line` after the first line of `rel`; returns its 1-based line number."""
    path = os.path.join(root, rel)
    with open(path) as f:
        lines = f.readlines()
    lines.insert(1, line + "\n")
    with open(path, "w") as f:
        f.writelines(lines)
    return 2


def expect(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)


# One wrong include each: (what, file, the line added after its first line,
# the line the checker must print for it). Line 2 is where inject() puts it;
# the allowed layers are read off the table in docs/architecture.md.
WRONG_INCLUDES = [
    ("a rule including the exporter: the rules layer sits below it",
     "rules/evaluate.cpp", '#include "exporter/metrics.hpp"',
     "rules/evaluate.cpp:2: rules may not include exporter/metrics.hpp "
     "(layer exporter; rules may use events, model, prom, rules, util)"),
    ("the loop including a one-shot command",
     "serve/rules_cycle.cpp", '#include "tools/review/plan_command.hpp"',
     "serve/rules_cycle.cpp:2: serve may not include tools/review/plan_command.hpp "
     "(layer tools/review; serve may use api, collectors, config, events, exporter, http, model, "
     "prom, rules, serve, store, util)"),
    ("a view including the loop: views take a snapshot",
     "api/web.cpp", '#include "serve/daemon.hpp"',
     "api/web.cpp:2: api may not include serve/daemon.hpp "
     "(layer serve; api may use api, collectors, config, events, http, model, prom, rules, store, "
     "util)"),
    ("the HTTP server including a metric family",
     "http/http_server.cpp", '#include "exporter/self.hpp"',
     "http/http_server.cpp:2: http may not include exporter/self.hpp "
     "(layer exporter; http may use collectors, config, events, http, model, prom, rules, util)"),
    ("a metric family including the loop",
     "exporter/rules.cpp", '#include "serve/rules_cycle.hpp"',
     "exporter/rules.cpp:2: exporter may not include serve/rules_cycle.hpp "
     "(layer serve; exporter may use collectors, config, events, exporter, http, model, prom, "
     "rules, store, util)"),
    ("one command including another's folder",
     "tools/burst/burst.cpp", '#include "tools/review/scan_command.hpp"',
     "tools/burst/burst.cpp:2: tools/burst may not include tools/review/scan_command.hpp "
     "(layer tools/review; tools/burst may use api, collectors, config, events, exporter, http, "
     "model, prom, rules, serve, store, tools/burst, util)"),
    ("a collector including its sibling layer, rules",
     "collectors/tier_stats.cpp", '#include "rules/capacity.hpp"',
     "collectors/tier_stats.cpp:2: collectors may not include rules/capacity.hpp "
     "(layer rules; collectors may use collectors, events, model, prom, util)"),
    ("the store including its sibling layer, config",
     "store/history.cpp", '#include "config/config.hpp"',
     "store/history.cpp:2: store may not include config/config.hpp "
     "(layer config; store may use collectors, events, model, prom, rules, store, util)"),
    ("SQLite outside store/",
     "model/catalog.cpp", "#include <sqlite3.h>",
     "model/catalog.cpp:2: <sqlite3.h> belongs to store, not model"),
    ("JSON in rules: wire formats are rendered above it",
     "rules/alerts.cpp", "#include <nlohmann/json.hpp>",
     "rules/alerts.cpp:2: <nlohmann/json.hpp> belongs to "
     "api, cli, collectors, exporter, http, serve, store, tools/burst, tools/review, util, "
     "not rules"),
    ("the configuration reader including the rules: it fills plain types",
     "config/rules_config.cpp", '#include "rules/alert_table.hpp"',
     "config/rules_config.cpp:2: config may not include rules/alert_table.hpp "
     "(layer rules; config may use config, events, model, util)"),
    ("the Prometheus parsers including the model: prom is pure, beside events",
     "prom/exposition.cpp", '#include "model/checkpoint.hpp"',
     "prom/exposition.cpp:2: prom may not include model/checkpoint.hpp "
     "(layer model; prom may use prom, util)"),
    ("TLS outside http/: the one client and the server own it",
     "serve/alertmanager_client.cpp", "#include <openssl/ssl.h>",
     "serve/alertmanager_client.cpp:2: <openssl/ssl.h> belongs to http, not serve"),
]


def expect_failure(root, want, what):
    """The checker fails on `root` and prints `want` as one of its lines."""
    rc, out = run(root)
    expect(rc == 1 and want in out.splitlines(), f"{what}: rc {rc}, wanted the line\n{want}\n"
           f"got:\n{out}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        clean = os.path.join(tmp, "clean")
        copy_tree(clean)
        rc, out = run(clean)
        expect(rc == 0 and out == "", f"the tree passes (rc {rc}):\n{out}")

        for i, (what, rel, line, want) in enumerate(WRONG_INCLUDES):
            bad = os.path.join(tmp, f"wrong{i}")
            copy_tree(bad)
            expect(inject(bad, rel, line) == 2, "inject() adds line 2")
            expect_failure(bad, want, what)

        # An exception whose include is gone is reported, so the list shrinks.
        stale = os.path.join(tmp, "stale")
        copy_tree(stale)
        path = os.path.join(stale, "collectors/layouts/torchsnapshot.cpp")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("#include <yaml-cpp/yaml.h>", ""))
        expect_failure(stale, "cmake/check_layers.py: exception (collectors/layouts/torchsnapshot.cpp, "
                       "yaml-cpp/yaml.h) no longer needed: remove it from EXCEPTIONS",
                       "a stale exception")
    print(f"ok: the layer check passes on the tree and fails on {len(WRONG_INCLUDES) + 1} "
          "injected mistakes")


if __name__ == "__main__":
    main()
