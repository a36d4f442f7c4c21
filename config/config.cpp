#include "config/config.hpp"

#include <charconv>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <grp.h>

#include <cerrno>
#include <cstring>

#include "config/network_config.hpp"
#include "config/rules_config.hpp"
#include "util/text.hpp"

namespace ckptmon {
namespace {

constexpr std::size_t kMaxConfigBytes = std::size_t{4} * 1024 * 1024;

std::optional<TierRole> role_from(std::string_view s) {
  if (s == "staging") return TierRole::kStaging;
  if (s == "rapid") return TierRole::kRapid;
  if (s == "milestone") return TierRole::kMilestone;
  if (s == "capacity") return TierRole::kCapacity;
  if (s == "deletion") return TierRole::kDeletion;
  return std::nullopt;
}

bool valid_tier_name(const std::string& s) {
  static const std::regex kRe("^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$");
  return std::regex_match(s, kRe);
}

void read_global(YamlMap& m, GlobalConfig& g, ErrorSink& sink) {
  if (auto f = m.get("state_dir"); f.present()) {
    if (auto v = read_abs_path(f, sink)) g.state_dir = *v;
  }
  duration_key(m, "scan_interval", g.scan_interval, sink, std::chrono::milliseconds(100));
  duration_key(m, "probe_timeout", g.probe_timeout, sink, std::chrono::milliseconds(10));
  duration_key(m, "scan_timeout", g.scan_timeout, sink, std::chrono::milliseconds(10));
  // `procfs` and its older name `proc_path` (kept working); not both.
  YamlField procfs = m.get("procfs");
  YamlField proc_path = m.get("proc_path");
  if (procfs.present() && proc_path.present()) {
    sink.add(proc_path.key_mark, proc_path.path,
             "give procfs or its older name proc_path, not both");
  } else if (YamlField& f = procfs.present() ? procfs : proc_path; f.present()) {
    if (auto v = read_abs_path(f, sink)) g.proc_path = *v;
  }
  if (auto f = m.get("sysfs"); f.present()) {
    if (auto v = read_abs_path(f, sink)) g.sys_path = *v;
  }
  if (auto f = m.get("worker_threads"); f.present()) {
    if (auto v = read_int(f, sink, 1, 1024)) g.worker_threads = static_cast<int>(*v);
  }
  duration_key(m, "tail_interval", g.tail_interval, sink, std::chrono::milliseconds(10));
  duration_key(m, "tail_timeout", g.tail_timeout, sink, std::chrono::milliseconds(100));
  if (auto f = m.get("max_line_bytes"); f.present()) {
    if (auto v = read_byte_size(f, sink, 1024, 64ull * 1024 * 1024)) g.max_line_bytes = *v;
  }
  if (auto f = m.get("max_jobs_per_tier"); f.present()) {
    if (auto v = read_int(f, sink, 1, 1000000))
      g.max_jobs_per_tier = static_cast<std::uint64_t>(*v);
  }
  m.finish();
}

struct ManifestMarks {
  YAML::Mark glob;
  YAML::Mark tier;
};

void read_manifests(const YamlField& f, std::vector<ManifestConfig>& out,
                    std::vector<ManifestMarks>& marks, ErrorSink& sink) {
  if (!f.value.IsSequence()) {
    sink.add(f.mark(), f.path, "expected a list of {glob, tier} entries, got " + describe(f.value));
    return;
  }
  for (std::size_t i = 0; i < f.value.size(); ++i) {
    YamlMap m(f.value[i], "manifests[" + std::to_string(i) + "]", sink);
    if (!m.ok()) continue;
    ManifestConfig mc;
    ManifestMarks mk;
    if (auto g = m.require("glob"); g.present()) {
      mk.glob = g.mark();
      if (auto v = read_abs_path(g, sink)) mc.glob = *v;
    }
    if (auto t = m.get("tier"); t.present()) {
      mk.tier = t.mark();
      if (auto v = read_string(t, sink)) mc.tier = *v;
    }
    m.finish();
    out.push_back(std::move(mc));
    marks.push_back(mk);
  }
}

void read_integrity(YamlMap& m, IntegrityConfig& c, ErrorSink& sink) {
  if (auto f = m.get("enabled"); f.present()) {
    if (auto v = read_bool(f, sink)) c.enabled = *v;
  }
  if (auto f = m.get("bytes_per_second"); f.present()) {
    if (auto v = read_byte_size(f, sink, 1024, 1024ull * 1024 * 1024 * 1024)) {
      c.bytes_per_second = *v;
    }
  }
  duration_key(m, "interval", c.interval, sink, std::chrono::milliseconds(100));
  duration_key(m, "read_deadline", c.read_deadline, sink, std::chrono::seconds(1));
  m.finish();
}

void read_audit(YamlMap& m, AuditConfig& c, YAML::Mark* file_mark, ErrorSink& sink) {
  if (auto f = m.get("log_file"); f.present()) {
    *file_mark = f.mark();
    if (auto v = read_abs_path(f, sink)) c.log_file = *v;
  }
  if (auto f = m.get("max_size"); f.present()) {
    if (auto v = read_byte_size(f, sink, std::uint64_t{64} * 1024, 1024ull * 1024 * 1024 * 1024))
      c.max_bytes = *v;
  }
  if (auto f = m.get("max_files"); f.present()) {
    if (auto v = read_int(f, sink, 1, 100)) c.max_files = static_cast<unsigned>(*v);
  }
  if (auto f = m.get("http_access_log"); f.present()) {
    if (auto v = read_bool(f, sink)) c.http_access = *v;
  }
  m.finish();
}

// Whether `path` is `root` or below it, comparing path components.
bool path_within(const std::string& path, const std::string& root) {
  if (root.empty() || !path.starts_with(root)) return false;
  return path.size() == root.size() || root.back() == '/' || path[root.size()] == '/';
}

void read_jobs(const YamlField& f, JobRule& rule, ErrorSink& sink) {
  YamlMap m(f.value, f.path, sink);
  if (!m.ok()) return;
  auto depth = m.get("depth");
  auto regex = m.get("regex");
  auto max_depth = m.get("max_depth");
  if (depth.present()) {
    if (auto v = read_int(depth, sink, 0, 16)) rule.depth = static_cast<int>(*v);
  }
  if (max_depth.present()) {
    if (auto v = read_int(max_depth, sink, 1, 16)) rule.max_depth = static_cast<int>(*v);
  }
  if (regex.present()) {
    if (depth.present()) {
      sink.add(regex.key_mark, regex.path, "give either depth or regex, not both");
    } else if (auto v = read_string(regex, sink)) {
      std::string err = compile_job_regex(*v, rule);
      if (!err.empty()) sink.add(regex.mark(), regex.path, err);
    }
  }
  m.finish();
}

// A group name or a numeric gid, as the group database knows it now.
std::optional<gid_t> resolve_gid(const std::string& name) {
  gid_t gid{};
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), gid);
  if (ec == std::errc() && p == name.data() + name.size()) return gid;
  struct group gr {};
  struct group* res = nullptr;
  std::vector<char> buf(16384);
  for (;;) {
    const int rc = ::getgrnam_r(name.c_str(), &gr, buf.data(), buf.size(), &res);
    if (rc == ERANGE && buf.size() < (std::size_t{1} << 24)) {
      buf.resize(buf.size() * 2);  // a group with many members
      continue;
    }
    if (rc == 0 && res != nullptr) return gr.gr_gid;
    return std::nullopt;
  }
}

