#include "tools/burst/burst_expect.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "http/http_client.hpp"
#include "prom/exposition.hpp"
#include "util/duration.hpp"
#include "util/text.hpp"

namespace ckptmon {

namespace {

double mono() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void pause_a_little() { std::this_thread::sleep_for(std::chrono::milliseconds(250)); }

// The sum of `name` samples whose labels include every (key, value) of
// `want`; nullopt when none matches or the text is not the exposition format.
std::optional<double> metric(const std::string& text, const std::string& name,
                             const std::vector<std::pair<std::string, std::string>>& want) {
  const Exposition e = parse_exposition(text);
  if (!e.ok) return std::nullopt;
  std::optional<double> sum;
  for (const ExpositionSample& s : e.samples) {
    if (s.name != name) continue;
    const bool match = std::all_of(want.begin(), want.end(), [&](const auto& w) {
      const std::string* v = s.label(w.first);
      return v != nullptr && *v == w.second;
    });
    if (match) sum = sum.value_or(0) + s.value;
  }
  return sum;
}

std::pair<std::string, std::string> label(const char* key, const std::string& value) {
  return {key, value};
}

struct DaemonTier {
  std::string name;
  std::string path;
  double partial_after = -1;
  double scan_interval = -1;
  double size = 0, avail = 0, free = 0;
  bool has_stats = false;
};

// One GET of the daemon; false with `error` on a network error or timeout.
bool get_text(const HttpUrl& url, const std::string& path, double timeout, int* status,
              std::string* body, std::string* error) {
  HttpClientResponse r = http_get(url, path, timeout);
  if (!r.ok) {
    *error = r.error;
    return false;
  }
  *status = static_cast<int>(r.status);
  *body = std::move(r.body);
  return true;
}

bool get_json(const HttpUrl& url, const std::string& path, nlohmann::json& out,
              std::string* error) {
  int status = 0;
  std::string body;
  if (!get_text(url, path, 5, &status, &body, error)) return false;
  if (status != 200) {
    *error = path + " answered " + std::to_string(status);
    return false;
  }
  out = nlohmann::json::parse(body, nullptr, false);
  if (out.is_discarded()) {
    *error = path + ": not JSON";
    return false;
  }
  return true;
}

std::vector<DaemonTier> tiers(const HttpUrl& url, std::string* error) {
  std::vector<DaemonTier> out;
  nlohmann::json j;
  if (!get_json(url, "/api/v1/tiers", j, error) || !j.is_array()) return out;
  for (const auto& t : j) {
    if (!t.is_object()) continue;
    DaemonTier d;
    d.name = t.value("name", "");
    d.path = t.value("path", "");
    if (t.contains("partial_after_seconds") && t["partial_after_seconds"].is_number()) {
      d.partial_after = t["partial_after_seconds"].get<double>();
    }
    if (t.contains("scan_interval_seconds") && t["scan_interval_seconds"].is_number()) {
      d.scan_interval = t["scan_interval_seconds"].get<double>();
    }
    if (t.contains("size_bytes") && t["size_bytes"].is_number()) {
      d.has_stats = true;
      d.size = t["size_bytes"].get<double>();
      d.avail = t.value("avail_bytes", 0.0);
      d.free = t.value("free_bytes", 0.0);
    }
    out.push_back(d);
  }
  return out;
}

// The daemon's tier holding `path`, the deepest one; nullptr when none.
const DaemonTier* tier_of(const std::vector<DaemonTier>& ts, const std::string& path) {
  const DaemonTier* best = nullptr;
  for (const auto& t : ts) {
    if (t.path.empty()) continue;
    if (path == t.path || path.starts_with(t.path + "/") || t.path == "/") {
      if (best == nullptr || t.path.size() > best->path.size()) best = &t;
    }
  }
  return best;
}

std::string secs(double s) {
  char buf[32];
  static_cast<void>(std::snprintf(buf, sizeof buf, "%.1fs", s));
  return buf;
}

}  // namespace

std::optional<ExpectTarget> prepare_expect(const std::string& url, const std::string& timeout,
                                           std::string* error) {
  ExpectTarget t;
  auto u = parse_http_url(url, error);
  if (!u) return std::nullopt;
  t.url = *u;
  auto d = parse_duration(timeout);
  if (!d) {
    *error = "--detect-timeout: expected a duration such as 2m, got \"" + timeout + "\"";
    return std::nullopt;
  }
  t.timeout = to_seconds(*d);
  nlohmann::json j;
  std::string why;
  if (!get_json(t.url, "/api/v1/tiers", j, &why)) {
    *error = url + " is not a reachable ckptmon: " + why;
    return std::nullopt;
  }
  return t;
}

std::vector<ExpectCheck> run_expect(const ExpectTarget& t, const burst::Options& o,
                                    const burst::Result& r, const burst::Burst& engine,
                                    const Clock& clock) {
  std::vector<ExpectCheck> out;
  const double give_up = mono() + t.timeout;
  std::string error;
  const auto ts = tiers(t.url, &error);
  const DaemonTier* tier = tier_of(ts, o.target);
  if (tier == nullptr) {
    out.push_back(
        {"tier", false, error.empty() ? "the daemon watches no tier holding " + o.target : error});
    return out;
  }
  out.push_back({"tier", true, "the daemon watches " + o.target + " as tier " + tier->name});
  const double scan = tier->scan_interval > 0 ? tier->scan_interval : 15;
  const double partial_after = tier->partial_after >= 0 ? tier->partial_after : 1800;

  // Drain first: its backlog is there only while the drain runs.
  if (!o.drain_to.empty()) {
    const DaemonTier* to = tier_of(ts, o.drain_to);
    ExpectCheck c{"drain_backlog", false, ""};
    if (to == nullptr) {
      c.detail = "the daemon watches no tier holding the drain target " + o.drain_to;
    } else {
      double seen = 0;
      while (mono() < give_up) {
        const std::uint64_t ours = engine.drain_backlog();
        int status = 0;
        std::string body;
        if (get_text(t.url, "/metrics", 5, &status, &body, &error) && status == 200) {
          seen = metric(body, "ckpt_drain_backlog_bytes",
                        {label("tier", tier->name), label("to_tier", to->name)})
                     .value_or(0);
        }
        if (seen > 0) {
          c.ok = true;
          c.detail =
              "ckpt_drain_backlog_bytes{tier=\"" + tier->name + "\",to_tier=\"" + to->name +
              "\"} = " + std::to_string(static_cast<std::uint64_t>(seen)) +
              (ours > 0 ? " while the drain still had " + std::to_string(ours) + " bytes to copy"
                        : " (from its last scan; the drain had just caught up)");
          break;
        }
        if (ours == 0) {
          c.detail = "the drain finished before the daemon reported a backlog from " + tier->name +
                     " to " + to->name + " (a slower --drain-rate keeps it longer than a scan)";
          break;
        }
        pause_a_little();
      }
      if (!c.ok && c.detail.empty()) c.detail = "no backlog reported within --detect-timeout";
    }
    out.push_back(c);
  }

  // Every failed writer's checkpoint: partial within partial_after + one scan.
  const std::filesystem::path tier_root(tier->path);
  for (const auto& ck : r.checkpoints) {
    if (ck.outcome != burst::CkptOutcome::kPartial) continue;
    const std::string rel =
        std::filesystem::path(o.target + "/" + ck.path).lexically_relative(tier_root).string();
    const double allowed = partial_after + scan;
    const double due = ck.end_ts + allowed;
    ExpectCheck c{"partial", false, ""};
    std::string state = "not listed";
    while (true) {
      nlohmann::json j;
      if (get_json(t.url, "/api/v1/checkpoints?tier=" + tier->name, j, &error) && j.is_array()) {
        state = "not listed";
        for (const auto& e : j) {
          if (e.is_object() && e.value("path", "") == rel) state = e.value("state", "");
        }
      }
      const double now = clock.now();
      if (state == "partial") {
        c.ok = true;
        c.detail = rel + " reported partial " + secs(now - ck.end_ts) +
                   " after the failure (allowed " + secs(allowed) + ": partial_after " +
                   secs(partial_after) + " + scan " + secs(scan) + ")";
        break;
      }
      // A little slack for the scan itself and the rules cycle.
      if (now > due + 2 || mono() > give_up) {
        c.detail.append(rel).append(" is ").append(state).append(", not partial, ");
        c.detail.append(secs(now - ck.end_ts)).append(" after the failure (allowed ");
        c.detail.append(secs(allowed)).append(")");
        break;
      }
      pause_a_little();
    }
    out.push_back(c);
  }

  // The fill threshold: the daemon says the next checkpoint does not fit.
  if (o.fill_to && r.fill_reached) {
    ExpectCheck c{"fill", false, ""};
    const double due = mono() + 2 * scan + 5;
    while (true) {
      int status = 0;
      std::string body;
      std::optional<double> fits, headroom;
      if (get_text(t.url, "/metrics", 5, &status, &body, &error) && status == 200) {
        fits = metric(body, "ckpt_tier_next_checkpoint_fits", {label("tier", tier->name)});
        headroom = metric(body, "ckpt_tier_capacity_headroom_ratio", {label("tier", tier->name)});
      }
      if ((fits && *fits == 0) || (headroom && *headroom < 1)) {
        char buf[160];
        static_cast<void>(
            std::snprintf(buf, sizeof buf,
                          "ckpt_tier_next_checkpoint_fits=%s ckpt_tier_capacity_headroom_ratio=%s",
                          fits ? std::to_string(static_cast<int>(*fits)).c_str() : "absent",
                          headroom ? std::to_string(*headroom).c_str() : "absent"));
        c.ok = true;
        c.detail = std::string("tier ") + tier->name + " at the fill threshold: " + buf;
        break;
      }
      if (mono() > due || mono() > give_up) {
        c.detail = "tier " + tier->name +
                   ": the daemon still says the next checkpoint fits and headroom >= 1 (fits=" +
                   (fits ? std::to_string(*fits) : std::string("absent")) +
                   ", headroom=" + (headroom ? std::to_string(*headroom) : std::string("absent")) +
                   ")";
        break;
      }
      pause_a_little();
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace ckptmon
