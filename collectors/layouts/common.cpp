// Helpers shared by the layout recognisers: names, figures, manifests, states.

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>

#include "collectors/layouts/recogniser.hpp"
#include "util/duration.hpp"
#include "util/saturating.hpp"
#include "util/text.hpp"

namespace ckptmon::layouts {

// ---- DirScope ----------------------------------------------------------------

DirScope::DirScope(const DirNode& dir, std::string rel, const LayoutContext& ctx,
                   std::vector<Found>& out, const std::regex* generic_re)
    : dir_(dir),
      rel_(std::move(rel)),
      ctx_(ctx),
      out_(out),
      generic_re_(generic_re),
      first_found_(out.size()) {}

std::string DirScope::path_of(std::string_view child) const {
  if (rel_.empty()) return std::string(child);
  std::string p = rel_;
  p += '/';
  p += child;
  return p;
}

std::string DirScope::self_path() const { return rel_.empty() ? std::string(".") : rel_; }

bool DirScope::claimed(std::string_view child) const {
  return self_ || claimed_.find(child) != claimed_.end();
}

void DirScope::claim(std::string_view child) { claimed_.emplace(child); }

// ---- names -------------------------------------------------------------------

bool is_digits(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

std::optional<std::int64_t> parse_uint(std::string_view s) {
  if (!is_digits(s)) return std::nullopt;
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

bool cut_suffix(std::string_view& s, std::string_view suffix) {
  if (s.size() > suffix.size() && s.ends_with(suffix)) {
    s.remove_suffix(suffix.size());
    return true;
  }
  return false;
}

std::string rank_list(const std::vector<std::int64_t>& ranks) {
  std::string s;
  const std::size_t shown = std::min<std::size_t>(ranks.size(), 5);
  for (std::size_t i = 0; i < shown; ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > shown) s += " and " + std::to_string(ranks.size() - shown) + " more";
  return s;
}

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) {
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  }
  return out;
}

}  // namespace

std::int64_t parse_step(std::string_view name) {
  if (auto tmp = name.find(".orbax-checkpoint-tmp"); tmp != std::string_view::npos) {
    name = name.substr(0, tmp);
  }
  cut_suffix(name, "-unfinished");
  for (std::string_view ext : {".ckpt", ".nemo", ".pt", ".pth", ".done", ".distcp"}) {
    if (cut_suffix(name, ext)) break;
  }
  // Lightning appends -vN to names that already exist.
  if (auto v = name.rfind("-v"); v != std::string_view::npos && is_digits(name.substr(v + 2))) {
    name = name.substr(0, v);
  }
  if (auto k = name.rfind("step="); k != std::string_view::npos) {
    std::string_view rest = name.substr(k + 5);
    std::size_t n = 0;
    while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') ++n;
    return parse_uint(rest.substr(0, n)).value_or(-1);
  }
  if (name.find("epoch=") != std::string_view::npos) return -1;  // epoch only: no step
  std::size_t i = name.size();
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
  if (i == name.size()) return -1;
  if (i > 0) {
    const char before = name[i - 1];
    const bool ok = before == '-' || before == '_' || before == '=' ||
                    (before >= 'a' && before <= 'z') || (before >= 'A' && before <= 'Z');
    if (!ok) return -1;
  }
  return parse_uint(name.substr(i)).value_or(-1);
}

namespace {

bool is_metadata_name(std::string_view name) {
  static constexpr std::array<std::string_view, 27> kNames = {".metadata",
                                                              ".metadata.tmp",
                                                              "metadata.json",
                                                              "integrity.json",
                                                              "trainer_state.json",
                                                              "config.json",
                                                              "generation_config.json",
                                                              "training_args.bin",
                                                              "latest",
                                                              "latest_universal",
                                                              "_CHECKPOINT_METADATA",
                                                              "_METADATA",
                                                              "_ROOT_METADATA",
                                                              "commit_success.txt",
                                                              ".snapshot_metadata",
                                                              "meta.pt",
                                                              "common.pt",
                                                              "manifest.ocdbt",
                                                              "_sharding",
                                                              "zero_to_fp32.py",
                                                              "latest_checkpointed_iteration.txt",
                                                              "dlrover_latest.txt",
                                                              "progress.txt",
                                                              "descriptor.pbtxt",
                                                              "adapter_config.json",
                                                              "deepspeed_state.pt",
                                                              "array_metadatas"};
  if (std::find(kNames.begin(), kNames.end(), name) != kNames.end()) return true;
  return name.ends_with(".index.json") || name.ends_with(".metadata") ||
         name.ends_with("-unfinished");
}

}  // namespace

bool is_auxiliary(std::string_view name) {
  const std::string n = lower(name);
  for (std::string_view p : {"tokenizer", "special_tokens_map", "vocab", "merges", "added_tokens",
                             "chat_template", "readme", "preprocessor_config", "spiece"}) {
    if (n.starts_with(p)) return true;
  }
  return n.ends_with(".md");
}

