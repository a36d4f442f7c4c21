#pragma once
// Pickles assembled byte by byte for the tests, from Lib/pickletools.py's
// opcode table: each call appends one opcode and its argument bytes, so the
// expected bytes are written in the test, not produced by the reader.

#include <cstdint>
#include <string>

namespace testing_pickle {

// Assembles a pickle: each call appends one opcode and its argument bytes.
class P {
 public:
  explicit P(int proto = 4) {
    if (proto > 0) op(0x80).u8(static_cast<std::uint8_t>(proto));
  }
  P& op(int c) {
    s_.push_back(static_cast<char>(c));
    return *this;
  }
  P& u8(std::uint8_t v) { return op(v); }
  P& le(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) op(static_cast<int>((v >> (8 * i)) & 0xFFU));
    return *this;
  }
  P& raw(const std::string& b) {
    s_ += b;
    return *this;
  }
  P& str(const std::string& t) { return op(0x8c).u8(static_cast<std::uint8_t>(t.size())).raw(t); }
  P& global(const std::string& m, const std::string& n) { return str(m).str(n).op(0x93); }
  P& stop() { return op('.'); }
  std::string bytes() const { return s_; }

 private:
  std::string s_;
};

}  // namespace testing_pickle
