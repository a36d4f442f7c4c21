#include "util/label.hpp"

#include <array>
#include <cstdint>

#include <openssl/evp.h>

namespace ckptmon {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
constexpr std::size_t kSuffixBytes = 9;                    // "~" + 8 hex digits

// Length of the well-formed UTF-8 sequence starting at s[i], or 0 when the
// bytes there are ill-formed; then *subpart is the length of the maximal
// subpart to replace (at least 1).
std::size_t sequence_at(std::string_view s, std::size_t i, std::size_t* subpart) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  *subpart = 1;
  if (b0 < 0x80) return 1;
  std::size_t need = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 == 0xE0) {
    need = 2;
    lo = 0xA0;
  } else if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) {
    need = 2;
  } else if (b0 == 0xED) {
    need = 2;
    hi = 0x9F;  // no surrogates
  } else if (b0 == 0xF0) {
    need = 3;
    lo = 0x90;
  } else if (b0 >= 0xF1 && b0 <= 0xF3) {
    need = 3;
  } else if (b0 == 0xF4) {
    need = 3;
    hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;  // 0x80..0xC1, 0xF5..0xFF never start a sequence
  }
  for (std::size_t k = 1; k <= need; ++k) {
    if (i + k >= s.size()) {
      *subpart = k;
      return 0;
    }
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < lo || b > hi) {
      *subpart = k;
      return 0;
    }
    lo = 0x80;
    hi = 0xBF;
  }
  return need + 1;
}

bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

constexpr std::array<char, 16> kHex{'0', '1', '2', '3', '4', '5', '6', '7',
                                    '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};

// First 8 hex digits of SHA-256 of `raw`. EVP_Digest does not allocate a
// context we could leak and reports failure instead of throwing: label
// rendering must never throw. On failure the suffix is "00000000".
std::string short_sha256(std::string_view raw) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  std::string out(8, '0');
  if (EVP_Digest(raw.data(), raw.size(), md.data(), &len, EVP_sha256(), nullptr) != 1 || len < 4) {
    return out;
  }
  for (std::size_t k = 0; k < 4; ++k) {
    out[2 * k] = kHex[md[k] >> 4];
    out[2 * k + 1] = kHex[md[k] & 0xF];
  }
  return out;
}

}  // namespace

bool is_clean_label_value(std::string_view raw) {
  if (raw.size() > kLabelValueMaxBytes) return false;
  std::size_t i = 0;
  while (i < raw.size()) {
    std::size_t subpart = 0;
    const std::size_t n = sequence_at(raw, i, &subpart);
    if (n == 0 || (n == 1 && is_control(static_cast<unsigned char>(raw[i])))) return false;
    i += n;
  }
  return true;
}

std::string label_value(std::string_view raw) {
  if (is_clean_label_value(raw)) return std::string(raw);
  const std::size_t keep = kLabelValueMaxBytes - kSuffixBytes;
  std::string out;
  out.reserve(kLabelValueMaxBytes);
  std::size_t i = 0;
  while (i < raw.size()) {
    std::size_t subpart = 0;
    const std::size_t n = sequence_at(raw, i, &subpart);
    std::string_view piece;
    if (n == 0) {
      piece = kReplacement;
      i += subpart;
    } else if (n == 1 && is_control(static_cast<unsigned char>(raw[i]))) {
      piece = kReplacement;
      i += 1;
    } else {
      piece = raw.substr(i, n);
      i += n;
    }
    if (out.size() + piece.size() > keep) break;
    out += piece;
  }
  out += '~';
  out += short_sha256(raw);
  return out;
}

std::string display_name(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  std::size_t i = 0;
  while (i < raw.size()) {
    std::size_t subpart = 0;
    const std::size_t n = sequence_at(raw, i, &subpart);
    if (n > 0) {
      out.append(raw.substr(i, n));
      i += n;
      continue;
    }
    for (std::size_t k = 0; k < subpart; ++k) {
      const auto b = static_cast<unsigned char>(raw[i + k]);
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 0xF];
    }
    i += subpart;
  }
  return out;
}

}  // namespace ckptmon
