#pragma once
// The top-level `network` section: interfaces whose byte counters and link
// speed are exported next to the tiers' I/O counters (docs/configuration.md,
// "Storage path and network"). Plain data; immutable once loaded.

#include <cstddef>
#include <string>
#include <vector>

#include "config/yaml_reader.hpp"

namespace ckptmon {

// A bound on the `interface` label.
inline constexpr std::size_t kMaxNetworkInterfaces = 32;

struct NetworkConfig {
  // Netdev names (eth0, ib0) or InfiniBand ports written hca:port (mlx5_0:1);
  // default none.
  std::vector<std::string> interfaces;
};

// Reads the `network` mapping into `out`; calls finish().
void read_network(YamlMap& m, NetworkConfig& out, ErrorSink& sink);

}  // namespace ckptmon
