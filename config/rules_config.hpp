#pragma once
// Reads the rules' policy (rules/policy.hpp) from the strict YAML reader:
// per tier `retention`, `sizing`, `bandwidth`, `drain`, and the top-level
// `history` and `alerting` sections. Each reader takes the section's mapping,
// fills `out` over its defaults, reports every bad key to `sink` and calls
// finish() (unknown keys). Not thread-safe; one loader at a time.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "config/yaml_reader.hpp"
#include "model/policy.hpp"

namespace ckptmon {

void read_retention(YamlMap& m, RetentionPolicy& out, ErrorSink& sink);
void read_sizing(YamlMap& m, SizingPolicy& out, ErrorSink& sink);
void read_bandwidth(YamlMap& m, BandwidthPolicy& out, ErrorSink& sink);
void read_drain(YamlMap& m, DrainPolicy& out, ErrorSink& sink);
void read_restore_drill(YamlMap& m, RestoreDrillPolicy& out, ErrorSink& sink);
// `tiers[].storage_path`, with its per-job `jobs: {<job>: {...}}` overrides.
void read_storage_path(YamlMap& m, StoragePathPolicy& out,
                       std::map<std::string, StoragePathPolicy>& jobs, ErrorSink& sink);
void read_history(YamlMap& m, HistoryPolicy& out, ErrorSink& sink);
void read_alerting(YamlMap& m, AlertingConfig& out, ErrorSink& sink);
// Top-level `estate`: copies_required and durable_within, with per-job
// `jobs: {<job regex>: {...}}` overrides (first match wins).
void read_estate(YamlMap& m, EstatePolicy& out, ErrorSink& sink);

// Reads the `retention`, `sizing`, `bandwidth` and `drain` keys of one tier
// mapping (absent ones keep their defaults). Does not call finish() on the
// tier mapping: the tier reader does, after its own keys.
void read_tier_policy(YamlMap& tier, TierPolicy& out, ErrorSink& sink);

// An HTTP URL such as http://127.0.0.1:9093, http://am:9093/prefix or https://am:9093.
struct HttpUrl {
  std::string host;         // brackets removed from an IPv6 literal
  std::uint16_t port = 80;  // 443 for https:// without a port
  std::string path;         // "" or "/prefix" without a trailing slash
  bool tls = false;         // https://
};
// nullopt (and `error` set) for anything but http[s]://host[:port][/path]
// without query, fragment or user info.
std::optional<HttpUrl> parse_http_url(std::string_view url, std::string* error);

}  // namespace ckptmon
