#pragma once
// The access audit of one tier: from the modes and owners the walk already
// stat'ed, the ACLs it read of job directories, and the tier's namespaces, to
// findings. Read-only: it reports, it never chmods. Constructed on a worker thread (resolving user
// and group names may block on NSS); const methods are thread-compatible.

#include <sys/types.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "collectors/acl.hpp"
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
  // Whether the namespace of `job` has project_groups: the walk then reads
  // the ACLs of its job directory and audit_readers judges who can read it.
  bool wants_readers(const std::string& job) const;
  // readable_outside_project and acl_invalid findings for the job directory
  // `dir` (tier-relative `job_rel`): its readers from its NFSv4 ACL if it has
  // one, else its POSIX access ACL, else its mode bits; and the readers its
  // POSIX default ACL gives the checkpoints created in it.
  void audit_readers(const std::string& job, const std::string& job_rel, const DirNode& dir,
                     const AclXattrs& acls, std::vector<AccessFinding>& out) const;

 private:
  struct Ns {
    const NamespaceRule* rule;
    std::optional<uid_t> uid;
    std::optional<gid_t> gid;
    // project_groups: their gids and the uids they list as members (gr_mem),
    // looked up when the auditor is made (once per walk).
    std::set<gid_t> project_gids;
    std::set<uid_t> project_members;
    std::string project_text;  // "team-a, 5001", for the findings
  };
  // How `r` is named in a finding ("user bob (uid 1003)") when it is outside
  // the project of `ns`; nullopt when it may read (a project member, root).
  std::optional<std::string> outsider(const Ns& ns, const Reader& r) const;
  const Ns* namespace_of(const std::string& job) const;

  std::string tier_;
  int max_depth_ = 0;  // walk_max_depth, for too_deep findings
  std::string residency_;
  std::vector<NamespaceRule> rules_;
  std::vector<Ns> namespaces_;
};

}  // namespace ckptmon
