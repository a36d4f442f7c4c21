#pragma once
// Reads the top-level `gpu` section (docs/configuration.md, "gpu") into
// GpuConfig (model/settings.hpp).

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "config/yaml_reader.hpp"
#include "model/settings.hpp"

namespace ckptmon {

// Reads the `gpu` mapping into `out` over its defaults; calls finish().
void read_gpu(YamlMap& m, GpuConfig& out, ErrorSink& sink);

}  // namespace ckptmon
