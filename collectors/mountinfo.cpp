#include "collectors/mountinfo.hpp"

#include <charconv>

#include "util/text.hpp"

namespace ckptmon {
namespace {

template <typename T>
bool to_num(std::string_view s, T& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool is_path_prefix(std::string_view mount_point, std::string_view path) {
  if (mount_point == "/") return !path.empty() && path.front() == '/';
  if (!path.starts_with(mount_point)) return false;
  return path.size() == mount_point.size() || path[mount_point.size()] == '/';
}

}  // namespace

std::vector<MountInfo> parse_mountinfo(std::string_view text, int* skipped) {
  std::vector<MountInfo> out;
  int bad = 0;
  for (std::string_view line : split(text, '\n')) {
    if (trim(line).empty()) continue;
    // Fields are separated by exactly one space and may be empty: a mount
    // made with an empty source ("mount -t tmpfs '' /x") prints "tmpfs  ro".
    // Dropping empty fields would read the super options as the source.
    std::vector<std::string_view> f = split(trim(line), ' ');
    // id parent major:minor root mount_point options [optional...] - fstype source super
    std::size_t sep = 0;
    for (std::size_t i = 6; i < f.size(); ++i) {
      if (f[i] == "-") {
        sep = i;
        break;
      }
    }
    // The super options field can be missing on very old kernels; the rest cannot.
    if (sep == 0 || sep + 2 >= f.size()) {
      ++bad;
      continue;
    }
    MountInfo m;
    auto colon = f[2].find(':');
    if (colon == std::string_view::npos || f[4].empty() || !to_num(f[0], m.mount_id) ||
        !to_num(f[1], m.parent_id) || !to_num(f[2].substr(0, colon), m.major) ||
        !to_num(f[2].substr(colon + 1), m.minor)) {
      ++bad;
      continue;
    }
    m.root = unescape_mount_field(f[3]);
    m.mount_point = unescape_mount_field(f[4]);
    m.mount_options = std::string(f[5]);
    m.fstype = std::string(f[sep + 1]);
    m.source = unescape_mount_field(f[sep + 2]);
    m.super_options = sep + 3 < f.size() ? std::string(f[sep + 3]) : std::string();
    out.push_back(std::move(m));
  }
  if (skipped != nullptr) *skipped = bad;
  return out;
}

const MountInfo* find_mount(const std::vector<MountInfo>& mounts, std::string_view real_path,
                            std::optional<std::pair<unsigned, unsigned>> dev) {
  const MountInfo* best = nullptr;
  int best_rank = -1;
  for (const auto& m : mounts) {
    if (!is_path_prefix(m.mount_point, real_path)) continue;
    const bool dev_match = dev && m.major == dev->first && m.minor == dev->second;
    // Longer mount point wins; a device match breaks ties in length class.
    const int rank = static_cast<int>(m.mount_point.size()) * 2 + (dev_match ? 1 : 0);
    if (rank >= best_rank) {
      best_rank = rank;
      best = &m;
    }
  }
  return best;
}

std::string unescape_mount_field(std::string_view s) {
  auto octal = [](char c) { return c >= '0' && c <= '7'; };
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && octal(s[i + 1]) && octal(s[i + 2]) && octal(s[i + 3])) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
      continue;
    }
    out += s[i];
  }
  return out;
}

bool has_option(std::string_view options, std::string_view opt) {
  for (auto o : split(options, ',')) {
    if (o == opt) return true;
  }
  return false;
}

}  // namespace ckptmon
