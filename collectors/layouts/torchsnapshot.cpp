// torchsnapshot (torchsnapshot/snapshot.py, manifest.py, io_preparer.py).
//
// A snapshot directory holds per-rank data under `<rank>/<logical path>`,
// `replicated/`, `sharded/`, `replicated_sharded/` and `batched/<uuid>`, and,
// written by rank 0 after a barrier, `.snapshot_metadata`: YAML (current
// versions dump it as JSON, a subset of YAML) with `version`, `world_size`
// and `manifest`, a map from logical path to entry. Entries name their file in
// `location` (with `byte_range: [start, end]` when batched into one file);
// sharded and chunked tensors list theirs under `shards[].tensor` and
// `chunks[].tensor`.

#include <map>

#include <yaml-cpp/yaml.h>

#include "collectors/layouts/recogniser.hpp"

namespace ckptmon::layouts {
namespace {

constexpr std::string_view kMeta = ".snapshot_metadata";
// Entries visited at most; aliases in YAML can make a small file name a huge
// number of entries.
constexpr std::size_t kMaxEntries = 1'000'000;

struct Manifest {
  std::int64_t world_size = 0;
  std::map<std::string, std::uint64_t> files;  // location -> bytes it must hold at least
  std::string error;
  std::size_t visited = 0;
};

void add_location(Manifest& m, std::string loc, std::uint64_t min_size) {
  std::uint64_t& need = m.files[std::move(loc)];
  need = std::max(need, min_size);
}

void collect_json_entry(const nlohmann::json& e, Manifest& m, bool nested) {
  if (!e.is_object() || ++m.visited > kMaxEntries) return;
  if (const auto* loc = json_member(e, "location"); loc != nullptr && loc->is_string()) {
    std::uint64_t end = 0;
    if (const auto* br = json_member(e, "byte_range");
        br != nullptr && br->is_array() && br->size() == 2) {
      end = static_cast<std::uint64_t>(std::max<std::int64_t>(json_int(&(*br)[1]).value_or(0), 0));
    }
    add_location(m, loc->get<std::string>(), end);
  }
  if (nested) return;
  for (std::string_view key : {"shards", "chunks"}) {
    const auto* list = json_member(e, key);
    if (list == nullptr || !list->is_array()) continue;
    for (const auto& item : *list) {
      if (const auto* t = json_member(item, "tensor")) collect_json_entry(*t, m, true);
    }
  }
}

bool from_json(const nlohmann::json& j, Manifest& m) {
  const auto* manifest = json_member(j, "manifest");
  if (manifest == nullptr || !manifest->is_object()) {
    m.error = std::string(kMeta) + ": no manifest map";
    return false;
  }
  m.world_size = json_int(json_member(j, "world_size")).value_or(0);
  for (const auto& entry : *manifest) collect_json_entry(entry, m, false);
  return true;
}

// yaml-cpp 0.7 recurses once per nesting level and has no depth limit: refuse
// documents whose shape could nest deeply before handing them over.
bool yaml_shape_ok(std::string_view text) {
  if (json_depth(text, kMaxManifestDepth) > kMaxManifestDepth) return false;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    // Block nesting needs a column per level: bound the column where a
    // line's content starts, counting "- - -" chains.
    std::size_t col = 0;
    while (col < line.size() && (line[col] == ' ' || (line[col] == '-' && col + 1 < line.size() &&
                                                      line[col + 1] == ' '))) {
      ++col;
    }
    if (col > 4 * static_cast<std::size_t>(kMaxManifestDepth)) return false;
    start = end + 1;
  }
  return true;
}

std::uint64_t yaml_uint(const YAML::Node& n) {
  if (!n.IsScalar()) return 0;
  auto v = parse_uint(n.Scalar());
  return v ? static_cast<std::uint64_t>(*v) : 0;
}

void collect_yaml_entry(const YAML::Node& e, Manifest& m, bool nested) {
  if (!e.IsMap() || ++m.visited > kMaxEntries) return;
  const YAML::Node loc = e["location"];
  if (loc && loc.IsScalar()) {
    std::uint64_t end = 0;
    const YAML::Node br = e["byte_range"];
    if (br && br.IsSequence() && br.size() == 2) end = yaml_uint(br[1]);
    add_location(m, loc.Scalar(), end);
  }
  if (nested) return;
  for (const char* key : {"shards", "chunks"}) {
    const YAML::Node list = e[key];
    if (!list || !list.IsSequence()) continue;
    for (const auto& item : list) {
      if (item.IsMap()) {
        const YAML::Node t = item["tensor"];
        if (t) collect_yaml_entry(t, m, true);
      }
    }
  }
}

bool from_yaml(std::string_view text, Manifest& m) {
  if (!yaml_shape_ok(text)) {
    m.error = std::string(kMeta) + ": nested too deeply";
    return false;
  }
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    if (!root.IsMap()) {
      m.error = std::string(kMeta) + ": not a YAML map";
      return false;
    }
    const YAML::Node manifest = root["manifest"];
    if (!manifest || !manifest.IsMap()) {
      m.error = std::string(kMeta) + ": no manifest map";
      return false;
    }
    m.world_size = static_cast<std::int64_t>(yaml_uint(root["world_size"]));
    for (const auto& kv : manifest) collect_yaml_entry(kv.second, m, false);
    return true;
  } catch (const std::exception& e) {
    m.error = std::string(kMeta) + ": not valid YAML";
    return false;
  }
}