// project_groups: the groups that may read the namespace's job directories.
void read_project_groups(const YamlField& f, NamespaceRule& rule, ErrorSink& sink) {
  auto one = [&](const YamlField& item) {
    auto v = read_string(item, sink);
    if (!v) return;
    if (v->empty()) {
      sink.add(item.mark(), item.path, "expected a group name or a numeric gid, got \"\"");
      return;
    }
    auto gid = resolve_gid(*v);
    if (!gid) {
      sink.add(item.mark(), item.path,
               "no group named \"" + *v + "\" in the system's group database");
      return;
    }
    rule.project_groups.push_back(*v);
    rule.project_gids.push_back(*gid);
  };
  if (f.value.IsScalar()) {
    one(f);
  } else if (f.value.IsSequence()) {
    for (std::size_t i = 0; i < f.value.size(); ++i) {
      one(YamlField{f.value[i], f.value[i].Mark(), f.path + "[" + std::to_string(i) + "]"});
    }
  } else {
    sink.add(
        f.mark(), f.path,
        "expected a group or a list of groups (names or numeric gids), got " + describe(f.value));
  }
}

void read_namespaces(const YamlField& f, std::vector<NamespaceRule>& out, ErrorSink& sink) {
  read_job_regex_map(
      f, "owner, group, residency, project_groups", sink,
      [&](const std::string& key, std::shared_ptr<const std::regex> regex, YamlMap& m) {
        NamespaceRule rule;
        rule.job_regex = key;
        rule.regex = std::move(regex);
        if (auto o = m.get("owner"); o.present()) {
          if (auto v = read_string(o, sink)) rule.owner = *v;
        }
        if (auto g = m.get("group"); g.present()) {
          if (auto v = read_string(g, sink)) rule.group = *v;
        }
        if (auto r = m.get("residency"); r.present()) {
          if (r.value.IsScalar()) {
            rule.residency.push_back(r.value.Scalar());
          } else if (r.value.IsSequence()) {
            for (std::size_t i = 0; i < r.value.size(); ++i) {
              YamlField item{r.value[i], r.value[i].Mark(), r.path + "[" + std::to_string(i) + "]"};
              if (auto v = read_string(item, sink)) rule.residency.push_back(*v);
            }
          } else {
            sink.add(r.mark(), r.path,
                     "expected a label or a list of labels, got " + describe(r.value));
          }
        }
        if (auto p = m.get("project_groups"); p.present()) read_project_groups(p, rule, sink);
        out.push_back(std::move(rule));
      });
}

