#pragma once
// The one sanitiser for label values that come from outside (directory names,
// event-log fields, configuration strings): what reaches the exposition,
// Alertmanager and the API's *_label fields is valid UTF-8 and bounded, and
// two different raw names never share a label. docs/metrics.md ("Label
// values") is the contract. Pure functions; thread-safe.

#include <cstddef>
#include <string>
#include <string_view>

namespace ckptmon {

// Longest label value, in bytes of UTF-8, suffix included.
inline constexpr std::size_t kLabelValueMaxBytes = 128;

// `raw` as a label value. Unchanged when it is valid UTF-8 without C0 control
// characters or DEL and at most kLabelValueMaxBytes long. Otherwise: each
// maximal subpart of an ill-formed sequence (Unicode ch. 3, "U+FFFD
// substitution of maximal subparts", as Python's decode(errors="replace")) and
// each control character becomes U+FFFD, the result is cut on a character
// boundary to at most kLabelValueMaxBytes - 9 bytes, and "~" plus the first 8
// hex digits of SHA-256 of the raw bytes is appended.
std::string label_value(std::string_view raw);

// True when label_value(raw) == raw.
bool is_clean_label_value(std::string_view raw);

// `raw` for a person to read (API JSON, landing page, logs): valid UTF-8 kept
// as is, every byte of an ill-formed sequence written as \xNN (lower-case
// hex). Not bounded; escape it for the medium as usual.
std::string display_name(std::string_view raw);

}  // namespace ckptmon
