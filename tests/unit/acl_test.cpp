// ACLs: the POSIX and NFSv4 xattr decoders on hand-built bytes, who they let
// read, the access audit's findings from them, the walk reading them on the
// directory it opened, and project_groups in the configuration.

#include "collectors/acl.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "collectors/access_audit.hpp"
#include "collectors/tree_scan.hpp"
#include "config/config.hpp"
#include "temp_dir.hpp"

namespace ckptmon {
namespace {

// --- building xattr values -------------------------------------------------

void put_le16(std::string& s, std::uint16_t v) {
  s.push_back(static_cast<char>(v & 0xff));
  s.push_back(static_cast<char>(v >> 8));
}
void put_le32(std::string& s, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_be32(std::string& s, std::uint32_t v) {
  for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

constexpr std::uint32_t kUndefined = 0xffffffff;

std::string posix(const std::vector<PosixAclEntry>& entries, std::uint32_t version = 2) {
  std::string s;
  put_le32(s, version);
  for (const auto& e : entries) {
    put_le16(s, e.tag);
    put_le16(s, e.perm);
    put_le32(s, e.id);
  }
  return s;
}

// user::rwx, the named entries, group::`group_obj`, mask::`mask`, other::`other`
// in the kernel's order.
std::string posix_with(const std::vector<PosixAclEntry>& users,
                       const std::vector<PosixAclEntry>& groups, std::uint16_t group_obj,
                       std::uint16_t mask, std::uint16_t other) {
  std::vector<PosixAclEntry> es{{kAclUserObj, 7, kUndefined}};
  es.insert(es.end(), users.begin(), users.end());
  es.push_back({kAclGroupObj, group_obj, kUndefined});
  es.insert(es.end(), groups.begin(), groups.end());
  es.push_back({kAclMask, mask, kUndefined});
  es.push_back({kAclOther, other, kUndefined});
  return posix(es);
}

std::string nfs4(const std::vector<Nfs4Ace>& aces, std::uint32_t count_delta = 0) {
  std::string s;
  put_be32(s, static_cast<std::uint32_t>(aces.size()) + count_delta);
  for (const auto& a : aces) {
    put_be32(s, a.type);
    put_be32(s, a.flag);
    put_be32(s, a.access_mask);
    put_be32(s, static_cast<std::uint32_t>(a.who.size()));
    s += a.who;
    while (s.size() % 4 != 0) s.push_back('\0');
  }
  return s;
}

Nfs4Ace allow(std::string who, std::uint32_t flag = 0, std::uint32_t mask = kNfs4ReadData) {
  return Nfs4Ace{kNfs4AceAllow, flag, mask, std::move(who)};
}
Nfs4Ace deny(std::string who, std::uint32_t flag = 0, std::uint32_t mask = kNfs4ReadData) {
  return Nfs4Ace{kNfs4AceDeny, flag, mask, std::move(who)};
}

Reader user(std::uint32_t id, Reader::Via via) { return Reader{Reader::Kind::kUser, id, {}, via}; }
Reader group(std::uint32_t id, Reader::Via via) {
  return Reader{Reader::Kind::kGroup, id, {}, via};
}
Reader everyone(Reader::Via via) { return Reader{Reader::Kind::kEveryone, 0, {}, via}; }

std::string posix_error(const std::string& bytes) {
  std::string error;
  EXPECT_FALSE(decode_posix_acl(bytes, &error).has_value());
  return error;
}

std::string nfs4_error(const std::string& bytes) {
  std::string error;
  EXPECT_FALSE(decode_nfs4_acl(bytes, &error).has_value());
  return error;
}

// --- POSIX ACLs --------------------------------------------------------------

TEST(PosixAcl, DecodesTheKernelsXattrFormat) {
  const std::string bytes =
      posix_with({{kAclUser, 5, 1003}}, {{kAclGroup, 4, 2002}}, /*group_obj=*/5, /*mask=*/5, 0);
  ASSERT_EQ(bytes.size(), 4u + 6 * 8);
  // Little-endian: version 2, then the first entry's tag 1, perm 7, id -1.
  EXPECT_EQ(bytes.substr(0, 12), std::string("\x02\0\0\0\x01\0\x07\0\xff\xff\xff\xff", 12));
  std::string error;
  auto acl = decode_posix_acl(bytes, &error);
  ASSERT_TRUE(acl) << error;
  EXPECT_EQ(acl->user_obj, 7);
  EXPECT_EQ(acl->group_obj, 5);
  EXPECT_EQ(acl->other, 0);
  EXPECT_EQ(acl->mask, 5);
  ASSERT_EQ(acl->named.size(), 2u);
  EXPECT_EQ(acl->named[0].tag, kAclUser);
  EXPECT_EQ(acl->named[0].id, 1003u);
  EXPECT_EQ(acl->named[1].tag, kAclGroup);
  EXPECT_EQ(acl->named[1].id, 2002u);
  EXPECT_FALSE(acl->capped());
  EXPECT_EQ(posix_readers(040750, 1001, 2001, &*acl),
            (std::vector<Reader>{
                user(1001, Reader::Via::kPosixAcl), user(1003, Reader::Via::kPosixAcl),
                group(2001, Reader::Via::kPosixAcl), group(2002, Reader::Via::kPosixAcl)}));
}

TEST(PosixAcl, TheMaskBoundsNamedUsersTheOwningGroupAndNamedGroups) {
  // The mask grants write only: user:1003:r, group::r and group:2002:r do not
  // read; the owner and other are outside the mask.
  auto acl = decode_posix_acl(posix_with({{kAclUser, 4, 1003}}, {{kAclGroup, 4, 2002}}, 4,
                                         /*mask=*/2, /*other=*/4),
                              nullptr);
  ASSERT_TRUE(acl);
  EXPECT_EQ(
      posix_readers(040700, 1001, 2001, &*acl),
      (std::vector<Reader>{user(1001, Reader::Via::kPosixAcl), everyone(Reader::Via::kPosixAcl)}));
  // The same entries under a mask with read: all of them read.
  acl =
      decode_posix_acl(posix_with({{kAclUser, 4, 1003}}, {{kAclGroup, 4, 2002}}, 4, 4, 0), nullptr);
  ASSERT_TRUE(acl);
  EXPECT_EQ(posix_readers(040700, 1001, 2001, &*acl).size(), 4u);
}

TEST(PosixAcl, WithoutAnAclTheModeBitsSayWhoReads) {
  EXPECT_EQ(posix_readers(040750, 1001, 2001, nullptr),
            (std::vector<Reader>{user(1001, Reader::Via::kMode), group(2001, Reader::Via::kMode)}));
  EXPECT_EQ(posix_readers(040704, 1001, 2001, nullptr),
            (std::vector<Reader>{user(1001, Reader::Via::kMode), everyone(Reader::Via::kMode)}));
  EXPECT_TRUE(posix_readers(040000, 1001, 2001, nullptr).empty());
  // A header without entries is no ACL.
  auto empty = decode_posix_acl(posix({}), nullptr);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty);
  EXPECT_EQ(posix_readers(040740, 1001, 2001, &*empty).size(), 2u);
  // No default ACL: nothing inherited.
  EXPECT_TRUE(posix_readers(040755, 1001, 2001, nullptr, /*default_acl=*/true).empty());
}

TEST(PosixAcl, ADefaultAclsReadersAreWhatNewFilesInherit) {
  auto acl = decode_posix_acl(posix_with({{kAclUser, 4, 1003}}, {}, 0, 4, 0), nullptr);
  ASSERT_TRUE(acl);
  EXPECT_EQ(posix_readers(040700, 1001, 2001, &*acl, /*default_acl=*/true),
            (std::vector<Reader>{user(1001, Reader::Via::kPosixDefault),
                                 user(1003, Reader::Via::kPosixDefault)}));
}

TEST(PosixAcl, TenThousandEntriesAreCappedAndCounted) {
  std::vector<PosixAclEntry> users;
  for (std::uint32_t i = 0; i < 10000; ++i) users.push_back({kAclUser, 4, 100000 + i});
  // The owning group, the mask and other come after every named user: they
  // are kept whatever the cap.
  std::string error;
  auto acl = decode_posix_acl(posix_with(users, {}, 0, 4, 4), &error);
  ASSERT_TRUE(acl) << error;
  EXPECT_EQ(acl->named.size(), kMaxAclEntries);
  EXPECT_EQ(acl->named_total, 10000u);
  EXPECT_TRUE(acl->capped());
  EXPECT_EQ(acl->other, 4);
  EXPECT_EQ(acl->mask, 4);
  const auto readers = posix_readers(040700, 1, 2, &*acl);
  // The owner, the 1,024 named users kept and other.
  EXPECT_EQ(readers.size(), kMaxAclEntries + 2);
  EXPECT_EQ(readers.back(), everyone(Reader::Via::kPosixAcl));
}

TEST(PosixAcl, MalformedBytesAreRejectedSayingWhy) {
  EXPECT_EQ(posix_error(std::string("\x02\0", 2)), "POSIX ACL of 2 bytes: shorter than its header");
  EXPECT_EQ(posix_error(posix({{kAclUserObj, 7, kUndefined}}, 1)),
            "POSIX ACL version 1, expected 2");
  EXPECT_EQ(posix_error(posix({{kAclUserObj, 7, kUndefined}}) + "xyz"),
            "POSIX ACL of 15 bytes: not a header and whole 8-byte entries");
  EXPECT_EQ(posix_error(posix({{kAclUserObj, 7, kUndefined}, {0x40, 4, 1}})),
            "POSIX ACL entry 1: unknown tag 64");
  EXPECT_EQ(posix_error(posix({{kAclUserObj, 8, kUndefined}})),
            "POSIX ACL entry 0: permission bits 8 beyond rwx");
  EXPECT_EQ(posix_error(posix({{kAclUserObj, 7, kUndefined},
                               {kAclUserObj, 7, kUndefined},
                               {kAclGroupObj, 5, kUndefined},
                               {kAclOther, 0, kUndefined}})),
            "POSIX ACL with 2 USER_OBJ entries, expected exactly one");
  EXPECT_EQ(posix_error(posix({{kAclUserObj, 7, kUndefined}, {kAclGroupObj, 5, kUndefined}})),
            "POSIX ACL with 0 OTHER entries, expected exactly one");
  EXPECT_EQ(posix_error(posix({{kAclUserObj, 7, kUndefined},
                               {kAclUser, 4, 1003},
                               {kAclGroupObj, 5, kUndefined},
                               {kAclOther, 0, kUndefined}})),
            "POSIX ACL with 1 named entries and no MASK entry");
  EXPECT_EQ(posix_error(posix({{kAclUserObj, 7, kUndefined},
                               {kAclGroupObj, 5, kUndefined},
                               {kAclMask, 5, kUndefined},
                               {kAclMask, 5, kUndefined},
                               {kAclOther, 0, kUndefined}})),
            "POSIX ACL with 2 MASK entries, expected at most one");
}

// --- NFSv4 ACLs --------------------------------------------------------------

TEST(Nfs4Acl, DecodesTheXdrOfTheXattr) {
  const std::string bytes = nfs4({allow("OWNER@", 0, 0x1f01ff), deny("bob@example.com", 0x40)});
  // Big-endian count 2; "OWNER@" (6 bytes) padded to 8.
  EXPECT_EQ(bytes.substr(0, 4), std::string("\0\0\0\x02", 4));
  EXPECT_EQ(bytes.size(), 4u + (16 + 8) + (16 + 16));
  std::string error;
  auto acl = decode_nfs4_acl(bytes, &error);
  ASSERT_TRUE(acl) << error;
  ASSERT_EQ(acl->aces.size(), 2u);
  EXPECT_EQ(acl->aces[0].type, kNfs4AceAllow);
  EXPECT_EQ(acl->aces[0].access_mask, 0x1f01ffu);
  EXPECT_EQ(acl->aces[0].who, "OWNER@");
  EXPECT_EQ(acl->aces[1].type, kNfs4AceDeny);
  EXPECT_EQ(acl->aces[1].flag, 0x40u);
  EXPECT_EQ(acl->aces[1].who, "bob@example.com");
  EXPECT_FALSE(acl->capped());
  auto none = decode_nfs4_acl(nfs4({}), &error);
  ASSERT_TRUE(none) << error;
  EXPECT_TRUE(none->aces.empty());
}

TEST(Nfs4Acl, MalformedBytesAreRejectedSayingWhy) {
  EXPECT_EQ(nfs4_error(std::string("\0\0", 2)), "NFSv4 ACL of 2 bytes: shorter than its ACE count");
  EXPECT_EQ(nfs4_error(nfs4({allow("OWNER@")}, 1)), "NFSv4 ACE 1 of 2: truncated at byte 28");
  EXPECT_EQ(nfs4_error(nfs4({allow("OWNER@")}) + std::string(4, '\0')),
            "NFSv4 ACL: 4 bytes after its 1 ACEs");
  EXPECT_EQ(nfs4_error(nfs4({Nfs4Ace{7, 0, 1, "OWNER@"}})), "NFSv4 ACE 0 of 1: unknown type 7");
  EXPECT_EQ(nfs4_error(nfs4({allow(std::string(1025, 'a'))})),
            "NFSv4 ACE 0 of 1: principal of 1025 bytes (1 to 1024 expected)");
  EXPECT_EQ(nfs4_error(nfs4({allow("")})),
            "NFSv4 ACE 0 of 1: principal of 0 bytes (1 to 1024 expected)");
  std::string bad_pad = nfs4({allow("OWNER@")});
  bad_pad.back() = 'x';
  EXPECT_EQ(nfs4_error(bad_pad), "NFSv4 ACE 0 of 1: padding after the principal is not zero");
  std::string short_who = nfs4({allow("OWNER@")});
  short_who.resize(short_who.size() - 4);
  EXPECT_EQ(nfs4_error(short_who), "NFSv4 ACE 0 of 1: principal of 6 bytes truncated at byte 20");
  // A count far beyond the bytes is truncation, found without reading past them.
  EXPECT_EQ(nfs4_error(nfs4({allow("OWNER@")}, 0xfffffff0)),
            "NFSv4 ACE 1 of 4294967281: truncated at byte 28");
  // A principal at the limit is fine.
  EXPECT_TRUE(decode_nfs4_acl(nfs4({allow(std::string(1024, 'a'))}), nullptr));
}

TEST(Nfs4Acl, TheFirstAceThatDecidesReadForAPrincipalWins) {
  auto acl = decode_nfs4_acl(nfs4({
                                 deny("1003"),                          // 1003: denied first
                                 allow("1003"),                         //   so this is moot
                                 allow("1004", 0, 0x2),                 // write only: undecided
                                 allow("1005", kNfs4InheritOnly),       // not for this directory
                                 Nfs4Ace{kNfs4AceAudit, 0, 1, "1006"},  // audits, decides nothing
                                 allow("OWNER@"),                       // the file's owner
                                 allow("GROUP@"),                       // its group
                                 allow("1004@example.com"),             // 1004 reads now
                                 allow("3001", kNfs4IdentifierGroup),   // a group by number
                                 allow("carol@example.com"),            // a name, kept so
                                 deny("EVERYONE@"),                     // everyone else: no
                                 allow("1007"),                         // after EVERYONE@: moot
                             }),
                             nullptr);
  ASSERT_TRUE(acl);
  const auto v = Reader::Via::kNfs4;
  EXPECT_EQ(nfs4_readers(*acl, 1001, 2001),
            (std::vector<Reader>{user(1001, v), group(2001, v), user(1004, v), group(3001, v),
                                 Reader{Reader::Kind::kUser, 0, "carol@example.com", v}}));
  // An EVERYONE@ allow is everyone, and decides for all after it.
  acl = decode_nfs4_acl(nfs4({deny("OWNER@"), allow("EVERYONE@"), allow("OWNER@")}), nullptr);
  ASSERT_TRUE(acl);
  EXPECT_EQ(nfs4_readers(*acl, 1001, 2001), (std::vector<Reader>{everyone(v)}));
  // OWNER@ and the owner's number are one principal: the first decides.
  acl = decode_nfs4_acl(nfs4({deny("OWNER@"), allow("1001")}), nullptr);
  ASSERT_TRUE(acl);
  EXPECT_TRUE(nfs4_readers(*acl, 1001, 2001).empty());
}

TEST(Nfs4Acl, ManyAcesAreCappedAndCounted) {
  std::vector<Nfs4Ace> aces;
  for (int i = 0; i < 2000; ++i) aces.push_back(allow(std::to_string(5000 + i)));
  auto acl = decode_nfs4_acl(nfs4(aces), nullptr);
  ASSERT_TRUE(acl);
  EXPECT_EQ(acl->aces.size(), kMaxAclEntries);
  EXPECT_EQ(acl->total, 2000u);
  EXPECT_TRUE(acl->capped());
}

// --- the access audit --------------------------------------------------------

TierConfig project_tier(const std::string& groups = "['5001']") {
  LoadResult r = parse_config(R"(tiers:
  - name: rapid
    path: /lustre/ckpt
    role: rapid
    namespaces:
      '^team-a-': {project_groups: )" +
                                  groups + R"(}
      '^team-b-': {owner: '1002'}
)",
                              "t.yml");
  EXPECT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0].to_string());
  return r.config ? r.config->tiers[0] : TierConfig{};
}

