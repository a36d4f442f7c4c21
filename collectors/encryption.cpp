#include "collectors/encryption.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fscrypt.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "collectors/io_sources.hpp"
#include "util/text.hpp"

namespace ckptmon {
namespace {

bool is_network(const std::string& fstype) {
  return fstype == "nfs" || fstype == "nfs4" || fstype == "lustre" || fstype == "cifs" ||
         fstype == "smb3" || fstype == "ceph" || fstype == "glusterfs" || fstype == "9p" ||
         fstype == "beegfs" || fstype == "gpfs" || fstype.starts_with("fuse.");
}

bool is_memory(const std::string& fstype) { return fstype == "tmpfs" || fstype == "ramfs"; }

struct DirPolicies {
  int dirs = 0;
  int encrypted = 0;
  int plain = 0;
  int unknown = 0;
};

// The fscrypt policy of each directory right below the root (at most
// kMaxEncryptionDirs; a symlink is not followed, a file is skipped).
DirPolicies policies_below(int root_fd) {
  DirPolicies p;
  const int fd = ::openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    ++p.unknown;
    return p;
  }
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    ++p.unknown;
    return p;
  }
  while (p.dirs < kMaxEncryptionDirs) {
    errno = 0;
    const dirent* e = ::readdir(d);
    if (e == nullptr) {
      if (errno != 0) ++p.unknown;
      break;
    }
    const std::string_view name = e->d_name;
    if (name == "." || name == ".." || (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN)) continue;
    const int sub =
        ::openat(root_fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (sub < 0) {
      // Not a directory after all (DT_UNKNOWN), or a symlink: not counted.
      if (errno == ENOTDIR || errno == ELOOP) continue;
      ++p.dirs;
      ++p.unknown;
      continue;
    }
    ++p.dirs;
    int err = 0;
    switch (fscrypt_policy_of(sub, &err)) {
      case FscryptPolicy::kEncrypted:
        ++p.encrypted;
        break;
      case FscryptPolicy::kNone:
      case FscryptPolicy::kUnsupported:
        ++p.plain;
        break;
      case FscryptPolicy::kUnknown:
        ++p.unknown;
        break;
    }
    ::close(sub);
  }
  ::closedir(d);
  return p;
}

}  // namespace

FscryptPolicy fscrypt_policy_of(int dir_fd, int* err) {
  fscrypt_get_policy_ex_arg arg{};
  arg.policy_size = sizeof(arg.policy);
  if (::ioctl(dir_fd, FS_IOC_GET_ENCRYPTION_POLICY_EX, &arg) == 0) return FscryptPolicy::kEncrypted;
  const int e = errno;
  switch (e) {
    case ENODATA:
      return FscryptPolicy::kNone;
    case ENOTTY:      // no such ioctl here: the file system has no fscrypt
    case EOPNOTSUPP:  // fscrypt not built in, or not enabled on this file system
      return FscryptPolicy::kUnsupported;
    case EINVAL:     // encrypted, in a context format this kernel does not know
    case EOVERFLOW:  // encrypted, with a policy bigger than the known ones
      return FscryptPolicy::kEncrypted;
    default:
      *err = e;
      return FscryptPolicy::kUnknown;
  }
}

std::string encryption_in_transit(const MountInfo& m) {
  const std::string& t = m.fstype;
  const auto opt = [&](std::string_view o) {
    return has_option(m.mount_options, o) || has_option(m.super_options, o);
  };
  if (t == "nfs" || t == "nfs4") {
    if (opt("sec=krb5p")) return "krb5p";
    if (opt("xprtsec=tls") || opt("xprtsec=mtls")) return "tls";
    return "none";  // sec=sys, krb5 (authentication only) or krb5i (integrity only)
  }
  if (t == "cifs" || t == "smb3") return opt("seal") ? "smb3-seal" : "none";
  if (is_network(t)) return "unknown";
  if (is_memory(t) || io_source_for(m) == IoSource::kBlock) return "local";
  return "unknown";
}

