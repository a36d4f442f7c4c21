#pragma once
// Reads the top-level `network` section (docs/configuration.md, "Storage path
// and network") into NetworkConfig (model/settings.hpp).

#include <cstddef>
#include <string>
#include <vector>

#include "config/yaml_reader.hpp"
#include "model/settings.hpp"

namespace ckptmon {

// Reads the `network` mapping into `out`; calls finish().
void read_network(YamlMap& m, NetworkConfig& out, ErrorSink& sink);

}  // namespace ckptmon