DirNode job_dir(std::uint32_t mode, std::uint32_t uid, std::uint32_t gid) {
  DirNode d;
  d.mode = S_IFDIR | mode;
  d.uid = uid;
  d.gid = gid;
  return d;
}

XattrValue value(std::string bytes) { return XattrValue{true, 0, std::move(bytes)}; }

std::vector<std::string> described(const std::vector<AccessFinding>& out) {
  std::vector<std::string> v;
  for (const auto& f : out) {
    v.push_back(f.path + "|" + std::string(to_string(f.kind)) + "|" + f.detail);
  }
  return v;
}

// Numbers with no passwd or group entry on any test machine.
constexpr std::uint32_t kOutsider = 987654;
constexpr std::uint32_t kOutsider2 = 987655;

TEST(AclAudit, OnlyNamespacesWithProjectGroupsAskForReaders) {
  AccessAuditor a(project_tier());
  EXPECT_TRUE(a.wants_readers("team-a-llama"));
  EXPECT_FALSE(a.wants_readers("team-b-bert"));
  EXPECT_FALSE(a.wants_readers("team-c-gpt"));
  std::vector<AccessFinding> out;
  a.audit_readers("team-b-bert", "team-b-bert", job_dir(0755, 1, 1), {}, out);
  EXPECT_TRUE(out.empty());
}

