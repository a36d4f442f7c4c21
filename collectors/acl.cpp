#include "collectors/acl.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <tuple>
#include <utility>

namespace ckptmon {
namespace {

constexpr std::uint32_t kPosixAclVersion = 2;

std::uint16_t le16(const unsigned char* p) {
  return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}
std::uint32_t le32(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}
std::uint32_t be32(const unsigned char* p) {
  return (static_cast<std::uint32_t>(p[0]) << 24) | (static_cast<std::uint32_t>(p[1]) << 16) |
         (static_cast<std::uint32_t>(p[2]) << 8) | static_cast<std::uint32_t>(p[3]);
}

bool fail(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
  return false;
}

std::optional<std::uint32_t> number(std::string_view s) {
  std::uint32_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc() && p == s.data() + s.size() && !s.empty()) return v;
  return std::nullopt;
}

}  // namespace

std::optional<PosixAcl> decode_posix_acl(std::string_view bytes, std::string* error) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 4) {
    fail(error, "POSIX ACL of " + std::to_string(bytes.size()) + " bytes: shorter than its header");
    return std::nullopt;
  }
  if (const std::uint32_t v = le32(p); v != kPosixAclVersion) {
    fail(error, "POSIX ACL version " + std::to_string(v) + ", expected 2");
    return std::nullopt;
  }
  if ((bytes.size() - 4) % 8 != 0) {
    fail(error, "POSIX ACL of " + std::to_string(bytes.size()) +
                    " bytes: not a header and whole 8-byte entries");
    return std::nullopt;
  }
  PosixAcl acl;
  const std::size_t n = (bytes.size() - 4) / 8;
  if (n == 0) {
    acl.empty = true;
    return acl;
  }
  int user_obj = 0;
  int group_obj = 0;
  int other = 0;
  int mask = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char* e = p + 4 + 8 * i;
    PosixAclEntry entry{le16(e), le16(e + 2), le32(e + 4)};
    const std::string at = "POSIX ACL entry " + std::to_string(i);
    if ((entry.perm & ~7u) != 0) {
      fail(error, at + ": permission bits " + std::to_string(entry.perm) + " beyond rwx");
      return std::nullopt;
    }
    switch (entry.tag) {
      case kAclUserObj:
        ++user_obj;
        acl.user_obj = entry.perm;
        break;
      case kAclGroupObj:
        ++group_obj;
        acl.group_obj = entry.perm;
        break;
      case kAclOther:
        ++other;
        acl.other = entry.perm;
        break;
      case kAclMask:
        ++mask;
        acl.mask = entry.perm;
        break;
      case kAclUser:
      case kAclGroup:
        ++acl.named_total;
        if (acl.named.size() < kMaxAclEntries) acl.named.push_back(entry);
        break;
      default:
        fail(error, at + ": unknown tag " + std::to_string(entry.tag));
        return std::nullopt;
    }
  }
  auto once = [&](int count, const char* what) {
    if (count == 1) return true;
    return fail(error, "POSIX ACL with " + std::to_string(count) + " " + what +
                           " entries, expected exactly one");
  };
  if (!once(user_obj, "USER_OBJ") || !once(group_obj, "GROUP_OBJ") || !once(other, "OTHER")) {
    return std::nullopt;
  }
  if (mask > 1) {
    fail(error, "POSIX ACL with " + std::to_string(mask) + " MASK entries, expected at most one");
    return std::nullopt;
  }
  if (acl.named_total > 0 && mask == 0) {
    fail(error,
         "POSIX ACL with " + std::to_string(acl.named_total) + " named entries and no MASK entry");
    return std::nullopt;
  }
  return acl;
}

std::optional<Nfs4Acl> decode_nfs4_acl(std::string_view bytes, std::string* error) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t size = bytes.size();
  if (size < 4) {
    fail(error, "NFSv4 ACL of " + std::to_string(size) + " bytes: shorter than its ACE count");
    return std::nullopt;
  }
  const std::uint32_t count = be32(p);
  std::size_t off = 4;
  Nfs4Acl acl;
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::string at = "NFSv4 ACE " + std::to_string(i) + " of " + std::to_string(count);
    if (size - off < 16) {
      fail(error, at + ": truncated at byte " + std::to_string(off));
      return std::nullopt;
    }
    Nfs4Ace ace;
    ace.type = be32(p + off);
    ace.flag = be32(p + off + 4);
    ace.access_mask = be32(p + off + 8);
    const std::uint32_t len = be32(p + off + 12);
    off += 16;
    if (ace.type > kNfs4AceAlarm) {
      fail(error, at + ": unknown type " + std::to_string(ace.type));
      return std::nullopt;
    }
    if (len == 0 || len > kMaxNfs4PrincipalBytes) {
      fail(error, at + ": principal of " + std::to_string(len) + " bytes (1 to " +
                      std::to_string(kMaxNfs4PrincipalBytes) + " expected)");
      return std::nullopt;
    }
    const std::size_t padded = (static_cast<std::size_t>(len) + 3) & ~std::size_t{3};
    if (size - off < padded) {
      fail(error, at + ": principal of " + std::to_string(len) + " bytes truncated at byte " +
                      std::to_string(off));
      return std::nullopt;
    }
    for (std::size_t k = len; k < padded; ++k) {
      if (p[off + k] != 0) {
        fail(error, at + ": padding after the principal is not zero");
        return std::nullopt;
      }
    }
    ++acl.total;
    if (acl.aces.size() < kMaxAclEntries) {
      ace.who.assign(bytes.data() + off, len);
      acl.aces.push_back(std::move(ace));
    }
    off += padded;
  }
  if (off != size) {
    fail(error, "NFSv4 ACL: " + std::to_string(size - off) + " bytes after its " +
                    std::to_string(count) + " ACEs");
    return std::nullopt;
  }
  return acl;
}

