#pragma once
// Whether a tier is encrypted, detected from the system, never taken from
// the configuration (docs/metrics.md "Encryption"): at rest by fscrypt
// (FS_IOC_GET_ENCRYPTION_POLICY_EX on the tier root and the directories
// right below it), by the file-system type (ecryptfs, fuse.gocryptfs) or by
// a device-mapper crypt target in the block-device stack under the tier
// (`<sys>/class/block/dm-N/dm/uuid` starting `CRYPT-`); in transit from the
// NFS mount's security flavour (sec=krb5p) or transport (xprtsec=tls/mtls).
// A detection that cannot be made is "unknown", never "none". Blocking:
// runs on a worker with the tier probe. Opens nothing for writing and
// follows no symlink below the tier root.

#include <optional>
#include <string>

#include "collectors/mountinfo.hpp"

namespace ckptmon {

struct EncryptionDetection {
  // fscrypt, dm-crypt, ecryptfs, gocryptfs, none or unknown.
  std::string at_rest = "unknown";
  // krb5p, tls, none (a network file system that sends in the clear),
  // local (no network between ckptmon's host and the data) or unknown.
  std::string in_transit = "unknown";
  std::string detail;  // how it was told, or why it is unknown
};

// At most this many directories right below the tier root are asked for an
// fscrypt policy when the root has none.
inline constexpr int kMaxEncryptionDirs = 256;

// `root_fd`: the tier root, opened O_RDONLY | O_DIRECTORY. `mount`: the mount
// holding it (null: unknown).
EncryptionDetection detect_encryption(int root_fd, const MountInfo* mount, const std::string& sys);

// The parts, for tests on fixture trees and strings.

// In transit, from the mount alone.
std::string encryption_in_transit(const MountInfo& m);

// Whether a dm-crypt target is in the device stack of `major:minor`
// (`source` as for block_members): true, false, or nullopt with `error`
// when the stack or a device-mapper uuid cannot be read.
std::optional<bool> dm_crypt_in_stack(const std::string& sys, unsigned major, unsigned minor,
                                      const std::string& source, std::string& error);

enum class FscryptPolicy { kEncrypted, kNone, kUnsupported, kUnknown };
// FS_IOC_GET_ENCRYPTION_POLICY_EX on an open directory; `err` is errno for
// kUnknown.
FscryptPolicy fscrypt_policy_of(int dir_fd, int* err);

}  // namespace ckptmon