TEST(AclAudit, ModeBitsWithinTheProjectHaveNoFinding) {
  AccessAuditor a(project_tier());
  std::vector<AccessFinding> out;
  // root's directory, readable by the project group only.
  a.audit_readers("team-a-llama", "team-a-llama", job_dir(0750, 0, 5001), {}, out);
  EXPECT_TRUE(out.empty());
}

TEST(AclAudit, ReadersOutsideTheProjectAreNamedUnknownIdsAsNumbers) {
  AccessAuditor a(project_tier());
  AclXattrs x;
  x.posix_access = value(posix_with({{kAclUser, 5, kOutsider}}, {{kAclGroup, 4, 4242}}, 5, 5, 0));
  x.posix_default = value(posix_with({{kAclUser, 5, kOutsider2}}, {}, 5, 5, 0));
  std::vector<AccessFinding> out;
  a.audit_readers("team-a-llama", "team-a-llama", job_dir(0750, 0, 5001), x, out);
  EXPECT_EQ(described(out),
            (std::vector<std::string>{
                "team-a-llama|readable_outside_project|readable outside project groups 5001 by "
                "uid 987654 via posix_acl, gid 4242 via posix_acl; new checkpoints will inherit a "
                "default ACL readable outside project groups 5001 by uid 987655 via "
                "posix_default"}));
  // Only the default ACL lets someone outside read: still one finding.
  x.posix_access = {};
  out.clear();
  a.audit_readers("team-a-llama", "team-a-llama", job_dir(0750, 0, 5001), x, out);
  EXPECT_EQ(described(out), (std::vector<std::string>{
                                "team-a-llama|readable_outside_project|new checkpoints will "
                                "inherit a default ACL readable outside project groups 5001 by "
                                "uid 987655 via posix_default"}));
  // Other with read through the mode bits is everyone.
  out.clear();
  a.audit_readers("team-a-llama", "team-a-llama", job_dir(0755, 0, 5001), {}, out);
  EXPECT_EQ(described(out), (std::vector<std::string>{
                                "team-a-llama|readable_outside_project|readable outside project "
                                "groups 5001 by everyone (other) via mode"}));
}

