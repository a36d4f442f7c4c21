#include "collectors/access_audit.hpp"
#include "model/namespace_rule.hpp"
#include "util/text.hpp"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <regex>

namespace ckptmon {
namespace {

template <typename T>
std::optional<T> numeric(const std::string& s) {
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc() && p == s.data() + s.size()) return v;
  return std::nullopt;
}

std::optional<uid_t> resolve_user(const std::string& name) {
  if (name.empty()) return std::nullopt;
  if (auto n = numeric<uid_t>(name)) return n;
  struct passwd pw {};
  struct passwd* res = nullptr;
  char buf[4096];
  if (getpwnam_r(name.c_str(), &pw, buf, sizeof(buf), &res) == 0 && res != nullptr) {
    return pw.pw_uid;
  }
  // An unknown user owns nothing: every file is then foreign, which is the
  // honest finding for a misconfigured namespace.
  return static_cast<uid_t>(-1);
}

std::optional<gid_t> resolve_group(const std::string& name) {
  if (name.empty()) return std::nullopt;
  if (auto n = numeric<gid_t>(name)) return n;
  struct group gr {};
  struct group* res = nullptr;
  char buf[4096];
  if (getgrnam_r(name.c_str(), &gr, buf, sizeof(buf), &res) == 0 && res != nullptr) {
    return gr.gr_gid;
  }
  return static_cast<gid_t>(-1);
}

// getpwuid_r and friends into a buffer that grows for big entries (a group
// listing thousands of members). False when there is no such entry.
template <typename Entry, typename Key, typename Fn>
bool lookup(Key key, Entry& e, std::vector<char>& buf, Fn fn) {
  buf.resize(std::max<std::size_t>(buf.size(), 16384));
  for (;;) {
    Entry* res = nullptr;
    const int rc = fn(key, &e, buf.data(), buf.size(), &res);
    if (rc == ERANGE && buf.size() < (std::size_t{1} << 24)) {
      buf.resize(buf.size() * 2);
      continue;
    }
    return rc == 0 && res != nullptr;
  }
}

std::optional<std::string> user_name(uid_t uid) {
  struct passwd pw {};
  std::vector<char> buf;
  if (!lookup(uid, pw, buf, ::getpwuid_r)) return std::nullopt;
  return std::string(pw.pw_name);
}

std::optional<gid_t> primary_gid(uid_t uid) {
  struct passwd pw {};
  std::vector<char> buf;
  if (!lookup(uid, pw, buf, ::getpwuid_r)) return std::nullopt;
  return pw.pw_gid;
}

std::optional<std::string> group_name(gid_t gid) {
  struct group gr {};
  std::vector<char> buf;
  if (!lookup(gid, gr, buf, ::getgrgid_r)) return std::nullopt;
  return std::string(gr.gr_name);
}

// "user bob (uid 1003)", or "uid 1003" for a uid without a passwd entry.
std::string user_text(uid_t uid) {
  if (auto n = user_name(uid)) return "user " + *n + " (uid " + std::to_string(uid) + ")";
  return "uid " + std::to_string(uid);
}

std::string group_text(gid_t gid) {
  if (auto n = group_name(gid)) return "group " + *n + " (gid " + std::to_string(gid) + ")";
  return "gid " + std::to_string(gid);
}

// An NFSv4 principal's name without its domain ("alice@example.com" ->
// "alice"), resolved the way idmapd maps it on a client of the same domain.
std::optional<std::uint32_t> principal_id(const std::string& principal, bool group) {
  const std::string name = principal.substr(0, principal.find('@'));
  if (name.empty()) return std::nullopt;
  std::vector<char> buf;
  if (group) {
    struct group gr {};
    if (lookup(name.c_str(), gr, buf, ::getgrnam_r)) return gr.gr_gid;
  } else {
    struct passwd pw {};
    if (lookup(name.c_str(), pw, buf, ::getpwnam_r)) return pw.pw_uid;
  }
  return std::nullopt;
}

std::string octal_mode(std::uint32_t mode) {
  char buf[8];
  static_cast<void>(std::snprintf(buf, sizeof(buf), "%04o", mode & 07777));
  return buf;
}

}  // namespace

AccessAuditor::AccessAuditor(const TierConfig& cfg)
    : tier_(cfg.name),
      max_depth_(cfg.walk_max_depth),
      residency_(cfg.residency),
      rules_(cfg.namespaces) {
  for (const auto& r : rules_) {
    Ns ns{&r, resolve_user(r.owner), resolve_group(r.group), {}, {}, {}};
    ns.project_text = join(r.project_groups, ", ");
    for (std::size_t i = 0; i < r.project_gids.size(); ++i) {
      const gid_t gid = r.project_gids[i];
      ns.project_gids.insert(gid);
      // Members listed by name: their uids, as the user database knows them now.
      struct group gr {};
      std::vector<char> buf;
      if (!lookup(gid, gr, buf, ::getgrgid_r) || gr.gr_mem == nullptr) continue;
      for (char** m = gr.gr_mem; *m != nullptr; ++m) {
        struct passwd pw {};
        std::vector<char> pbuf;
        if (lookup(static_cast<const char*>(*m), pw, pbuf, ::getpwnam_r)) {
          ns.project_members.insert(pw.pw_uid);
        }
      }
    }
    namespaces_.push_back(std::move(ns));
  }
}