namespace {

// classify(), also telling whether the file name (the text after the last
// '/') is auxiliary; asked only of names that are not metadata.
Component classify_path(std::string_view rel_path, bool& auxiliary) {
  auxiliary = false;
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (start <= rel_path.size()) {
    std::size_t slash = rel_path.find('/', start);
    if (slash == std::string_view::npos) slash = rel_path.size();
    if (slash > start) parts.push_back(rel_path.substr(start, slash - start));
    start = slash + 1;
  }
  if (parts.empty()) return Component::kOther;
  const std::string_view name = parts.back();
  if (is_metadata_name(name)) return Component::kMetadata;
  if (is_auxiliary(name)) {
    // A path ending in '/' has an empty file name, which is not auxiliary.
    auxiliary = !rel_path.ends_with('/');
    return Component::kOther;
  }
  // Megatron's legacy file holds weights, optimizer and RNG together; the
  // weights lead its name and usually its size.
  if (name == "model_optim_rng.pt") return Component::kModel;
  if (auto c = component_of_word(lower(name))) return *c;
  for (std::size_t i = parts.size() - 1; i-- > 0;) {
    if (auto c = component_of_word(lower(parts[i]))) return *c;
  }
  return Component::kOther;
}

}  // namespace

Component classify(std::string_view rel_path) {
  bool auxiliary = false;
  return classify_path(rel_path, auxiliary);
}

// ---- figures -----------------------------------------------------------------

Tally::Tally(Checkpoint& c, const LayoutContext& ctx) : c_(c), keep_(ctx.keep_shard_files) {}

Tally::~Tally() {
  if (!keep_) return;
  std::sort(files_.begin(), files_.end(),
            [](const ShardFile& a, const ShardFile& b) { return a.rel_path < b.rel_path; });
  c_.shard_files = std::make_shared<const std::vector<ShardFile>>(std::move(files_));
}

void Tally::file(const FileEntry& f, const std::string& rel) {
  bool auxiliary = false;
  const Component comp = classify_path(rel, auxiliary);
  file(f, rel, comp, comp != Component::kMetadata && !auxiliary);
}

void Tally::file(const FileEntry& f, const std::string& rel, Component comp, bool shard) {
  c_.files += 1;
  // Sizes are what the files claim (a sparse file may claim 2^62 bytes):
  // totals saturate rather than wrap to a small number.
  sat_add_to(c_.bytes, f.size);
  sat_add_to(c_.allocated_bytes, f.allocated);
  sat_add_to(c_.component_bytes[static_cast<std::size_t>(comp)], f.size);
  if (shard) {
    if (c_.first_write == 0 || f.mtime < c_.first_write) c_.first_write = f.mtime;
    if (f.mtime > c_.last_write) c_.last_write = f.mtime;
  }
  newest_ = std::max(newest_, f.mtime);
  if (keep_) files_.push_back(ShardFile{rel, f.size, f.mtime});
}

void Tally::dir(const DirNode& d) {
  c_.dir_mtime = std::max(c_.dir_mtime, d.mtime);
  newest_ = std::max(newest_, d.mtime);
}

void Tally::tree(const DirNode& d, const std::string& prefix, int depth) {
  dir(d);
  for (const auto& f : d.files) file(f, prefix.empty() ? f.name : prefix + "/" + f.name);
  if (depth >= kMaxDepth) return;
  for (const auto& sub : d.dirs)
    tree(sub, prefix.empty() ? sub.name : prefix + "/" + sub.name, depth + 1);
}

double tally_tree(Checkpoint& c, const DirNode& d, const LayoutContext& ctx) {
  Tally t(c, ctx);
  t.tree(d, "");
  return t.newest();
}

Found from_reused(const DirNode& d, std::string path) {
  Found f;
  f.ckpt = *d.reused;
  f.ckpt.path = std::move(path);
  return f;
}

double activity_of(const Checkpoint& c) {
  return std::max({c.last_write, c.marker_time, c.dir_mtime, c.save_end});
}

// ---- manifests ---------------------------------------------------------------

ManifestText manifest_text(const FileEntry& f) {
  ManifestText m;
  if (!f.content) {
    m.unread = true;
    return m;
  }
  const std::string& t = *f.content;
  if (t.size() > kMaxManifestBytes) {
    m.error = f.name + ": " + std::to_string(t.size()) + " bytes, over the " +
              std::to_string(kMaxManifestBytes / (std::uint64_t{1024} * 1024)) +
              " MiB manifest limit";
    return m;
  }
  if (t.find('\0') != std::string::npos) {
    m.error = f.name + ": binary data, not text";
    return m;
  }
  m.text = std::string_view(t);
  return m;
}

