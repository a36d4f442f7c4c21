#pragma once
// The digest algorithms event logs name for shard checksums (docs/events.md).
// Here, below events/, so util/digest.hpp can compute them without
// depending on the event schema; events/event.hpp spells their names.

#include <cstdint>

namespace ckptmon {

enum class ChecksumAlgo : std::uint8_t { kNone, kCrc32c, kSha256, kXxh64 };

}  // namespace ckptmon