TEST(AclAudit, AProjectGroupsMembersAndPrimaryGroupReadInside) {
  struct passwd pw {};
  struct passwd* res = nullptr;
  char buf[4096];
  if (::getpwnam_r("daemon", &pw, buf, sizeof buf, &res) != 0 || res == nullptr) {
    GTEST_SKIP() << "no user daemon on this machine";
  }
  // daemon's primary group is a project group: daemon reads inside.
  AccessAuditor a(project_tier("['" + std::to_string(pw.pw_gid) + "']"));
  AclXattrs x;
  x.posix_access = value(posix_with({{kAclUser, 4, pw.pw_uid}}, {}, 4, 4, 0));
  std::vector<AccessFinding> out;
  a.audit_readers("team-a-llama", "team-a-llama", job_dir(0750, 0, pw.pw_gid), x, out);
  EXPECT_TRUE(out.empty()) << out[0].detail;
  // Under another project it is outside, named.
  AccessAuditor b(project_tier());
  b.audit_readers("team-a-llama", "team-a-llama", job_dir(0700, 0, 5001), x, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].detail, "readable outside project groups 5001 by user daemon (uid " +
                               std::to_string(pw.pw_uid) + ") via posix_acl");
}

TEST(AclAudit, AnNfs4AclComesBeforeThePosixAclAndTheMode) {
  AccessAuditor a(project_tier());
  AclXattrs x;
  x.nfs4 = value(nfs4({allow("OWNER@"), allow(std::to_string(kOutsider) + "@example.com")}));
  // The POSIX ACL and mode would let everyone read: not what is enforced.
  x.posix_access = value(posix_with({}, {}, 5, 5, 5));
  std::vector<AccessFinding> out;
  a.audit_readers("team-a-llama", "team-a-llama", job_dir(0755, 0, 5001), x, out);
  EXPECT_EQ(described(out), (std::vector<std::string>{
                                "team-a-llama|readable_outside_project|readable outside project "
                                "groups 5001 by uid 987654 via nfs4"}));
  // A principal this host cannot map is outside, by its name.
  x.nfs4 = value(nfs4({allow("nobody-here-zz@example.com"), allow("EVERYONE@")}));
  out.clear();
  a.audit_readers("team-a-llama", "team-a-llama", job_dir(0700, 0, 5001), x, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].detail,
            "readable outside project groups 5001 by user nobody-here-zz@example.com via nfs4, "
            "EVERYONE@ via nfs4");
}