int json_depth(std::string_view text, int limit) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  bool escaped = false;
  for (char ch : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (ch == '\\') {
        escaped = true;
      } else if (ch == '"') {
        in_string = false;
      }
      continue;
    }
    if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if ((ch == ']' || ch == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

std::optional<nlohmann::json> parse_manifest_json(const FileEntry& f, std::string& error,
                                                  bool& unread) {
  ManifestText m = manifest_text(f);
  unread = m.unread;
  if (!m.text) {
    error = m.error;
    return std::nullopt;
  }
  if (json_depth(*m.text, kMaxManifestDepth) > kMaxManifestDepth) {
    error = f.name + ": nested deeper than " + std::to_string(kMaxManifestDepth) + " levels";
    return std::nullopt;
  }
  try {
    nlohmann::json j = nlohmann::json::parse(m.text->begin(), m.text->end(), nullptr, false);
    if (j.is_discarded()) {
      error = f.name + ": not valid JSON";
      return std::nullopt;
    }
    return j;
  } catch (const std::exception& e) {
    error = f.name + ": " + e.what();
    return std::nullopt;
  }
}

std::optional<std::string> read_tracker(const FileEntry& f, std::string& error, bool& unread) {
  ManifestText m = manifest_text(f);
  unread = m.unread;
  if (!m.text) {
    error = m.error;
    return std::nullopt;
  }
  const std::string_view t = trim(*m.text);
  if (t.empty()) {
    error = f.name + ": empty";
    return std::nullopt;
  }
  const bool printable = std::all_of(t.begin(), t.end(), [](char ch) {
    const auto u = static_cast<unsigned char>(ch);
    return u >= 0x20 && u != 0x7f;
  });
  if (t.size() > 255 || !printable || t.find('/') != std::string_view::npos) {
    error = f.name + ": not a single checkpoint name";
    return std::nullopt;
  }
  return std::string(t);
}

std::string listed_missing(std::string_view manifest, const std::vector<std::string>& missing) {
  std::string s = std::string(manifest) + " lists " + missing.front() + ", missing";
  if (missing.size() > 1) s += " (and " + std::to_string(missing.size() - 1) + " more)";
  return s;
}

const nlohmann::json* json_member(const nlohmann::json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(std::string(key));
  return it == j.end() ? nullptr : &*it;
}

std::optional<std::int64_t> json_int(const nlohmann::json* j) {
  if (j == nullptr) return std::nullopt;
  if (j->is_number_unsigned()) {
    const auto u = j->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (j->is_number_integer()) return j->get<std::int64_t>();
  return std::nullopt;
}

// ---- states ------------------------------------------------------------------

namespace {

// "45s", "12m", "2h5m", "3d": an age for reasons.
std::string human_age(double seconds) {
  if (!(seconds > 0)) return "0s";
  if (seconds < 60) return std::to_string(static_cast<long long>(seconds)) + "s";
  const double rounded = std::floor(seconds / 60.0) * 60.0;
  if (rounded > 1e12) return "a very long time";
  return format_duration(Duration(static_cast<long long>(rounded) * 1000));
}

void age_gate(Checkpoint& c, const std::string& pending, double activity,
              const LayoutContext& ctx) {
  const double age = ctx.now - activity;
  if (age < ctx.partial_after) {
    c.state = CkptState::kInProgress;
    c.reason = pending + "; last write " + human_age(age) + " ago";
  } else {
    c.state = CkptState::kPartial;
    c.reason = pending + " after " + human_age(ctx.partial_after);
  }
}

}  // namespace

void decide(Checkpoint& c, const Verdict& v, double activity, const LayoutContext& ctx) {
  if (!v.broken.empty()) {
    c.state = CkptState::kPartial;
    c.reason = v.broken;
    return;
  }
  std::string pending = v.pending;
  if (pending.empty()) {
    if (!v.has_marker) {
      pending = "no " + v.marker_name;
    } else if (v.check_resave && c.last_write > c.marker_time + kMtimeSlack) {
      pending = "shards newer than " + v.marker_name + " (re-save)";
    }
  }
  if (pending.empty()) {
    c.state = CkptState::kCommitted;
    c.reason.clear();
    return;
  }
  age_gate(c, pending, activity, ctx);
}

void demote(Checkpoint& c, const std::string& pending, const LayoutContext& ctx) {
  if (c.state == CkptState::kPartial) return;
  const bool was_in_progress = c.state == CkptState::kInProgress && !c.reason.empty();
  const std::string before = c.reason;
  age_gate(c, pending, activity_of(c), ctx);
  // The earlier reason already says when the last write was.
  if (c.state == CkptState::kInProgress && was_in_progress) c.reason = pending + "; " + before;
}

}  // namespace ckptmon::layouts
