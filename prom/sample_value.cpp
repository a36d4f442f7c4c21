#include "prom/sample_value.hpp"

#include <charconv>
#include <cmath>

namespace ckptmon {

std::string prom_value(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[32];  // the longest shortest form of a double is 24 characters
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace ckptmon