const AccessAuditor::Ns* AccessAuditor::namespace_of(const std::string& job) const {
  const NamespaceRule* rule = first_namespace(rules_, job);  // namespaces_ is one per rule
  return rule == nullptr ? nullptr : &namespaces_[static_cast<std::size_t>(rule - rules_.data())];
}

void AccessAuditor::audit_job(const std::string& job, const std::string& job_rel,
                              std::vector<AccessFinding>& out) const {
  if (namespaces_.empty()) return;
  const Ns* ns = namespace_of(job);
  if (ns == nullptr) {
    out.push_back({tier_, job, job_rel, FindingKind::kOutsideNamespace,
                   "no namespace of tier " + tier_ + " claims job " + job});
    return;
  }
  if (!residency_allowed(*ns->rule, residency_)) {
    const auto& allowed = ns->rule->residency;
    const std::string list = join(allowed, ", ");
    out.push_back({tier_, job, job_rel, FindingKind::kResidency,
                   "tier " + tier_ + " has residency '" + residency_ + "', namespace " +
                       ns->rule->job_regex + " allows only: " + list});
  }
}

void AccessAuditor::audit_unreadable(const UnreadableDir& dir,
                                     std::vector<AccessFinding>& out) const {
  if (dir.too_deep) {
    out.push_back({tier_, dir.job, dir.path, FindingKind::kTooDeep,
                   "more than walk_max_depth (" + std::to_string(max_depth_) +
                       ") directories below the tier root: not walked, what is below it is "
                       "unknown"});
    return;
  }
  out.push_back({tier_, dir.job, dir.path, FindingKind::kUnreadable,
                 std::string(errno_text(dir.error)) +
                     ": its last known checkpoints are kept, flagged unreadable"});
}

void AccessAuditor::audit_checkpoint(const Checkpoint& c, const DirNode* node,
                                     const FileEntry* file, std::vector<AccessFinding>& out) const {
  struct Tally {
    std::uint64_t entries = 0;
    std::uint64_t readable = 0;
    std::uint64_t writable = 0;
    std::uint64_t foreign = 0;
    std::string example;  // first foreign entry, for the detail
  } t;
  const Ns* ns = namespace_of(c.job);
  auto look = [&](std::uint32_t mode, std::uint32_t uid, std::uint32_t gid, const std::string& n) {
    ++t.entries;
    if (mode & S_IROTH) ++t.readable;
    if (mode & S_IWOTH) ++t.writable;
    if (ns != nullptr && ((ns->uid && uid != *ns->uid) || (ns->gid && gid != *ns->gid))) {
      if (t.foreign++ == 0) {
        t.example = n + " is " + std::to_string(uid) + ":" + std::to_string(gid) + " mode " +
                    octal_mode(mode);
      }
    }
  };
  if (node != nullptr) {
    std::vector<std::pair<const DirNode*, std::string>> stack{{node, "."}};
    while (!stack.empty()) {
      auto [d, rel] = stack.back();
      stack.pop_back();
      look(d->mode, d->uid, d->gid, rel);
      for (const auto& f : d->files) {
        if (f.type == FileEntry::Type::kRegular) look(f.mode, f.uid, f.gid, rel + "/" + f.name);
      }
      for (const auto& sub : d->dirs) stack.emplace_back(&sub, rel + "/" + sub.name);
    }
  } else if (file != nullptr) {
    look(file->mode, file->uid, file->gid, file->name);
  }
  const std::string of = " of " + std::to_string(t.entries) + " entries";
  if (t.readable > 0) {
    out.push_back({tier_, c.job, c.path, FindingKind::kWorldReadable,
                   std::to_string(t.readable) + of + " readable by everyone"});
  }
  if (t.writable > 0) {
    out.push_back({tier_, c.job, c.path, FindingKind::kWorldWritable,
                   std::to_string(t.writable) + of + " writable by everyone"});
  }
  if (t.foreign > 0) {
    std::string want = (ns->rule->owner.empty() ? "*" : ns->rule->owner) + ":" +
                       (ns->rule->group.empty() ? "*" : ns->rule->group);
    out.push_back(
        {tier_, c.job, c.path, FindingKind::kForeignOwner,
         std::to_string(t.foreign) + of + " not owned by " + want + " (e.g. " + t.example + ")"});
  }
}

bool AccessAuditor::wants_readers(const std::string& job) const {
  const Ns* ns = namespace_of(job);
  return ns != nullptr && !ns->project_gids.empty();
}

