#pragma once
// Plain-text tables for the one-shot commands (scan, burst, plan): each
// column as wide as its widest cell plus two spaces, no trailing blanks.

#include <string>
#include <vector>

namespace ckptmon {

// One line per row, each starting with `indent`. Rows may have fewer cells
// than others; a column's width is taken over the rows that have it.
std::string text_columns(const std::vector<std::vector<std::string>>& rows,
                         const std::string& indent = "");

}  // namespace ckptmon
