#pragma once
// One checkpoint event as a training job wrote it to its event log (schema v1,
// docs/events.md). A plain value type: copyable, comparable, no invariants of
// its own (the parser establishes them). Not synchronised.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/checksum_algo.hpp"

namespace ckptmon {

// The only schema version this build reads and writes.
inline constexpr int kEventSchemaVersion = 1;

enum class EventType : std::uint8_t {
  kUnknown,  // a well-formed event of a type this build does not know; counted, not an error
  kCheckpointStart,
  kShardWritten,
  kCheckpointCommit,
  kCheckpointFailed,
  kPauseStart,
  kPauseEnd,
  kDrainStart,
  kShardDrained,
  kDrainDone,
  kRestoreStart,
  kRestoreDone,
  kCleanup,
  // The optional restore phases (schema v1 still: older builds count them
  // as unknown types and go on).
  kRestoreLocateDone,
  kRestoreReadDone,
  kRestoreReshardDone,
  kRestoreResume,
};

// Every known type, in documentation order (kUnknown excluded).
inline constexpr std::array<EventType, 16> kKnownEventTypes = {
    EventType::kCheckpointStart,    EventType::kShardWritten,
    EventType::kCheckpointCommit,   EventType::kCheckpointFailed,
    EventType::kPauseStart,         EventType::kPauseEnd,
    EventType::kDrainStart,         EventType::kShardDrained,
    EventType::kDrainDone,          EventType::kRestoreStart,
    EventType::kRestoreLocateDone,  EventType::kRestoreReadDone,
    EventType::kRestoreReshardDone, EventType::kRestoreDone,
    EventType::kRestoreResume,      EventType::kCleanup,
};

// True for restore_start, restore_done and the four phase events.
constexpr bool is_restore_event(EventType t) {
  return t == EventType::kRestoreStart || t == EventType::kRestoreDone ||
         t >= EventType::kRestoreLocateDone;
}

// The `event` value as written in logs ("checkpoint_start", ...); "unknown" for kUnknown.
std::string_view event_type_name(EventType type);
// kUnknown when `name` is not a v1 event type.
EventType event_type_from_name(std::string_view name);

std::string_view checksum_algo_name(
    ChecksumAlgo algo);  // "crc32c", "sha256", "xxh64"; "" for kNone
// Hex digits a digest of this algorithm has (8, 64, 16); 0 for kNone.
std::size_t checksum_hex_length(ChecksumAlgo algo);

// A shard digest, written in logs as "algo:hex". `hex` is lower case.
struct Checksum {
  ChecksumAlgo algo = ChecksumAlgo::kNone;
  std::string hex;

  bool empty() const { return algo == ChecksumAlgo::kNone; }
  std::string to_string() const;  // "sha256:ab12..."; "" when empty
  bool operator==(const Checksum&) const = default;
};

// Parses "algo:hex" (algo crc32c, sha256 or xxh64; hex of that algorithm's
// length, either case). On failure returns nullopt and, when `why` is given,
// says what is wrong.
std::optional<Checksum> parse_checksum(std::string_view text, std::string* why = nullptr);
// The same into an existing value (reusing its buffer); on failure `out` is unspecified.
bool parse_checksum(std::string_view text, Checksum& out, std::string* why = nullptr);

struct Event {
  EventType type = EventType::kUnknown;
  std::string unknown_type;  // the `event` value when type is kUnknown, else empty
  double ts = 0;             // unix seconds
  std::string job;
  std::optional<std::int64_t> step;
  std::string tier;  // empty: the tier configured for the log
  std::optional<std::int64_t> rank;
  std::string path;
  std::optional<std::uint64_t> bytes;
  std::optional<double> start_ts;  // unix seconds
  Checksum checksum;
  std::optional<std::uint64_t> files;
  std::string reason;
  std::string from_tier;
  std::string to_tier;
  std::optional<bool> ok;

  bool operator==(const Event&) const = default;
};

}  // namespace ckptmon
