#include "http/gzip.hpp"

#include <zlib.h>

#include <cctype>
#include <stdexcept>

namespace ckptmon {

std::string gzip_compress(std::string_view in) {
  z_stream zs{};
  // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
  if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  std::string out(deflateBound(&zs, static_cast<uLong>(in.size())) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  const auto written = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate did not finish");
  out.resize(written);
  return out;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// q=0, q=0.0, q=0.000: refused.
bool q_is_zero(std::string_view params) {
  while (!params.empty()) {
    const auto semi = params.find(';');
    std::string_view p = trim(params.substr(0, semi));
    params = semi == std::string_view::npos ? std::string_view() : params.substr(semi + 1);
    if (p.size() < 2 || (p[0] != 'q' && p[0] != 'Q') || p[1] != '=') continue;
    std::string_view v = trim(p.substr(2));
    if (v.empty() || v[0] != '0') return false;
    for (char c : v.substr(1)) {
      if (c != '.' && c != '0') return false;
    }
    return true;
  }
  return false;
}

}  // namespace

bool accepts_gzip(std::string_view value) {
  while (!value.empty()) {
    const auto comma = value.find(',');
    std::string_view item = value.substr(0, comma);
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
    const auto semi = item.find(';');
    const std::string_view coding = trim(item.substr(0, semi));
    if (iequals(coding, "gzip") || coding == "*") {
      return !q_is_zero(semi == std::string_view::npos ? std::string_view()
                                                       : item.substr(semi + 1));
    }
  }
  return false;
}

}  // namespace ckptmon
