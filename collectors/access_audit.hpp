#pragma once
// The access audit of one tier: from the modes and owners the walk already
// stat'ed, and the tier's namespaces, to findings. Read-only: it reports,
// it never chmods. Constructed on a worker thread (resolving user and group
// names may block on NSS); const methods are thread-compatible.

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "model/access.hpp"
#include "model/catalog.hpp"
#include "model/checkpoint.hpp"
#include "model/dir_tree.hpp"
#include "model/settings.hpp"

namespace ckptmon {

class AccessAuditor {
 public:
  explicit AccessAuditor(const TierConfig& cfg);

  // outside_namespace and residency findings for a job directory.
  void audit_job(const std::string& job, const std::string& job_rel,
                 std::vector<AccessFinding>& out) const;
  // world_readable, world_writable and foreign_owner findings for one
  // checkpoint: `node` is its directory (nullptr for single-file checkpoints,
  // then `file` is the file).
  void audit_checkpoint(const Checkpoint& c, const DirNode* node, const FileEntry* file,
                        std::vector<AccessFinding>& out) const;
  // An unreadable finding for a directory the walk could not read, whatever
  // the namespaces: the daemon cannot vouch for what it cannot see.
  void audit_unreadable(const UnreadableDir& dir, std::vector<AccessFinding>& out) const;

 private:
  struct Ns {
    const NamespaceRule* rule;
    std::optional<uid_t> uid;
    std::optional<gid_t> gid;
  };
  const Ns* namespace_of(const std::string& job) const;

  std::string tier_;
  int max_depth_ = 0;  // walk_max_depth, for too_deep findings
  std::string residency_;
  std::vector<NamespaceRule> rules_;
  std::vector<Ns> namespaces_;
};

}  // namespace ckptmon
