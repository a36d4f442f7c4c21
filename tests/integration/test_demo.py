#!/usr/bin/python3
"""`ckptmon demo` on the burst engine: after its compressed timeline has run
(--speed 4, so no test waits two real minutes), an alert fires, the catalog
holds committed and partial checkpoints, the slow drain has a backlog, the
event logs gave pause and duration series, and the landing page shows the
firing alerts, the partial checkpoints and the recovery point. Ctrl-C
removes everything the demo made."""

import json
import os
import re
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def positive(m, name, **labels):
    return sum(v for l, v in m.samples.get(name, [])
               if all(l.get(k) == want for k, want in labels.items()) and v > 0)


def dashboard_rows():
    """(row title, metric names its panels query) for every row of the
    Grafana dashboard, read from grafana/ckptmon-dashboard.json."""
    with open(os.path.join(harness.SOURCE_DIR, "grafana", "ckptmon-dashboard.json")) as f:
        d = json.load(f)
    rows = []

    def metrics_of(panel):
        names = set()
        for t in panel.get("targets", []):
            for n in re.findall(r"\b(ckpt(?:mon)?_[a-z_]+)", t.get("expr", "")):
                names.add(re.sub(r"_(bucket|count|sum)$", "", n))
        return names

    for p in d["panels"]:
        if p.get("type") == "row":
            rows.append((p.get("title", ""), set()))
            for sub in p.get("panels", []):
                rows[-1][1].update(metrics_of(sub))
        else:
            if not rows:
                rows.append(("(top)", set()))
            rows[-1][1].update(metrics_of(p))
    return [r for r in rows if r[1]]


# The tier I/O collector's counters (the dashboard's "Storage path" row)
# exist only for tiers with an I/O source and for the interfaces named in
# network.interfaces. The demo names no interface, so the network series must
# be absent (the default is none); the tier counters must be there exactly
# when a demo tier's file system has a source (a block device here, none on
# tmpfs), and the metadata operations only for NFS or Lustre.
NETWORK = {"ckpt_network_receive_bytes_total", "ckpt_network_transmit_bytes_total",
           "ckpt_network_link_speed_bytes_per_second"}
TIER_IO = {"ckpt_tier_written_bytes_total", "ckpt_tier_read_bytes_total"}
METADATA = {"ckpt_tier_metadata_operations_total"}


def must_be_absent(port):
    sources = {t.get("io_source") for t in json.loads(harness.http_request(port, "/api/v1/tiers").text())}
    absent = set(NETWORK)
    if not sources & {"block", "nfs", "lustre"}:
        absent |= TIER_IO
    if not sources & {"nfs", "lustre"}:
        absent |= METADATA
    return absent


def has(m, name):
    return any(n == name or n.startswith(name + "_") for n in m.samples)


def present(m, name, absent):
    """The series is there, or is rightly absent (and then is not there)."""
    return not has(m, name) if name in absent else has(m, name)


class Demo(unittest.TestCase):
    def setUp(self):
        harness.require_binary()

    def test_the_demo_shows_every_part(self):
        STORAGE_ALERTS = {"CheckpointPartial", "CheckpointDrainBacklogGrowing",
                          "CheckpointNextWontFit", "CheckpointTierAlmostFull",
                          "CheckpointDrainTooSlow"}
        p = harness.Process([harness.BIN, "demo", "--web.listen-address", "127.0.0.1:0",
                             "--speed", "4", "--exit-after", "10m"])
        self.addCleanup(p.stop)
        port = int(p.wait_line(r"http://localhost:(\d+)/", stream="stdout").group(1))
        base = p.wait_line(r"Demo tiers under (\S+):", stream="stdout").group(1)

        def everything():
            m = harness.scrape(port)
            # A storage alert, not just any: the demo's failed save fires
            # CheckpointSavesFailing at once, before the drain falls behind.
            firing = {l["alertname"] for l in m.labels_of("ckpt_alert")} & STORAGE_ALERTS
            ok = (firing
                  and positive(m, "ckpt_checkpoints", state="committed")
                  and positive(m, "ckpt_checkpoints", state="partial")
                  and positive(m, "ckpt_drain_backlog_bytes", tier="staging", to_tier="rapid")
                  # Node-local staging drained slowly: steps a node loss would cost.
                  and positive(m, "ckpt_steps_at_risk", training_job="llama-dcp")
                  and positive(m, "ckpt_checkpoint_pause_seconds_count")
                  and positive(m, "ckpt_checkpoint_duration_seconds_count"))
            return m if ok else None

        # Bounded: the timeline at --speed 4 gets there in well under a minute.
        m = harness.wait_for(everything, timeout=150, interval=1, what="the demo's alerts and series")
        alerts = {l["alertname"] for l in m.labels_of("ckpt_alert")}
        self.assertTrue(alerts & STORAGE_ALERTS, alerts)
        # Three jobs in three layouts.
        jobs = {l["training_job"] for l in m.labels_of("ckpt_checkpoints", state="committed")}
        self.assertEqual(jobs, {"llama-dcp", "bert-hf", "gpt-megatron"})
        # Restores and cleanups came from the event logs too.
        self.assertTrue(positive(m, "ckpt_restore_duration_seconds_count"))
        # A scheduled restore drill read a drained copy back from rapid.
        drilled = harness.wait_for(
            lambda: (lambda x: x if positive(x, "ckptmon_restore_drills_total", tier="rapid",
                                             outcome="ok") else None)(harness.scrape(port)),
            timeout=60, interval=1, what="a restore drill on rapid")
        oks = drilled.labels_of("ckpt_restore_drill_ok", tier="rapid")
        self.assertTrue(oks, "no ckpt_restore_drill_ok series")
        self.assertTrue(positive(drilled, "ckpt_restore_drill_bytes", tier="rapid"))
        # Its newest steps wait on node-local staging past durable_within:
        # CheckpointRecoveryPointNotDurable fires (the backlog only grows).
        harness.wait_for(
            lambda: ("CheckpointRecoveryPointNotDurable", "llama-dcp") in {
                (l["alertname"], l.get("training_job"))
                for l in harness.scrape(port).labels_of("ckpt_alert")},
            timeout=60, interval=1, what="CheckpointRecoveryPointNotDurable for llama-dcp")

        # Every series the Grafana dashboard queries, row by row, has data
        # (some need a few cycles more: time to full needs a trend, rates
        # two samples).
        rows = dashboard_rows()
        self.assertGreater(len(rows), 3)

        def every_row_has_data():
            m2 = harness.scrape(port)
            absent = must_be_absent(port)
            return all(present(m2, x, absent) for _, names in rows for x in names)
        try:
            harness.wait_for(every_row_has_data, timeout=60, interval=1,
                             what="data in every dashboard row")
        except AssertionError:
            m2 = harness.scrape(port)
            absent = must_be_absent(port)
            self.fail([(t, x) for t, n in rows for x in sorted(n) if not present(m2, x, absent)])

        page = harness.http_request(port, "/").text()
        self.assertIn("Recovery point", page)
        for a in alerts:
            self.assertIn(a, page)
        self.assertRegex(page, r'<td class="down">[1-9]\d*</td>')  # a partial count

        if os.geteuid() == 0:
            self.assertIn(os.path.join(base, "capacity"), harness.mount_points())
        p.proc.send_signal(signal.SIGINT)
        self.assertEqual(p.wait(timeout=60), 0)
        self.assertFalse(os.path.exists(base), "the demo left its tiers behind")
        self.assertFalse(any(mp.startswith(base) for mp in harness.mount_points()))


if __name__ == "__main__":
    harness.main()
