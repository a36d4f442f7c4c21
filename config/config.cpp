#include "config/config.hpp"

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <cerrno>
#include <cstring>

#include "util/text.hpp"

namespace ckptmon {
namespace {

constexpr std::size_t kMaxConfigBytes = 4 * 1024 * 1024;

std::optional<TierRole> role_from(std::string_view s) {
  if (s == "staging") return TierRole::kStaging;
  if (s == "rapid") return TierRole::kRapid;
  if (s == "milestone") return TierRole::kMilestone;
  if (s == "capacity") return TierRole::kCapacity;
  if (s == "deletion") return TierRole::kDeletion;
  return std::nullopt;
}

bool valid_tier_name(const std::string& s) {
  static const std::regex re("^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$");
  return std::regex_match(s, re);
}

void read_global(YamlMap& m, GlobalConfig& g, ErrorSink& sink) {
  if (auto f = m.get("state_dir"); f.present()) {
    if (auto v = read_abs_path(f, sink)) g.state_dir = *v;
  }
  if (auto f = m.get("scan_interval"); f.present()) {
    if (auto v = read_duration(f, sink)) {
      if (v->count() < 100) {
        sink.add(f.mark(), f.path, "must be at least 100ms, got " + describe(f.value));
      } else {
        g.scan_interval = *v;
      }
    }
  }
  if (auto f = m.get("probe_timeout"); f.present()) {
    if (auto v = read_duration(f, sink)) {
      if (v->count() < 10) {
        sink.add(f.mark(), f.path, "must be at least 10ms, got " + describe(f.value));
      } else {
        g.probe_timeout = *v;
      }
    }
  }
  if (auto f = m.get("proc_path"); f.present()) {
    if (auto v = read_abs_path(f, sink)) g.proc_path = *v;
  }
  if (auto f = m.get("worker_threads"); f.present()) {
    if (auto v = read_int(f, sink, 1, 1024)) g.worker_threads = static_cast<int>(*v);
  }
  m.finish();
}

struct TierMarks {
  YAML::Mark name;
  YAML::Mark drains_to;
};

void read_tier(YamlMap& m, TierConfig& t, TierMarks& marks, ErrorSink& sink) {
  if (auto f = m.require("name"); f.present()) {
    marks.name = f.mark();
    if (auto v = read_string(f, sink)) {
      if (!valid_tier_name(*v)) {
        sink.add(f.mark(), f.path,
                 "expected 1-64 characters of letters, digits, '_', '.' or '-' starting with a "
                 "letter or digit, got " +
                     describe(f.value));
      } else {
        t.name = *v;
      }
    }
  }
  if (auto f = m.require("path"); f.present()) {
    if (auto v = read_abs_path(f, sink)) t.path = *v;
  }
  if (auto f = m.require("role"); f.present()) {
    if (auto v = read_enum(f, sink, {"staging", "rapid", "milestone", "capacity", "deletion"})) {
      t.role = *role_from(*v);
    }
  }
  if (auto f = m.get("drains_to"); f.present()) {
    marks.drains_to = f.mark();
    if (auto v = read_string(f, sink)) t.drains_to = *v;
  }
  m.finish();
}

}  // namespace

std::string_view to_string(TierRole r) {
  switch (r) {
    case TierRole::kStaging: return "staging";
    case TierRole::kRapid: return "rapid";
    case TierRole::kMilestone: return "milestone";
    case TierRole::kCapacity: return "capacity";
    case TierRole::kDeletion: return "deletion";
  }
  return "unknown";
}

const TierConfig* Config::find_tier(std::string_view name) const {
  for (const auto& t : tiers) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

LoadResult parse_config(std::string_view text, const std::string& file) {
  ErrorSink sink(file);
  LoadResult result;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    sink.add(e.mark, "", "invalid YAML: " + e.msg);
    result.errors = std::move(sink.errors());
    return result;
  }

  Config cfg;
  cfg.source = file;
  YamlMap top(root, "", sink);
  if (top.ok()) {
    YamlMap global(top.get("global").value, "global", sink);
    if (global.ok()) read_global(global, cfg.global, sink);

    YamlField tiers_field = top.require("tiers");
    const YAML::Node& tiers = tiers_field.value;
    std::vector<TierMarks> marks;
    if (tiers_field.present()) {
      if (!tiers.IsSequence()) {
        sink.add(tiers_field.mark(), "tiers", "expected a list of tiers, got " + describe(tiers));
      } else if (tiers.size() == 0) {
        sink.add(tiers.Mark(), "tiers", "expected at least one tier");
      } else {
        for (std::size_t i = 0; i < tiers.size(); ++i) {
          YamlMap tm(tiers[i], "tiers[" + std::to_string(i) + "]", sink);
          TierConfig t;
          TierMarks tmarks;
          if (tm.ok()) read_tier(tm, t, tmarks, sink);
          cfg.tiers.push_back(std::move(t));
          marks.push_back(tmarks);
        }
      }
    }
    top.finish();

    // Cross-references, once every tier is known.
    std::map<std::string, std::size_t> first;
    for (std::size_t i = 0; i < cfg.tiers.size(); ++i) {
      const auto& t = cfg.tiers[i];
      if (t.name.empty()) continue;
      auto [it, inserted] = first.emplace(t.name, i);
      if (!inserted) {
        sink.add(marks[i].name, "tiers[" + std::to_string(i) + "].name",
                 "duplicate tier name " + json_quote(t.name) + " (first defined at line " +
                     std::to_string(marks[it->second].name.line + 1) + ")");
      }
    }
    for (std::size_t i = 0; i < cfg.tiers.size(); ++i) {
      const auto& t = cfg.tiers[i];
      if (t.drains_to.empty()) continue;
      const std::string key = "tiers[" + std::to_string(i) + "].drains_to";
      if (!first.contains(t.drains_to)) {
        std::string names;
        for (const auto& [n, _] : first) names += (names.empty() ? "" : ", ") + n;
        sink.add(marks[i].drains_to, key,
                 "names no tier: " + json_quote(t.drains_to) + " (tiers are: " + names + ")");
      } else if (t.drains_to == t.name) {
        sink.add(marks[i].drains_to, key, "a tier cannot drain to itself");
      }
    }
  }

  if (sink.empty()) {
    result.config = std::move(cfg);
  } else {
    result.errors = std::move(sink.errors());
  }
  return result;
}

LoadResult load_config_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    LoadResult r;
    r.errors.push_back(
        ConfigError{path, 0, 0, "", std::string("cannot open: ") + std::strerror(errno)});
    return r;
  }
  std::string text;
  text.resize(kMaxConfigBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxConfigBytes) {
    LoadResult r;
    r.errors.push_back(ConfigError{path, 0, 0, "", "file is larger than 4 MiB"});
    return r;
  }
  return parse_config(text, path);
}

}  // namespace ckptmon
