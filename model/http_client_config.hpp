#pragma once
// How ckptmon's one HTTP client (http/http_client.hpp) reaches a peer:
// TLS, credentials and extra headers, spelled like Prometheus' HTTP client
// configuration (`tls_config`, `basic_auth`, `authorization`) so a setting
// copied from prometheus.yml means the same here. Used by alerting (the
// Alertmanager push), gpu (the dcgm and prometheus sources) and the
// `--prometheus.*` flags of `report` and `plan`. Plain data; *_file paths are
// read when a client is built (start and every reload), never stored here.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace ckptmon {

struct HttpTlsConfig {
  std::string ca_file;    // PEM CA bundle; empty = the system's trust store
  std::string cert_file;  // client certificate (PEM), with key_file
  std::string key_file;
  std::string server_name;  // the name the certificate must carry; default: the URL's host
  bool insecure_skip_verify = false;
};

// At most one of basic_auth and authorization, as in Prometheus.
struct HttpAuthConfig {
  std::string username;  // basic_auth
  std::string password;
  std::string password_file;
  std::string type;  // authorization: "Bearer" unless set; empty when unused
  std::string credentials;
  std::string credentials_file;

  bool any() const { return !username.empty() || !type.empty(); }
};

// A bound on `headers`, and on a header's name and value.
inline constexpr std::size_t kMaxExtraHeaders = 16;
inline constexpr std::size_t kMaxHeaderBytes = 4096;

struct HttpClientConfig {
  HttpTlsConfig tls;
  HttpAuthConfig auth;
  // Extra request headers in order, such as X-Scope-OrgID for a Mimir,
  // Cortex or Loki tenant. Names are HTTP tokens; Host, Authorization,
  // Content-Length, Content-Type, Transfer-Encoding and Connection are the
  // client's own and refused here.
  std::vector<std::pair<std::string, std::string>> headers;
};

}  // namespace ckptmon