std::optional<bool> dm_crypt_in_stack(const std::string& sys, unsigned major, unsigned minor,
                                      const std::string& source, std::string& error) {
  const std::vector<std::string> stack = block_stack(sys, major, minor, source, error);
  if (stack.empty()) return std::nullopt;
  for (const std::string& name : stack) {
    if (!name.starts_with("dm-")) continue;
    std::string uuid, err;
    std::string file = sys;
    file.append("/class/block/").append(name).append("/dm/uuid");
    if (!read_kernel_file(file, uuid, err, 4096)) {
      error = err;
      return std::nullopt;
    }
    if (std::string_view(uuid).starts_with("CRYPT-")) return true;
  }
  return false;
}

EncryptionDetection detect_encryption(int root_fd, const MountInfo* mount, const std::string& sys) {
  EncryptionDetection d;
  if (mount == nullptr) {
    d.detail = "the mount holding the tier root is not known";
    return d;
  }
  const MountInfo& m = *mount;
  d.in_transit = encryption_in_transit(m);
  if (m.fstype == "ecryptfs" || m.fstype == "fuse.gocryptfs") {
    d.at_rest = m.fstype == "ecryptfs" ? "ecryptfs" : "gocryptfs";
    d.detail = "file system type " + m.fstype;
    return d;
  }

  int err = 0;
  const FscryptPolicy root = fscrypt_policy_of(root_fd, &err);
  if (root == FscryptPolicy::kEncrypted) {
    d.at_rest = "fscrypt";
    d.detail = "the tier root has an fscrypt policy";
    return d;
  }
  bool fscrypt_unknown = root == FscryptPolicy::kUnknown;
  std::string note;
  if (root == FscryptPolicy::kUnknown) {
    note = std::string("its fscrypt policy could not be read: ") + errno_text(err);
  } else if (root == FscryptPolicy::kNone) {
    // fscrypt on this file system, not on the root: maybe on every job directory.
    const DirPolicies p = policies_below(root_fd);
    if (p.dirs > 0 && p.encrypted == p.dirs) {
      d.at_rest = "fscrypt";
      d.detail = "every directory below the tier root (" + std::to_string(p.dirs) +
                 ") has an fscrypt policy";
      return d;
    }
    if (p.unknown > 0) {
      fscrypt_unknown = true;
      note = std::to_string(p.unknown) + " of " + std::to_string(p.dirs) +
             " directories below the tier root could not be asked for an fscrypt policy";
    } else if (p.encrypted > 0) {
      note = std::to_string(p.plain) + " of " + std::to_string(p.dirs) +
             " directories below the tier root have no fscrypt policy";
    }
  }

  if (io_source_for(m) == IoSource::kBlock) {
    std::string error;
    const std::optional<bool> crypt = dm_crypt_in_stack(sys, m.major, m.minor, m.source, error);
    if (crypt && *crypt) {
      d.at_rest = "dm-crypt";
      d.detail = "a dm-crypt target is under " + m.source;
      return d;
    }
    if (!crypt) {
      d.detail = "the block devices under " + m.source + " could not be read: " + error;
      return d;  // unknown
    }
    if (fscrypt_unknown) {
      d.detail = note;
      return d;  // unknown
    }
    d.at_rest = "none";
    d.detail = "no fscrypt policy on the tier root and no dm-crypt target under " + m.source;
    if (!note.empty()) d.detail += " (" + note + ")";
    return d;
  }
  if (is_memory(m.fstype) && !fscrypt_unknown) {
    d.at_rest = "none";
    d.detail = "memory file system " + m.fstype;
    return d;
  }
  d.detail = is_network(m.fstype)
                 ? "at rest on the servers of " + m.fstype + ": not visible from a client"
                 : "file system type " + m.fstype + ": its encryption is not detected";
  return d;
}

}  // namespace ckptmon
