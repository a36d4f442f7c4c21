#pragma once
// A blocking HTTP/1.1 GET for the one-shot commands (`ckptmon plan --from`,
// `ckptmon report --from/--prometheus`), with one deadline over connect,
// send and receive. Never used by the daemon's loop. Thread-compatible.

#include <cstddef>
#include <string>

#include "collectors/http_fetch.hpp"

#include "config/rules_config.hpp"

namespace ckptmon {

struct HttpGetResult {
  bool ok = false;  // a response arrived (any status)
  unsigned status = 0;
  std::string content_type;
  std::string body;
  std::string error;  // why no response arrived, when !ok
};

// GET url.path + `target` ("/api/v1/plan?x=1") from url.host:url.port.
// A body over `max_body` bytes is an error ("response larger than N bytes").
HttpGetResult http_get(const HttpUrl& url, const std::string& target, double timeout_seconds,
                       std::size_t max_body = std::size_t{256} * 1024 * 1024);

// The collectors' HttpFetch (collectors/http_fetch.hpp) over http_get: plain
// http:// only (an https:// URL is refused with a clear error).
HttpFetch make_http_fetch();

}  // namespace ckptmon
