#include "events/event.hpp"

#include <cstring>

#include "util/text.hpp"

namespace ckptmon {
namespace {

constexpr std::array<std::string_view, 17> kTypeNames = {
    "unknown",           "checkpoint_start",    "shard_written",     "checkpoint_commit",
    "checkpoint_failed", "pause_start",         "pause_end",         "drain_start",
    "shard_drained",     "drain_done",          "restore_start",     "restore_done",
    "cleanup",           "restore_locate_done", "restore_read_done", "restore_reshard_done",
    "restore_resume",
};

// Constant-size memcmp calls compile to a few integer comparisons; this runs
// for every line.
template <std::size_t N>
bool is(std::string_view s, const char (&name)[N]) {
  return std::memcmp(s.data(), name, N - 1) == 0;
}

// A hex digit in lower case, or 0 for anything else.
constexpr std::array<char, 256> kHexLower = [] {
  std::array<char, 256> t{};
  for (char c = '0'; c <= '9'; ++c) t[static_cast<unsigned char>(c)] = c;
  for (char c = 'a'; c <= 'f'; ++c) t[static_cast<unsigned char>(c)] = c;
  for (char c = 'A'; c <= 'F'; ++c) t[static_cast<unsigned char>(c)] = static_cast<char>(c + 32);
  return t;
}();

}  // namespace

std::string_view event_type_name(EventType type) {
  auto i = static_cast<std::size_t>(type);
  return i < kTypeNames.size() ? kTypeNames[i] : kTypeNames[0];
}

EventType event_type_from_name(std::string_view n) {
  using T = EventType;
  switch (n.size()) {
    case 7:
      return is(n, "cleanup") ? T::kCleanup : T::kUnknown;
    case 9:
      return is(n, "pause_end") ? T::kPauseEnd : T::kUnknown;
    case 10:
      return is(n, "drain_done") ? T::kDrainDone : T::kUnknown;
    case 11:
      return is(n, "pause_start")   ? T::kPauseStart
             : is(n, "drain_start") ? T::kDrainStart
                                    : T::kUnknown;
    case 12:
      return is(n, "restore_done") ? T::kRestoreDone : T::kUnknown;
    case 14:
      return is(n, "restore_resume") ? T::kRestoreResume : T::kUnknown;
    case 13:
      return is(n, "shard_written")   ? T::kShardWritten
             : is(n, "shard_drained") ? T::kShardDrained
             : is(n, "restore_start") ? T::kRestoreStart
                                      : T::kUnknown;
    case 16:
      return is(n, "checkpoint_start") ? T::kCheckpointStart : T::kUnknown;
    case 17:
      return is(n, "checkpoint_commit")   ? T::kCheckpointCommit
             : is(n, "checkpoint_failed") ? T::kCheckpointFailed
             : is(n, "restore_read_done") ? T::kRestoreReadDone
                                          : T::kUnknown;
    case 19:
      return is(n, "restore_locate_done") ? T::kRestoreLocateDone : T::kUnknown;
    case 20:
      return is(n, "restore_reshard_done") ? T::kRestoreReshardDone : T::kUnknown;
    default:
      return T::kUnknown;
  }
}

std::string_view checksum_algo_name(ChecksumAlgo algo) {
  switch (algo) {
    case ChecksumAlgo::kCrc32c:
      return "crc32c";
    case ChecksumAlgo::kSha256:
      return "sha256";
    case ChecksumAlgo::kXxh64:
      return "xxh64";
    case ChecksumAlgo::kNone:
      break;
  }
  return "";
}

std::size_t checksum_hex_length(ChecksumAlgo algo) {
  switch (algo) {
    case ChecksumAlgo::kCrc32c:
      return 8;
    case ChecksumAlgo::kSha256:
      return 64;
    case ChecksumAlgo::kXxh64:
      return 16;
    case ChecksumAlgo::kNone:
      break;
  }
  return 0;
}

std::string Checksum::to_string() const {
  if (empty()) return {};
  std::string out(checksum_algo_name(algo));
  out += ':';
  out += hex;
  return out;
}

bool parse_checksum(std::string_view text, Checksum& out, std::string* why) {
  auto fail = [&](std::string msg) {
    if (why) *why = std::move(msg);
    return false;
  };
  std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return fail("expected algo:hex (crc32c, sha256 or xxh64)");
  std::string_view algo_name = text.substr(0, colon);
  std::string_view hex = text.substr(colon + 1);
  out.algo = algo_name.size() == 6 && is(algo_name, "sha256")   ? ChecksumAlgo::kSha256
             : algo_name.size() == 6 && is(algo_name, "crc32c") ? ChecksumAlgo::kCrc32c
             : algo_name.size() == 5 && is(algo_name, "xxh64")  ? ChecksumAlgo::kXxh64
                                                                : ChecksumAlgo::kNone;
  if (out.empty()) {
    return fail("unknown algorithm " + json_quote(algo_name.substr(0, 32)) +
                " (crc32c, sha256 or xxh64)");
  }
  std::size_t want = checksum_hex_length(out.algo);
  if (hex.size() != want) {
    return fail(std::string(checksum_algo_name(out.algo)) + " needs " + std::to_string(want) +
                " hex digits, got " + std::to_string(hex.size()));
  }
  // Digests are compared as text later, so fold A-F to a-f. No early exit:
  // a fixed-length loop the compiler can unroll; errors are rare.
  out.hex.resize(hex.size());
  bool bad = false;
  for (std::size_t i = 0; i < hex.size(); ++i) {
    char lower = kHexLower[static_cast<unsigned char>(hex[i])];
    bad |= lower == 0;
    out.hex[i] = lower;
  }
  if (bad) {
    std::size_t i = 0;
    while (kHexLower[static_cast<unsigned char>(hex[i])] != 0) ++i;
    return fail("not a hex digit at position " + std::to_string(i + 1) + " of the digest");
  }
  return true;
}

std::optional<Checksum> parse_checksum(std::string_view text, std::string* why) {
  Checksum c;
  if (!parse_checksum(text, c, why)) return std::nullopt;
  return c;
}

}  // namespace ckptmon
