#pragma once
// The building blocks of the state database's binary columns
// (store/shard_pack.hpp, store/event_codec.hpp): LEB128 varints, zigzag for
// signed ones, IEEE doubles as 8 little-endian bytes (bit for bit, so a
// value read back is the value written), length-prefixed strings. The
// reader never reads past its input and never allocates more than the input
// could hold: a malformed column fails, it does not crash.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ckptmon::bytes {

// Writes `v` as LEB128 at `p` (at most 10 bytes); returns the end.
char* put_varint(char* p, std::uint64_t v);
// Reads a LEB128 varint from the front of `in`; false when it is cut short
// or longer than 10 bytes.
bool get_varint(std::string_view& in, std::uint64_t& v);

constexpr std::uint64_t zigzag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
constexpr std::int64_t unzigzag(std::uint64_t v) {
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}

class Writer {
 public:
  void u64(std::uint64_t v);
  void i64(std::int64_t v) { u64(zigzag(v)); }
  void f64(double v);
  void flag(bool v) { out_.push_back(v ? '\1' : '\0'); }
  void byte(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void str(std::string_view s);
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads what a Writer wrote, in the same order. After a failure every read
// returns a zero value and ok() stays false.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  std::uint64_t u64();
  std::int64_t i64() { return unzigzag(u64()); }
  double f64();
  bool flag();  // fails on a byte other than 0 and 1
  std::uint8_t byte();
  std::string str();
  // A count of items that take at least `min_bytes` each: fails when the
  // input left cannot hold that many, so a corrupt count never allocates.
  std::size_t count(std::size_t min_bytes);
  bool ok() const { return ok_; }
  // Everything read and nothing left over.
  bool done() const { return ok_ && in_.empty(); }

 private:
  void fail() {
    ok_ = false;
    in_ = {};
  }
  std::string_view in_;
  bool ok_ = true;
};

}  // namespace ckptmon::bytes
