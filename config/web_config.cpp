#include "config/web_config.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "util/text.hpp"

namespace ckptmon {
namespace {

constexpr std::size_t kMaxWebConfigBytes = std::size_t{1024} * 1024;

bool is_bcrypt_base64(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '/';
}

std::optional<TlsVersion> read_version(const YamlField& f, ErrorSink& sink) {
  auto v = read_enum(f, sink, {"TLS12", "TLS13"});
  if (!v) return std::nullopt;
  return *v == "TLS13" ? TlsVersion::kTls13 : TlsVersion::kTls12;
}

// A file name, resolved against the web config's directory when relative
// (as exporter-toolkit does), remembering where it was given.
std::optional<WebConfigFile> read_file_name(const YamlField& f, const std::filesystem::path& base,
                                            ErrorSink& sink) {
  auto v = read_string(f, sink);
  if (!v) return std::nullopt;
  if (v->empty()) {
    sink.add(f.mark(), f.path, "expected a file name, got \"\"");
    return std::nullopt;
  }
  WebConfigFile out;
  std::filesystem::path p(*v);
  out.path = p.is_absolute() || base.empty() ? p.string() : (base / p).string();
  out.key = f.path;
  const YAML::Mark m = f.mark();
  if (!m.is_null()) {
    out.line = m.line + 1;
    out.column = m.column + 1;
  }
  return out;
}

void read_tls(const YamlField& f, const std::filesystem::path& base, WebConfig& cfg,
              ErrorSink& sink) {
  if (f.value.IsNull()) {
    sink.add(f.key_mark, f.path, "expected a mapping with cert_file and key_file, got null");
    return;
  }
  YamlMap m(f.value, f.path, sink);
  if (!m.ok()) return;
  TlsServerConfig tls;
  auto cert = m.require("cert_file");
  auto key = m.require("key_file");
  auto ca = m.get("client_ca_file");
  auto auth_type = m.get("client_auth_type");
  auto min_version = m.get("min_version");
  auto max_version = m.get("max_version");
  if (cert.present()) {
    if (auto v = read_file_name(cert, base, sink)) tls.cert_file = *v;
  }
  if (key.present()) {
    if (auto v = read_file_name(key, base, sink)) tls.key_file = *v;
  }
  if (ca.present()) {
    tls.client_ca_file = read_file_name(ca, base, sink);
  }
  if (auth_type.present()) {
    // Only the two policies that are not a trap: exporter-toolkit itself
    // warns that the others let clients through unverified.
    auto v = read_enum(auth_type, sink, {"NoClientCert", "RequireAndVerifyClientCert"});
    if (v && *v == "RequireAndVerifyClientCert" && !ca.present()) {
      sink.add(auth_type.mark(), auth_type.path,
               "RequireAndVerifyClientCert needs client_ca_file to verify client certificates "
               "against");
    } else if (v && *v == "NoClientCert" && ca.present()) {
      sink.add(ca.key_mark, ca.path,
               "client_ca_file is given but client_auth_type is NoClientCert; remove one of them");
    }
  }
  if (min_version.present()) {
    if (auto v = read_version(min_version, sink)) tls.min_version = *v;
  }
  if (max_version.present()) {
    if (auto v = read_version(max_version, sink)) tls.max_version = *v;
  }
  if (min_version.present() && max_version.present() && tls.min_version > tls.max_version) {
    sink.add(max_version.mark(), max_version.path,
             "must not be below min_version " + std::string(to_string(tls.min_version)) + ", got " +
                 describe(max_version.value));
  }
  m.finish();
  // Whatever went wrong above was reported, and a file with errors is
  // discarded as a whole: no need to track here whether tls is complete.
  cfg.tls = std::move(tls);
}

void read_users(const YamlField& f, WebConfig& cfg, ErrorSink& sink) {
  if (f.value.IsNull()) return;  // "basic_auth_users:" with no users: no authentication
  if (!f.value.IsMap()) {
    sink.add(f.mark(), f.path,
             "expected a mapping of user name to bcrypt hash, got " + describe(f.value));
    return;
  }
  std::map<std::string, int> first_line;
  for (YAML::const_iterator it = f.value.begin(); it != f.value.end(); ++it) {
    const YAML::detail::iterator_value kv = *it;
    const YAML::Node k = kv.first;
    const YAML::Node v = kv.second;
    if (!k.IsScalar()) {
      sink.add(k.Mark(), f.path, "expected a user name as key, got " + describe(k));
      continue;
    }
    const std::string& user = k.Scalar();
    const std::string path = f.path + "." + user;
    if (user.empty()) {
      sink.add(k.Mark(), f.path, "a user name must not be empty");
      continue;
    }
    if (user.find(':') != std::string::npos) {
      // RFC 7617: the user-id ends at the first colon of the credentials.
      sink.add(k.Mark(), path, "a user name cannot contain ':' (basic auth splits there)");
      continue;
    }
    auto [pos, inserted] = first_line.emplace(user, k.Mark().line + 1);
    if (!inserted) {
      sink.add(k.Mark(), path,
               "duplicate user (first given at line " + std::to_string(pos->second) + ")");
      continue;
    }
    const YAML::Mark vmark = v.IsNull() ? k.Mark() : v.Mark();
    if (!v.IsScalar()) {
      sink.add(vmark, path, "expected a bcrypt hash, got " + describe(v));
      continue;
    }
    if (!is_bcrypt_hash(v.Scalar())) {
      // The value is not echoed: it may be a password typed in by mistake.
      sink.add(vmark, path,
               "expected a bcrypt hash ($2y$, $2b$ or $2a$, a cost from 04 to 31, then 53 "
               "characters of salt and hash); the value is not shown");
      continue;
    }
    cfg.basic_auth_users.emplace(user, v.Scalar());
  }
}

}  // namespace

std::string_view to_string(TlsVersion v) { return v == TlsVersion::kTls13 ? "TLS13" : "TLS12"; }

bool is_bcrypt_hash(std::string_view s) {
  // "$2y$10$" + 53
  if (s.size() != 60 || s[0] != '$' || s[1] != '2' || s[3] != '$' || s[6] != '$') return false;
  if (s[2] != 'a' && s[2] != 'b' && s[2] != 'y') return false;
  if (s[4] < '0' || s[4] > '9' || s[5] < '0' || s[5] > '9') return false;
  const int cost = (s[4] - '0') * 10 + (s[5] - '0');
  if (cost < 4 || cost > 31) return false;
  for (std::size_t i = 7; i < s.size(); ++i) {
    if (!is_bcrypt_base64(s[i])) return false;
  }
  return true;
}

namespace {

WebConfig read_web_config(const YAML::Node& root, const std::string& file, ErrorSink& sink) {
  WebConfig cfg;
  cfg.source = file;
  const std::filesystem::path base = std::filesystem::path(file).parent_path();
  YamlMap top(root, "", sink);  // an empty file is an empty mapping: HTTP, no auth
  if (top.ok()) {
    if (auto f = top.get("tls_server_config"); f.present()) read_tls(f, base, cfg, sink);
    if (auto f = top.get("basic_auth_users"); f.present()) read_users(f, cfg, sink);
    top.finish();
  }
  return cfg;
}

}  // namespace

WebConfigResult parse_web_config(std::string_view text, const std::string& file) {
  return parse_yaml_config<WebConfig>(text, file, [&](const YAML::Node& root, ErrorSink& sink) {
    return read_web_config(root, file, sink);
  });
}

WebConfigResult load_web_config_file(const std::string& path) {
  return load_config_file_with<WebConfig>(path, kMaxWebConfigBytes, parse_web_config);
}

}  // namespace ckptmon
