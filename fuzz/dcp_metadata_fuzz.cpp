// libFuzzer target for the restricted unpickler and PyTorch DCP's .metadata
// reader (collectors/formats/). Beyond "never crash, never leak": a read
// that fails says why; the tree it builds is walkable (every pointer lands
// in the arena, cycles included); a metadata it returns has component bytes
// that sum to its stored bytes, and no storage entry outside the checkpoint.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "collectors/formats/dcp_metadata.hpp"
#include "collectors/formats/pickle.hpp"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "dcp_metadata_fuzz: property violated: %s\n", what);
    std::abort();
  }
}

// Every global allowed but os.*: reaches REDUCE, NEWOBJ and BUILD on shapes
// the DCP allow-list would refuse early.
bool allow_most(std::string_view module, std::string_view) { return module != "os"; }

// Visits every node to `depth` (the memo can make cycles).
std::size_t walk(const ckptmon::pickle::Value* v, int depth) {
  if (v == nullptr || depth == 0) return 0;
  std::size_t n = 1;
  for (const auto* i : v->items) n += walk(i, depth - 1);
  for (const auto& [k, x] : v->entries) n += walk(k, depth - 1) + walk(x, depth - 1);
  n += walk(v->args, depth - 1) + walk(v->state, depth - 1);
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto p = ckptmon::pickle::read(bytes, &allow_most);
  check(p.tree.has_value() != !p.error.empty(), "a tree or an error, not both");
  if (p.tree) {
    check(p.tree->root != nullptr, "a tree has a root");
    (void)walk(p.tree->root, 6);
  }
  const auto r = ckptmon::dcp::read_metadata(bytes);
  check(r.metadata.has_value() != !r.error.empty(), "metadata or an error, not both");
  if (r.metadata) {
    std::uint64_t sum = 0;
    for (auto b : r.metadata->component_bytes) sum += b;
    check(sum == r.metadata->stored_bytes, "components sum to the stored bytes");
    for (const auto& s : r.metadata->storage) {
      check(!s.file.empty() && s.file.front() != '/', "storage paths are relative");
      const std::string_view f = s.file;
      check(f != ".." && !f.starts_with("../") && !f.ends_with("/..") &&
                f.find("/../") == std::string_view::npos,
            "no storage path climbs out");
    }
  }
  return 0;
}
