#include "collectors/file_identity.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "util/digest.hpp"

namespace ckptmon {

// pread until `n` bytes or end of file; -1 on error.
ssize_t pread_full(int fd, char* buf, std::size_t n, std::uint64_t offset) {
  std::size_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd, buf + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  return static_cast<ssize_t>(got);
}

// XXH64 of `len` bytes at `offset`; nullopt when they cannot all be read.
std::optional<std::uint64_t> hash_range(int fd, std::uint64_t offset, std::uint32_t len) {
  std::vector<char> b(len);
  if (pread_full(fd, b.data(), len, offset) != static_cast<ssize_t>(len)) return std::nullopt;
  return xxh64(b.data(), len);
}

std::string refusal_reason(mode_t mode) {
  if (S_ISFIFO(mode)) return "fifo";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "device";
  if (S_ISSOCK(mode)) return "socket";
  if (S_ISLNK(mode)) return "symlink";
  if (S_ISDIR(mode)) return "directory";
  return "other";
}

bool same_content(int fd, const CursorRow& row, std::uint64_t size, bool* fingerprint_ok,
                  std::string* why) {
  *fingerprint_ok = true;
  if (row.fp_len > 0) {
    auto h = size >= row.fp_len ? hash_range(fd, 0, row.fp_len) : std::nullopt;
    if (!h || *h != row.fp_hash) {
      *fingerprint_ok = false;
      *why = "its first " + std::to_string(row.fp_len) + " bytes differ (size " +
             std::to_string(size) + ")";
      return false;
    }
  }
  if (row.parse.offset > size) {
    *why = "it is shorter (" + std::to_string(size) + " bytes) than the read position";
    return false;
  }
  if (row.check_len > 0) {
    auto h = hash_range(fd, row.parse.offset - row.check_len, row.check_len);
    if (!h || *h != row.check_hash) {
      *why = "the " + std::to_string(row.check_len) + " bytes before the read position differ";
      return false;
    }
  }
  return true;
}

bool mark_position(int fd, std::string_view consumed, std::uint64_t read_from, CursorRow& to) {
  const std::uint64_t end = to.parse.offset;
  to.check_len = static_cast<std::uint32_t>(std::min<std::uint64_t>(kCheckBytes, end));
  if (consumed.size() >= to.check_len) {
    to.check_hash = xxh64(consumed.data() + consumed.size() - to.check_len, to.check_len);
  } else {
    auto h = hash_range(fd, end - to.check_len, to.check_len);
    if (!h) return false;
    to.check_hash = *h;
  }
  if (to.fp_len < kFingerprintBytes && end > to.fp_len) {
    to.fp_len = static_cast<std::uint32_t>(std::min<std::uint64_t>(kFingerprintBytes, end));
    if (read_from == 0) {
      to.fp_hash = xxh64(consumed.data(), to.fp_len);
    } else {
      auto h = hash_range(fd, 0, to.fp_len);
      if (!h) return false;
      to.fp_hash = *h;
    }
  }
  return true;
}

}  // namespace ckptmon
