#pragma once
// The one way a collector reaches an HTTP peer (dcgm-exporter, Prometheus): a
// blocking GET with one deadline and a cap on the body, injected by the daemon
// (http/http_client.cpp make_http_fetch) so collectors link no HTTP library and
// tests can hand in their own. Called on worker threads only.

#include <cstddef>
#include <functional>
#include <string>

#include "model/http_client_config.hpp"

namespace ckptmon {

struct FetchResult {
  bool ok = false;  // a whole response arrived (any status)
  unsigned status = 0;
  std::string content_type;
  std::string body;
  std::string error;  // why no usable response arrived, when !ok
};

// GET `url` ("http://host:port/path?query" or https://). A body over
// `max_bytes` is an error ("response larger than N bytes"), as is running
// past the deadline.
using HttpFetch = std::function<FetchResult(const std::string& url, double timeout_seconds,
                                            std::size_t max_bytes)>;

// Makes a fetch that speaks with `config`'s TLS, credentials and headers; its
// certificate and secret files are read when the fetch is made. Called on
// the loop thread at each configuration load.
using HttpFetchFactory = std::function<HttpFetch(const HttpClientConfig& config)>;

}  // namespace ckptmon
