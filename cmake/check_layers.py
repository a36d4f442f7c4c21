#!/usr/bin/env python3
"""Checks that every source file includes only headers of the layers it may use.

The layer table (docs/architecture.md, "Layers", describes it; this file holds
it): each folder is one CMake library (ckptmon_<folder>), and a file in a
folder may include project headers ("dir/...") of the folders in ALLOWED only,
and the third-party headers of THIRD_PARTY only where that table lets it.

Usage: check_layers.py [--root DIR]    (DIR defaults to the repository root)
Prints one line per violation, "file:line: rule", and exits 1 if there is any.
An exception that no longer matches an include is an error too, so the list
shrinks as the code is fixed.
"""

import argparse
import os
import re
import sys

# util <- {events, prom} <- model <- {collectors, rules} <- {config, store}
#   <- http <- {exporter, api} <- serve <- {tools/review, tools/burst} <- cli.
# prom (the Prometheus text format and HTTP API, the sample-value text) is
# pure like events and beside it: model holds no Prometheus text.
# collectors and rules never include each other, config or store; config
# (the YAML reader) knows only the plain types it fills (util, events,
# model); http (the server, TLS, the client) knows no metric family, view or
# loop; exporter
# (the metric families) and api (the JSON and HTML views of a snapshot) never
# include the loop that feeds them (serve), which never includes a one-shot
# command (tools/), which cli wires.
_DOMAIN = ["util", "events", "prom", "model", "collectors", "rules", "config", "store"]
_BELOW = {
    "util": [],
    "events": ["util"],
    "prom": ["util"],
    "model": ["util", "events"],
    "collectors": ["util", "events", "prom", "model"],
    "rules": ["util", "events", "prom", "model"],
    "config": ["util", "events", "model"],
    "store": ["util", "events", "prom", "model", "collectors", "rules"],
    "http": _DOMAIN[:7],
    "exporter": _DOMAIN + ["http"],
    "api": _DOMAIN + ["http"],
    "serve": _DOMAIN + ["http", "exporter", "api"],
    "tools/review": _DOMAIN + ["http", "exporter", "api", "serve"],
    "tools/burst": _DOMAIN + ["http", "exporter", "api", "serve"],
    "cli": _DOMAIN + ["http", "exporter", "api", "serve", "tools/review", "tools/burst"],
}
ALLOWED = {layer: set(below) | {layer} for layer, below in _BELOW.items()}
LAYERS = list(_BELOW)


def layer_of(path):
    """The layer of a repository path ("tools/review/plan.cpp" -> "tools/review",
    "http/gzip.hpp" -> "http"), or None when it is in none."""
    parts = path.split("/")
    for n in (2, 1):
        if len(parts) > n and "/".join(parts[:n]) in ALLOWED:
            return "/".join(parts[:n])
    return None


# Third-party headers a layer owns (an include prefix -> the layers that may
# include it). Headers not named here (the standard library, POSIX, spdlog,
# fmt...) may be included anywhere.
THIRD_PARTY = [
    # JSON: util (json_quote), collectors (checkpoint manifests, the Prometheus
    # API they query), store (the JSON the database keeps), the layers above
    # (the wire formats). model and rules hold plain values and render nothing.
    ("nlohmann/", {"util", "collectors", "store", "http", "exporter", "api", "serve",
                   "tools/review", "tools/burst", "cli"}),
    ("yaml-cpp/", {"config"}),
    ("sqlite3.h", {"store"}),
    ("boost/beast", {"http", "serve", "tools/review", "tools/burst"}),
    ("boost/asio", {"http", "serve", "tools/review", "tools/burst", "cli"}),
    # TLS is http's: the server and the one client (http/http_client).
    ("openssl/ssl.h", {"http"}),
    ("crypt.h", {"http"}),
    ("systemd/", {"serve"}),
    ("prometheus/", {"exporter", "serve"}),
    # events parses the event logs with it, prom the Prometheus API's
    # answers (On-Demand: no document tree of a big matrix).
    ("simdjson.h", {"events", "prom"}),
]

# (file, included header): allowed although the table says no, and why.
EXCEPTIONS = {
    # The torchsnapshot layout's .snapshot_metadata is a YAML file the
    # recogniser reads: a checkpoint format, not ckptmon's configuration.
    ("collectors/layouts/torchsnapshot.cpp", "yaml-cpp/yaml.h"):
        "torchsnapshot metadata is YAML",
}

SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cc", ".hpp.in")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def check(root):
    problems = []
    used = set()
    for layer in LAYERS:
        base = os.path.join(root, layer)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                with open(path, encoding="utf-8", errors="replace") as f:
                    lines = f.readlines()
                for n, line in enumerate(lines, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    kind, header = m.groups()
                    rule = None
                    head = layer_of(header)
                    if kind == '"' and head is not None:
                        if head not in ALLOWED[layer]:
                            rule = (f"{layer} may not include {header} (layer {head}; "
                                    f"{layer} may use {', '.join(sorted(ALLOWED[layer]))})")
                    else:
                        for prefix, owners in THIRD_PARTY:
                            if header.startswith(prefix) and layer not in owners:
                                rule = (f"<{header}> belongs to {', '.join(sorted(owners))}, "
                                        f"not {layer}")
                                break
                    if rule is None:
                        continue
                    if (rel, header) in EXCEPTIONS:
                        used.add((rel, header))
                        continue
                    problems.append(f"{rel}:{n}: {rule}")
    for rel, header in sorted(set(EXCEPTIONS) - used):
        problems.append(f"cmake/check_layers.py: exception ({rel}, {header}) no longer needed: "
                        "remove it from EXCEPTIONS")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = ap.parse_args()
    problems = check(args.root)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} layer violation(s); the table is in cmake/check_layers.py "
              "(docs/architecture.md)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
