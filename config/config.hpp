#pragma once
// Reads the daemon's configuration (model/settings.hpp) from YAML: what the
// file says, validated, with defaults. A reload builds a new Config and swaps it in.

#include <string>
#include <string_view>

#include "config/gpu_config.hpp"
#include "config/network_config.hpp"
#include "config/yaml_reader.hpp"
#include "model/settings.hpp"

namespace ckptmon {

using LoadResult = ConfigResult<Config>;

// Compiles a job regex, accepting a named group written (?<job>...) or
// (?P<job>...) (std::regex has no named groups): it becomes a plain group
// whose index is returned in `group`. Returns an error text or empty.
std::string compile_job_regex(const std::string& text, JobRule& rule);

// Parses configuration text; `file` is used in error messages only.
LoadResult parse_config(std::string_view text, const std::string& file);
// Reads and parses a file; an unreadable file is an error like any other.
LoadResult load_config_file(const std::string& path);

}  // namespace ckptmon
