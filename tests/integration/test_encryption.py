#!/usr/bin/python3
"""Issue 28 item 8: encryption detected from the system, never taken from
the configuration. As root, the test makes an ext4 file system with the
`encrypt` feature on a loop device and encrypts one directory with Debian's
`fscrypt` (a raw key, no passphrase). Three tiers on it:

- `secure`: the encrypted directory itself, at_rest="fscrypt";
- `jobs`: a plain root whose every job directory is encrypted, also fscrypt;
- `plain`: a plain directory beside them, with `encryption_required: true`,
  at_rest="none": a finding of kind not_encrypted (source estate) and
  CheckpointTierNotEncrypted fires for it, and only for it.

All three are local (in_transit="local"). A tmpfs tier says at_rest none
too, but requires nothing, so nothing fires. The dm-crypt, ecryptfs,
gocryptfs, NFS krb5p and unknown cases are unit tests on sysfs fixture
trees and mountinfo strings (tests/unit/encryption_test.cpp): this kernel
has no device mapper.

`fscrypt setup` wants /etc/fscrypt.conf; the test writes it only when it is
absent, and removes it (and the root file system's /.fscrypt it makes)
afterwards.
"""

import json
import os
import shutil
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

ALERT = "CheckpointTierNotEncrypted"


class EncryptionOnARealFileSystem(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        harness.require_root("making a loop device, mounting ext4 and adding fscrypt keys")
        if shutil.which("fscrypt") is None:
            harness.skip_peer("fscrypt is missing (Debian package fscrypt)")
        if not os.path.exists("/sys/fs/ext4/features/encryption"):
            harness.skip_machine("this kernel's ext4 has no encryption support")
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        _, self.mnt = self.ws.mount_loop_ext4("mnt", 64, ("-O", "encrypt"))

        if not os.path.exists("/etc/fscrypt.conf"):
            made_root_metadata = not os.path.exists("/.fscrypt")
            harness.run(["fscrypt", "setup", "--quiet", "--force", "--time=1ms"])

            def undo():
                os.unlink("/etc/fscrypt.conf")
                if made_root_metadata:
                    shutil.rmtree("/.fscrypt", ignore_errors=True)
            self.ws.on_close(undo)
        harness.run(["fscrypt", "setup", self.mnt, "--quiet"])
        key = self.ws.path("raw.key")
        with open(key, "wb") as f:
            f.write(os.urandom(32))

        def encrypt(d, name):
            os.makedirs(d)
            harness.run(["fscrypt", "encrypt", d, "--source=raw_key", f"--name={name}",
                         f"--key={key}", "--quiet"])
            # Lock it again when done, so the key leaves the kernel keyring.
            self.ws.on_close(lambda: harness.run(["fscrypt", "lock", d, "--quiet"], check=False))

        self.secure = os.path.join(self.mnt, "secure")
        encrypt(self.secure, "secure")
        self.jobs = os.path.join(self.mnt, "jobs")
        os.makedirs(self.jobs)
        encrypt(os.path.join(self.jobs, "llama"), "llama")
        encrypt(os.path.join(self.jobs, "bert"), "bert")
        self.plain = os.path.join(self.mnt, "plain")
        os.makedirs(os.path.join(self.plain, "llama"))
        self.shm = self.ws.mount_tmpfs("shm", "size=4m")

    def test_fscrypt_is_seen_and_a_required_plain_tier_fires(self):
        cfg = harness.config_yaml([
            harness.tier_yaml("secure", self.secure),
            harness.tier_yaml("jobs", self.jobs, role="capacity"),
            f"  - {{name: plain, path: {json.dumps(self.plain)}, role: milestone,"
            " encryption_required: true}\n",
            harness.tier_yaml("shm", self.shm, role="staging"),
        ], scan_interval="200ms") + f"alerting:\n  rules:\n    {ALERT}: {{for: 0s}}\n"
        ck = self.ws.ckptmon(cfg)
        ck.wait_ready()

        def info(m, tier):
            rows = m.labels_of("ckpt_tier_encryption_info", tier=tier)
            return (rows[0]["at_rest"], rows[0]["in_transit"]) if len(rows) == 1 else None

        m = harness.wait_for(lambda: (lambda m: m if info(m, "plain") else None)(ck.scrape()),
                             what="ckpt_tier_encryption_info for every tier")
        self.assertEqual(info(m, "secure"), ("fscrypt", "local"))
        self.assertEqual(info(m, "jobs"), ("fscrypt", "local"))
        self.assertEqual(info(m, "plain"), ("none", "local"))
        self.assertEqual(info(m, "shm"), ("none", "local"))
        self.assertEqual(m.get("ckpt_tier_encryption_required", tier="plain"), 1)
        self.assertEqual(m.get("ckpt_tier_encryption_required", tier="secure"), 0)

        tiers = {t["name"]: t for t in json.loads(ck.get("/api/v1/tiers").body)}
        self.assertEqual(tiers["secure"]["encryption"]["at_rest"], "fscrypt")
        self.assertIn("fscrypt policy", tiers["jobs"]["encryption"]["detail"])
        self.assertIn("no dm-crypt target", tiers["plain"]["encryption"]["detail"])

        def firing():
            doc = json.loads(ck.get("/api/v1/alerts").body)
            return {a["labels"].get("tier") for a in doc["data"]["alerts"]
                    if a["labels"]["alertname"] == ALERT and a["state"] == "firing"}
        harness.wait_for(lambda: firing() == {"plain"}, what=f"{ALERT} firing for plain only")
        findings = json.loads(ck.get("/api/v1/findings?kind=not_encrypted").body)
        self.assertEqual([(f["tier"], f["source"]) for f in findings], [("plain", "estate")])


if __name__ == "__main__":
    harness.main()
