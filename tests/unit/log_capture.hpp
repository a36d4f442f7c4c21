#pragma once
// Captures what ckptmon logs (logfmt, info and above) for the life of the
// object, then puts the default stderr logger back. Not thread-safe to
// construct; the logger itself is.

#include <cstddef>
#include <memory>
#include <sstream>
#include <string>

#include <spdlog/sinks/ostream_sink.h>

#include "util/log.hpp"

namespace ckptmon::testing {

class LogCapture {
 public:
  LogCapture() {
    log::init(spdlog::level::info, log::Format::kLogfmt,
              std::make_shared<spdlog::sinks::ostream_sink_mt>(out_));
  }
  ~LogCapture() { log::init(spdlog::level::info, log::Format::kLogfmt); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::string str() const { return out_.str(); }
  // How many times `what` occurs in what was logged so far.
  std::size_t count(const std::string& what) const {
    const std::string text = out_.str();
    std::size_t n = 0;
    for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
    return n;
  }

 private:
  std::ostringstream out_;
};

}  // namespace ckptmon::testing
