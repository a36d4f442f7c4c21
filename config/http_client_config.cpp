#include "config/http_client_config.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace ckptmon {

namespace {

bool token_char(unsigned char c) {
  static constexpr std::string_view kTokenPunct = "!#$%&'*+-.^_`|~";
  return std::isalnum(c) != 0 || kTokenPunct.find(static_cast<char>(c)) != std::string_view::npos;
}

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

void read_tls(const YamlField& f, bool https, std::string_view url_key, HttpTlsConfig& tls,
              ErrorSink& sink) {
  YamlMap t(f.value, f.path, sink);
  if (t.ok()) {
    for (auto [key, target] :
         {std::pair{"ca_file", &tls.ca_file}, std::pair{"cert_file", &tls.cert_file},
          std::pair{"key_file", &tls.key_file}}) {
      if (auto k = t.get(key); k.present()) {
        if (auto v = read_abs_path(k, sink)) *target = *v;
      }
    }
    string_key(t, "server_name", tls.server_name, sink);
    if (auto k = t.get("insecure_skip_verify"); k.present()) {
      if (auto v = read_bool(k, sink)) tls.insecure_skip_verify = *v;
    }
    if (tls.cert_file.empty() != tls.key_file.empty()) {
      sink.add(f.mark(), f.path, "cert_file and key_file go together");
    }
    t.finish();
  }
  if (!https) sink.add(f.mark(), f.path, "needs an https:// " + std::string(url_key));
}

void read_basic_auth(const YamlField& basic, HttpAuthConfig& auth, ErrorSink& sink) {
  YamlMap b(basic.value, basic.path, sink);
  if (!b.ok()) return;
  if (auto k = b.require("username"); k.present()) {
    if (auto v = read_string(k, sink)) auth.username = *v;
  }
  string_key(b, "password", auth.password, sink);
  if (auto k = b.get("password_file"); k.present()) {
    if (auto v = read_abs_path(k, sink)) auth.password_file = *v;
  }
  if (!auth.password.empty() && !auth.password_file.empty()) {
    sink.add(basic.mark(), basic.path, "at most one of password and password_file");
  }
  b.finish();
}

void read_authorization(const YamlField& authz, HttpAuthConfig& auth, ErrorSink& sink) {
  YamlMap a(authz.value, authz.path, sink);
  if (!a.ok()) return;
  auth.type = "Bearer";
  string_key(a, "type", auth.type, sink);
  if (auth.type.empty() || auth.type.find_first_of(" \t\r\n") != std::string::npos) {
    sink.add(authz.mark(), authz.path + ".type", "must be one word such as Bearer");
  }
  string_key(a, "credentials", auth.credentials, sink);
  if (auto k = a.get("credentials_file"); k.present()) {
    if (auto v = read_abs_path(k, sink)) auth.credentials_file = *v;
  }
  if (auth.credentials.empty() == auth.credentials_file.empty()) {
    sink.add(authz.mark(), authz.path, "exactly one of credentials and credentials_file");
  }
  a.finish();
}

void read_headers(const YamlField& f, HttpClientConfig& out, ErrorSink& sink) {
  if (!f.value.IsMap()) {
    sink.add(f.mark(), f.path,
             "expected a mapping of header name to value, such as {X-Scope-OrgID: team-a}, got " +
                 describe(f.value));
    return;
  }
  for (YAML::const_iterator it = f.value.begin(); it != f.value.end(); ++it) {
    const YAML::detail::iterator_value kv = *it;
    const YAML::Node k = kv.first;
    const std::string name = k.IsScalar() ? k.Scalar() : std::string();
    YamlField item{kv.second, k.Mark(), f.path + "." + name};
    auto value = read_string(item, sink);
    if (!value) continue;
    if (std::string why = extra_header_error(name, *value); !why.empty()) {
      sink.add(k.Mark(), item.path, why);
      continue;
    }
    if (out.headers.size() >= kMaxExtraHeaders) {
      sink.add(k.Mark(), item.path, "at most " + std::to_string(kMaxExtraHeaders) + " headers");
      return;
    }
    out.headers.emplace_back(name, *value);
  }
}

}  // namespace

std::string extra_header_error(std::string_view name, std::string_view value) {
  if (name.empty() || name.size() > kMaxHeaderBytes ||
      !std::all_of(name.begin(), name.end(),
                   [](char c) { return token_char(static_cast<unsigned char>(c)); })) {
    return "a header name is an HTTP token (letters, digits, -), got \"" +
           std::string(name.substr(0, 64)) + "\"";
  }
  static constexpr std::array<std::string_view, 6> kOwn{
      "host", "authorization", "content-length", "content-type", "transfer-encoding", "connection"};
  for (std::string_view own : kOwn) {
    if (same_name(name, own)) {
      return std::string(name) +
             " is the client's own header (credentials go in basic_auth or authorization)";
    }
  }
  if (value.size() > kMaxHeaderBytes) {
    return "a header value is at most " + std::to_string(kMaxHeaderBytes) + " bytes";
  }
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) {
      return "a header value may not hold control characters (line breaks included)";
    }
  }
  return {};
}

void read_http_client(YamlMap& m, bool https, std::string_view url_key, HttpClientConfig& out,
                      ErrorSink& sink) {
  if (auto f = m.get("tls_config"); f.present()) read_tls(f, https, url_key, out.tls, sink);
  YamlField basic = m.get("basic_auth");
  YamlField authz = m.get("authorization");
  if (basic.present() && authz.present()) {
    sink.add(authz.mark(), authz.path, "at most one of basic_auth and authorization");
  }
  if (basic.present()) read_basic_auth(basic, out.auth, sink);
  if (authz.present()) read_authorization(authz, out.auth, sink);
  if (auto f = m.get("headers"); f.present()) read_headers(f, out, sink);
}

}  // namespace ckptmon
