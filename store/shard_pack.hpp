#pragma once
// The integrity queue's binary format (table integrity_queue, column shards).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/events.hpp"

namespace ckptmon {

// Shards of one checkpoint to verify, packed: per shard its rank and bytes
// as varints, the algorithm, the raw digest, and the path front-coded against
// the previous one (shards of a checkpoint share their directory). About 30
// bytes a shard, so queueing millions during a catch-up stays cheap.
class ShardPack {
 public:
  void add(std::int64_t rank, std::uint64_t bytes, const Checksum& sum, std::string_view path);
  void add(const ShardCheck& s);
  std::size_t count() const { return count_; }
  const std::string& data() const { return data_; }
  // Appends the shards in `data` to `out` (tier, job and step left empty);
  // false when `data` is malformed.
  static bool unpack(std::string_view data, std::vector<ShardCheck>& out);

 private:
  std::string data_;
  std::string last_path_;
  std::size_t count_ = 0;
};

}  // namespace ckptmon
