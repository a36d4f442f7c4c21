#include "collectors/formats/dcp_metadata.hpp"

#include <algorithm>
#include <array>
#include <map>

#include "collectors/formats/pickle.hpp"

namespace ckptmon::dcp {
namespace {

using pickle::Value;
using Kind = pickle::Value::Kind;

constexpr std::string_view kMetaModule = "torch.distributed.checkpoint.metadata";

struct Bad {
  std::string what;
};

[[noreturn]] void bad(std::string what) { throw Bad{std::move(what)}; }

bool is_object(const Value* v, std::string_view cls) {
  return v != nullptr && v->kind == Kind::kObject &&
         v->text.size() == kMetaModule.size() + 1 + cls.size() &&
         v->text.starts_with(kMetaModule) && v->text.ends_with(cls);
}

std::string describe(const Value* v) {
  if (v == nullptr) return "nothing";
  if (v->kind == Kind::kObject || v->kind == Kind::kGlobal) return v->text;
  switch (v->kind) {
    case Kind::kDict:
      return "a dict";
    case Kind::kList:
      return "a list";
    case Kind::kTuple:
      return "a tuple";
    case Kind::kStr:
      return "a string";
    case Kind::kNone:
      return "None";
    default:
      return "a scalar";
  }
}

// A torch.Size (or a plain tuple) of non-negative ints.
std::vector<std::int64_t> ints(const Value* v, std::string_view what) {
  const auto* seq = pickle::as_sequence(v);
  if (seq == nullptr) bad(std::string(what) + " is " + describe(v) + ", not a torch.Size");
  std::vector<std::int64_t> out;
  out.reserve(seq->size());
  for (const Value* i : *seq) {
    const auto n = pickle::as_int(i);
    if (!n || *n < 0) bad(std::string(what) + " holds something other than a non-negative int");
    out.push_back(*n);
  }
  return out;
}

std::uint64_t count(const Value* v, std::string_view what) {
  const auto n = pickle::as_int(v);
  if (!n || *n < 0) bad(std::string(what) + " is not a non-negative int");
  return static_cast<std::uint64_t>(*n);
}

std::string text(const Value* v, std::string_view what) {
  const auto t = pickle::as_text(v);
  if (!t) bad(std::string(what) + " is " + describe(v) + ", not a string");
  return std::string(*t);
}

// TensorProperties pickles its state as a tuple (dtype, layout,
// requires_grad, memory_format, pin_memory) since torch 2.1, as a dict before.
std::string dtype_of(const Value* props) {
  if (props == nullptr || props->kind != Kind::kObject) return "";
  const Value* dtype = props->attr("dtype");
  if (dtype == nullptr && props->state != nullptr && props->state->kind == Kind::kTuple &&
      !props->state->items.empty()) {
    dtype = props->state->items[0];
  }
  return dtype != nullptr && dtype->kind == Kind::kGlobal ? dtype->text : "";
}

Item read_item(const std::string& fqn, const Value* v) {
  Item it;
  it.fqn = fqn;
  it.component = component_of_key(fqn);
  if (is_object(v, "BytesStorageMetadata")) return it;
  if (!is_object(v, "TensorStorageMetadata")) {
    bad("state_dict_metadata[" + fqn + "] is " + describe(v));
  }
  it.tensor = true;
  it.dtype = dtype_of(v->attr("properties"));
  it.size = ints(v->attr("size"), fqn + " size");
  const Value* chunks = v->attr("chunks");
  if (chunks == nullptr || chunks->kind != Kind::kList) bad(fqn + " chunks is not a list");
  for (const Value* c : chunks->items) {
    if (!is_object(c, "ChunkStorageMetadata")) bad(fqn + " has a chunk that is " + describe(c));
    it.chunks.push_back({ints(c->attr("offsets"), fqn + " chunk offsets"),
                         ints(c->attr("sizes"), fqn + " chunk sizes")});
  }
  return it;
}

bool inside(std::string_view rel) {
  if (rel.empty() || rel.front() == '/' || rel.find('\0') != std::string_view::npos) return false;
  std::size_t start = 0;
  while (start <= rel.size()) {
    std::size_t slash = rel.find('/', start);
    if (slash == std::string_view::npos) slash = rel.size();
    if (rel.substr(start, slash - start) == "..") return false;
    start = slash + 1;
  }
  return true;
}

Metadata read_tree(const Value* root) {
  if (!is_object(root, "Metadata")) bad("not a DCP Metadata but " + describe(root));
  Metadata m;
  const Value* sdm = root->attr("state_dict_metadata");
  if (sdm == nullptr || sdm->kind != Kind::kDict) bad("state_dict_metadata is " + describe(sdm));
  std::map<std::string, std::size_t> index;
  for (const auto& [k, v] : sdm->entries) {
    std::string fqn = text(k, "a state_dict_metadata key");
    if (index.contains(fqn)) continue;
    index.emplace(fqn, m.items.size());
    m.items.push_back(read_item(fqn, v));
  }
  const Value* sd = root->attr("storage_data");
  if (sd != nullptr && sd->kind == Kind::kDict) {
    for (const auto& [k, v] : sd->entries) {
      if (!is_object(k, "MetadataIndex")) bad("a storage_data key is " + describe(k));
      StoredChunk c;
      c.fqn = text(k->attr("fqn"), "MetadataIndex.fqn");
      const Value* off = k->attr("offset");
      if (off != nullptr && off->kind != Kind::kNone) c.offsets = ints(off, c.fqn + " offset");
      if (v == nullptr || v->kind != Kind::kObject || !v->text.ends_with("._StorageInfo")) {
        bad("storage_data[" + c.fqn + "] is " + describe(v));
      }
      c.file = text(v->attr("relative_path"), c.fqn + " relative_path");
      c.offset = count(v->attr("offset"), c.fqn + " offset");
      c.length = count(v->attr("length"), c.fqn + " length");
      if (!inside(c.file)) {
        ++m.foreign_paths;
        continue;
      }
      m.stored_bytes += c.length;
      auto it = index.find(c.fqn);
      const Component comp =
          it != index.end() ? m.items[it->second].component : component_of_key(c.fqn);
      if (it != index.end()) m.items[it->second].stored_bytes += c.length;
      m.component_bytes[static_cast<std::size_t>(comp)] += c.length;
      m.storage.push_back(std::move(c));
    }
  }
  if (const Value* ver = root->attr("version"); ver != nullptr && ver->kind == Kind::kStr) {
    m.version = ver->text;
  }
  if (const Value* sm = root->attr("storage_meta"); sm != nullptr) {
    const Value* id = sm->attr("checkpoint_id");
    if (id != nullptr && id->kind == Kind::kStr) {
      m.checkpoint_id = id->text;
    } else if (id != nullptr && id->kind == Kind::kObject && id->text.starts_with("pathlib.")) {
      // PosixPath("a", "b") pickles its parts as the arguments.
      for (const Value* part : id->args->items) {
        if (part->kind != Kind::kStr) continue;
        if (!m.checkpoint_id.empty() && !m.checkpoint_id.ends_with('/')) m.checkpoint_id += '/';
        m.checkpoint_id += part->text;
      }
    }
  }
  std::sort(m.items.begin(), m.items.end(),
            [](const Item& a, const Item& b) { return a.fqn < b.fqn; });
  std::sort(m.storage.begin(), m.storage.end(), [](const StoredChunk& a, const StoredChunk& b) {
    return a.file != b.file ? a.file < b.file : a.offset < b.offset;
  });
  return m;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

Component component_of_key(std::string_view fqn) {
  const std::string first = lower(fqn.substr(0, fqn.find('.')));
  // torch.distributed.checkpoint.state_dict's flattened optimizer state.
  if (first == "state" || first == "param_groups") return Component::kOptimizer;
  if (first == "module") return Component::kModel;
  return component_of_word(first).value_or(Component::kOther);
}

bool allowed_global(std::string_view module, std::string_view name) {
  static constexpr std::array<std::string_view, 8> kMeta = {
      "Metadata",         "TensorStorageMetadata", "BytesStorageMetadata", "ChunkStorageMetadata",
      "TensorProperties", "MetadataIndex",         "StorageMeta",          "_MEM_FORMAT_ENCODING"};
  // Values of torch's own types in the metadata: the shape type, dtypes and
  // layouts (pickled by name: torch.float32 is GLOBAL "torch float32").
  static constexpr std::array<std::string_view, 40> kTorch = {"Size",
                                                              "strided",
                                                              "sparse_coo",
                                                              "sparse_csr",
                                                              "sparse_csc",
                                                              "sparse_bsr",
                                                              "sparse_bsc",
                                                              "_mkldnn",
                                                              "float32",
                                                              "float",
                                                              "float64",
                                                              "double",
                                                              "float16",
                                                              "half",
                                                              "bfloat16",
                                                              "complex32",
                                                              "complex64",
                                                              "complex128",
                                                              "cfloat",
                                                              "cdouble",
                                                              "uint8",
                                                              "int8",
                                                              "int16",
                                                              "short",
                                                              "int32",
                                                              "int",
                                                              "int64",
                                                              "long",
                                                              "bool",
                                                              "uint16",
                                                              "uint32",
                                                              "uint64",
                                                              "float8_e4m3fn",
                                                              "float8_e5m2",
                                                              "float8_e4m3fnuz",
                                                              "float8_e5m2fnuz",
                                                              "float8_e8m0fnu",
                                                              "float4_e2m1fn_x2",
                                                              "quint8",
                                                              "qint8"};
  if (module == kMetaModule) return std::find(kMeta.begin(), kMeta.end(), name) != kMeta.end();
  if (module == "torch.distributed.checkpoint.filesystem") return name == "_StorageInfo";
  if (module == "torch") return std::find(kTorch.begin(), kTorch.end(), name) != kTorch.end();
  // pathlib.PosixPath is pathlib._local.PosixPath from Python 3.13.
  if (module == "pathlib" || module == "pathlib._local") {
    return name == "PosixPath" || name == "PurePosixPath" || name == "WindowsPath" ||
           name == "PureWindowsPath";
  }
  if (module == "collections") return name == "OrderedDict";
  if (module == "_codecs") return name == "encode";
  // getattr: how some Python releases (3.11.2 among them) pickle an Enum
  // member, getattr(_MEM_FORMAT_ENCODING, "TORCH_CONTIGUOUS_FORMAT"); kept as
  // data like every call here, never made.
  if (module == "builtins") return name == "set" || name == "frozenset" || name == "getattr";
  return false;
}

std::vector<std::vector<ReadRange>> plan_reads(const Metadata& m, std::size_t ranks) {
  std::vector<std::vector<ReadRange>> out(ranks);
  if (ranks == 0) return out;
  std::map<std::string_view, const Item*> items;
  for (const Item& it : m.items) items.emplace(it.fqn, &it);
  for (const StoredChunk& c : m.storage) {
    auto it = items.find(c.fqn);
    const Item* item = it != items.end() ? it->second : nullptr;
    const bool everyone =
        item == nullptr || !item->tensor || item->size.empty() || c.offsets.empty();
    // The stored chunk's rows along dim 0: its offset, and its size from the
    // item's chunk list (matched by offsets).
    std::uint64_t lo = 0;
    std::uint64_t hi = 0;
    if (!everyone) {
      lo = static_cast<std::uint64_t>(c.offsets[0]);
      hi = lo;
      for (const Item::Chunk& ch : item->chunks) {
        if (ch.offsets == c.offsets && !ch.sizes.empty()) {
          hi = lo + static_cast<std::uint64_t>(ch.sizes[0]);
        }
      }
    }
    const auto rows = everyone ? 0 : static_cast<std::uint64_t>(item->size[0]);
    const std::uint64_t per = (rows + ranks - 1) / ranks;
    for (std::size_t r = 0; r < ranks; ++r) {
      if (!everyone) {
        const std::uint64_t a = std::min(rows, r * per);
        const std::uint64_t b = std::min(rows, a + per);
        // A zero-row chunk (an empty shard) is read by the rank its offset
        // falls in; others by every rank whose rows they overlap.
        const bool overlaps = hi > lo ? (lo < b && a < hi) : (lo >= a && lo < b);
        if (!overlaps) continue;
      }
      out[r].push_back({c.file, c.offset, c.length, c.fqn});
    }
  }
  for (auto& v : out) {
    std::sort(v.begin(), v.end(), [](const ReadRange& a, const ReadRange& b) {
      return a.file != b.file ? a.file < b.file : a.offset < b.offset;
    });
  }
  return out;
}

ReadResult read_metadata(std::string_view bytes) {
  ReadResult r;
  if (bytes.size() > kMaxMetadataBytes) {
    r.error = ".metadata: " + std::to_string(bytes.size()) + " bytes, over the " +
              std::to_string(kMaxMetadataBytes) + " read";
    return r;
  }
  pickle::Result p = pickle::read(bytes, &allowed_global);
  if (!p.tree) {
    r.error = ".metadata: " + p.error;
    r.refused = p.refused;
    return r;
  }
  try {
    r.metadata = read_tree(p.tree->root);
  } catch (const Bad& b) {
    r.error = ".metadata: " + b.what;
  }
  return r;
}

}  // namespace ckptmon::dcp
