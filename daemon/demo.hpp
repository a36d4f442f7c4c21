#pragma once
// `ckptmon demo`: the daemon on temporary tiers it creates, for a first look.

#include <string>

#include "util/duration.hpp"

namespace ckptmon {

struct DemoOptions {
  std::string listen_address;
  std::string web_config_file;  // TLS and basic auth, as for serve
  Duration exit_after{0};  // 0: run until interrupted
  bool keep = false;       // keep the temporary directory at exit
};

int run_demo(const DemoOptions& opts);

}  // namespace ckptmon
