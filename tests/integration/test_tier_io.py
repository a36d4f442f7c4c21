#!/usr/bin/python3
"""Per-tier I/O counters from a real block device: the test makes an ext4
file system on a loop device (as root), puts a tier on it, writes and fsyncs
a file of known size, and sees ckpt_tier_written_bytes_total rise by at
least that many bytes. The scrape passes `promtool check metrics`, and
/api/v1/tiers names the source. A tmpfs tier says io_source none, which is
not an error. Where Debian's node_exporter is installed, its diskstats
collector reads the same written bytes for the loop device.

WritebackOnALoopDevice shows why block counters are the kernel's writeback,
not the checkpoint's writes (issue 31): 128 MiB written without fsync wait in
dirty memory (ckpt_node_memory_dirty_bytes rises, the device's written
counter stays behind); after fsync the counter agrees with the bytes written
within 5 %. NodePressure raises this kernel's memory pressure with a bounded
hog (a 16 MiB memory cgroup reading a 96 MiB file) and sees
ckpt_node_pressure_seconds_total follow /proc/pressure/memory."""

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
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        self.loop, self.mnt = self.ws.mount_loop_ext4("mnt", 96)
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
        # The loop device's diskstats time fields; nothing of the sort for tmpfs.
        self.assertIsNotNone(m.get("ckpt_tier_device_io_seconds_total", tier="loop"))
        self.assertIsNotNone(m.get("ckpt_tier_device_inflight_requests", tier="loop"))
        self.assertIsNone(m.get("ckpt_tier_device_io_seconds_total", tier="shm"))
        # The node, from this machine's /proc.
        self.assertGreater(m.get("ckpt_node_memory_available_bytes"), 0)
        self.assertIsNotNone(m.get("ckpt_node_memory_dirty_bytes"))
        self.assertIsNotNone(m.get("ckpt_node_memory_writeback_bytes"))
        if os.path.exists("/proc/pressure/io"):
            for res in ("memory", "io", "cpu"):
                self.assertIsNotNone(m.get("ckpt_node_pressure_seconds_total", resource=res,
                                           kind="some"), res)
        else:
            print("\nthis kernel has no /proc/pressure: the pressure series are absent")
            self.assertEqual(m.labels_of("ckpt_node_pressure_seconds_total"), [])

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

        # A real peer reads the same device: node_exporter's diskstats
        # collector. Equal once both read a settled counter (the ext4 journal
        # may still commit between two reads, hence the wait).
        if os.access(harness.NODE_EXPORTER, os.X_OK):
            port = self.start_node_exporter(dev)

            def both():
                t = harness.scrape(port)
                m = ck.scrape()
                theirs = (t.get("node_disk_written_bytes_total", device=dev),
                          t.get("node_disk_io_time_seconds_total", device=dev),
                          t.get("node_disk_io_time_weighted_seconds_total", device=dev))
                mine = (m.get("ckpt_tier_written_bytes_total", tier="loop"),
                        m.get("ckpt_tier_device_io_seconds_total", tier="loop"),
                        m.get("ckpt_tier_device_weighted_io_seconds_total", tier="loop"))
                # The times agree to the millisecond the kernel counts in
                # (node_exporter multiplies by 0.001, ckptmon divides by 1000).
                return (None not in theirs and None not in mine and theirs[0] == mine[0]
                        and all(abs(a - b) < 1e-6 for a, b in zip(theirs[1:], mine[1:]))
                        and (mine, theirs))
            mine, theirs = harness.wait_for(both, what="ckptmon and node_exporter to agree")
            print(f"written, busy, weighted: ckptmon={mine} node_exporter={theirs}")

        tiers = {t["name"]: t for t in ck.get("/api/v1/tiers").json()}
        self.assertEqual(tiers["loop"]["io_source"], "block")
        self.assertEqual(tiers["loop"]["io_devices"], [dev])
        self.assertEqual(tiers["shm"]["io_source"], "none")

    def start_node_exporter(self, dev):
        return harness.start_node_exporter(self.ws, [
            "--collector.disable-defaults", "--collector.diskstats",
            "--collector.diskstats.device-exclude=^$"])


WRITEBACK_BYTES = 128 * 1024 * 1024


