#pragma once
// File identity, the first of the tailer's parts (collectors/log_tailer.hpp
// reads, collectors/event_ingest.hpp folds, collectors/event_journal.hpp
// persists): a log is known by (device, inode) plus a fingerprint of its first
// bytes, and a read position is resumed only when the bytes just before it
// still hash the same. Pure functions over a descriptor; no state.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "events/parser.hpp"

namespace ckptmon {

// A file as the kernel knows it.
struct FileId {
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads the defaulted <=>'s own 0.
  auto operator<=>(const FileId&) const = default;
};

// One log's identity and resume point.
struct CursorRow {
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  std::string path;              // where the file was last seen
  std::string glob;              // the manifest glob that tails it
  std::uint32_t fp_len = 0;      // the fingerprint covers the first fp_len bytes
  std::uint64_t fp_hash = 0;     // XXH64 of them
  ParseCursor parse;             // offset, line number, skipping an over-long line
  std::uint32_t check_len = 0;   // the bytes just before parse.offset ...
  std::uint64_t check_hash = 0;  // ... and their XXH64
  bool gone = false;             // left the glob and was read to its end
  double last_seen = 0;

  FileId id() const { return FileId{dev, ino}; }
  bool operator==(const CursorRow&) const = default;
};

// Bytes of a log's start that identify it, and bytes before the read
// position checked before resuming.
inline constexpr std::uint32_t kFingerprintBytes = 512;
inline constexpr std::uint32_t kCheckBytes = 64;

// pread until `n` bytes or end of file; -1 on error.
ssize_t pread_full(int fd, char* buf, std::size_t n, std::uint64_t offset);
// XXH64 of `len` bytes at `offset`; nullopt when they cannot all be read.
std::optional<std::uint64_t> hash_range(int fd, std::uint64_t offset, std::uint32_t len);

// Whether `fd` (now `size` bytes) is still the file `row` was recorded on, up
// to its read position: its fingerprint, its length, the bytes before the
// position. When not, *why says what differs and *fingerprint_ok whether the
// first bytes still matched (rewritten in place versus a new file).
bool same_content(int fd, const CursorRow& row, std::uint64_t size, bool* fingerprint_ok,
                  std::string* why);

// Records in `to` the marks of its new read position to.parse.offset, after
// `consumed` (the bytes just read from `read_from` up to it): the hash of the
// bytes before it, and the fingerprint while the file is shorter than
// kFingerprintBytes. False when bytes it needs cannot be read.
bool mark_position(int fd, std::string_view consumed, std::uint64_t read_from, CursorRow& to);

// "fifo", "device", ...: why a match that is not a regular file is refused.
std::string refusal_reason(mode_t mode);

}  // namespace ckptmon
