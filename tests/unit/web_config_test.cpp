#include "config/web_config.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ckptmon {
namespace {

// Test vectors of crypt_blowfish (Openwall), the reference bcrypt
// implementation: "U*U" and "U*U*" at cost 05 with an all-C salt.
constexpr const char* kHashUU = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW";
constexpr const char* kHashUUU = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.VGOzA784oUp/Z0DY336zx7pLYAy0lwK";

std::vector<std::string> errors_of(const std::string& text) {
  WebConfigResult r = parse_web_config(text, "web.yml");
  std::vector<std::string> out;
  for (const auto& e : r.errors) out.push_back(e.to_string());
  EXPECT_EQ(r.config.has_value(), out.empty());
  return out;
}

TEST(WebConfig, ReadsTlsAndUsersWithPathsRelativeToTheFile) {
  const std::string text = std::string(R"(tls_server_config:
  cert_file: server.crt
  key_file: /secrets/server.key
  client_ca_file: ca/clients.pem
  min_version: TLS13
basic_auth_users:
  prometheus: )") + kHashUU +
                           "\n  alice: '" + kHashUUU + "'\n";
  WebConfigResult r = parse_web_config(text, "/etc/ckptmon/web.yml");
  ASSERT_TRUE(r.config) << r.errors[0].to_string();
  const WebConfig& c = *r.config;
  EXPECT_EQ(c.source, "/etc/ckptmon/web.yml");
  ASSERT_TRUE(c.tls);
  EXPECT_EQ(c.tls->cert_file.path, "/etc/ckptmon/server.crt");
  EXPECT_EQ(c.tls->cert_file.key, "tls_server_config.cert_file");
  EXPECT_EQ(c.tls->cert_file.line, 2);
  EXPECT_EQ(c.tls->cert_file.column, 14);
  EXPECT_EQ(c.tls->key_file.path, "/secrets/server.key");
  EXPECT_EQ(c.tls->key_file.line, 3);
  ASSERT_TRUE(c.tls->client_ca_file);
  EXPECT_EQ(c.tls->client_ca_file->path, "/etc/ckptmon/ca/clients.pem");
  EXPECT_EQ(c.tls->client_ca_file->column, 19);
  EXPECT_EQ(c.tls->min_version, TlsVersion::kTls13);
  EXPECT_EQ(c.tls->max_version, TlsVersion::kTls13);
  EXPECT_EQ(c.basic_auth_users,
            (std::map<std::string, std::string>{{"prometheus", kHashUU}, {"alice", kHashUUU}}));
}

TEST(WebConfig, EmptyFileMeansPlainHttpWithoutAuth) {
  for (const char* text : {"", "# nothing yet\n", "{}\n", "basic_auth_users:\n"}) {
    WebConfigResult r = parse_web_config(text, "web.yml");
    ASSERT_TRUE(r.config) << text;
    EXPECT_FALSE(r.config->tls) << text;
    EXPECT_TRUE(r.config->basic_auth_users.empty()) << text;
  }
}

TEST(WebConfig, DefaultsAndAFileInTheWorkingDirectory) {
  WebConfigResult r =
      parse_web_config("tls_server_config: {cert_file: a.crt, key_file: a.key}\n", "web.yml");
  ASSERT_TRUE(r.config);
  ASSERT_TRUE(r.config->tls);
  EXPECT_EQ(r.config->tls->cert_file.path, "a.crt");
  EXPECT_EQ(r.config->tls->key_file.path, "a.key");
  EXPECT_FALSE(r.config->tls->client_ca_file);
  EXPECT_EQ(r.config->tls->min_version, TlsVersion::kTls12);
  EXPECT_EQ(r.config->tls->max_version, TlsVersion::kTls13);
}

TEST(WebConfig, ExporterToolkitClientAuthSpellingIsAccepted) {
  WebConfigResult r = parse_web_config(
      "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n  client_ca_file: ca.pem\n"
      "  client_auth_type: RequireAndVerifyClientCert\n  max_version: TLS12\n",
      "/w/web.yml");
  ASSERT_TRUE(r.config) << r.errors[0].to_string();
  ASSERT_TRUE(r.config->tls->client_ca_file);
  EXPECT_EQ(r.config->tls->client_ca_file->path, "/w/ca.pem");
  EXPECT_EQ(r.config->tls->max_version, TlsVersion::kTls12);
  r = parse_web_config(
      "tls_server_config: {cert_file: a.crt, key_file: a.key, client_auth_type: NoClientCert}\n",
      "web.yml");
  ASSERT_TRUE(r.config);
  EXPECT_FALSE(r.config->tls->client_ca_file);
}

TEST(WebConfig, BcryptHashShape) {
  EXPECT_TRUE(is_bcrypt_hash(kHashUU));
  EXPECT_TRUE(is_bcrypt_hash("$2y$31$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"));
  EXPECT_TRUE(is_bcrypt_hash("$2b$04$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"));
  EXPECT_FALSE(is_bcrypt_hash("$2x$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"));
  EXPECT_FALSE(is_bcrypt_hash("$2a$03$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"));
  EXPECT_FALSE(is_bcrypt_hash("$2a$32$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"));
  EXPECT_FALSE(is_bcrypt_hash("$2a$5$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeWx"));
  EXPECT_FALSE(is_bcrypt_hash("$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOe"));
  EXPECT_FALSE(is_bcrypt_hash("$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOe!"));
  EXPECT_FALSE(is_bcrypt_hash("$1$salt$qJH7.N4xYta3aEG/dfqo/0"));
  EXPECT_FALSE(is_bcrypt_hash(""));
}

struct BadCase {
  const char* name;
  std::string yaml;
  std::vector<std::string> errors;
};

class WebConfigRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(WebConfigRejects, WithFileLineColumnKeyAndExpectation) {
  EXPECT_EQ(errors_of(GetParam().yaml), GetParam().errors);
}

const std::string kTlsKeys =
    "(expected one of: cert_file, key_file, client_ca_file, client_auth_type, min_version, "
    "max_version)";
const std::string kHashShape =
    "expected a bcrypt hash ($2y$, $2b$ or $2a$, a cost from 04 to 31, then 53 characters of "
    "salt and hash); the value is not shown";

INSTANTIATE_TEST_SUITE_P(
    Table, WebConfigRejects,
    ::testing::Values(
        BadCase{"unsupported_exporter_toolkit_section",
                "http_server_config:\n  http2: false\n",
                {"web.yml:1:1: http_server_config: unknown key (expected one of: "
                 "tls_server_config, basic_auth_users)"}},
        BadCase{"unknown_tls_key",
                "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n  cipher_suites: []\n",
                {"web.yml:4:3: tls_server_config.cipher_suites: unknown key " + kTlsKeys}},
        BadCase{"missing_key_file",
                "tls_server_config:\n  cert_file: a.crt\n",
                {"web.yml:2:3: tls_server_config.key_file: required key is missing"}},
        BadCase{"tls_section_null",
                "tls_server_config:\n",
                {"web.yml:1:1: tls_server_config: expected a mapping with cert_file and "
                 "key_file, got null"}},
        BadCase{"tls_section_a_string",
                "tls_server_config: yes\n",
                {"web.yml:1:20: tls_server_config: expected a mapping, got \"yes\""}},
        BadCase{"empty_cert_file",
                "tls_server_config: {cert_file: '', key_file: a.key}\n",
                {"web.yml:1:32: tls_server_config.cert_file: expected a file name, got \"\""}},
        BadCase{"cert_file_a_list",
                "tls_server_config:\n  cert_file: [a, b]\n  key_file: a.key\n",
                {"web.yml:2:14: tls_server_config.cert_file: expected a string, got a list"}},
        BadCase{"old_tls_version",
                "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n  min_version: TLS11\n",
                {"web.yml:4:16: tls_server_config.min_version: expected one of TLS12, TLS13, "
                 "got \"TLS11\""}},
        BadCase{"max_below_min",
                "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n"
                "  min_version: TLS13\n  max_version: TLS12\n",
                {"web.yml:5:16: tls_server_config.max_version: must not be below min_version "
                 "TLS13, got \"TLS12\""}},
        BadCase{"insecure_client_auth_type",
                "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n"
                "  client_auth_type: VerifyClientCertIfGiven\n",
                {"web.yml:4:21: tls_server_config.client_auth_type: expected one of NoClientCert, "
                 "RequireAndVerifyClientCert, got \"VerifyClientCertIfGiven\""}},
        BadCase{"verify_without_ca",
                "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n"
                "  client_auth_type: RequireAndVerifyClientCert\n",
                {"web.yml:4:21: tls_server_config.client_auth_type: RequireAndVerifyClientCert "
                 "needs client_ca_file to verify client certificates against"}},
        BadCase{"ca_with_no_client_cert",
                "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n"
                "  client_ca_file: ca.pem\n  client_auth_type: NoClientCert\n",
                {"web.yml:4:3: tls_server_config.client_ca_file: client_ca_file is given but "
                 "client_auth_type is NoClientCert; remove one of them"}},
        BadCase{"users_a_list",
                "basic_auth_users:\n  - prometheus\n",
                {"web.yml:2:3: basic_auth_users: expected a mapping of user name to bcrypt "
                 "hash, got a list"}},
        BadCase{"plaintext_password",
                "basic_auth_users:\n  prometheus: hunter2\n",
                {"web.yml:2:15: basic_auth_users.prometheus: " + kHashShape}},
        BadCase{"md5_crypt_hash",
                "basic_auth_users:\n  prometheus: $1$salt$qJH7.N4xYta3aEG/dfqo/0\n",
                {"web.yml:2:15: basic_auth_users.prometheus: " + kHashShape}},
        BadCase{"cost_too_high",
                "basic_auth_users:\n  p: "
                "$2y$32$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW\n",
                {"web.yml:2:6: basic_auth_users.p: " + kHashShape}},
        BadCase{"hash_missing",
                "basic_auth_users:\n  prometheus:\n",
                {"web.yml:2:3: basic_auth_users.prometheus: expected a bcrypt hash, got null"}},
        BadCase{"user_with_colon",
                std::string("basic_auth_users:\n  'a:b': ") + kHashUU + "\n",
                {"web.yml:2:3: basic_auth_users.a:b: a user name cannot contain ':' (basic auth "
                 "splits there)"}},
        BadCase{"empty_user",
                std::string("basic_auth_users:\n  '': ") + kHashUU + "\n",
                {"web.yml:2:3: basic_auth_users: a user name must not be empty"}},
        BadCase{"duplicate_user",
                std::string("basic_auth_users:\n  p: ") + kHashUU + "\n  p: " + kHashUUU + "\n",
                {"web.yml:3:3: basic_auth_users.p: duplicate user (first given at line 2)"}},
        BadCase{"invalid_yaml",
                "tls_server_config: {cert_file: a.crt\n",
                {"web.yml:2:1: invalid YAML: end of map flow not found"}},
        BadCase{"top_level_list",
                "- tls_server_config\n",
                {"web.yml:1:1: (top level): expected a mapping, got a list"}},
        BadCase{"several_errors_at_once",
                "tls_server_config:\n  cert_file: a.crt\n  min_version: TLS10\n"
                "basic_auth_users:\n  p: secret\n",
                {"web.yml:2:3: tls_server_config.key_file: required key is missing",
                 "web.yml:3:16: tls_server_config.min_version: expected one of TLS12, TLS13, "
                 "got \"TLS10\"",
                 "web.yml:5:6: basic_auth_users.p: " + kHashShape}}),
    [](const ::testing::TestParamInfo<BadCase>& p) { return std::string(p.param.name); });

TEST(WebConfig, ErrorsNeverRepeatTheRejectedSecret) {
  const auto errs = errors_of("basic_auth_users:\n  prometheus: hunter2-is-my-password\n");
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].find("basic_auth_users.prometheus"), std::string::npos) << errs[0];
  EXPECT_EQ(errs[0].find("hunter2"), std::string::npos) << errs[0];
}

TEST(WebConfig, UnreadableFileIsAnErrorWithTheFileName) {
  WebConfigResult r = load_web_config_file("/nonexistent/web.yml");
  ASSERT_FALSE(r.config);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].to_string(),
            "/nonexistent/web.yml: cannot open: No such file or directory");
}

}  // namespace
}  // namespace ckptmon