std::string_view to_string(Reader::Via v) {
  switch (v) {
    case Reader::Via::kMode:
      return "mode";
    case Reader::Via::kPosixAcl:
      return "posix_acl";
    case Reader::Via::kPosixDefault:
      return "posix_default";
    case Reader::Via::kNfs4:
      return "nfs4";
  }
  return "unknown";
}

std::vector<Reader> posix_readers(std::uint32_t mode, uid_t uid, gid_t gid, const PosixAcl* acl,
                                  bool default_acl) {
  std::vector<Reader> out;
  auto add = [&](Reader::Kind k, std::uint32_t id, Reader::Via via) {
    Reader r{k, id, {}, via};
    if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(std::move(r));
  };
  if (acl == nullptr || acl->empty) {
    if (default_acl) return out;  // no default ACL: new files take the creator's umask
    if (mode & S_IRUSR) add(Reader::Kind::kUser, uid, Reader::Via::kMode);
    if (mode & S_IRGRP) add(Reader::Kind::kGroup, gid, Reader::Via::kMode);
    if (mode & S_IROTH) add(Reader::Kind::kEveryone, 0, Reader::Via::kMode);
    return out;
  }
  const Reader::Via via = default_acl ? Reader::Via::kPosixDefault : Reader::Via::kPosixAcl;
  // The mask bounds every entry of the group class: named users, the owning
  // group and named groups (acl(5)); without one, GROUP_OBJ counts as it is.
  const std::uint16_t mask = acl->mask.value_or(7);
  if (acl->user_obj & kAclRead) add(Reader::Kind::kUser, uid, via);
  for (const auto& e : acl->named) {
    if (e.tag == kAclUser && (e.perm & mask & kAclRead)) add(Reader::Kind::kUser, e.id, via);
  }
  if (acl->group_obj & mask & kAclRead) add(Reader::Kind::kGroup, gid, via);
  for (const auto& e : acl->named) {
    if (e.tag == kAclGroup && (e.perm & mask & kAclRead)) add(Reader::Kind::kGroup, e.id, via);
  }
  if (acl->other & kAclRead) add(Reader::Kind::kEveryone, 0, via);
  return out;
}

std::vector<Reader> nfs4_readers(const Nfs4Acl& acl, uid_t uid, gid_t gid) {
  std::vector<Reader> out;
  // (kind, id, principal) of every principal an ACE decided READ for.
  std::set<std::tuple<int, std::uint32_t, std::string>> decided;
  for (const auto& ace : acl.aces) {
    if (ace.type != kNfs4AceAllow && ace.type != kNfs4AceDeny) continue;
    if (ace.flag & kNfs4InheritOnly) continue;  // for what is created inside, not this one
    if (!(ace.access_mask & kNfs4ReadData)) continue;
    const bool allow = ace.type == kNfs4AceAllow;
    if (ace.who == "EVERYONE@") {
      if (allow) out.push_back(Reader{Reader::Kind::kEveryone, 0, {}, Reader::Via::kNfs4});
      break;  // every principal is decided now
    }
    Reader r{Reader::Kind::kUser, 0, {}, Reader::Via::kNfs4};
    if (ace.who == "OWNER@") {
      r.id = uid;
    } else if (ace.who == "GROUP@") {
      r.kind = Reader::Kind::kGroup;
      r.id = gid;
    } else {
      if (ace.flag & kNfs4IdentifierGroup) r.kind = Reader::Kind::kGroup;
      const std::string_view who = ace.who;
      const auto at = who.find('@');
      if (auto id = number(who.substr(0, at))) {
        r.id = *id;
      } else {
        r.principal = ace.who;
      }
    }
    if (!decided.emplace(static_cast<int>(r.kind), r.id, r.principal).second) continue;
    if (allow) out.push_back(std::move(r));
  }
  return out;
}

}  // namespace ckptmon
