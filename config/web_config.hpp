#pragma once
// The --web.config.file settings (TLS and basic auth), in the file format of
// the Prometheus exporter-toolkit (docs/operations.md lists the subset read
// here). Reading is pure: certificate files are only named, not opened; the
// daemon loads them (http/web_security.hpp). Immutable once read.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/yaml_reader.hpp"

namespace ckptmon {

enum class TlsVersion { kTls12, kTls13 };
std::string_view to_string(TlsVersion v);

// A file named in the web config: the path to open (relative ones resolved
// against the web config's directory) and where it was named, so that a
// certificate that fails to load is reported at its key.
struct WebConfigFile {
  std::string path;
  std::string key;  // e.g. tls_server_config.cert_file
  int line = 0;     // 1-based
  int column = 0;   // 1-based
};

struct TlsServerConfig {
  WebConfigFile cert_file;
  WebConfigFile key_file;
  // When set, every client must present a certificate signed by this CA
  // (exporter-toolkit's client_auth_type RequireAndVerifyClientCert).
  std::optional<WebConfigFile> client_ca_file;
  TlsVersion min_version = TlsVersion::kTls12;
  TlsVersion max_version = TlsVersion::kTls13;
};

struct WebConfig {
  std::string source;                  // the file it was read from, for messages
  std::optional<TlsServerConfig> tls;  // absent: plain HTTP
  // User name -> bcrypt hash. Empty: no authentication.
  std::map<std::string, std::string> basic_auth_users;
};

using WebConfigResult = ConfigResult<WebConfig>;

// True for "$2a$", "$2b$" or "$2y$", a two-digit cost from 04 to 31, "$" and
// 53 characters of bcrypt's base64 (22 of salt, 31 of hash).
bool is_bcrypt_hash(std::string_view s);

// Parses web config text; `file` names it in messages and its directory is
// where relative certificate paths start.
WebConfigResult parse_web_config(std::string_view text, const std::string& file);
// Reads and parses a file; an unreadable file is an error like any other.
WebConfigResult load_web_config_file(const std::string& path);

}  // namespace ckptmon