void read_shard(const YamlField& f, TierConfig& t, ErrorSink& sink) {
  const std::string expected =
      "expected i/n with 0 <= i < n, such as 0/4, got " + describe(f.value);
  if (!f.value.IsScalar()) {
    sink.add(f.mark(), f.path, expected);
    return;
  }
  const std::string& s = f.value.Scalar();
  auto slash = s.find('/');
  std::uint32_t i = 0;
  std::uint32_t n = 0;
  bool ok = slash != std::string::npos;
  if (ok) {
    auto [p1, e1] = std::from_chars(s.data(), s.data() + slash, i);
    auto [p2, e2] = std::from_chars(s.data() + slash + 1, s.data() + s.size(), n);
    ok = e1 == std::errc() && p1 == s.data() + slash && e2 == std::errc() &&
         p2 == s.data() + s.size() && n >= 1 && i < n;
  }
  if (!ok) {
    sink.add(f.mark(), f.path, expected);
    return;
  }
  t.shard_index = i;
  t.shard_count = n;
}

struct TierMarks {
  YAML::Mark name;
  YAML::Mark path;
  YAML::Mark drains_to;
  YAML::Mark drain;  // the `drain` section, where move_after is
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
    marks.path = f.mark();
    if (auto v = read_abs_path(f, sink)) t.path = *v;
  }
  if (auto f = m.require("role"); f.present()) {
    if (auto v = read_enum(f, sink, {"staging", "rapid", "milestone", "capacity", "deletion"})) {
      t.role = *role_from(*v);
    }
  }
  t.durable = t.role != TierRole::kStaging;
  if (auto f = m.get("durable"); f.present()) {
    if (auto v = read_bool(f, sink)) t.durable = *v;
  }
  if (auto f = m.get("drains_to"); f.present()) {
    marks.drains_to = f.mark();
    if (auto v = read_string(f, sink)) t.drains_to = *v;
  }
  if (auto f = m.get("partial_after"); f.present()) {
    if (auto v = read_duration(f, sink)) t.partial_after = *v;
  }
  if (auto f = m.get("jobs"); f.present()) read_jobs(f, t.jobs, sink);
  if (auto f = m.get("shard"); f.present()) read_shard(f, t, sink);
  if (auto f = m.get("watch"); f.present()) {
    if (auto v = read_enum(f, sink, {"auto", "inotify", "poll"})) {
      t.watch = *v == "auto"      ? WatchMode::kAuto
                : *v == "inotify" ? WatchMode::kInotify
                                  : WatchMode::kPoll;
    }
  }
  if (auto f = m.get("walk_concurrency"); f.present()) {
    if (f.value.IsScalar() && f.value.Scalar() == "auto") {
      t.walk_concurrency = 0;
    } else if (auto v = read_int(f, sink, 1, 256)) {
      t.walk_concurrency = static_cast<int>(*v);
    }
  }
  if (auto f = m.get("walk_max_depth"); f.present()) {
    if (auto v = read_int(f, sink, 1, 1024)) t.walk_max_depth = static_cast<int>(*v);
  }
  if (auto f = m.get("residency"); f.present()) {
    if (auto v = read_string(f, sink)) t.residency = *v;
  }
  if (auto f = m.get("encryption_required"); f.present()) {
    if (auto v = read_bool(f, sink)) t.encryption_required = *v;
  }
  if (auto f = m.get("namespaces"); f.present()) read_namespaces(f, t.namespaces, sink);
  if (auto f = m.get("layout"); f.present()) {
    YamlMap lm(f.value, f.path, sink);
    if (lm.ok()) {
      GenericLayoutConfig g;
      if (auto sf = lm.require("shard_glob"); sf.present()) {
        if (auto v = read_string(sf, sink)) g.shard_glob = *v;
      }
      if (auto mf = lm.require("marker"); mf.present()) {
        if (auto v = read_string(mf, sink)) g.marker = *v;
      }
      if (auto rf = lm.require("step_regex"); rf.present()) {
        if (auto v = read_string(rf, sink)) {
          try {
            std::regex re(*v);
            if (re.mark_count() < 1) {
              sink.add(rf.mark(), rf.path, "expected a regex with a group capturing the step");
            } else {
              g.step_regex = *v;
            }
          } catch (const std::regex_error& e) {
            sink.add(rf.mark(), rf.path, std::string("invalid regex: ") + e.what());
          }
        }
      }
      lm.finish();
      t.layout = g;
    }
  }
  // Read without m.get(): read_tier_policy asks for the key itself.
  if (const YAML::Node d = m.node()["drain"]; d.IsDefined()) marks.drain = d.Mark();
  read_tier_policy(m, t.policy, sink);
  m.finish();
}

}  // namespace

