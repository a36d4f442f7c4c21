#include "store/bytes.hpp"

#include <bit>

namespace ckptmon::bytes {

char* put_varint(char* p, std::uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

bool get_varint(std::string_view& in, std::uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (in.empty()) return false;
    const auto b = static_cast<unsigned char>(in.front());
    in.remove_prefix(1);
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

void Writer::u64(std::uint64_t v) {
  char buf[10];
  out_.append(buf, static_cast<std::size_t>(put_varint(buf, v) - buf));
}

void Writer::f64(double v) {
  const auto bits = std::bit_cast<std::uint64_t>(v);
  for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

void Writer::str(std::string_view s) {
  u64(s.size());
  out_.append(s);
}

std::uint64_t Reader::u64() {
  std::uint64_t v = 0;
  if (!ok_ || !get_varint(in_, v)) {
    fail();
    return 0;
  }
  return v;
}

double Reader::f64() {
  if (!ok_ || in_.size() < 8) {
    fail();
    return 0;
  }
  std::uint64_t bits = 0;
  for (int i = 0; i < 8; ++i) {
    bits |= static_cast<std::uint64_t>(static_cast<unsigned char>(in_[static_cast<std::size_t>(i)]))
            << (8 * i);
  }
  in_.remove_prefix(8);
  return std::bit_cast<double>(bits);
}

std::uint8_t Reader::byte() {
  if (!ok_ || in_.empty()) {
    fail();
    return 0;
  }
  const auto b = static_cast<std::uint8_t>(in_.front());
  in_.remove_prefix(1);
  return b;
}

bool Reader::flag() {
  const std::uint8_t b = byte();
  if (b > 1) fail();
  return b == 1;
}

std::string Reader::str() {
  const std::uint64_t n = u64();
  if (!ok_ || n > in_.size()) {
    fail();
    return {};
  }
  std::string s(in_.substr(0, static_cast<std::size_t>(n)));
  in_.remove_prefix(static_cast<std::size_t>(n));
  return s;
}

std::size_t Reader::count(std::size_t min_bytes) {
  const std::uint64_t n = u64();
  if (!ok_ || (min_bytes > 0 && n > in_.size() / min_bytes)) {
    fail();
    return 0;
  }
  return static_cast<std::size_t>(n);
}

}  // namespace ckptmon::bytes
