#pragma once
// `ckptmon demo`: the daemon on temporary tiers it creates, for a first look.

#include <string>

#include "util/duration.hpp"

namespace ckptmon {

struct DemoOptions {
  std::string listen_address;
  std::string web_config_file;  // TLS and basic auth, as for serve
  Duration exit_after{0};       // 0: run until interrupted
  bool keep = false;            // keep the temporary directory at exit
  // Time compression on top of the demo's own (docs/operations.md#the-demo):
  // intervals, partial_after, alert for: durations and drain rates scaled
  // by 1/speed (tests use 4; 1 is the pace `make demo` shows).
  double speed = 1;
};

int run_demo(const DemoOptions& opts);

}  // namespace ckptmon
