#pragma once
// Who can read a directory: its mode bits, its POSIX ACLs and its NFSv4 ACL,
// decoded from the xattrs the kernel exposes them as. Pure functions of bytes
// and numbers (no NSS lookups, no file-system calls): the walk reads the
// xattrs (collectors/tree_walk.hpp), the access audit names the readers
// (collectors/access_audit.hpp).
//
// Formats:
// - `system.posix_acl_access`, `system.posix_acl_default` (the kernel's
//   struct posix_acl_xattr_header / posix_acl_xattr_entry): little-endian
//   u32 version (2), then entries {u16 tag, u16 perm, u32 id}. Tags USER_OBJ
//   1, USER 2, GROUP_OBJ 4, GROUP 8, MASK 0x10, OTHER 0x20; perm bits read 4,
//   write 2, execute 1; id is the uid or gid of USER and GROUP entries.
// - `system.nfs4_acl` (the Linux NFS client; nfs4-acl-tools reads the same):
//   the XDR of nfsacl4 (RFC 7530 6.2.1), big-endian: u32 count, then per ACE
//   u32 type (0 ALLOW, 1 DENY, 2 AUDIT, 3 ALARM), u32 flag, u32 access_mask,
//   u32 length of `who` and its bytes padded to a multiple of 4. `who` is
//   OWNER@, GROUP@, EVERYONE@, a name ("alice@example.com") or, without id
//   mapping, a number ("1001").

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ckptmon {

inline constexpr const char* kPosixAclAccessXattr = "system.posix_acl_access";
inline constexpr const char* kPosixAclDefaultXattr = "system.posix_acl_default";
inline constexpr const char* kNfs4AclXattr = "system.nfs4_acl";

// Entries (POSIX named entries, NFSv4 ACEs) kept of one ACL; the rest are
// counted, not kept. A real xattr holds at most 64 KiB (8,191 POSIX entries).
inline constexpr std::size_t kMaxAclEntries = 1024;
// Longest NFSv4 principal accepted (RFC 7530 gives none; idmapd's names are short).
inline constexpr std::size_t kMaxNfs4PrincipalBytes = 1024;
// Largest xattr value the walk reads (the kernel's XATTR_SIZE_MAX).
inline constexpr std::size_t kMaxAclXattrBytes = std::size_t{64} * 1024;

enum PosixAclTag : std::uint16_t {
  kAclUserObj = 0x01,
  kAclUser = 0x02,
  kAclGroupObj = 0x04,
  kAclGroup = 0x08,
  kAclMask = 0x10,
  kAclOther = 0x20,
};
inline constexpr std::uint16_t kAclRead = 4;

struct PosixAclEntry {
  std::uint16_t tag = 0;
  std::uint16_t perm = 0;
  std::uint32_t id = 0;
};

struct PosixAcl {
  std::uint16_t user_obj = 0;
  std::uint16_t group_obj = 0;
  std::uint16_t other = 0;
  std::optional<std::uint16_t> mask;
  // The USER and GROUP entries in the order stored, at most kMaxAclEntries.
  std::vector<PosixAclEntry> named;
  // Named entries in the xattr: more than named.size() when capped.
  std::size_t named_total = 0;
  // A header without entries: no ACL (the kernel removes it so).
  bool empty = false;
  bool capped() const { return named_total > named.size(); }
};

// nullopt, with `error` saying what is wrong, when `bytes` is not a valid
// POSIX ACL: short or ragged, another version, an unknown tag or permission
// bit, not exactly one USER_OBJ, GROUP_OBJ and OTHER, more than one MASK, or
// named entries without a MASK. Every entry is checked; only the first
// kMaxAclEntries named ones are kept.
std::optional<PosixAcl> decode_posix_acl(std::string_view bytes, std::string* error);

enum : std::uint32_t {
  kNfs4AceAllow = 0,
  kNfs4AceDeny = 1,
  kNfs4AceAudit = 2,
  kNfs4AceAlarm = 3,
};
inline constexpr std::uint32_t kNfs4InheritOnly = 0x8;
inline constexpr std::uint32_t kNfs4IdentifierGroup = 0x40;
inline constexpr std::uint32_t kNfs4ReadData = 0x1;  // READ_DATA, LIST_DIRECTORY on a directory

struct Nfs4Ace {
  std::uint32_t type = 0;
  std::uint32_t flag = 0;
  std::uint32_t access_mask = 0;
  std::string who;
};

struct Nfs4Acl {
  std::vector<Nfs4Ace> aces;  // in order, at most kMaxAclEntries
  std::size_t total = 0;      // ACEs in the xattr: more than aces.size() when capped
  bool capped() const { return total > aces.size(); }
};

// nullopt, with `error`, when `bytes` is not a valid nfsacl4: short, an ACE
// of an unknown type, a principal empty or longer than kMaxNfs4PrincipalBytes,
// padding that is not zero, or bytes after the last ACE.
std::optional<Nfs4Acl> decode_nfs4_acl(std::string_view bytes, std::string* error);

// One user, group or everyone able to read a directory, and what says so.
struct Reader {
  enum class Kind { kUser, kGroup, kEveryone };
  enum class Via { kMode, kPosixAcl, kPosixDefault, kNfs4 };
  Kind kind = Kind::kUser;
  std::uint32_t id = 0;  // uid or gid, when `principal` is empty
  // An NFSv4 principal that is not a number ("alice@example.com"): the
  // audit looks its name up. Empty otherwise.
  std::string principal;
  Via via = Via::kMode;

  friend bool operator==(const Reader&, const Reader&) = default;
};
std::string_view to_string(Reader::Via v);

// The readers of a directory of `mode`, `uid`, `gid`. Without an ACL (null
// or empty): the owner, group and other read bits. With one: USER_OBJ, the
// USER and GROUP_OBJ and GROUP entries with read after the mask, OTHER. With
// `default_acl` the ACL is the directory's default one, what new files in
// it inherit (USER_OBJ and GROUP_OBJ taken as the directory's owner and
// group), and readers come Via::kPosixDefault.
std::vector<Reader> posix_readers(std::uint32_t mode, uid_t uid, gid_t gid, const PosixAcl* acl,
                                  bool default_acl = false);

// The readers an NFSv4 ACL grants (RFC 7530 6.2.1): for each principal the
// first ALLOW or DENY ACE with READ_DATA that names it decides; an EVERYONE@
// ACE decides for everyone not decided before it (nothing after it counts).
// INHERIT_ONLY, AUDIT and ALARM ACEs are skipped. OWNER@ and GROUP@ are `uid`
// and `gid`; "123" or "123@domain" is id 123 (a group with IDENTIFIER_GROUP);
// any other principal is kept by name. Principals are judged apart: a DENY
// of a group does not hide a later ALLOW of one of its members.
std::vector<Reader> nfs4_readers(const Nfs4Acl& acl, uid_t uid, gid_t gid);

// What the walk read of a directory's ACL xattrs (fgetxattr on the open
// directory). Absent (ENODATA, ENOTSUP): not present, error 0.
struct XattrValue {
  bool present = false;
  int error = 0;  // the read failed for another reason (ERANGE: over kMaxAclXattrBytes)
  std::string bytes;
};
struct AclXattrs {
  XattrValue posix_access;
  XattrValue posix_default;
  XattrValue nfs4;
};

}  // namespace ckptmon
