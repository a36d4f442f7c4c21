#pragma once
// What a configuration that loads may still get wrong: each warning in
// words, naming the keys. `check-config` prints them (exit 0: they are not
// errors); the daemon logs them at start and on every reload.

#include <string>
#include <vector>

#include "model/settings.hpp"

namespace ckptmon {

// Today: a `drains_to` that carries a namespace's jobs to a tier whose
// residency the namespace does not allow (every such drain copy would be a
// residency finding and fire CheckpointOutsideAllowedResidency). One warning
// per (tier, namespace rule), in tier order.
std::vector<std::string> config_warnings(const Config& cfg);

}  // namespace ckptmon