class WritebackOnALoopDevice(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        harness.require_root("making a loop device and mounting ext4")
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        # Inode tables and journal written by mkfs, not by a kernel thread
        # while the test counts the device's writes. 512 MiB, four times the
        # write: ext4 starts writeback at once when dirty blocks pass half its
        # free blocks (ext4_nonda_switch), which a 256 MiB file system does.
        self.loop, self.mnt = self.ws.mount_loop_ext4(
            "mnt", 512, mkfs_options=("-E", "lazy_itable_init=0,lazy_journal_init=0"))
        self.tier = os.path.join(self.mnt, "ckpt")
        os.makedirs(self.tier)

    def test_unsynced_writes_wait_in_dirty_memory_and_fsync_lands_them(self):
        ck = self.ws.ckptmon(harness.config_yaml([harness.tier_yaml("loop", self.tier)],
                                                 scan_interval="200ms"))
        ck.wait_ready()

        def figures():
            m = ck.scrape()
            w = m.get("ckpt_tier_written_bytes_total", tier="loop")
            d = m.get("ckpt_node_memory_dirty_bytes")
            wb = m.get("ckpt_node_memory_writeback_bytes")
            return None if None in (w, d, wb) else (w, d + wb)

        written0, dirty0 = harness.wait_for(figures, what="the loop tier's and the node's figures")
        path = os.path.join(self.tier, "shard-00000.bin")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            chunk = os.urandom(1024 * 1024)
            for _ in range(WRITEBACK_BYTES // len(chunk)):
                os.write(fd, chunk)
            # Not synced: the pages wait in the page cache (dirty_expire_centisecs
            # is 30 s by default, and 128 MiB is far under the background ratio).
            # ckptmon's next read sees Dirty + Writeback up by most of them
            # while the device's counter has not moved by as much.
            seen = harness.wait_for(
                lambda: (f := figures()) and f[1] - dirty0 >= WRITEBACK_BYTES / 2 and f,
                what="Dirty + Writeback to rise by half the unsynced write")
            print(f"\nunsynced {WRITEBACK_BYTES} B: device written +{seen[0] - written0:.0f} B, "
                  f"Dirty + Writeback +{seen[1] - dirty0:.0f} B")
            self.assertLess(seen[0] - written0, WRITEBACK_BYTES / 4)
            os.fsync(fd)
        finally:
            os.close(fd)
        dfd = os.open(self.tier, os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(dfd)
        os.close(dfd)
        # Synced: the device counter carries the bytes, within 5 % (the
        # journal and the file's metadata are the rest).
        after = harness.wait_for(
            lambda: (f := figures()) and f[0] - written0 >= WRITEBACK_BYTES and f[0],
            what=f"the loop device's written counter to rise by {WRITEBACK_BYTES}")
        print(f"after fsync: device written +{after - written0:.0f} B")
        self.assertLessEqual(after - written0, WRITEBACK_BYTES * 1.05)


def memory_cgroup():
    """A writable memory cgroup root (v1 controller or v2 unified), or None."""
    v1 = "/sys/fs/cgroup/memory"
    if os.path.exists(os.path.join(v1, "memory.limit_in_bytes")):
        return v1, "memory.limit_in_bytes"
    v2 = "/sys/fs/cgroup"
    try:
        with open(os.path.join(v2, "cgroup.controllers")) as f:
            if "memory" in f.read().split():
                with open(os.path.join(v2, "cgroup.subtree_control"), "w") as c:
                    c.write("+memory")
                return v2, "memory.max"
    except OSError:
        pass
    return None


def psi_total(kind):
    with open("/proc/pressure/memory") as f:
        for line in f:
            if line.startswith(kind + " "):
                return int(line.rsplit("total=", 1)[1]) / 1e6
    raise AssertionError(f"/proc/pressure/memory has no {kind} line")


HOG = """
import os, sys
path = sys.argv[1]
for _ in range(3):
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    while os.read(fd, 1 << 20):
        pass
    os.close(fd)
"""


class NodePressure(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        harness.require_root("making a memory cgroup")
        if not os.path.exists("/proc/pressure/memory"):
            harness.skip_machine("this kernel keeps no pressure stall information (psi=0)")
        cg = memory_cgroup()
        if cg is None:
            harness.skip_machine("no writable memory cgroup controller (v1 or v2)")
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        root, limit_file = cg
        self.cgroup = os.path.join(root, f"ckptmon-test-{os.getpid()}")
        os.mkdir(self.cgroup)
        self.addCleanup(lambda: os.rmdir(self.cgroup))
        with open(os.path.join(self.cgroup, limit_file), "w") as f:
            f.write(str(16 * 1024 * 1024))
        self.file = self.ws.path("hog.bin")
        with open(self.file, "wb") as f:
            for _ in range(96):
                f.write(os.urandom(1024 * 1024))
            f.flush()
            os.fsync(f.fileno())

    def test_a_bounded_memory_hog_raises_some_pressure_and_ckptmon_follows(self):
        tier = self.ws.mkdir("tier")
        ck = self.ws.ckptmon(harness.config_yaml([harness.tier_yaml("t", tier)],
                                                 scan_interval="200ms"))
        ck.wait_ready()

        def mine():
            return ck.scrape().get("ckpt_node_pressure_seconds_total", resource="memory",
                                   kind="some")

        harness.wait_for(lambda: mine() is not None, what="the node's memory pressure")
        before = psi_total("some")
        procs = os.path.join(self.cgroup, "cgroup.procs")
        # The hog reads 96 MiB three times through a 16 MiB cgroup: reclaim
        # on every read, bounded by the cgroup (no swap, nothing else to take).
        def join_cgroup():
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
        subprocess.run([sys.executable, "-c", HOG, self.file], check=True, timeout=120,
                       preexec_fn=join_cgroup)
        after = psi_total("some")
        print(f"\nmemory some pressure: {before:.6f} s -> {after:.6f} s (the kernel's file)")
        self.assertGreater(after, before)
        # ckptmon reads the kernel's total, in seconds: its next read is at
        # least what the test read after the hog, and at most what the
        # kernel says after that read.
        seen = harness.wait_for(lambda: (v := mine()) is not None and v >= after and v,
                                what="ckptmon's memory pressure to include the hog's")
        self.assertLessEqual(seen, psi_total("some"))


FIXTURES = os.path.join(harness.SOURCE_DIR, "tests", "fixtures")


def escape(path):
    return path.replace(" ", "\\040")


class TierIoFromFixtureTrees(unittest.TestCase):
    """NFS, Lustre and InfiniBand sources from fixture captures (procfs and
    sysfs are settings): exact counters, a rejected mountstats block and a
    missing interface counted while tier_stats and the other sources go on,
    a reset, and a clean promtool check of every family."""

    def setUp(self):
        harness.require_binary()
        harness.require_executable(PROMTOOL, "prometheus")
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        self.tiers = {t: self.ws.mkdir("tiers", t) for t in ("nfs", "broken", "lustre")}
        self.proc = self.ws.mkdir("procfs")
        self.sys = self.ws.path("sysfs")
        shutil.copytree(os.path.join(FIXTURES, "sysfs-net"), self.sys)
        self.ws.write("procfs/self/mountinfo", "".join([
            "22 1 8:2 / / rw,relatime - ext4 /dev/sda2 rw\n",
            f"41 22 0:53 / {escape(self.tiers['nfs'])} rw - nfs4 10.20.0.5:/export/ckpt rw,vers=4.2\n",
            f"42 22 0:55 / {escape(self.tiers['broken'])} rw - nfs4 10.20.0.7:/export/broken rw\n",
            f"43 22 0:60 / {escape(self.tiers['lustre'])} rw - lustre 10.10.0.1@o2ib:/scratch rw,flock\n",
        ]))
        with open(os.path.join(FIXTURES, "procfs-nfs", "self", "mountstats")) as f:
            self.mountstats = (f.read()
                               .replace("on /mnt/ckpt\\040nfs ", f"on {escape(self.tiers['nfs'])} ")
                               .replace("on /mnt/broken ", f"on {escape(self.tiers['broken'])} "))
        self.ws.write("procfs/self/mountstats", self.mountstats)
        llite = "fs/lustre/llite/scratch-ffff9a1c3b2e4000"
        os.makedirs(os.path.join(self.proc, llite))
        shutil.copy(os.path.join(FIXTURES, "procfs-lustre", llite, "stats"),
                    os.path.join(self.proc, llite, "stats"))

    def test_sources_errors_and_resets(self):
        cfg = harness.config_yaml([
            harness.tier_yaml("nfs", self.tiers["nfs"], role="capacity"),
            harness.tier_yaml("broken", self.tiers["broken"], role="capacity"),
            harness.tier_yaml("lustre", self.tiers["lustre"]),
        ], scan_interval="200ms")
        cfg = cfg.replace("global:\n", f"global:\n  procfs: {self.proc}\n  sysfs: {self.sys}\n", 1)
        cfg += "network:\n  interfaces: [eth0, eth1, ib0, 'mlx5_1:1', eth7]\n"
        ck = self.ws.ckptmon(cfg)
        ck.wait_ready()
        m = harness.wait_for(
            lambda: (x := ck.scrape()).get("ckpt_tier_written_bytes_total", tier="lustre")
            is not None and x.get("ckpt_network_receive_bytes_total", interface="ib0") is not None
            and x, what="first tier_io run")
        # By hand from the fixtures (docs/metrics.md for the op mapping).
        self.assertEqual(m.get("ckpt_tier_written_bytes_total", tier="nfs"), 429496729600)
        self.assertEqual(m.get("ckpt_tier_read_bytes_total", tier="nfs"), 1610612736)
        self.assertEqual(m.get("ckpt_tier_metadata_operations_total", tier="nfs", op="getattr"), 5700)
        self.assertEqual(m.get("ckpt_tier_metadata_operations_total", tier="nfs", op="other"), 3794)
        self.assertEqual(m.get("ckpt_tier_written_bytes_total", tier="lustre"), 68719476736)
        self.assertEqual(m.get("ckpt_tier_metadata_operations_total", tier="lustre", op="remove"), 264)
        self.assertEqual(len(m.labels_of("ckpt_tier_metadata_operations_total", tier="lustre")), 12)
        self.assertEqual(m.get("ckpt_tier_io_source_info", tier="lustre", source="lustre",
                               devices="scratch-ffff9a1c3b2e4000"), 1.0)
        # The rejected block (statvers 2.0): a source, no figures, counted.
        self.assertEqual(m.get("ckpt_tier_io_source_info", tier="broken", source="nfs"), 1.0)
        self.assertIsNone(m.get("ckpt_tier_written_bytes_total", tier="broken"))
        self.assertGreaterEqual(m.get("ckptmon_io_read_errors_total"), 2)  # broken, eth7
        # Interfaces: IPoIB reads its HCA port; speed -1 is absent, not 0.
        self.assertEqual(m.get("ckpt_network_receive_bytes_total", interface="ib0"), 2684354560000 * 4)
        self.assertEqual(m.get("ckpt_network_link_speed_bytes_per_second", interface="ib0"), 25e9)
        self.assertEqual(m.get("ckpt_network_link_speed_bytes_per_second", interface="eth0"), 3.125e9)
        self.assertEqual(m.get("ckpt_network_transmit_bytes_total", interface="mlx5_1:1"), 125000000 * 4)
        self.assertIsNone(m.get("ckpt_network_link_speed_bytes_per_second", interface="eth1"))
        self.assertIsNone(m.get("ckpt_network_receive_bytes_total", interface="eth7"))
        # The other collectors were not held up.
        for tier in self.tiers:
            self.assertEqual(m.get("ckpt_tier_up", tier=tier), 1.0)
        self.assertEqual(m.get("ckptmon_collector_success", collector="tier_stats"), 1.0)

        p = subprocess.run([PROMTOOL, "check", "metrics"], input=ck.get("/metrics").body,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode())
        self.assertEqual((p.stdout + p.stderr).decode().strip(), "")

        # 1 GiB more written over NFS: the counter follows exactly.
        self.ws.write("procfs/self/mountstats", self.mountstats.replace(
            "1610612736 429496729600", "1610612736 430570471424"))
        harness.wait_for(lambda: ck.scrape().get("ckpt_tier_written_bytes_total", tier="nfs")
                         == 430570471424, what="nfs written + 1 GiB")
        # The HCA's counters start over (driver reloaded): a reset, no drop.
        self.ws.write("sysfs/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data", "10\n")
        m = harness.wait_for(lambda: (x := ck.scrape()).get("ckptmon_io_resets_total") >= 1 and x,
                             what="a counted reset")
        self.assertEqual(m.get("ckpt_network_receive_bytes_total", interface="ib0"), 2684354560000 * 4)
        # eth0 disappears: its total stays, its speed goes, errors count.
        errors = m.get("ckptmon_io_read_errors_total")
        shutil.rmtree(os.path.join(self.sys, "class", "net", "eth0"))
        m = harness.wait_for(
            lambda: (x := ck.scrape()).get("ckpt_network_link_speed_bytes_per_second",
                                           interface="eth0") is None and x,
            what="eth0 gone")
        self.assertEqual(m.get("ckpt_network_receive_bytes_total", interface="eth0"), 918273645512)
        self.assertGreater(m.get("ckptmon_io_read_errors_total"), errors)
        tiers = {t["name"]: t for t in ck.get("/api/v1/tiers").json()}
        self.assertEqual(tiers["broken"]["io_ok"], False)
        self.assertIn("unknown statvers", tiers["broken"]["io_error"])
        self.assertEqual(tiers["nfs"]["io_devices"], ["10.20.0.5:/export/ckpt"])


if __name__ == "__main__":
    harness.main()
