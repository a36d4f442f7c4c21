#!/usr/bin/python3
"""`serve --config.watch-interval`: the configuration file is reloaded when
it changes, laid out as kubelet lays out a mounted ConfigMap (the file is a
symlink through `..data`, and an update swaps `..data` to a new directory
atomically). A broken update is rejected: the running configuration stays,
the reload gauge drops to 0 and the pod stays ready. Unchanged files are not
reloaded again.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


class ConfigMapVolume:
    """A directory as kubelet's atomic writer keeps it."""

    def __init__(self, root):
        self.root = root
        self.n = 0
        os.makedirs(root)

    def update(self, files):
        self.n += 1
        ts = os.path.join(self.root, f"..2026_12_01_00_00_{self.n:02d}.000000")
        os.makedirs(ts)
        for name, text in files.items():
            with open(os.path.join(ts, name), "w") as f:
                f.write(text)
        tmp = os.path.join(self.root, "..data_tmp")
        os.symlink(os.path.basename(ts), tmp)
        os.rename(tmp, os.path.join(self.root, "..data"))  # the atomic swap
        for name in files:
            link = os.path.join(self.root, name)
            if not os.path.islink(link):
                os.symlink(os.path.join("..data", name), link)


class ConfigWatch(harness.TwoTierTest):
    def setUp(self):
        super().setUp()
        self.vol = ConfigMapVolume(self.ws.path("configmap"))
        self.state = self.ws.mkdir("state")
        self.vol.update({"ckptmon.yml": self.config([harness.tier_yaml("a", self.a)])})
        self.ck = self.ws.start(harness.Ckptmon(os.path.join(self.vol.root, "ckptmon.yml"),
                                                serve_args=["--config.watch-interval=100ms"]))
        self.ck.wait_ready()

    def config(self, tiers):
        return harness.config_yaml(tiers, state_dir=self.state)

    def tiers(self):
        return sorted(t["name"] for t in self.ck.get("/api/v1/tiers").json())

    def reloads(self):
        return len([l for l in self.ck.output().splitlines()
                    if "msg=\"configuration reloaded\"" in l])

    def test_configmap_update_is_reloaded_and_a_broken_one_rejected(self):
        self.assertEqual(self.tiers(), ["a"])
        self.assertEqual(self.reloads(), 0)
        self.vol.update({"ckptmon.yml": self.config(
            [harness.tier_yaml("a", self.a), harness.tier_yaml("b", self.b)])})
        harness.wait_for(lambda: self.tiers() == ["a", "b"], what="tier b after the update")
        # The API may show the new tiers before the reader thread has the log
        # line: wait for the line itself, then count.
        harness.wait_for(lambda: self.reloads() >= 1, what="the reload's log line")
        self.assertEqual(self.reloads(), 1)
        m = self.ck.scrape()
        self.assertEqual(m.get("ckptmon_config_last_reload_successful"), 1)

        # A broken update: an unknown role.
        self.vol.update({"ckptmon.yml": self.config(
            [harness.tier_yaml("a", self.a), harness.tier_yaml("c", self.b, role="fastest")])})
        harness.wait_for(
            lambda: self.ck.scrape().get("ckptmon_config_last_reload_successful") == 0,
            what="the reload gauge to drop to 0")
        self.ck.wait_line(r"config reload rejected.*fastest")
        self.assertEqual(self.tiers(), ["a", "b"])  # the running configuration
        self.assertEqual(self.ck.get("/-/ready").status, 200)
        self.assertEqual(self.reloads(), 1)

        # Fixed again: picked up, gauge back to 1.
        self.vol.update({"ckptmon.yml": self.config([harness.tier_yaml("b", self.b)])})
        harness.wait_for(lambda: self.tiers() == ["b"], what="the fixed update")
        self.assertEqual(self.ck.scrape().get("ckptmon_config_last_reload_successful"), 1)
        harness.wait_for(lambda: self.reloads() >= 2, what="the second reload's log line")
        self.assertEqual(self.reloads(), 2)


class Flag(unittest.TestCase):
    def test_bad_interval_is_refused(self):
        harness.require_binary()
        r = harness.run([harness.BIN, "serve", "--config.watch-interval", "soon"], check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--config.watch-interval", r.stderr + r.stdout)


if __name__ == "__main__":
    harness.main()
