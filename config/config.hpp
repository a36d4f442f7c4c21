#pragma once
// The daemon's configuration: what the YAML file says, validated, with defaults.
// Immutable once loaded; a reload builds a new Config and swaps it in.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/yaml_reader.hpp"
#include "util/duration.hpp"

namespace ckptmon {

enum class TierRole { kStaging, kRapid, kMilestone, kCapacity, kDeletion };
std::string_view to_string(TierRole r);

struct TierConfig {
  std::string name;
  std::string path;  // absolute; need not exist (a missing path is a tier that is down)
  TierRole role = TierRole::kRapid;
  std::string drains_to;  // name of another tier, or empty
};

struct GlobalConfig {
  std::string state_dir = "/var/lib/ckptmon";
  Duration scan_interval = std::chrono::seconds(15);
  // Deadline for one blocking probe of one tier (statfs, a directory walk step).
  Duration probe_timeout = std::chrono::seconds(10);
  // Where procfs is mounted; tests point it at a fixture tree.
  std::string proc_path = "/proc";
  // Upper bound on threads doing blocking file-system work. A probe stuck on a
  // hung mount holds one thread until the kernel returns.
  int worker_threads = 16;
};

struct Config {
  std::string source;  // file the config was read from, for messages
  GlobalConfig global;
  std::vector<TierConfig> tiers;

  const TierConfig* find_tier(std::string_view name) const;
};

struct LoadResult {
  std::optional<Config> config;
  std::vector<ConfigError> errors;  // empty when config is set
};

// Parses configuration text; `file` is used in error messages only.
LoadResult parse_config(std::string_view text, const std::string& file);
// Reads and parses a file; an unreadable file is an error like any other.
LoadResult load_config_file(const std::string& path);

}  // namespace ckptmon
