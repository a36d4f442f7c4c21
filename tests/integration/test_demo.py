#!/usr/bin/python3
"""`ckptmon demo` on the burst engine: after its compressed timeline has run
(--speed 4, so no test waits two real minutes), an alert fires, the catalog
holds committed and partial checkpoints, the slow drain has a backlog, the
event logs gave pause and duration series, and the landing page shows the
firing alerts, the partial checkpoints and the recovery point. Ctrl-C
removes everything the demo made."""

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


class Demo(unittest.TestCase):
    def setUp(self):
        harness.require_binary()

    def test_the_demo_shows_every_part(self):
        p = harness.Process([harness.BIN, "demo", "--web.listen-address", "127.0.0.1:0",
                             "--speed", "4", "--exit-after", "10m"])
        self.addCleanup(p.stop)
        port = int(p.wait_line(r"http://localhost:(\d+)/", stream="stdout").group(1))
        base = p.wait_line(r"Demo tiers under (\S+):", stream="stdout").group(1)

        def everything():
            m = harness.scrape(port)
            firing = m.labels_of("ckpt_alert")
            ok = (firing
                  and positive(m, "ckpt_checkpoints", state="committed")
                  and positive(m, "ckpt_checkpoints", state="partial")
                  and positive(m, "ckpt_drain_backlog_bytes", tier="staging", to_tier="rapid")
                  and positive(m, "ckpt_checkpoint_pause_seconds_count")
                  and positive(m, "ckpt_checkpoint_duration_seconds_count"))
            return m if ok else None

        # Bounded: the timeline at --speed 4 gets there in well under a minute.
        m = harness.wait_for(everything, timeout=150, interval=1, what="the demo's alerts and series")
        alerts = {l["alertname"] for l in m.labels_of("ckpt_alert")}
        self.assertTrue(alerts & {"CheckpointPartial", "CheckpointDrainBacklogGrowing",
                                  "CheckpointNextWontFit", "CheckpointTierAlmostFull",
                                  "CheckpointDrainTooSlow"}, alerts)
        # Three jobs in three layouts.
        jobs = {l["job"] for l in m.labels_of("ckpt_checkpoints", state="committed")}
        self.assertEqual(jobs, {"llama-dcp", "bert-hf", "gpt-megatron"})
        # Restores and cleanups came from the event logs too.
        self.assertTrue(positive(m, "ckpt_restore_duration_seconds_count"))

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
    unittest.main(verbosity=2)
