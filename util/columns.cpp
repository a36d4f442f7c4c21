#include "util/columns.hpp"

#include <algorithm>
#include <cstddef>

namespace ckptmon {

std::string text_columns(const std::vector<std::vector<std::string>>& rows,
                         const std::string& indent) {
  std::vector<std::size_t> width;
  for (const auto& r : rows) {
    width.resize(std::max(width.size(), r.size()), 0);
    for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line = indent;
    for (std::size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace ckptmon
