#include "daemon/web.hpp"

#include <nlohmann/json.hpp>

#include "util/text.hpp"
#include "util/version.hpp"

namespace ckptmon {

std::string render_landing_page(const Snapshot& snap, bool ready, bool last_reload_ok) {
  const State& s = snap.state;
  std::string h;
  h += "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ckptmon</title>\n";
  h += "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
       "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}"
       ".up{color:#070}.down{color:#b00;font-weight:bold}</style></head><body>\n";
  h += "<h1>ckptmon</h1>\n<p>Checkpoint storage monitor " + html_escape(kVersion) +
       " (revision " + html_escape(kRevision) + "). ";
  h += ready ? "Ready." : "Not ready yet: first collection running.";
  h += " Configuration: <code>" + html_escape(s.config ? s.config->source : "") + "</code>";
  h += last_reload_ok ? "" : " <span class=\"down\">(last reload failed; see the log)</span>";
  h += "</p>\n<h2>Tiers</h2>\n<table><tr><th>tier</th><th>role</th><th>path</th><th>state</th>"
       "<th>size</th><th>available</th><th>mount</th><th>fstype</th></tr>\n";
  for (const auto& [name, t] : s.tiers) {
    h += "<tr><td>" + html_escape(name) + "</td><td>" +
         html_escape(std::string(to_string(t.config.role))) +
         (t.config.drains_to.empty() ? "" : " &rarr; " + html_escape(t.config.drains_to)) +
         "</td><td><code>" + html_escape(t.config.path) + "</code></td>";
    if (t.up) {
      h += "<td class=\"up\">up</td>";
    } else {
      h += "<td class=\"down\">down: " + html_escape(t.down_reason) + "</td>";
    }
    if (t.has_stats) {
      h += "<td>" + human_bytes(t.stats.size_bytes) + "</td><td>" +
           human_bytes(t.stats.avail_bytes) + "</td><td><code>" +
           html_escape(t.stats.mountpoint) + "</code></td><td>" + html_escape(t.stats.fstype) +
           "</td>";
    } else {
      h += "<td></td><td></td><td></td><td></td>";
    }
    h += "</tr>\n";
  }
  h += "</table>\n<h2>Endpoints</h2>\n<ul>\n"
       "<li><a href=\"/metrics\">/metrics</a>: Prometheus metrics</li>\n"
       "<li><a href=\"/api/v1/tiers\">/api/v1/tiers</a>: tiers as JSON</li>\n"
       "<li><a href=\"/-/healthy\">/-/healthy</a>, <a href=\"/-/ready\">/-/ready</a></li>\n"
       "<li><code>POST /-/reload</code>: reload the configuration</li>\n</ul>\n";
  h += "</body></html>\n";
  return h;
}

std::string render_tiers_json(const Snapshot& snap) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& [name, t] : snap.state.tiers) {
    nlohmann::json j;
    j["name"] = name;
    j["path"] = t.config.path;
    j["role"] = std::string(to_string(t.config.role));
    j["drains_to"] = t.config.drains_to.empty() ? nlohmann::json() : nlohmann::json(t.config.drains_to);
    j["up"] = t.up;
    j["down_reason"] = t.up ? nlohmann::json() : nlohmann::json(t.down_reason);
    j["last_success"] = t.last_success > 0 ? nlohmann::json(t.last_success) : nlohmann::json();
    if (t.has_stats) {
      j["size_bytes"] = t.stats.size_bytes;
      j["avail_bytes"] = t.stats.avail_bytes;
      j["free_bytes"] = t.stats.free_bytes;
      j["files"] = t.stats.files;
      j["files_free"] = t.stats.files_free;
      j["readonly"] = t.stats.readonly;
      j["mountpoint"] = t.stats.mountpoint;
      j["fstype"] = t.stats.fstype;
      j["device"] = t.stats.device;
    }
    arr.push_back(std::move(j));
  }
  return arr.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ckptmon
