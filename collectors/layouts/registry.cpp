// The explicit table of layout recognisers and the walk that asks them, top
// down, about every directory of a job's tree. Adding a framework means adding
// a file and a line here: no self-registering static initialisers (a static
// library drops them).

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <regex>

#include "collectors/layouts/layout.hpp"
#include "collectors/layouts/recogniser.hpp"

namespace ckptmon {
namespace layouts {
namespace {

enum class Kind {
  kSelf,       // claims the directory it is shown
  kContainer,  // claims children of the directory it is shown
};

struct Entry {
  std::string_view name;
  Kind kind;
  RecogniseFn recognise;
  RecogniseFn finish;  // after the directory's subtree was walked; may be null
};

// Order matters. The configured generic layout goes first: a tier's explicit
// configuration beats the heuristics. Container recognisers run before self
// ones because a container's evidence (a tracker, `latest`, a naming scheme)
// is stronger than what one directory shows on its own; a directory where a
// container recogniser claimed something is not offered to self recognisers.
constexpr std::array kRecognisers{
    Entry{"generic", Kind::kSelf, recognise_generic, nullptr},
    Entry{"dlrover", Kind::kContainer, recognise_dlrover, finish_dlrover},
    Entry{"megatron", Kind::kContainer, recognise_megatron, nullptr},
    Entry{"deepspeed", Kind::kContainer, recognise_deepspeed, nullptr},
    Entry{"hf_trainer", Kind::kContainer, recognise_hf_trainer, nullptr},
    Entry{"lightning", Kind::kContainer, recognise_lightning, nullptr},
    Entry{"nvrx_local", Kind::kContainer, recognise_nvrx_local, nullptr},
    Entry{"orbax", Kind::kSelf, recognise_orbax, nullptr},
    Entry{"torchsnapshot", Kind::kSelf, recognise_torchsnapshot, nullptr},
    Entry{"pytorch_dcp", Kind::kSelf, recognise_pytorch_dcp, nullptr},
};

std::string_view parent_of(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
}

// Sibling checkpoints of one framework in one directory usually have the same
// file count (same world size). A checkpoint that is not committed and has
// fewer files than the newest committed sibling gets that count as expected.
void sibling_expectations(DirScope& s) {
  auto& out = s.out();
  std::map<std::string, const Checkpoint*> reference;  // by framework
  for (std::size_t i = s.first_found(); i < out.size(); ++i) {
    const Checkpoint& c = out[i].ckpt;
    if (c.state != CkptState::kCommitted || parent_of(c.path) != s.rel() || c.path == ".") continue;
    const Checkpoint*& ref = reference[c.framework];
    if (ref == nullptr || c.step > ref->step ||
        (c.step == ref->step && c.last_write > ref->last_write)) {
      ref = &c;
    }
  }
  if (reference.empty()) return;
  for (std::size_t i = s.first_found(); i < out.size(); ++i) {
    Checkpoint& c = out[i].ckpt;
    if (c.state == CkptState::kCommitted || c.expected_files != 0 || parent_of(c.path) != s.rel()) {
      continue;
    }
    auto it = reference.find(c.framework);
    if (it == reference.end() || it->second->files <= c.files) continue;
    const Checkpoint& ref = *it->second;
    c.expected_files = ref.files;
    const std::string_view ref_name = std::string_view(ref.path).substr(ref.path.rfind('/') + 1);
    c.reason += " (" + std::to_string(c.files) + " of " + std::to_string(ref.files) + " files; " +
                std::string(ref_name) + " has " + std::to_string(ref.files) + ")";
  }
}

void walk(const DirNode& node, const std::string& rel, const LayoutContext& ctx,
          std::vector<Found>& out, const std::regex* generic_re, int depth) {
  if (node.reused) {
    // Not listed again by the scanner: the checkpoint as last seen. Container
    // evidence above (a tracker, `latest`) is applied by the container's
    // recogniser when it claims this directory instead.
    out.push_back(from_reused(node, rel.empty() ? std::string(".") : rel));
    return;
  }
  DirScope scope(node, rel, ctx, out, generic_re);
  for (const auto& e : kRecognisers) {
    if (e.kind == Kind::kSelf && scope.any_claimed()) continue;
    e.recognise(scope);
    if (scope.self_claimed()) break;
  }
  if (!scope.self_claimed() && depth < kMaxDepth) {
    for (const auto& child : node.dirs) {
      if (!scope.claimed(child.name)) {
        walk(child, scope.path_of(child.name), ctx, out, generic_re, depth + 1);
      }
    }
  }
  for (const auto& e : kRecognisers) {
    if (e.finish != nullptr) e.finish(scope);
  }
  sibling_expectations(scope);
}

}  // namespace
}  // namespace layouts

std::vector<Checkpoint> recognise_tree(const DirNode& root, const LayoutContext& ctx) {
  std::optional<std::regex> generic_re;
  if (ctx.generic != nullptr && !ctx.generic->step_regex.empty()) {
    try {
      generic_re.emplace(ctx.generic->step_regex, std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      // Configuration validation rejects such a regex; should one get here the
      // generic layout matches nothing rather than everything.
    }
  }
  std::vector<layouts::Found> found;
  layouts::walk(root, "", ctx, found, generic_re ? &*generic_re : nullptr, 0);
  std::vector<Checkpoint> out;
  out.reserve(found.size());
  for (auto& f : found) out.push_back(std::move(f.ckpt));
  return out;
}

bool wants_content(std::string_view name) {
  // .metadata: PyTorch DCP's, a pickle (collectors/formats/dcp_metadata).
  static constexpr std::array<std::string_view, 7> kNames = {
      ".metadata",         "latest",         "latest_checkpointed_iteration.txt",
      "metadata.json",     "integrity.json", "_CHECKPOINT_METADATA",
      ".snapshot_metadata"};
  if (std::find(kNames.begin(), kNames.end(), name) != kNames.end()) return true;
  return name.ends_with(".index.json");
}

}  // namespace ckptmon