std::string compile_job_regex(const std::string& text, JobRule& rule) {
  // Find "(?<job>" or "(?P<job>", count the capturing groups before it.
  std::string plain;
  int group = 0;
  int named = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 1 < text.size()) {
      plain += c;
      plain += text[++i];
      continue;
    }
    if (c == '(') {
      std::string_view rest(text.data() + i, text.size() - i);
      if (rest.starts_with("(?<job>") || rest.starts_with("(?P<job>")) {
        ++group;
        named = group;
        plain += '(';
        i += rest.starts_with("(?<job>") ? 6 : 7;
        continue;
      }
      if (!rest.starts_with("(?")) ++group;
    }
    plain += c;
  }
  try {
    auto re = std::make_shared<const std::regex>(plain);
    if (re->mark_count() < 1) return "expected a regex with a group (?<job>...) naming the job";
    rule.regex_text = text;
    rule.regex = re;
    rule.group = named > 0 ? named : 1;
  } catch (const std::regex_error& e) {
    return std::string("invalid regex: ") + e.what();
  }
  return {};
}

namespace {

Config read_config(const YAML::Node& root, const std::string& file, ErrorSink& sink) {
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
    YamlField history = top.get("history");
    if (history.present()) {
      YamlMap hm(history.value, history.path, sink);
      if (hm.ok()) read_history(hm, cfg.history, sink);
    }
    if (YamlField estate = top.get("estate"); estate.present()) {
      YamlMap em(estate.value, estate.path, sink);
      if (em.ok()) read_estate(em, cfg.estate, sink);
    }
    YamlField alerting = top.get("alerting");
    if (alerting.present()) {
      YamlMap am(alerting.value, alerting.path, sink);
      if (am.ok()) read_alerting(am, cfg.alerting, sink);
    }
    std::vector<ManifestMarks> manifest_marks;
    if (auto f = top.get("manifests"); f.present()) {
      read_manifests(f, cfg.manifests, manifest_marks, sink);
    }
    YamlMap integrity(top.get("integrity").value, "integrity", sink);
    if (integrity.ok()) read_integrity(integrity, cfg.integrity, sink);
    if (YamlField gpu = top.get("gpu"); gpu.present()) {
      YamlMap gm(gpu.value, gpu.path, sink);
      if (gm.ok()) read_gpu(gm, cfg.gpu, sink);
    }
    if (YamlField network = top.get("network"); network.present()) {
      YamlMap nm(network.value, network.path, sink);
      if (nm.ok()) read_network(nm, cfg.network, sink);
    }
    YAML::Mark audit_mark;
    if (YamlField audit = top.get("audit"); audit.present()) {
      YamlMap am(audit.value, audit.path, sink);
      if (am.ok()) read_audit(am, cfg.audit, &audit_mark, sink);
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
    std::string tier_names;
    for (const auto& [n, _] : first) tier_names += (tier_names.empty() ? "" : ", ") + n;
    auto no_such_tier = [&](const YAML::Mark& mark, const std::string& key,
                            const std::string& name) {
      sink.add(mark, key,
               "names no tier: " + json_quote(name) + " (tiers are: " + tier_names + ")");
    };
    for (std::size_t i = 0; i < cfg.tiers.size(); ++i) {
      const auto& t = cfg.tiers[i];
      if (t.drains_to.empty()) {
        // Moved to where? The lifecycle rule counts versions with no copy on
        // the tier this one drains to.
        if (t.policy.drain.move_after_seconds > 0) {
          sink.add(marks[i].drain, "tiers[" + std::to_string(i) + "].drain.move_after",
                   "tier " + json_quote(t.name) +
                       " has a move_after but no drains_to: name the tier its versions move to");
        }
        continue;
      }
      const std::string key = "tiers[" + std::to_string(i) + "].drains_to";
      if (!first.contains(t.drains_to)) {
        no_such_tier(marks[i].drains_to, key, t.drains_to);
      } else if (t.drains_to == t.name) {
        sink.add(marks[i].drains_to, key, "a tier cannot drain to itself");
      } else if (cfg.tiers[first.at(t.drains_to)].role == TierRole::kDeletion) {
        // A deletion tier holds what is on its way out: a copy drained there
        // would count as pending removal, not as a copy.
        sink.add(marks[i].drains_to, key,
                 "tier " + json_quote(t.name) + " drains to " + json_quote(t.drains_to) +
                     ", a role: deletion tier; drain to a tier that keeps copies");
      }
    }
    // Two tiers on one root would catalog every checkpoint twice, as two
    // copies of each version.
    std::map<std::string, std::size_t> roots;
    for (std::size_t i = 0; i < cfg.tiers.size(); ++i) {
      const auto& t = cfg.tiers[i];
      if (t.path.empty() || t.name.empty()) continue;
      auto [it, inserted] = roots.emplace(t.path, i);
      if (!inserted) {
        sink.add(marks[i].path, "tiers[" + std::to_string(i) + "].path",
                 "tiers " + json_quote(cfg.tiers[it->second].name) + " and " + json_quote(t.name) +
                     " have the same path " + json_quote(t.path));
      }
    }
    // ckptmon never writes under a monitored tier; its audit log neither.
    for (const auto& t : cfg.tiers) {
      if (cfg.audit.enabled() && path_within(cfg.audit.log_file, t.path)) {
        sink.add(audit_mark, "audit.log_file",
                 json_quote(cfg.audit.log_file) + " is inside tier " + json_quote(t.name) + " (" +
                     json_quote(t.path) + "); ckptmon never writes under a monitored tier");
      }
    }
    std::map<std::string, std::size_t> globs;
    for (std::size_t i = 0; i < cfg.manifests.size(); ++i) {
      const auto& mc = cfg.manifests[i];
      const std::string key = "manifests[" + std::to_string(i) + "]";
      if (!mc.glob.empty()) {
        auto [it, inserted] = globs.emplace(mc.glob, i);
        if (!inserted) {
          sink.add(manifest_marks[i].glob, key + ".glob",
                   "duplicate glob " + json_quote(mc.glob) + " (first given at line " +
                       std::to_string(manifest_marks[it->second].glob.line + 1) + ")");
        }
      }
      if (!mc.tier.empty() && !first.contains(mc.tier)) {
        no_such_tier(manifest_marks[i].tier, key + ".tier", mc.tier);
      }
    }
  }

  return cfg;
}

}  // namespace

LoadResult parse_config(std::string_view text, const std::string& file) {
  return parse_yaml_config<Config>(text, file, [&](const YAML::Node& root, ErrorSink& sink) {
    return read_config(root, file, sink);
  });
}

LoadResult load_config_file(const std::string& path) {
  return load_config_file_with<Config>(path, kMaxConfigBytes, parse_config);
}

}  // namespace ckptmon
