#include "collectors/access_audit.hpp"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "config/config.hpp"

namespace ckptmon {
namespace {

TierConfig tier_with_namespaces() {
  LoadResult r = parse_config(R"(tiers:
  - name: rapid
    path: /lustre/ckpt
    role: rapid
    residency: us-east
    namespaces:
      '^team-a-': {owner: '1001', group: '2001', residency: [eu-west]}
      '^team-b-': {owner: '1002'}
)",
                              "t.yml");
  EXPECT_TRUE(r.config);
  return r.config->tiers[0];
}

DirNode dir(std::uint32_t mode, std::uint32_t uid, std::uint32_t gid) {
  DirNode d;
  d.mode = S_IFDIR | mode;
  d.uid = uid;
  d.gid = gid;
  return d;
}

FileEntry file(const std::string& name, std::uint32_t mode, std::uint32_t uid, std::uint32_t gid) {
  FileEntry f;
  f.name = name;
  f.mode = S_IFREG | mode;
  f.uid = uid;
  f.gid = gid;
  return f;
}

Checkpoint ckpt(const std::string& job) {
  Checkpoint c;
  c.tier = "rapid";
  c.job = job;
  c.path = job + "/step-1";
  return c;
}

TEST(AccessAudit, PrivateCheckpointOfTheRightOwnerHasNoFindings) {
  AccessAuditor a(tier_with_namespaces());
  DirNode d = dir(0750, 1001, 2001);
  d.files = {file("__0_0.distcp", 0640, 1001, 2001), file(".metadata", 0640, 1001, 2001)};
  std::vector<AccessFinding> out;
  a.audit_checkpoint(ckpt("team-a-llama"), &d, nullptr, out);
  EXPECT_TRUE(out.empty());
}

TEST(AccessAudit, CountsWorldReadableWritableAndForeignEntries) {
  AccessAuditor a(tier_with_namespaces());
  DirNode d = dir(0755, 1001, 2001);                  // directory readable by all
  d.files = {file("__0_0.distcp", 0644, 1001, 2001),  // readable
             file("__1_0.distcp", 0666, 1001, 2001),  // readable and writable
             file("__2_0.distcp", 0600, 0, 0)};       // root-owned: foreign
  std::vector<AccessFinding> out;
  a.audit_checkpoint(ckpt("team-a-llama"), &d, nullptr, out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].kind, FindingKind::kWorldReadable);
  EXPECT_EQ(out[0].detail, "3 of 4 entries readable by everyone");
  EXPECT_EQ(out[1].kind, FindingKind::kWorldWritable);
  EXPECT_EQ(out[1].detail, "1 of 4 entries writable by everyone");
  EXPECT_EQ(out[2].kind, FindingKind::kForeignOwner);
  EXPECT_EQ(out[2].detail,
            "1 of 4 entries not owned by 1001:2001 (e.g. ./__2_0.distcp is 0:0 mode 0600)");
  EXPECT_EQ(out[2].path, "team-a-llama/step-1");
}

TEST(AccessAudit, OwnerOnlyNamespaceIgnoresGroup) {
  AccessAuditor a(tier_with_namespaces());
  DirNode d = dir(0700, 1002, 999);
  std::vector<AccessFinding> out;
  a.audit_checkpoint(ckpt("team-b-bert"), &d, nullptr, out);
  EXPECT_TRUE(out.empty());
}

TEST(AccessAudit, JobsOutsideEveryNamespaceAndResidencyViolations) {
  AccessAuditor a(tier_with_namespaces());
  std::vector<AccessFinding> out;
  a.audit_job("team-c-gpt", "team-c-gpt", out);
  a.audit_job("team-a-llama", "team-a-llama", out);  // allowed only in eu-west; tier is us-east
  a.audit_job("team-b-bert", "team-b-bert", out);    // no residency restriction
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].kind, FindingKind::kOutsideNamespace);
  EXPECT_EQ(out[0].path, "team-c-gpt");
  EXPECT_EQ(out[1].kind, FindingKind::kResidency);
  EXPECT_EQ(out[1].detail,
            "tier rapid has residency 'us-east', namespace ^team-a- allows only: eu-west");
}

TEST(AccessAudit, NoNamespacesMeansNoJobFindings) {
  TierConfig t;
  t.name = "staging";
  AccessAuditor a(t);
  std::vector<AccessFinding> out;
  a.audit_job("anything", "anything", out);
  EXPECT_TRUE(out.empty());
  FileEntry f = file("epoch=1-step=100.ckpt", 0604, 5, 5);
  a.audit_checkpoint(ckpt("anything"), nullptr, &f, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, FindingKind::kWorldReadable);
}

}  // namespace
}  // namespace ckptmon
