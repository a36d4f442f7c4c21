#!/usr/bin/python3
"""Docs and the landing page name only commands and endpoints that exist
(issue 16 item 9): every `ckptmon <command>` in a code span or block of
README.md and docs/*.md, and on `/`, is a subcommand the binary lists in its
--help; every link on `/` answers (not 404)."""

import glob
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def subcommands():
    """The subcommands `ckptmon --help` lists (the binary's own word)."""
    out = subprocess.run([harness.BIN, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=30, check=True).stdout
    section = out.split("Subcommands:", 1)[1]
    return {m.group(1) for m in re.finditer(r"^  ([a-z][a-z-]*)\s", section, re.M)}


def code_parts(text):
    """Fenced blocks and inline code spans of a Markdown text."""
    blocks = re.findall(r"```.*?```", text, re.S)
    rest = re.sub(r"```.*?```", "", text, flags=re.S)
    return blocks + re.findall(r"`([^`\n]+)`", rest)


# `ckptmon serve`, `/usr/bin/ckptmon scan`, `$ ckptmon plan`; not the CMake
# target in `--target ckptmon delayfs`.
COMMAND = re.compile(r"(?:^|(?<=[\s/$(]))(?<!--target )ckptmon ([a-z][a-z-]*)", re.M)


def named_commands(text):
    return {m.group(1) for m in COMMAND.finditer(text)}


class DocCommands(unittest.TestCase):
    def setUp(self):
        harness.require_binary()

    def test_the_pattern_finds_commands_and_skips_prose(self):
        self.assertEqual(named_commands("$ ckptmon plan --tier a\n/usr/bin/ckptmon serve"),
                         {"plan", "serve"})
        self.assertEqual(named_commands("cmake --build build --target ckptmon delayfs"), set())
        self.assertEqual(named_commands("ckptmon.yml ckptmon_tier_up"), set())

    def test_docs_name_only_existing_commands(self):
        known = subcommands()
        self.assertTrue({"serve", "scan", "plan", "burst", "report"} <= known, known)
        files = [os.path.join(harness.SOURCE_DIR, "README.md")] + sorted(
            glob.glob(os.path.join(harness.SOURCE_DIR, "docs", "*.md")))
        unknown = []
        for path in files:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for part in code_parts(text):
                for name in sorted(named_commands(part) - known):
                    unknown.append(f"{os.path.relpath(path, harness.SOURCE_DIR)}: ckptmon {name}")
        self.assertEqual(unknown, [])

    def test_landing_page_names_existing_commands_and_endpoints(self):
        ws = harness.Workspace()
        self.addCleanup(ws.close)
        tier = ws.mkdir("a")
        ck = ws.ckptmon(harness.config_yaml([harness.tier_yaml("a", tier)],
                                            state_dir=ws.mkdir("state")))
        ck.wait_ready()
        page = ck.get("/").text()
        codes = re.findall(r"<code>(.*?)</code>", page)
        self.assertIn("ckptmon plan", codes)  # the pattern sees what the page has
        for code in codes:
            self.assertLessEqual(named_commands(code), subcommands(), code)
        links = sorted(set(re.findall(r'href="(/[^"?#]*)', page)))
        self.assertIn("/api/v1/jobs", links)
        for link in links:
            with self.subTest(link=link):
                self.assertNotEqual(ck.get(link).status, 404, link)


if __name__ == "__main__":
    harness.main()
