#!/usr/bin/python3
"""ckptmon's tier figures equal Debian's node_exporter's for the same mount.

Three tmpfs mounts of fixed size under a temporary directory, each a tier:
a writable one with files in it, a read-only bind mount of that same file
system, and a second tmpfs remounted read-only. node_exporter (the
Prometheus project's own exporter) is the oracle for the figures; the mount
options given to tmpfs are a second, independent one for size and inodes.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

PAGE = os.sysconf("SC_PAGESIZE")  # tmpfs block size
# Free space may move between the two reads (it does not here, since nothing
# writes to these private mounts, but the contract allows a few blocks).
DRIFT = 4 * PAGE

# node_exporter's default fs-type exclusions plus FUSE: other tests (and other
# people) may have a deliberately stuck FUSE mount that would stall its scrape.
FS_TYPES_EXCLUDE = (
    "^(autofs|binfmt_misc|bpf|cgroup2?|configfs|debugfs|devpts|devtmpfs|fusectl|fuse|fuse\\..*|"
    "hugetlbfs|iso9660|mqueue|nsfs|overlay|proc|procfs|pstore|rpc_pipefs|securityfs|selinuxfs|"
    "squashfs|sysfs|tracefs)$")
# Unlike the default, this does not exclude /tmp (where the test mounts live).
MOUNT_POINTS_EXCLUDE = "^/(dev|proc|run|sys)($|/)"


class NodeExporterComparison(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        harness.require_root("mounting tmpfs")
        harness.require_executable(harness.NODE_EXPORTER, "prometheus-node-exporter")
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)

        self.rw = self.ws.mount_tmpfs("rw", "size=64m,nr_inodes=5000,mode=755")
        ckpt = os.path.join(self.rw, "ckpt")
        for step in range(3):
            d = os.path.join(ckpt, f"step_{step:05d}")
            os.makedirs(d)
            for shard in range(4):
                with open(os.path.join(d, f"shard_{shard}.bin"), "wb") as f:
                    f.write(os.urandom(1024 * 1024 + 123 * shard))
        self.tier_rw = ckpt
        self.robind = self.ws.bind_readonly(self.rw, "robind")
        self.rofs = self.ws.mount_tmpfs("rofs", "size=16m,nr_inodes=1000")
        with open(os.path.join(self.rofs, "milestone.bin"), "wb") as f:
            f.write(os.urandom(3 * 1024 * 1024))
        harness.run(["mount", "-o", "remount,ro", self.rofs])

        self.ck = self.ws.ckptmon(harness.config_yaml([
            harness.tier_yaml("rw", self.tier_rw, role="staging", drains_to="rofs"),
            harness.tier_yaml("robind", self.robind, role="rapid"),
            harness.tier_yaml("rofs", self.rofs, role="milestone"),
        ], scan_interval="1s"))
        self.ck.wait_ready()
        self.ne_port = self.start_node_exporter()

    def start_node_exporter(self):
        return harness.start_node_exporter(self.ws, [
            "--collector.disable-defaults", "--collector.filesystem",
            f"--collector.filesystem.mount-points-exclude={MOUNT_POINTS_EXCLUDE}",
            f"--collector.filesystem.fs-types-exclude={FS_TYPES_EXCLUDE}"])

    def node(self, name, mountpoint):
        m = harness.scrape(self.ne_port)
        v = m.get(name, mountpoint=mountpoint)
        self.assertIsNotNone(v, f"node_exporter has no {name} for {mountpoint}:\n"
                                + "\n".join(l for l in m.text.splitlines() if mountpoint in l))
        return v

    def test_figures_equal_node_exporter(self):
        ck = self.ck.scrape()
        ne = harness.scrape(self.ne_port)
        for tier, mp in (("rw", self.rw), ("robind", self.robind), ("rofs", self.rofs)):
            with self.subTest(tier=tier):
                self.assertEqual(ck.get("ckpt_tier_up", tier=tier), 1.0)
                pairs = {
                    "size_bytes": ("ckpt_tier_size_bytes", "node_filesystem_size_bytes", 0),
                    "avail_bytes": ("ckpt_tier_avail_bytes", "node_filesystem_avail_bytes", DRIFT),
                    "free_bytes": ("ckpt_tier_free_bytes", "node_filesystem_free_bytes", DRIFT),
                    "files": ("ckpt_tier_files", "node_filesystem_files", 0),
                    "files_free": ("ckpt_tier_files_free", "node_filesystem_files_free", 0),
                }
                for what, (ck_name, ne_name, slack) in pairs.items():
                    mine = ck.get(ck_name, tier=tier)
                    theirs = ne.get(ne_name, mountpoint=mp)
                    self.assertIsNotNone(mine, f"ckptmon has no {ck_name} for {tier}")
                    self.assertIsNotNone(theirs, f"node_exporter has no {ne_name} for {mp}")
                    if slack == 0:
                        self.assertEqual(mine, theirs, what)
                    else:
                        self.assertAlmostEqual(mine, theirs, delta=slack, msg=what)
                    print(f"{tier:7s} {what:12s} ckptmon={mine:.0f} node_exporter={theirs:.0f}")
                # Identity labels agree with node_exporter's for that mount point.
                ne_labels = ne.labels_of("node_filesystem_size_bytes", mountpoint=mp)[0]
                info = ck.labels_of("ckpt_tier_info", tier=tier)
                self.assertEqual(len(info), 1)
                self.assertEqual(info[0]["mountpoint"], mp)
                self.assertEqual(info[0]["fstype"], ne_labels["fstype"])
                self.assertEqual(info[0]["device"], ne_labels["device"])

    def test_figures_match_the_mount_options(self):
        # A third opinion that depends on neither exporter: what tmpfs was told.
        ck = self.ck.scrape()
        self.assertEqual(ck.get("ckpt_tier_size_bytes", tier="rw"), 64 * 1024 * 1024)
        self.assertEqual(ck.get("ckpt_tier_files", tier="rw"), 5000)
        self.assertEqual(ck.get("ckpt_tier_size_bytes", tier="rofs"), 16 * 1024 * 1024)
        self.assertEqual(ck.get("ckpt_tier_files", tier="rofs"), 1000)
        # 12 shards of at least 1 MiB are written; tmpfs rounds up to pages.
        used = ck.get("ckpt_tier_size_bytes", tier="rw") - ck.get("ckpt_tier_free_bytes", tier="rw")
        self.assertGreaterEqual(used, 12 * 1024 * 1024)
        # Root dir, ckpt, 3 step dirs and 12 shards are inodes in use.
        used_inodes = ck.get("ckpt_tier_files", tier="rw") - ck.get("ckpt_tier_files_free", tier="rw")
        self.assertEqual(used_inodes, 1 + 1 + 3 + 12)

    def test_readonly(self):
        ck = self.ck.scrape()
        ne = harness.scrape(self.ne_port)
        got = {t: ck.get("ckpt_tier_readonly", tier=t) for t in ("rw", "robind", "rofs")}
        self.assertEqual(got, {"rw": 0.0, "robind": 0.0, "rofs": 1.0})
        # node_exporter 1.5 takes "ro" from the per-mount options in
        # /proc/1/mounts, which describe this one view of the file system:
        # the read-only bind mount is 1 there. ckptmon reads the superblock
        # options in mountinfo instead, because what a checkpoint tier needs
        # to know is whether the file system itself accepts writes: the
        # trainer writes through its own, writable mount, and ckptmon is
        # commonly handed a read-only bind of the same file system. So the
        # bind mount is the one expected difference; the others agree.
        theirs = {t: ne.get("node_filesystem_readonly", mountpoint=mp)
                  for t, mp in (("rw", self.rw), ("robind", self.robind), ("rofs", self.rofs))}
        print(f"readonly ckptmon={got} node_exporter={theirs}")
        self.assertEqual(theirs["rw"], got["rw"])
        self.assertEqual(theirs["rofs"], got["rofs"])
        self.assertEqual(theirs["robind"], 1.0)
        # The kernel agrees with both readings: writes fail through the bind
        # mount (EROFS) but succeed through the original mount.
        with self.assertRaises(OSError):
            open(os.path.join(self.robind, "probe-write"), "w").close()
        path = os.path.join(self.rw, "probe-write")
        open(path, "w").close()
        os.unlink(path)

    def test_figures_follow_writes(self):
        before = self.ck.scrape().get("ckpt_tier_free_bytes", tier="rw")
        with open(os.path.join(self.tier_rw, "new.bin"), "wb") as f:
            f.write(os.urandom(4 * 1024 * 1024))
        # The next probe (scan_interval 1s) sees it; a reload that changes
        # nothing no longer probes at once (issue 27 item 5).
        after = harness.wait_for(
            lambda: (lambda v: v if v is not None and v < before else None)(
                self.ck.scrape().get("ckpt_tier_free_bytes", tier="rw")),
            what="free bytes to drop")
        self.assertAlmostEqual(before - after, 4 * 1024 * 1024, delta=DRIFT)
        self.assertAlmostEqual(after, self.node("node_filesystem_free_bytes", self.rw), delta=DRIFT)


if __name__ == "__main__":
    harness.main()