TEST(AclAudit, AMalformedOrUnreadableAclIsAclInvalid) {
  AccessAuditor a(project_tier());
  AclXattrs x;
  x.posix_access = value(posix({{kAclUserObj, 7, kUndefined}}, 1));
  std::vector<AccessFinding> out;
  // The mode bits would say everyone: the ACL, not readable, decides.
  a.audit_readers("team-a-llama", "team-a-llama", job_dir(0755, 0, 5001), x, out);
  EXPECT_EQ(described(out),
            (std::vector<std::string>{"team-a-llama|acl_invalid|system.posix_acl_access: POSIX ACL "
                                      "version 1, expected 2: who can read it is unknown"}));
  out.clear();
  x = {};
  x.nfs4.error = EIO;
  x.posix_default.error = ERANGE;
  a.audit_readers("team-a-llama", "team-a-llama", job_dir(0755, 0, 5001), x, out);
  EXPECT_EQ(described(out),
            (std::vector<std::string>{
                "team-a-llama|acl_invalid|system.nfs4_acl: " + std::string(std::strerror(EIO)) +
                "; system.posix_acl_default: larger than 64 KiB, not read: who can read it is "
                "unknown"}));
  // A capped ACL: the readers decoded are reported, and that others are unknown.
  std::vector<PosixAclEntry> users;
  for (std::uint32_t i = 0; i < 2000; ++i) users.push_back({kAclUser, 4, 900000 + i});
  x = {};
  x.posix_access = value(posix_with(users, {}, 0, 4, 0));
  out.clear();
  a.audit_readers("team-a-llama", "team-a-llama", job_dir(0700, 0, 5001), x, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].kind, FindingKind::kReadableOutsideProject);
  EXPECT_TRUE(out[0].detail.starts_with(
      "readable outside project groups 5001 by uid 900000 via posix_acl, uid 900001"));
  EXPECT_EQ(out[1].detail,
            "system.posix_acl_access: 2000 named entries, only the first 1024 read: who can read "
            "it is unknown");
}

