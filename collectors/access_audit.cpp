#include "collectors/access_audit.hpp"
#include "util/text.hpp"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>

#include <algorithm>
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
    namespaces_.push_back(Ns{&r, resolve_user(r.owner), resolve_group(r.group)});
  }
}

const AccessAuditor::Ns* AccessAuditor::namespace_of(const std::string& job) const {
  for (const auto& ns : namespaces_) {
    if (std::regex_search(job, *ns.rule->regex)) return &ns;
  }
  return nullptr;
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
  const auto& allowed = ns->rule->residency;
  if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), residency_) == allowed.end()) {
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
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

}  // namespace ckptmon
