#!/usr/bin/python3
"""Per-tier I/O counters from a real block device: the test makes an ext4
file system on a loop device (as root), puts a tier on it, writes and fsyncs
a file of known size, and sees ckpt_tier_written_bytes_total rise by at
least that many bytes. The scrape passes `promtool check metrics`, and
/api/v1/tiers names the source. A tmpfs tier says io_source none, which is
not an error."""

import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

PROMTOOL = "/usr/bin/promtool"
FILE_BYTES = 8 * 1024 * 1024


class TierIoOnALoopDevice(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        harness.require_root("making a loop device and mounting ext4")
        harness.require_executable(PROMTOOL, "prometheus")
        for tool, pkg in (("losetup", "mount"), ("mkfs.ext4", "e2fsprogs")):
            if shutil.which(tool) is None:
                raise unittest.SkipTest(f"{tool} is missing (Debian package {pkg})")
        if not os.path.exists("/dev/loop-control"):
            raise unittest.SkipTest("loop devices are impossible here: /dev/loop-control is missing")
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        image = self.ws.path("disk.img")
        with open(image, "wb") as f:
            f.truncate(96 * 1024 * 1024)
        r = harness.run(["losetup", "--find", "--show", image], check=False)
        if r.returncode != 0:
            raise unittest.SkipTest(f"loop devices are impossible here: losetup: {r.stderr.strip()}")
        self.loop = r.stdout.strip()
        self.ws.on_close(lambda: harness.run(["losetup", "-d", self.loop], check=False))
        harness.run(["mkfs.ext4", "-q", "-F", self.loop])
        self.mnt = self.ws.mkdir("mnt")
        harness.run(["mount", "-t", "ext4", self.loop, self.mnt])
        self.ws.on_close(lambda: harness.unmount(self.mnt))
        self.tier = os.path.join(self.mnt, "ckpt")
        os.makedirs(self.tier)
        self.shm = self.ws.mount_tmpfs("shm", "size=4m")

    def test_written_counter_rises_by_the_fsynced_bytes(self):
        cfg = harness.config_yaml([
            harness.tier_yaml("loop", self.tier),
            harness.tier_yaml("shm", self.shm, role="staging"),
        ], scan_interval="200ms")
        cfg += "network:\n  interfaces: [lo]\n"
        ck = self.ws.ckptmon(cfg)
        ck.wait_ready()
        dev = os.path.basename(self.loop)

        def sample():
            return ck.scrape().get("ckpt_tier_written_bytes_total", tier="loop")

        before = harness.wait_for(lambda: sample(), what="ckpt_tier_written_bytes_total{tier=loop}")
        m = ck.scrape()
        self.assertEqual(m.get("ckpt_tier_io_source_info", tier="loop", source="block",
                               devices=dev, shared_with=""), 1.0)
        self.assertEqual(m.get("ckpt_tier_io_source_info", tier="shm", source="none"), 1.0)
        self.assertIsNone(m.get("ckpt_tier_written_bytes_total", tier="shm"))
        # Block devices count no metadata operations: none exported, not zeros.
        self.assertEqual(m.labels_of("ckpt_tier_metadata_operations_total", tier="loop"), [])
        # lo has no link speed (the speed file answers EINVAL): absent, not 0.
        self.assertIsNotNone(m.get("ckpt_network_receive_bytes_total", interface="lo"))
        self.assertIsNone(m.get("ckpt_network_link_speed_bytes_per_second", interface="lo"))
        self.assertEqual(m.get("ckptmon_io_read_errors_total"), 0.0)

        path = os.path.join(self.tier, "shard-00000.bin")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            chunk = os.urandom(1024 * 1024)
            for _ in range(FILE_BYTES // len(chunk)):
                os.write(fd, chunk)
            os.fsync(fd)
        finally:
            os.close(fd)
        dfd = os.open(self.tier, os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(dfd)
        os.close(dfd)

        after = harness.wait_for(
            lambda: (v := sample()) is not None and v >= before + FILE_BYTES and v,
            what=f"ckpt_tier_written_bytes_total{{tier=loop}} to rise by {FILE_BYTES}")
        print(f"\nwritten counter: {before:.0f} -> {after:.0f} (+{after - before:.0f} bytes "
              f"for a {FILE_BYTES}-byte file)")

        r = ck.get("/metrics")
        p = subprocess.run([PROMTOOL, "check", "metrics"], input=r.body,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode())
        self.assertEqual((p.stdout + p.stderr).decode().strip(), "")

        tiers = {t["name"]: t for t in ck.get("/api/v1/tiers").json()}
        self.assertEqual(tiers["loop"]["io_source"], "block")
        self.assertEqual(tiers["loop"]["io_devices"], [dev])
        self.assertEqual(tiers["shm"]["io_source"], "none")


if __name__ == "__main__":
    unittest.main(verbosity=2)