std::optional<std::string> AccessAuditor::outsider(const Ns& ns, const Reader& r) const {
  const std::string via = " via " + std::string(to_string(r.via));
  if (r.kind == Reader::Kind::kEveryone) {
    return (r.via == Reader::Via::kNfs4 ? "EVERYONE@" : "everyone (other)") + via;
  }
  const bool group = r.kind == Reader::Kind::kGroup;
  std::uint32_t id = r.id;
  if (!r.principal.empty()) {
    auto resolved = principal_id(r.principal, group);
    // A principal this host cannot map: not known to be in the project.
    if (!resolved) return (group ? "group " : "user ") + r.principal + via;
    id = *resolved;
  }
  if (group) {
    if (ns.project_gids.contains(id)) return std::nullopt;
    return group_text(id) + via;
  }
  if (id == 0) return std::nullopt;  // root reads everything anyway
  if (ns.project_members.contains(id)) return std::nullopt;
  if (auto g = primary_gid(id); g && ns.project_gids.contains(*g)) return std::nullopt;
  return user_text(id) + via;
}

void AccessAuditor::audit_readers(const std::string& job, const std::string& job_rel,
                                  const DirNode& dir, const AclXattrs& acls,
                                  std::vector<AccessFinding>& out) const {
  const Ns* ns = namespace_of(job);
  if (ns == nullptr || ns->project_gids.empty()) return;
  std::vector<std::string> invalid;  // why some readers are unknown
  auto bad = [&](const char* name, const std::string& why) {
    invalid.push_back(std::string(name) + ": " + why);
  };
  auto read_error = [&](const char* name, const XattrValue& v) {
    if (v.error == 0) return false;
    bad(name, v.error == ERANGE
                  ? "larger than " + std::to_string(kMaxAclXattrBytes / 1024) + " KiB, not read"
                  : errno_text(v.error));
    return true;
  };
  // The readers a POSIX ACL xattr grants; nullopt (and a finding) when it
  // cannot be decoded. A capped ACL's decoded readers count, with a finding.
  auto posix = [&](const char* name, const XattrValue& v,
                   bool default_acl) -> std::optional<std::vector<Reader>> {
    std::string why;
    auto acl = decode_posix_acl(v.bytes, &why);
    if (!acl) {
      bad(name, why);
      return std::nullopt;
    }
    if (acl->capped()) {
      bad(name, std::to_string(acl->named_total) + " named entries, only the first " +
                    std::to_string(kMaxAclEntries) + " read");
    }
    return posix_readers(dir.mode, dir.uid, dir.gid, &*acl, default_acl);
  };
  // Who can read it now: the NFSv4 ACL where there is one, else the POSIX
  // access ACL, else the mode bits. nullopt: unknown.
  std::optional<std::vector<Reader>> now;
  const bool nfs4_failed = read_error(kNfs4AclXattr, acls.nfs4);
  const bool access_failed = read_error(kPosixAclAccessXattr, acls.posix_access);
  if (acls.nfs4.present) {
    std::string why;
    if (auto acl = decode_nfs4_acl(acls.nfs4.bytes, &why)) {
      now = nfs4_readers(*acl, dir.uid, dir.gid);
      if (acl->capped()) {
        bad(kNfs4AclXattr, std::to_string(acl->total) + " ACEs, only the first " +
                               std::to_string(kMaxAclEntries) + " read");
      }
    } else {
      bad(kNfs4AclXattr, why);
    }
  } else if (!nfs4_failed) {
    if (acls.posix_access.present) {
      now = posix(kPosixAclAccessXattr, acls.posix_access, false);
    } else if (!access_failed) {
      now = posix_readers(dir.mode, dir.uid, dir.gid, nullptr);
    }
  }
  // What new checkpoints created in it will inherit.
  std::vector<Reader> inherited;
  if (!read_error(kPosixAclDefaultXattr, acls.posix_default) && acls.posix_default.present) {
    if (auto r = posix(kPosixAclDefaultXattr, acls.posix_default, true)) inherited = std::move(*r);
  }
  auto outsiders = [&](const std::vector<Reader>& readers) {
    std::string list;
    for (const auto& r : readers) {
      if (auto text = outsider(*ns, r)) list += (list.empty() ? "" : ", ") + *text;
    }
    return list;
  };
  const std::string readable = now ? outsiders(*now) : std::string();
  const std::string inherits = outsiders(inherited);
  if (!readable.empty() || !inherits.empty()) {
    std::string detail;
    if (!readable.empty()) {
      detail = "readable outside project groups " + ns->project_text + " by " + readable;
    }
    if (!inherits.empty()) {
      detail += (detail.empty() ? "" : "; ") +
                std::string(
                    "new checkpoints will inherit a default ACL readable outside "
                    "project groups ") +
                ns->project_text + " by " + inherits;
    }
    out.push_back({tier_, job, job_rel, FindingKind::kReadableOutsideProject, std::move(detail)});
  }
  if (!invalid.empty()) {
    std::string detail;
    for (const auto& i : invalid) detail += (detail.empty() ? "" : "; ") + i;
    out.push_back(
        {tier_, job, job_rel, FindingKind::kAclInvalid, detail + ": who can read it is unknown"});
  }
}

}  // namespace ckptmon
