#!/usr/bin/python3
"""Issue 26.4: who can read a job's checkpoints, ACLs included.

As root the test creates a project group, a member of it, an outsider and a
user named nowhere (useradd/groupadd, unique names, removed afterwards). The
job directory is root:<project> 0750 on ext4 (or whatever /tmp is), and
`setfacl` gives the outsider read through a POSIX ACL entry and, through a
default ACL, read on every checkpoint created in it. ckptmon, configured with
`project_groups: [<project>]`, reports one `readable_outside_project` finding
that names the outsider (for both ACLs) and no one else; `runuser` checks the
kernel agrees: the outsider and the member can read the directory, the user
named nowhere cannot. With the ACL removed the finding goes away. A project
group the system does not know is a configuration error naming it.
"""

import json
import os
import pwd
import secrets
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

SETFACL = "/usr/bin/setfacl"
RUNUSER = "/usr/sbin/runuser"
USERADD = "/usr/sbin/useradd"
USERDEL = "/usr/sbin/userdel"
GROUPADD = "/usr/sbin/groupadd"
GROUPDEL = "/usr/sbin/groupdel"


def can_read(user, path):
    """What the kernel says: `test -r` run as `user`."""
    return subprocess.run([RUNUSER, "-u", user, "--", "test", "-r", path]).returncode == 0


class AclAudit(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        harness.require_root("creating users and groups")
        harness.require_executable(SETFACL, "acl")
        harness.require_executable(RUNUSER, "util-linux")
        harness.require_executable(USERADD, "passwd")
        tag = secrets.token_hex(3)
        self.project = f"ckacl-proj-{tag}"
        self.member = f"ckacl-mem-{tag}"
        self.outsider = f"ckacl-out-{tag}"
        self.nobody = f"ckacl-none-{tag}"
        harness.run([GROUPADD, self.project])
        self.addCleanup(harness.run, [GROUPDEL, self.project], False)
        for user, extra in ((self.member, ["-G", self.project]), (self.outsider, []),
                            (self.nobody, [])):
            harness.run([USERADD, "--no-create-home", "--user-group", "--shell",
                         "/usr/sbin/nologin", *extra, user])
            # userdel removes the user's own group too; groupdel in case it did not.
            self.addCleanup(harness.run, [GROUPDEL, user], False)
            self.addCleanup(harness.run, [USERDEL, user], False)
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        os.chmod(self.ws.dir, 0o755)  # the users must reach the tier to be judged
        self.tier = self.ws.mkdir("tier")
        os.chmod(self.tier, 0o755)
        self.job = os.path.join(self.tier, "team-a-llama")
        ck = os.path.join(self.job, "save_100")
        os.makedirs(ck)
        for name in ("rank0.bin", "COMMITTED"):
            with open(os.path.join(ck, name), "wb") as f:
                f.write(b"x" * 100)
        os.chown(self.job, 0, self.gid(self.project))
        os.chmod(self.job, 0o750)
        r = harness.run([SETFACL, "-m", f"u:{self.outsider}:rx", self.job], check=False)
        if r.returncode != 0:
            harness.skip_machine(f"setfacl failed on {self.tier}: {r.stderr.strip()}")
        harness.run([SETFACL, "-d", "-m", f"u:{self.outsider}:r", self.job])

    @staticmethod
    def gid(group):
        out = harness.run(["getent", "group", group]).stdout
        return int(out.split(":")[2])

    def config(self, groups):
        return harness.config_yaml([
            "  - name: rapid\n"
            f"    path: {json.dumps(self.tier)}\n"
            "    role: rapid\n"
            "    layout: {shard_glob: 'rank*.bin', marker: COMMITTED, "
            "step_regex: '^save_(\\d+)$'}\n"
            "    namespaces:\n"
            f"      '^team-a-': {{project_groups: {json.dumps(groups)}}}\n"
        ], scan_interval="200ms")

    def findings(self, ck, kind):
        return ck.get(f"/api/v1/findings?kind={kind}").json()

    def test_a_reader_outside_the_project_is_named(self):
        # The kernel's view first: the outsider and the member read, the
        # user named nowhere does not.
        self.assertTrue(can_read(self.outsider, self.job))
        self.assertTrue(can_read(self.member, self.job))
        self.assertFalse(can_read(self.nobody, self.job))

        ck = self.ws.ckptmon(self.config([self.project]))
        found = harness.wait_for(lambda: self.findings(ck, "readable_outside_project"),
                                 what="a readable_outside_project finding")
        self.assertEqual(len(found), 1, found)
        f = found[0]
        self.assertEqual((f["tier"], f["job"], f["path"]), ("rapid", "team-a-llama", "team-a-llama"))
        uid = pwd.getpwnam(self.outsider).pw_uid
        named = f"user {self.outsider} (uid {uid})"
        self.assertEqual(
            f["detail"],
            f"readable outside project groups {self.project} by {named} via posix_acl; "
            f"new checkpoints will inherit a default ACL readable outside project groups "
            f"{self.project} by {named} via posix_default")
        self.assertNotIn(self.member, f["detail"])
        self.assertNotIn(self.nobody, f["detail"])
        self.assertEqual(self.findings(ck, "acl_invalid"), [])
        harness.wait_for(lambda: ck.scrape().get("ckpt_access_findings", tier="rapid",
                                                 kind="readable_outside_project") == 1,
                         what="ckpt_access_findings{kind=readable_outside_project} 1")

        # The audit read the tier, never wrote it: the ACL is as set.
        acl = harness.run(["getfacl", "-p", "--omit-header", self.job]).stdout
        self.assertIn(f"user:{self.outsider}:r-x", acl)

        # Without the ACLs only the project reads: the finding goes away.
        harness.run([SETFACL, "-b", "-k", self.job])
        self.assertFalse(can_read(self.outsider, self.job))
        self.assertTrue(can_read(self.member, self.job))
        harness.wait_for(lambda: ck.scrape().get("ckpt_access_findings", tier="rapid",
                                                 kind="readable_outside_project") == 0,
                         what="ckpt_access_findings{kind=readable_outside_project} 0")
        self.assertEqual(self.findings(ck, "readable_outside_project"), [])

    def test_an_unknown_project_group_is_a_config_error(self):
        missing = f"ckacl-missing-{secrets.token_hex(3)}"
        cfg = self.ws.write("bad.yml", self.config([self.project, missing]))
        r = harness.run([harness.BIN, "check-config", cfg], check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"tiers[0].namespaces.^team-a-.project_groups[1]: no group named "
                      f"\"{missing}\" in the system's group database", r.stderr)


if __name__ == "__main__":
    harness.main()
