#pragma once
// The keyed digests of `ckptmon burst`'s manifest (<dir>/.ckptmon-burst.manifest):
// every line burst writes ends in HMAC-SHA256(key, "ckptmon-burst-manifest v2\n"
// + the line's content) in hex, under a per-user key that burst creates
// (32 random bytes, mode 0600) at $XDG_STATE_HOME/ckptmon/burst.key, else
// ~/.local/state/ckptmon/burst.key, or where --key-file says. --cleanup
// trusts a manifest only when it is owned by the invoking user and every
// complete line carries its digest: one that someone else wrote (planted in
// the target, edited, or from a ckptmon before digests) deletes nothing.
// Each line is signed on its own so that several bursts may append at once
// (the demo runs two jobs in one target); what lines may be dropped or
// reordered by someone who can write the file only makes cleanup keep more,
// since it deletes a file only when it still has the (device, inode, ctime)
// a signed line recorded. Stateless functions; thread-safe.

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ckptmon::burst {

struct ManifestKey {
  std::array<unsigned char, 32> bytes{};
};

// $XDG_STATE_HOME/ckptmon/burst.key (when set and absolute), else
// $HOME/.local/state/ckptmon/burst.key (the passwd entry's home when HOME is
// unset). "" with `error` when there is no home.
std::string default_key_file(std::string* error);

// Reads the key at `path`: a regular file of 32 bytes owned by the invoking
// user, readable by nobody else. `create`: makes it first when it is missing
// (its missing directories with 0700, the file with 0600, atomically: two
// bursts starting at once get the same key). false with `error` naming the
// file and the reason.
bool load_key(const std::string& path, bool create, ManifestKey* key, std::string* error);

// `content` (one line, no newline) with its digest appended, and the newline.
std::string sign_line(const ManifestKey& key, std::string_view content);

struct ManifestCheck {
  bool trusted = false;
  std::string why;                 // not trusted: which line failed, and how
  std::vector<std::string> lines;  // the verified contents, in file order (blank lines dropped)
  bool torn_tail = false;          // the last line had no newline (a write cut short): ignored
  std::size_t complete_bytes = 0;  // bytes up to and with the last newline
};

// Checks every complete line of `text` against its digest.
ManifestCheck verify_manifest(const ManifestKey& key, std::string_view text);

}  // namespace ckptmon::burst
