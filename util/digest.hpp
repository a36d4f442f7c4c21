#pragma once
// Streaming digests for the checksums event logs carry (docs/events.md):
// CRC32C (ISA-L's crc32_iscsi), SHA-256 (OpenSSL EVP) and XXH64 (xxHash,
// seed 0), written as the lower-case hex the logs use. Well-kept libraries,
// not hand-written code. One Digest per thread.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "util/checksum_algo.hpp"

namespace ckptmon {

class Digest {
 public:
  // nullptr for ChecksumAlgo::kNone.
  static std::unique_ptr<Digest> make(ChecksumAlgo algo);
  virtual ~Digest() = default;
  virtual void update(const void* data, std::size_t n) = 0;
  // Finishes the digest: crc32c as 8 hex digits of the CRC value, xxh64 as 16
  // of the 64-bit value (its canonical big-endian form), sha256 as 64.
  virtual std::string hex() = 0;
};

// The digest of a whole buffer in hex (tests, small inputs).
std::string digest_hex(ChecksumAlgo algo, std::string_view data);

// XXH64 with seed 0: the tailer's fingerprints of a log's first bytes.
std::uint64_t xxh64(const void* data, std::size_t n);

}  // namespace ckptmon
