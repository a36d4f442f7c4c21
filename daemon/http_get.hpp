#pragma once
// A blocking HTTP/1.1 GET for the one-shot commands (`ckptmon plan --from`,
// `ckptmon report --from/--prometheus`), with one deadline over connect,
// send and receive. Never used by the daemon's loop. Thread-compatible.

#include <string>

#include "config/rules_config.hpp"

namespace ckptmon {

struct HttpGetResult {
  bool ok = false;  // a response arrived (any status)
  unsigned status = 0;
  std::string body;
  std::string error;  // why no response arrived, when !ok
};

// GET url.path + `target` ("/api/v1/plan?x=1") from url.host:url.port.
HttpGetResult http_get(const HttpUrl& url, const std::string& target, double timeout_seconds);

}  // namespace ckptmon
