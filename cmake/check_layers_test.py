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
LAYERS = ["util", "events", "model", "collectors", "rules", "config", "store", "daemon"]


def run(root):
    p = subprocess.run([sys.executable, CHECKER, "--root", root], capture_output=True, text=True)
    return p.returncode, p.stdout


def copy_tree(dst):
    for layer in LAYERS:
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


def main():
    with tempfile.TemporaryDirectory() as tmp:
        clean = os.path.join(tmp, "clean")
        copy_tree(clean)
        rc, out = run(clean)
        expect(rc == 0 and out == "", f"the tree passes (rc {rc}):\n{out}")

        # A rule including the daemon: the rules layer sits below it.
        bad = os.path.join(tmp, "rules_daemon")
        copy_tree(bad)
        n = inject(bad, "rules/evaluate.cpp", '#include "daemon/metrics.hpp"')
        rc, out = run(bad)
        expect(rc == 1, f"rules -> daemon fails (rc {rc})")
        expect(out.startswith(f"rules/evaluate.cpp:{n}: rules may not include daemon/metrics.hpp "
                              "(layer daemon; rules may use events, model, rules, util)"),
               f"the message names file:line and the rule:\n{out}")

        # A collector including another sibling layer, rules.
        bad = os.path.join(tmp, "collectors_rules")
        copy_tree(bad)
        n = inject(bad, "collectors/tier_stats.cpp", '#include "rules/capacity.hpp"')
        rc, out = run(bad)
        expect(rc == 1 and f"collectors/tier_stats.cpp:{n}: collectors may not include "
               "rules/capacity.hpp" in out, f"collectors -> rules fails:\n{out}")

        # SQLite outside store/.
        bad = os.path.join(tmp, "model_sqlite")
        copy_tree(bad)
        n = inject(bad, "model/catalog.cpp", "#include <sqlite3.h>")
        rc, out = run(bad)
        expect(rc == 1 and f"model/catalog.cpp:{n}: <sqlite3.h> belongs to store, not model" in out,
               f"<sqlite3.h> in model fails:\n{out}")

        # JSON in rules: wire formats are rendered by the daemon.
        bad = os.path.join(tmp, "rules_json")
        copy_tree(bad)
        n = inject(bad, "rules/alerts.cpp", "#include <nlohmann/json.hpp>")
        rc, out = run(bad)
        expect(rc == 1 and f"rules/alerts.cpp:{n}: <nlohmann/json.hpp> belongs to collectors, "
               "daemon, store, util, not rules" in out, f"<nlohmann/json.hpp> in rules fails:\n{out}")

        # An exception whose include is gone is reported, so the list shrinks.
        stale = os.path.join(tmp, "stale")
        copy_tree(stale)
        path = os.path.join(stale, "collectors/layouts/torchsnapshot.cpp")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("#include <yaml-cpp/yaml.h>", ""))
        rc, out = run(stale)
        expect(rc == 1 and "exception (collectors/layouts/torchsnapshot.cpp, yaml-cpp/yaml.h) "
               "no longer needed" in out, f"a stale exception fails:\n{out}")
    print("ok: the layer check passes on the tree and fails on 5 injected mistakes")


if __name__ == "__main__":
    main()
