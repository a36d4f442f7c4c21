#!/usr/bin/python3
"""Issue 30 item 1: DCP's component bytes come from its own `.metadata`.

The checkpoints are written by tests/integration/dcp_fixture.py: torch's DCP
dataclasses under their real names, pickled by Python's own pickler at
protocols 2, 3, 4 and 5 (an implementation independent of ckptmon's
restricted unpickler), with shard files laid out as FileSystemWriter does.
`ckptmon scan --format json` must report, for each, the stored bytes per key
group that the writer put down (model, optimizer, scheduler, rng, other),
the shards' remaining bytes as other, and component_source "metadata". A
`.metadata` whose storage_meta holds an os.system REDUCE is refused: nothing
runs (a marker file the command would create stays absent), the components
fall back to file names, the note names the global, and the daemon's gauge
ckpt_checkpoint_metadata_unusable{reason="refused"} counts it.
"""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dcp_fixture  # noqa: E402
import harness  # noqa: E402

STATE = {
    "model.embed.weight": ("tensor", "bfloat16", 64, 32),
    "model.layers.0.attn.wq.weight": ("tensor", "bfloat16", 32, 32),
    "model.norm.weight": ("tensor", "float32", 1, 32),
    "optim.state.model.embed.weight.exp_avg": ("tensor", "float32", 64, 32),
    "optim.state.model.embed.weight.exp_avg_sq": ("tensor", "float32", 64, 32),
    "optim.param_groups.model.embed.weight.lr": ("bytes", 17),
    "lr_scheduler": ("bytes", 431),
    "rng_state": ("bytes", 5056),
    "step": ("bytes", 9),
}


class DcpMetadata(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        self.tier = self.ws.path("tier")
        self.job = os.path.join(self.tier, "llama")

    def scan(self):
        r = harness.run([harness.BIN, "scan", self.tier, "--format", "json"])
        return {c["path"].split("/", 1)[1]: c for c in json.loads(r.stdout)}

    def test_components_per_protocol(self):
        expected = {}
        for proto in (2, 3, 4, 5):
            d = os.path.join(self.job, f"step-{proto}00")
            expected[f"step-{proto}00"] = (d, dcp_fixture.write_dcp(d, STATE, ranks=4,
                                                                  protocol=proto))
        got = self.scan()
        for name, (d, want) in expected.items():
            c = got[name]
            self.assertEqual(c["state"], "committed", c["reason"])
            self.assertEqual(c["component_source"], "metadata", c.get("metadata_note"))
            comp = c["component_bytes"]
            meta_size = os.path.getsize(os.path.join(d, ".metadata"))
            # Independent sums: what the writer recorded, per key group.
            self.assertEqual(comp.get("model"), want["model"])
            self.assertEqual(comp.get("optimizer"), want["optimizer"])
            self.assertEqual(comp.get("scheduler"), want["scheduler"])
            self.assertEqual(comp.get("rng"), want["rng"])
            self.assertEqual(comp.get("other"), want["other"])
            self.assertEqual(comp.get("metadata"), meta_size)
            shards = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
                         if f.endswith(".distcp"))
            self.assertEqual(sum(comp.values()), shards + meta_size)
            # 64x32 bf16 + 32x32 bf16 + 1x32 fp32; two 64x32 fp32 states + 17.
            self.assertEqual(want["model"], 64 * 32 * 2 + 32 * 32 * 2 + 32 * 4)
            self.assertEqual(want["optimizer"], 2 * 64 * 32 * 4 + 17)

    def test_hostile_metadata_is_refused_and_counted(self):
        canary = self.ws.path("pwned")
        d = os.path.join(self.job, "step-1")
        dcp_fixture.write_dcp(d, STATE, ranks=2, save_id=dcp_fixture.Hostile(f"touch {canary}"))
        with open(os.path.join(d, ".metadata"), "rb") as f:
            self.assertIn(b"system", f.read())  # the REDUCE really is in the file
        c = self.scan()["step-1"]
        self.assertFalse(os.path.exists(canary))
        self.assertEqual(c["state"], "committed")
        self.assertEqual(c["component_source"], "names")
        self.assertRegex(c["metadata_note"],
                         r"^refused: \.metadata: global (posix|os)\.system is not on the allow-list")
        shards = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
                     if f.endswith(".distcp"))
        self.assertEqual(c["component_bytes"].get("other"), shards)
        self.assertNotIn("model", c["component_bytes"])

        # The daemon counts it by reason, beside a good checkpoint.
        dcp_fixture.write_dcp(os.path.join(self.job, "step-2"), STATE, ranks=2)
        ck = self.ws.ckptmon(
            "global:\n"
            f"  state_dir: {self.ws.path('state')}\n"
            "  scan_interval: 300ms\n"
            "tiers:\n"
            f"  - name: fast\n    path: {self.tier}\n    role: rapid\n")
        m = harness.wait_for(
            lambda: (lambda s: s if s.get("ckpt_checkpoint_metadata_unusable", tier="fast",
                                          reason="refused") is not None else None)(ck.scrape()),
            what="ckpt_checkpoint_metadata_unusable")
        self.assertEqual(m.get("ckpt_checkpoint_metadata_unusable", tier="fast", reason="refused"), 1)
        self.assertEqual(m.get("ckpt_checkpoint_metadata_unusable", tier="fast", reason="malformed"), 0)
        self.assertEqual(
            m.get("ckpt_last_checkpoint_component_bytes", tier="fast", training_job="llama",
                  component="model"), 64 * 32 * 2 + 32 * 32 * 2 + 32 * 4)

    def test_a_truncated_shard_is_partial(self):
        d = os.path.join(self.job, "step-3")
        dcp_fixture.write_dcp(d, STATE, ranks=2)
        shard = os.path.join(d, "__1_0.distcp")
        size = os.path.getsize(shard)
        os.truncate(shard, size - 100)
        os.utime(os.path.join(d, ".metadata"))  # the marker stays the newest file
        c = self.scan()["step-3"]
        self.assertEqual(c["state"], "partial")
        self.assertRegex(c["reason"], rf"^\.metadata reads __1_0\.distcp up to byte {size} "
                                      rf"\(.*\), but it holds {size - 100}")


if __name__ == "__main__":
    harness.main()
