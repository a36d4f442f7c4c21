// Orbax (checkpoint/orbax/checkpoint/_src/path/atomicity.py, step.py,
// metadata/checkpoint.py).
//
// A step directory `<N>` or `<prefix>_<N>` holds `_CHECKPOINT_METADATA` (JSON;
// `init_timestamp_nsecs` written when the save starts, `commit_timestamp_nsecs`
// when it is finalised) and one directory per item (`_METADATA`,
// `manifest.ocdbt`, `ocdbt.process_<i>/`, `d/`). On POSIX the save goes to
// `<name>.orbax-checkpoint-tmp[-<ts>]` and is renamed; on object stores the
// final directory gets `commit_success.txt` (written by every finalised save
// since 2026-08). Temporary directories are not cleaned up by default.

#include "collectors/layouts/recogniser.hpp"

namespace ckptmon::layouts {
namespace {

constexpr std::string_view kTmp = ".orbax-checkpoint-tmp";
constexpr std::string_view kMeta = "_CHECKPOINT_METADATA";
constexpr std::string_view kCommit = "commit_success.txt";

bool item_like(const DirNode& d) {
  if (d.file("_METADATA") != nullptr || d.file("manifest.ocdbt") != nullptr ||
      d.file("_sharding") != nullptr) {
    return true;
  }
  return std::any_of(d.dirs.begin(), d.dirs.end(),
                     [](const DirNode& s) { return s.name.starts_with("ocdbt.process_"); });
}

}  // namespace

void recognise_orbax(DirScope& s) {
  const DirNode& d = s.dir();
  const bool tmp = d.name.find(kTmp) != std::string::npos;
  const FileEntry* meta = d.file(kMeta);
  const FileEntry* commit = d.file(kCommit);
  // A step directory (`<N>`, `<prefix>_<N>`) holds items named by the user
  // ("state", "params", "default"); a manager's root holds step directories.
  // Only Orbax from before _CHECKPOINT_METADATA needs this rule.
  const auto us = d.name.rfind('_');
  const bool step_name = is_digits(d.name) || (us != std::string::npos &&
                                               is_digits(std::string_view(d.name).substr(us + 1)));
  const bool named_item =
      step_name && std::any_of(d.dirs.begin(), d.dirs.end(), [](const DirNode& sub) {
        return !sub.reused && item_like(sub) && parse_step(sub.name) < 0;
      });
  if (!(tmp || meta != nullptr || item_like(d) || named_item)) return;
  s.claim_self();

  Found f;
  Checkpoint& c = f.ckpt;
  c.path = s.self_path();
  c.step = parse_step(d.name);
  c.framework = "orbax";
  const double activity = tally_tree(c, d, s.ctx());
  Verdict v;
  bool committed_ts = false;
  if (meta != nullptr) {
    std::string error;
    bool unread = false;
    auto j = parse_manifest_json(*meta, error, unread);
    if (j && !j->is_object()) {
      v.broken = std::string(kMeta) + ": not a JSON object";
    } else if (j) {
      // Orbax itself refuses a step metadata file whose timestamps are not integers.
      for (const char* key : {"init_timestamp_nsecs", "commit_timestamp_nsecs"}) {
        const nlohmann::json* ts = json_member(*j, key);
        if (ts != nullptr && !ts->is_null() && !json_int(ts)) {
          v.broken = std::string(kMeta) + ": " + key + " is not an integer";
        }
      }
      if (auto init = json_int(json_member(*j, "init_timestamp_nsecs"))) {
        c.save_start = static_cast<double>(*init) / 1e9;
      }
      if (auto done = json_int(json_member(*j, "commit_timestamp_nsecs"))) {
        c.save_end = static_cast<double>(*done) / 1e9;
        committed_ts = true;
      }
    } else if (!unread) {
      v.broken = error;
    }
  }
  if (tmp) {
    const std::string final_name = d.name.substr(0, d.name.find(kTmp));
    v.pending = "temporary " + d.name + " not renamed to " + final_name;
    v.marker_name = std::string(kCommit);
  } else if (commit != nullptr) {
    v.has_marker = true;
    v.marker_name = std::string(kCommit);
    c.marker_time = commit->mtime;
  } else if (committed_ts) {
    // Renamed into place after commit_timestamp_nsecs was written.
    v.has_marker = true;
    v.marker_name = std::string(kMeta);
    c.marker_time = meta->mtime;
  } else if (meta != nullptr && meta->content) {
    // Final name but not finalised: a commit-file (object store) save in flight.
    v.pending = "no commit_timestamp_nsecs in _CHECKPOINT_METADATA and no commit_success.txt";
  } else {
    // Orbax before _CHECKPOINT_METADATA (or one the scanner could not read):
    // the final name is only ever given by the commit rename.
    v.has_marker = true;
    v.check_resave = false;
    v.marker_name = "final directory name";
    if (meta != nullptr) c.marker_time = meta->mtime;
  }
  decide(c, v, activity, s.ctx());
  s.emit(std::move(f));
}

}  // namespace ckptmon::layouts