const FileEntry* find_file(const DirNode& root, std::string_view rel) {
  const DirNode* d = &root;
  while (true) {
    const auto slash = rel.find('/');
    if (slash == std::string_view::npos) return d->file(rel);
    d = d->dir(rel.substr(0, slash));
    if (d == nullptr) return nullptr;
    rel.remove_prefix(slash + 1);
  }
}

}  // namespace

void recognise_torchsnapshot(DirScope& s) {
  const DirNode& d = s.dir();
  const FileEntry* meta = d.file(kMeta);
  int special = 0;
  for (std::string_view n : {"replicated", "sharded", "batched", "replicated_sharded"}) {
    if (d.dir(n) != nullptr) ++special;
  }
  const bool rank_dir = std::any_of(d.dirs.begin(), d.dirs.end(),
                                    [](const DirNode& sub) { return is_digits(sub.name); });
  if (meta == nullptr && !(special >= 1 && rank_dir) && special < 2) return;
  s.claim_self();

  Found f;
  Checkpoint& c = f.ckpt;
  c.path = s.self_path();
  c.step = parse_step(d.name);
  c.framework = "torchsnapshot";
  const double activity = tally_tree(c, d, s.ctx());
  Verdict v;
  v.marker_name = std::string(kMeta);
  if (meta != nullptr) {
    v.has_marker = true;
    c.marker_time = meta->mtime;
    Manifest m;
    bool ok = false;
    std::string error;
    bool unread = false;
    if (auto j = parse_manifest_json(*meta, error, unread)) {
      ok = from_json(*j, m);
    } else if (!unread) {
      const ManifestText text = manifest_text(*meta);
      if (text.text && error == std::string(kMeta) + ": not valid JSON") {
        ok = from_yaml(*text.text, m);  // older versions wrote real YAML
      } else {
        m.error = error;
      }
    }
    if (!ok && !unread) {
      v.broken = m.error;
    } else if (ok) {
      f.ranks = static_cast<std::uint64_t>(std::max<std::int64_t>(m.world_size, 0));
      c.expected_files = m.files.size() + 1;
      if (m.visited > kMaxEntries) {
        v.broken = std::string(kMeta) + ": more than " + std::to_string(kMaxEntries) + " entries";
      }
      for (const auto& [loc, need] : m.files) {
        if (!v.broken.empty()) break;
        const FileEntry* file = find_file(d, loc);
        if (file == nullptr) {
          v.broken = std::string(kMeta) + " lists " + loc + ", missing";
        } else if (file->size < need) {
          v.broken = loc + " holds " + std::to_string(file->size) + " bytes, " +
                     std::string(kMeta) + " needs " + std::to_string(need);
        }
      }
    }
  }
  decide(c, v, activity, s.ctx());
  s.emit(std::move(f));
}

}  // namespace ckptmon::layouts
