#include "store/shard_pack.hpp"

#include <algorithm>
#include <array>

#include "store/bytes.hpp"

namespace ckptmon {

using bytes::get_varint;
using bytes::put_varint;

void ShardPack::add(std::int64_t rank, std::uint64_t bytes, ChecksumAlgo algo, std::string_view hex,
                    std::string_view path) {
  append(rank, bytes, algo, hex, path, last_path_);
  last_path_.assign(path);
}

void ShardPack::append(std::int64_t rank, std::uint64_t bytes, ChecksumAlgo algo,
                       std::string_view hex, std::string_view path, std::string_view prev) {
  // This runs for every checksummed shard of a catch-up: one append per shard.
  const std::size_t limit = std::min(path.size(), prev.size());
  const auto common = static_cast<std::size_t>(
      std::mismatch(path.begin(), path.begin() + static_cast<std::ptrdiff_t>(limit), prev.begin())
          .first -
      path.begin());
  char head[3 * 10 + 1 + 32 + 2 * 10];
  char* p = head;
  // Zigzag, so rank -1 (none given) stays one byte.
  p = put_varint(p, bytes::zigzag(rank));
  p = put_varint(p, bytes);
  *p++ = static_cast<char>(algo);
  const std::size_t n = std::min<std::size_t>(hex.size() / 2, 32);
  // The parser checked the digits and wrote them in lower case; a table
  // avoids a mispredicted branch per digit (digests are random).
  static constexpr auto kNibble = [] {
    std::array<std::uint8_t, 256> t{};
    for (std::size_t c = 0; c < 10; ++c) t['0' + c] = static_cast<std::uint8_t>(c);
    for (std::size_t c = 0; c < 6; ++c) {
      t['a' + c] = static_cast<std::uint8_t>(10 + c);
      t['A' + c] = static_cast<std::uint8_t>(10 + c);
    }
    return t;
  }();
  const auto* h = reinterpret_cast<const unsigned char*>(hex.data());
  for (std::size_t i = 0; i < n; ++i) {
    *p++ = static_cast<char>((kNibble[h[2 * i]] << 4) | kNibble[h[2 * i + 1]]);
  }
  p = put_varint(p, common);
  p = put_varint(p, path.size() - common);
  data_.append(head, static_cast<std::size_t>(p - head));
  data_.append(path.substr(common));
  ++count_;
}

bool ShardPack::unpack(std::string_view in, std::vector<ShardCheck>& out) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string last;
  while (!in.empty()) {
    ShardCheck s;
    std::uint64_t zz = 0;
    std::uint64_t common = 0;
    std::uint64_t suffix = 0;
    if (!get_varint(in, zz) || !get_varint(in, s.bytes) || in.empty()) return false;
    s.rank = bytes::unzigzag(zz);
    const auto algo = static_cast<unsigned char>(in.front());
    in.remove_prefix(1);
    if (algo == 0 || algo > static_cast<unsigned char>(ChecksumAlgo::kXxh64)) return false;
    s.checksum.algo = static_cast<ChecksumAlgo>(algo);
    const std::size_t n = checksum_hex_length(s.checksum.algo) / 2;
    if (in.size() < n) return false;
    for (std::size_t i = 0; i < n; ++i) {
      const auto b = static_cast<unsigned char>(in[i]);
      s.checksum.hex += kDigits[b >> 4];
      s.checksum.hex += kDigits[b & 15];
    }
    in.remove_prefix(n);
    if (!get_varint(in, common) || !get_varint(in, suffix) || common > last.size() ||
        suffix > in.size()) {
      return false;
    }
    s.path = last.substr(0, common);
    s.path.append(in.substr(0, suffix));
    in.remove_prefix(suffix);
    last = s.path;
    out.push_back(std::move(s));
  }
  return true;
}

void ShardPack::add(const ShardChecks& checks) {
  if (checks.empty()) return;
  // Front-coded against the previous shard's path where it lies in the
  // arena, so nothing is copied per shard.
  std::string_view prev = last_path_;
  for (std::size_t i = 0; i < checks.size(); ++i) {
    const ShardChecks::View s = checks[i];
    append(s.rank, s.bytes, s.algo, s.hex, s.path, prev);
    prev = s.path;
  }
  last_path_.assign(prev);
}

}  // namespace ckptmon
