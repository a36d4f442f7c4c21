#pragma once
// Saturating arithmetic for byte and file totals: a sum that would pass the
// type's maximum stays at the maximum ("at least this much") instead of
// wrapping to a small number. Sizes come from the outside (a sparse file
// claims 2^62 bytes, an event says what it likes). Pure functions.

#include <concepts>
#include <limits>

namespace ckptmon {

// a + b, or the largest value of T when that does not fit.
template <std::unsigned_integral T>
constexpr T sat_add(T a, T b) {
  T r{};
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<T>::max() : r;
}

// acc += v, saturating; returns acc.
template <std::unsigned_integral T, std::unsigned_integral U>
constexpr T& sat_add_to(T& acc, U v) {
  const T w = v > std::numeric_limits<T>::max() ? std::numeric_limits<T>::max() : static_cast<T>(v);
  acc = sat_add(acc, w);
  return acc;
}

// a - b, or 0 when b is larger (a part can never be more than its whole).
template <std::unsigned_integral T>
constexpr T sat_sub(T a, T b) {
  return a > b ? a - b : T{0};
}

}  // namespace ckptmon
