// The generic layout, configured per tier for in-house formats: a checkpoint
// is a directory whose name matches `step_regex` (group 1 is the step) and
// that holds files matching `shard_glob` (fnmatch(3); a pattern with '/' is
// matched against the path inside the directory), committed by a file named
// `marker` that is not older than the newest shard. Without `step_regex` a
// directory qualifies by shards directly inside it.

#include <fnmatch.h>

#include "collectors/layouts/recogniser.hpp"

namespace ckptmon::layouts {
namespace {

bool matches(const std::string& glob, const std::string& name, const std::string& rel) {
  if (glob.find('/') != std::string::npos)
    return fnmatch(glob.c_str(), rel.c_str(), FNM_PATHNAME) == 0;
  return fnmatch(glob.c_str(), name.c_str(), 0) == 0;
}

std::uint64_t count_shards(const GenericLayout& g, const DirNode& d, const std::string& prefix,
                           bool deep, int depth = 0) {
  std::uint64_t n = 0;
  for (const auto& f : d.files) {
    if (matches(g.shard_glob, f.name, prefix.empty() ? f.name : prefix + "/" + f.name)) ++n;
  }
  if (deep && depth < kMaxDepth) {
    for (const auto& sub : d.dirs) {
      n += count_shards(g, sub, prefix.empty() ? sub.name : prefix + "/" + sub.name, true,
                        depth + 1);
    }
  }
  return n;
}

void tally(const GenericLayout& g, Tally& t, const DirNode& d, const std::string& prefix,
           int depth = 0) {
  t.dir(d);
  for (const auto& f : d.files) {
    const std::string rel = prefix.empty() ? f.name : prefix + "/" + f.name;
    if (prefix.empty() && !g.marker.empty() && f.name == g.marker) {
      t.file(f, rel, Component::kMetadata, false);
    } else if (matches(g.shard_glob, f.name, rel)) {
      const Component c = classify(rel);
      t.file(f, rel, c == Component::kMetadata ? Component::kOther : c, true);
    } else {
      t.file(f, rel, classify(rel), false);
    }
  }
  if (depth >= kMaxDepth) return;
  for (const auto& sub : d.dirs)
    tally(g, t, sub, prefix.empty() ? sub.name : prefix + "/" + sub.name, depth + 1);
}

}  // namespace

void recognise_generic(DirScope& s) {
  const GenericLayout* g = s.ctx().generic;
  if (g == nullptr || g->shard_glob.empty()) return;
  const DirNode& d = s.dir();
  std::int64_t step = -1;
  const bool by_name = !g->step_regex.empty();
  if (by_name) {
    if (s.generic_re() == nullptr) return;  // a regex that did not compile matches nothing
    std::smatch m;
    try {
      if (!std::regex_search(d.name, m, *s.generic_re())) return;
    } catch (const std::regex_error&) {
      return;
    }
    if (m.size() > 1 && m[1].matched) step = parse_uint(m[1].str()).value_or(-1);
  } else {
    step = parse_step(d.name);
  }
  if (count_shards(*g, d, "", by_name) == 0) return;
  s.claim_self();

  Found f;
  Checkpoint& c = f.ckpt;
  c.path = s.self_path();
  c.step = step;
  c.framework = "generic";
  double activity = 0;
  {
    Tally t(c, s.ctx());
    tally(*g, t, d, "");
    activity = t.newest();
  }
  Verdict v;
  if (g->marker.empty()) {
    // No marker configured: the shards are the checkpoint.
    v.has_marker = true;
    v.check_resave = false;
    v.marker_name = "marker";
  } else {
    v.marker_name = g->marker;
    if (const FileEntry* m = d.file(g->marker)) {
      v.has_marker = true;
      c.marker_time = m->mtime;
    }
  }
  decide(c, v, activity, s.ctx());
  s.emit(std::move(f));
}

}  // namespace ckptmon::layouts