// --- the walk ----------------------------------------------------------------

TEST(AclWalk, TheScanReadsTheJobDirectorysAclOnItsOpenDescriptor) {
  testing::TempDir tier;
  tier.write("team-a-llama/step-1/__0_0.distcp", 100);
  tier.write("team-a-llama/step-1/.metadata", 10);
  const std::string job = tier.file("team-a-llama");
  ASSERT_EQ(::chmod(job.c_str(), 0750), 0);
  const std::string acl = posix_with({{kAclUser, 5, kOutsider}}, {}, 5, 5, 0);
  if (::setxattr(job.c_str(), kPosixAclAccessXattr, acl.data(), acl.size(), 0) != 0) {
    GTEST_SKIP() << "no POSIX ACLs here: " << std::strerror(errno);
  }
  TierConfig cfg = project_tier("['" + std::to_string(::getgid()) + "']");
  cfg.path = tier.str();
  TierScanner scanner(cfg, false);
  std::vector<std::string> xattr_calls;
  scanner.set_call_hook([&](std::string_view op, const std::string& rel) {
    if (op == "xattr") xattr_calls.push_back(rel);
  });
  const auto now = static_cast<double>(std::time(nullptr));
  ScanOutcome o = scanner.scan(now);
  ASSERT_TRUE(o.root_ok) << o.error;
  ASSERT_TRUE(o.findings);
  std::vector<std::string> acl_findings;
  for (const auto& f : *o.findings) {
    if (f.kind == FindingKind::kReadableOutsideProject || f.kind == FindingKind::kAclInvalid) {
      acl_findings.push_back(f.path + "|" + f.detail);
    }
  }
  // The owner (this test's uid, whose primary group is the project's) and
  // the owning group read inside; the named user does not.
  EXPECT_EQ(
      acl_findings,
      (std::vector<std::string>{"team-a-llama|readable outside project groups " +
                                std::to_string(::getgid()) + " by uid 987654 via posix_acl"}));
  // The three xattrs of the job directory only: nothing below it.
  EXPECT_EQ(xattr_calls, (std::vector<std::string>(3, "team-a-llama")));

  // A read failing (EIO) is acl_invalid, not "no ACL".
  scanner.set_fault_hook(
      [](std::string_view op, const std::string&) { return op == "xattr" ? EIO : 0; });
  o = scanner.scan(now + 10);
  ASSERT_TRUE(o.findings);
  acl_findings.clear();
  for (const auto& f : *o.findings) {
    if (f.kind == FindingKind::kAclInvalid) acl_findings.push_back(f.detail);
  }
  ASSERT_EQ(acl_findings.size(), 1u);
  EXPECT_TRUE(acl_findings[0].starts_with("system.nfs4_acl: " + std::string(std::strerror(EIO))))
      << acl_findings[0];
  // The tier was only read.
  char buf[256];
  EXPECT_EQ(::getxattr(job.c_str(), kPosixAclAccessXattr, buf, sizeof buf),
            static_cast<ssize_t>(acl.size()));
}

