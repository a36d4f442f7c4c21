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
  // `hex`: the digest's hex digits as the parser checked them.
  void add(std::int64_t rank, std::uint64_t bytes, ChecksumAlgo algo, std::string_view hex,
           std::string_view path);
  void add(std::int64_t rank, std::uint64_t bytes, const Checksum& sum, std::string_view path) {
    add(rank, bytes, sum.algo, sum.hex, path);
  }
  void add(const ShardChecks::View& s) { add(s.rank, s.bytes, s.algo, s.hex, s.path); }
  // Every shard of `checks`, in order.
  void add(const ShardChecks& checks);
  std::size_t count() const { return count_; }
  const std::string& data() const { return data_; }
  // Appends the shards in `data` to `out` (tier, job and step left empty);
  // false when `data` is malformed.
  static bool unpack(std::string_view data, std::vector<ShardCheck>& out);

 private:
  // One shard, its path front-coded against `prev`.
  void append(std::int64_t rank, std::uint64_t bytes, ChecksumAlgo algo, std::string_view hex,
              std::string_view path, std::string_view prev);

  std::string data_;
  std::string last_path_;
  std::size_t count_ = 0;
};

}  // namespace ckptmon
