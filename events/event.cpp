#include "events/event.hpp"

#include "util/text.hpp"

namespace ckptmon {
namespace {

constexpr std::array<std::string_view, 13> kTypeNames = {
    "unknown",       "checkpoint_start", "shard_written", "checkpoint_commit", "checkpoint_failed",
    "pause_start",   "pause_end",        "drain_start",   "shard_drained",     "drain_done",
    "restore_start", "restore_done",     "cleanup",
};

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string_view event_type_name(EventType type) {
  auto i = static_cast<std::size_t>(type);
  return i < kTypeNames.size() ? kTypeNames[i] : kTypeNames[0];
}

EventType event_type_from_name(std::string_view name) {
  for (EventType t : kKnownEventTypes) {
    if (kTypeNames[static_cast<std::size_t>(t)] == name) return t;
  }
  return EventType::kUnknown;
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
  Checksum& c = out;
  c.algo = ChecksumAlgo::kNone;
  for (ChecksumAlgo a : {ChecksumAlgo::kCrc32c, ChecksumAlgo::kSha256, ChecksumAlgo::kXxh64}) {
    if (checksum_algo_name(a) == algo_name) c.algo = a;
  }
  if (c.empty()) {
    return fail("unknown algorithm " + json_quote(algo_name.substr(0, 32)) +
                " (crc32c, sha256 or xxh64)");
  }
  std::size_t want = checksum_hex_length(c.algo);
  if (hex.size() != want) {
    return fail(std::string(checksum_algo_name(c.algo)) + " needs " + std::to_string(want) +
                " hex digits, got " + std::to_string(hex.size()));
  }
  c.hex.resize(hex.size());
  for (std::size_t i = 0; i < hex.size(); ++i) {
    int v = hex_value(hex[i]);
    if (v < 0)
      return fail("not a hex digit at position " + std::to_string(i + 1) + " of the digest");
    c.hex[i] = "0123456789abcdef"[v];
  }
  return true;
}

std::optional<Checksum> parse_checksum(std::string_view text, std::string* why) {
  Checksum c;
  if (!parse_checksum(text, c, why)) return std::nullopt;
  return c;
}

}  // namespace ckptmon
