#pragma once
// Reads an HTTP client's `tls_config`, `basic_auth`, `authorization` and
// `headers` (model/http_client_config.hpp) from a section that also holds
// the URL they apply to: `alerting` (alertmanager_url) and `gpu` (dcgm_url,
// prometheus.url). Spelled like Prometheus' HTTP client configuration. Not
// thread-safe; one loader at a time.

#include <string>
#include <string_view>

#include "config/yaml_reader.hpp"
#include "model/http_client_config.hpp"

namespace ckptmon {

// Reads the four keys of `m` when present; does not call m.finish(). `https`
// says whether the URL the client serves is https (a tls_config without it
// is an error naming `url_key`).
void read_http_client(YamlMap& m, bool https, std::string_view url_key, HttpClientConfig& out,
                      ErrorSink& sink);

// Empty when (name, value) may be sent as an extra header, else why not:
// the name must be an HTTP token (RFC 9110 section 5.6.2) that is not one of
// the client's own headers; the value holds no control character but tab;
// both at most kMaxHeaderBytes.
std::string extra_header_error(std::string_view name, std::string_view value);

}  // namespace ckptmon