// --- configuration -----------------------------------------------------------

TEST(AclConfig, ProjectGroupsAreResolvedToGids) {
  TierConfig t = project_tier("[root, '5001']");
  ASSERT_EQ(t.namespaces.size(), 2u);
  EXPECT_EQ(t.namespaces[0].project_groups, (std::vector<std::string>{"root", "5001"}));
  EXPECT_EQ(t.namespaces[0].project_gids, (std::vector<gid_t>{0, 5001}));
  EXPECT_TRUE(t.namespaces[1].project_gids.empty());
  // One group may be given alone.
  t = project_tier("root");
  EXPECT_EQ(t.namespaces[0].project_gids, (std::vector<gid_t>{0}));
}

TEST(AclConfig, AProjectGroupTheSystemDoesNotKnowIsAnErrorNamingIt) {
  LoadResult r = parse_config(
      "tiers:\n  - name: a\n    path: /a\n    role: rapid\n    namespaces:\n"
      "      x: {project_groups: [root, ckptmon-no-such-group-zz]}\n",
      "bad.yml");
  EXPECT_FALSE(r.config);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].key, "tiers[0].namespaces.x.project_groups[1]");
  EXPECT_EQ(r.errors[0].message,
            "no group named \"ckptmon-no-such-group-zz\" in the system's group database");
  EXPECT_EQ(r.errors[0].to_string(),
            "bad.yml:6:34: tiers[0].namespaces.x.project_groups[1]: no group named "
            "\"ckptmon-no-such-group-zz\" in the system's group database");
  r = parse_config(
      "tiers:\n  - name: a\n    path: /a\n    role: rapid\n    namespaces:\n"
      "      x: {project_groups: {a: 1}}\n",
      "bad.yml");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].key, "tiers[0].namespaces.x.project_groups");
}

}  // namespace
}  // namespace ckptmon
