#include "model/dir_tree.hpp"

#include <algorithm>

namespace ckptmon {

const FileEntry* DirNode::file(std::string_view n) const {
  auto it = std::lower_bound(files.begin(), files.end(), n,
                             [](const FileEntry& e, std::string_view v) { return e.name < v; });
  return it != files.end() && it->name == n ? &*it : nullptr;
}

const DirNode* DirNode::dir(std::string_view n) const {
  auto it = std::lower_bound(dirs.begin(), dirs.end(), n,
                             [](const DirNode& e, std::string_view v) { return e.name < v; });
  return it != dirs.end() && it->name == n ? &*it : nullptr;
}

}  // namespace ckptmon
