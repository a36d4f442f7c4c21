// PyTorch Distributed Checkpoint (torch.distributed.checkpoint FileSystemWriter).
//
// A checkpoint directory holds `__{rank}_{n}.distcp` shards and, written last
// by the coordinator, `.metadata` (pickled; written as `.metadata.tmp`, fsynced
// and renamed). Without collectives every rank writes its own
// `__{rank}.metadata` instead. The step comes from the directory name chosen by
// the caller.

#include <map>

#include "collectors/formats/dcp_metadata.hpp"
#include "collectors/layouts/recogniser.hpp"

namespace ckptmon::layouts {
namespace {

// "__12_0.distcp" -> 12; "__12.metadata" (with suffix ".metadata") -> 12.
std::optional<std::int64_t> rank_of(std::string_view name, std::string_view suffix) {
  if (!name.starts_with("__") || !name.ends_with(suffix)) return std::nullopt;
  std::string_view mid = name.substr(2, name.size() - 2 - suffix.size());
  if (suffix == ".distcp") {
    const auto us = mid.find('_');
    if (us == std::string_view::npos || !is_digits(mid.substr(us + 1))) return std::nullopt;
    mid = mid.substr(0, us);
  }
  return parse_uint(mid);
}

// The file at `rel` (a name, or "dir/name") under the checkpoint directory;
// nullptr when it is not there. `known` is false when a directory on the
// way could not be listed: the file's absence is then not a fact.
const FileEntry* file_at(const DirNode& d, std::string_view rel, bool& known) {
  known = d.error == 0 && !d.too_deep;
  const auto slash = rel.find('/');
  if (slash == std::string_view::npos) return known ? d.file(rel) : nullptr;
  const DirNode* sub = known ? d.dir(rel.substr(0, slash)) : nullptr;
  return sub != nullptr ? file_at(*sub, rel.substr(slash + 1), known) : nullptr;
}

// The checkpoint's component bytes from its `.metadata`: the stored bytes
// of each key group replace the .distcp files' share, which file names
// cannot split; bytes of the files that no key claims (headers, alignment)
// stay `other`. A key whose bytes lie past its file's end, or in a file that
// is not there, breaks the checkpoint: a restore would fail reading it.
void apply_metadata(const DirNode& d, const FileEntry& meta, Checkpoint& c, Verdict& v) {
  if (!meta.content) {
    c.metadata = meta.size > kMaxManifestBytes
                     ? "unread: .metadata is " + std::to_string(meta.size) + " bytes, over the " +
                           std::to_string(kMaxManifestBytes >> 20) + " MiB read"
                     : "unread: .metadata could not be read";
    return;
  }
  const dcp::ReadResult r = dcp::read_metadata(*meta.content);
  if (!r.metadata) {
    c.metadata = (r.refused ? "refused: " : "malformed: ") + r.error;
    return;
  }
  const dcp::Metadata& m = *r.metadata;
  std::uint64_t past_end = 0;
  std::string first;
  for (const dcp::StoredChunk& s : m.storage) {
    bool known = true;
    const FileEntry* f = file_at(d, s.file, known);
    if (!known) continue;
    if (f == nullptr || f->size < s.offset + s.length || s.offset + s.length < s.offset) {
      if (past_end++ == 0) {
        first = f == nullptr ? ".metadata places " + s.fqn + " in " + s.file + ", which is missing"
                             : ".metadata reads " + s.file + " up to byte " +
                                   std::to_string(s.offset + s.length) + " (" + s.fqn +
                                   "), but it holds " + std::to_string(f->size);
      }
    }
  }
  if (past_end > 0) {
    if (v.broken.empty())
      v.broken = first + (past_end > 1 ? " (and " + std::to_string(past_end - 1) + " more)" : "");
    c.metadata = "read";
    return;
  }
  // The shards' bytes as file names classified them, taken back.
  std::uint64_t shard_bytes = 0;
  for (const FileEntry& f : d.files) {
    if (!f.name.ends_with(".distcp")) continue;
    auto& slot = c.component_bytes[static_cast<std::size_t>(classify(f.name))];
    slot -= std::min(slot, f.size);
    shard_bytes += f.size;
  }
  for (std::size_t i = 0; i < kComponentCount; ++i) c.component_bytes[i] += m.component_bytes[i];
  if (shard_bytes > m.stored_bytes) {
    c.component_bytes[static_cast<std::size_t>(Component::kOther)] += shard_bytes - m.stored_bytes;
  }
  c.metadata = "read";
}

}  // namespace

void apply_dcp_metadata(const DirNode& d, const DcpEval& e, Checkpoint& c, Verdict& v) {
  // Only once the coordinator has renamed it into place.
  if (e.marker != nullptr && e.marker->name == ".metadata" && e.pending.empty()) {
    apply_metadata(d, *e.marker, c, v);
  }
}

DcpEval evaluate_dcp_dir(const DirNode& d) {
  DcpEval e;
  std::map<std::int64_t, double> rank_newest;  // rank -> newest mtime of its shards
  std::map<std::int64_t, const FileEntry*> rank_meta;
  const FileEntry* meta = nullptr;
  const FileEntry* tmp = nullptr;
  for (const auto& f : d.files) {
    if (f.name == ".metadata") {
      meta = &f;
    } else if (f.name == ".metadata.tmp") {
      tmp = &f;
    } else if (f.name.ends_with(".distcp")) {
      ++e.distcp;
      if (auto r = rank_of(f.name, ".distcp")) {
        double& newest = rank_newest[*r];
        newest = std::max(newest, f.mtime);
      }
    } else if (auto r = rank_of(f.name, ".metadata")) {
      rank_meta[*r] = &f;
    }
  }
  e.looks = e.distcp > 0 || meta != nullptr || tmp != nullptr || !rank_meta.empty();
  e.ranks = rank_newest.size();
  if (tmp != nullptr) {
    e.marker = meta;
    e.pending = meta != nullptr ? ".metadata.tmp present (the coordinator is replacing .metadata)"
                                : ".metadata.tmp present, not yet renamed to .metadata";
    return e;
  }
  if (meta != nullptr) {
    e.marker = meta;
    return e;
  }
  if (!rank_meta.empty()) {
    // Saved without collectives: every rank commits its own part.
    std::vector<std::int64_t> missing;
    std::vector<std::int64_t> stale;
    for (const auto& [rank, newest] : rank_newest) {
      auto it = rank_meta.find(rank);
      if (it == rank_meta.end()) {
        missing.push_back(rank);
      } else if (it->second->mtime + kMtimeSlack < newest) {
        stale.push_back(rank);
      }
    }
    for (const auto& [rank, f] : rank_meta) {
      if (e.marker == nullptr || f->mtime > e.marker->mtime) e.marker = f;
    }
    if (!missing.empty()) {
      e.pending = "no __{rank}.metadata for " + std::to_string(missing.size()) + " of " +
                  std::to_string(rank_newest.size()) + " ranks (rank " + rank_list(missing) + ")";
    } else if (!stale.empty()) {
      e.pending =
          "shards newer than their __{rank}.metadata (re-save) for rank " + rank_list(stale);
    }
    return e;
  }
  e.pending = "no .metadata";
  return e;
}

void recognise_pytorch_dcp(DirScope& s) {
  const DirNode& d = s.dir();
  const DcpEval e = evaluate_dcp_dir(d);
  if (!e.looks) return;
  s.claim_self();
  Found f;
  Checkpoint& c = f.ckpt;
  c.path = s.self_path();
  c.step = parse_step(d.name);
  f.ranks = e.ranks;
  Verdict v;
  const double activity = tally_tree(c, d, s.ctx());
  if (megatron_dist_looks(d)) {
    // A Megatron torch_dist iteration shown on its own (no tracker above it).
    c.framework = "megatron_torch_dist";
    megatron_dist_verdict(d, e, v, c);
  } else {
    c.framework = "pytorch_dcp";
    v.marker_name = ".metadata";
    v.has_marker = e.marker != nullptr;
    v.pending = e.pending;
    if (e.marker != nullptr) c.marker_time = e.marker->mtime;
  }
  apply_dcp_metadata(d, e, c, v);
  decide(c, v, activity, s.ctx());
  s.emit(std::move(f));
}

}  // namespace ckptmon::layouts
