#include "http/web_security.hpp"

#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include "loop_helpers.hpp"

#include "exporter/metrics.hpp"
#include "tests/unit/http_client.hpp"
#include "tests/unit/temp_dir.hpp"
#include "tests/unit/tls_fixture.hpp"

namespace ckptmon {
namespace {

using namespace std::chrono_literals;
namespace http = boost::beast::http;
namespace fs = std::filesystem;
using test_http::RawClient;
using test_tls::TlsClient;

// crypt_blowfish test vector: "U*U" at cost 05.
constexpr const char* kHashUU = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW";
// base64("prometheus:U*U") and base64("prometheus:U*U*").
constexpr const char* kGoodAuth = "Authorization: Basic cHJvbWV0aGV1czpVKlU=\r\n";
constexpr const char* kWrongAuth = "Authorization: Basic cHJvbWV0aGV1czpVKlUq\r\n";
constexpr const char* kTlsYaml =
    "tls_server_config: {cert_file: server.crt, key_file: server.key}\n";

std::string get(const std::string& path, const std::string& extra = "") {
  return test_http::request(path, "GET", extra);
}

std::string joined(const std::vector<ConfigError>& errors) {
  std::string out;
  for (const auto& e : errors) out += e.to_string() + "\n";
  return out;
}

// An HttpServer guarded by a WebSecurity read from a web.yml in a temporary
// directory that also holds a CA, server and client certificates. The loop
// runs on a thread of its own.
class WebSecurityTest : public ::testing::Test {
 protected:
  WebSecurityTest() : files_(test_tls::make_tls_files(dir_.path())) {}

  void start(const std::string& web_yaml, HttpLimits limits = {}) {
    web_file_ = dir_.write_text("web.yml", web_yaml).string();
    server_ = std::make_unique<HttpServer>(loop_.io(), limits);
    server_->route("/hello", {"GET"},
                   [](const HttpRequest&) { return HttpResponse::text(200, "hello\n"); });
    server_->set_observer([this](const std::string& route, unsigned status) {
      observed_.emplace_back(route, status);
    });
    web_ = std::make_unique<WebSecurity>(loop_.io(), *server_, web_file_);
    std::vector<ConfigError> errors;
    ASSERT_TRUE(web_->load(&errors)) << joined(errors);
    boost::asio::ip::tcp::endpoint ep;
    std::string error;
    ASSERT_TRUE(server_->listen("127.0.0.1:0", &ep, &error)) << error;
    port_ = ep.port();
    loop_.start();
  }

  // The server is loop-only: run on its thread, poll there.
  template <typename Fn>
  auto on_loop(Fn fn) {
    return loop_.run(std::move(fn));
  }
  template <typename Pred>
  bool eventually(Pred pred) {
    return loop_.eventually(std::move(pred));
  }

  // Rewrites web.yml and reloads it on the loop; the errors, if refused.
  std::string reload(const std::string& web_yaml) {
    dir_.write_text("web.yml", web_yaml);
    return on_loop([this] {
      std::vector<ConfigError> errors;
      web_->load(&errors);
      return joined(errors);
    });
  }

  std::uint64_t handshake_failures() {
    return on_loop([this] { return server_->tls_handshake_failures(); });
  }

  ~WebSecurityTest() override {
    loop_.stop([this] {
      if (server_) server_->close();
    });
    web_.reset();
    server_.reset();
  }

  testing::TempDir dir_;
  test_tls::TlsFiles files_;
  std::string web_file_;
  testing::LoopThread loop_;  // before what lives on it, so destroyed after it
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<WebSecurity> web_;
  std::uint16_t port_ = 0;
  std::vector<std::pair<std::string, unsigned>> observed_;
};

TEST_F(WebSecurityTest, TlsServesSeveralRequestsOnOneConnection) {
  start(kTlsYaml);  // relative names: next to web.yml
  TlsClient c(port_, files_.ca);
  ASSERT_FALSE(c.handshake());
  EXPECT_EQ(c.peer_common_name(), "ckptmon-test-server");
  for (int i = 0; i < 2; ++i) {
    auto r = c.request(get("/hello"));
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(r->result_int(), 200u);
    EXPECT_EQ(r->body(), "hello\n");
  }
  EXPECT_EQ(handshake_failures(), 0u);
}

TEST_F(WebSecurityTest, PlainHttpOnTheTlsPortIsToldSoInPlainHttp) {
  start(kTlsYaml);
  RawClient c(port_);
  ASSERT_TRUE(c.send(get("/hello")));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 400u);
  EXPECT_EQ(r->body(), "Client sent an HTTP request to an HTTPS server.\n");
  EXPECT_TRUE(c.wait_closed());
  EXPECT_EQ(handshake_failures(), 1u);
}

TEST_F(WebSecurityTest, ClientCaRequiresACertificateItSigned) {
  start(
      "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
      "  client_ca_file: ca.pem\n");
  {
    TlsClient none(port_, files_.ca);
    none.handshake();  // with TLS 1.3 the refusal may only show on the first read
    EXPECT_FALSE(none.request(get("/hello")));
  }
  {
    TlsClient stranger(port_, files_.ca, {files_.stranger_cert, files_.stranger_key, 0});
    stranger.handshake();
    EXPECT_FALSE(stranger.request(get("/hello")));
  }
  TlsClient scraper(port_, files_.ca, {files_.client_cert, files_.client_key, 0});
  ASSERT_FALSE(scraper.handshake());
  auto r = scraper.request(get("/hello"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 200u);
  EXPECT_TRUE(eventually([this] { return server_->tls_handshake_failures() == 2; }));
}

TEST_F(WebSecurityTest, MinVersionTls13RefusesATls12Client) {
  start("tls_server_config: {cert_file: server.crt, key_file: server.key, min_version: TLS13}\n");
  TlsClient old(port_, files_.ca, {"", "", TLS1_2_VERSION});
  EXPECT_TRUE(old.handshake());
  TlsClient current(port_, files_.ca);
  ASSERT_FALSE(current.handshake());
  EXPECT_TRUE(current.request(get("/hello")));
  EXPECT_TRUE(eventually([this] { return server_->tls_handshake_failures() == 1; }));
}

TEST_F(WebSecurityTest, BasicAuthGuardsEveryPathAndCountsFailures) {
  start(std::string("basic_auth_users:\n  prometheus: ") + kHashUU + "\n");
  RawClient c(port_);
  struct Step {
    std::string request;
    unsigned status;
  };
  // One keep-alive connection throughout: a 401 does not end it.
  for (const Step& s : {Step{get("/hello"), 401}, Step{get("/nope"), 401},
                        Step{get("/hello", kWrongAuth), 401}, Step{get("/hello", kGoodAuth), 200},
                        Step{get("/nope", kGoodAuth), 404}, Step{get("/hello", kGoodAuth), 200}}) {
    ASSERT_TRUE(c.send(s.request));
    auto r = c.read_response();
    ASSERT_TRUE(r) << s.request;
    EXPECT_EQ(r->result_int(), s.status) << s.request;
    if (s.status == 401) {
      EXPECT_EQ((*r)[http::field::www_authenticate], "Basic realm=\"ckptmon\"");
      EXPECT_EQ(r->body(), "Unauthorized\n");
    }
  }
  const auto stats = on_loop([this] { return web_->auth().stats(); });
  EXPECT_EQ(stats.missing, 2u);
  EXPECT_EQ(stats.invalid, 1u);
  EXPECT_EQ(stats.bcrypt_runs, 2u);  // the wrong password, then the right one once
  EXPECT_EQ(stats.cache_hits, 2u);
  EXPECT_TRUE(eventually([this] { return observed_.size() == 6; }));
  EXPECT_EQ(on_loop([this] { return observed_[0]; }),
            (std::pair<std::string, unsigned>{"/hello", 401}));
  EXPECT_EQ(on_loop([this] { return observed_[1]; }),
            (std::pair<std::string, unsigned>{"other", 401}));
  const std::string text = on_loop([this] {
    std::vector<prometheus::MetricFamily> families;
    HttpFigures figures;
    web_->add_figures(&figures);
    http_security_families(figures, families);
    return serialize(families);
  });
  EXPECT_NE(text.find("ckptmon_http_auth_failures_total{reason=\"missing\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ckptmon_http_auth_failures_total{reason=\"invalid\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ckptmon_http_tls_handshake_failures_total 0\n"), std::string::npos) << text;
}

TEST_F(WebSecurityTest, TlsAndBasicAuthTogether) {
  start(std::string(kTlsYaml) + "basic_auth_users: {prometheus: '" + kHashUU + "'}\n");
  TlsClient c(port_, files_.ca);
  ASSERT_FALSE(c.handshake());
  auto denied = c.request(get("/hello"));
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->result_int(), 401u);
  auto allowed = c.request(get("/hello", kGoodAuth));
  ASSERT_TRUE(allowed);
  EXPECT_EQ(allowed->result_int(), 200u);
}

TEST_F(WebSecurityTest, ReloadPicksUpRotatedCertificatesAndKeepsOpenConnections) {
  start(kTlsYaml);
  TlsClient before(port_, files_.ca);
  ASSERT_FALSE(before.handshake());
  EXPECT_EQ(before.peer_common_name(), "ckptmon-test-server");

  // A new certificate, from a new CA, copied over the old files.
  fs::create_directory(dir_.path() / "new");
  auto rotated = test_tls::make_tls_files(dir_.path() / "new", "rotated-server");
  fs::copy_file(rotated.server_cert, files_.server_cert, fs::copy_options::overwrite_existing);
  fs::copy_file(rotated.server_key, files_.server_key, fs::copy_options::overwrite_existing);
  EXPECT_EQ(reload(kTlsYaml), "");

  TlsClient after(port_, rotated.ca);
  ASSERT_FALSE(after.handshake());
  EXPECT_EQ(after.peer_common_name(), "rotated-server");
  auto r = before.request(get("/hello"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 200u);
}

TEST_F(WebSecurityTest, RefusedReloadKeepsTheRunningSettings) {
  start(std::string("basic_auth_users:\n  prometheus: ") + kHashUU + "\n");
  EXPECT_EQ(reload("basic_auth_users:\n  prometheus: hunter2\n"),
            web_file_ +
                ":2:15: basic_auth_users.prometheus: expected a bcrypt hash ($2y$, $2b$ or $2a$, "
                "a cost from 04 to 31, then 53 characters of salt and hash); the value is not "
                "shown\n");
  EXPECT_EQ(reload("tls_server_config: {cert_file: gone.crt, key_file: server.key}\n"),
            web_file_ + ":1:32: tls_server_config.cert_file: cannot open " +
                (dir_.path() / "gone.crt").string() + ": No such file or directory\n");
  // Still plain HTTP, still the old user.
  RawClient c(port_);
  ASSERT_TRUE(c.send(get("/hello", kGoodAuth)));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 200u);
  ASSERT_TRUE(c.send(get("/hello")));
  r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 401u);
  // A good file with no users turns authentication off.
  EXPECT_EQ(reload(""), "");
  ASSERT_TRUE(c.send(get("/hello")));
  r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 200u);
}

TEST_F(WebSecurityTest, SilentClientIsDroppedAfterTheReadTimeout) {
  HttpLimits limits;
  limits.read_timeout = 200ms;
  limits.header_timeout = 200ms;  // the handshake waits on this one
  start(kTlsYaml, limits);
  RawClient c(port_);  // connects and never starts the handshake
  EXPECT_TRUE(c.wait_closed());
  EXPECT_EQ(c.unread(), "");
  EXPECT_TRUE(eventually([this] { return server_->tls_handshake_failures() == 1; }));
}

TEST_F(WebSecurityTest, TlsConnectionOverTheCapIsClosed) {
  HttpLimits limits;
  limits.max_connections = 1;
  start(kTlsYaml, limits);
  TlsClient first(port_, files_.ca);
  ASSERT_FALSE(first.handshake());
  // Past its head (its body on the way): not a connection to close for a newcomer.
  ASSERT_TRUE(first.send("GET /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n"));
  ASSERT_TRUE(
      eventually([this] { return server_->connections() == 1 && server_->first_heads() == 0; }));
  RawClient second(port_);
  EXPECT_TRUE(second.wait_closed());
  EXPECT_EQ(second.unread(), "");  // no plain-text 503 on a TLS port
  EXPECT_EQ(on_loop([this] { return server_->rejected_connections(); }), 1u);
  ASSERT_TRUE(first.send("ok"));
  auto r = first.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 200u);
}

// make_tls_context on files named by a real web config, so each error is
// reported where the file was named.
class MakeTlsContext : public ::testing::Test {
 protected:
  MakeTlsContext() : files_(test_tls::make_tls_files(dir_.path())) {}

  std::string errors_for(const std::string& yaml) {
    const std::string file = dir_.write_text("web.yml", yaml).string();
    WebConfigResult r = load_web_config_file(file);
    EXPECT_TRUE(r.config && r.config->tls) << joined(r.errors);
    if (!r.config || !r.config->tls) return "";
    std::vector<ConfigError> errors;
    auto ctx = make_tls_context(*r.config->tls, file, &errors);
    EXPECT_EQ(ctx == nullptr, !errors.empty());
    return joined(errors);
  }

  std::string p(const std::string& name) const { return (dir_.path() / name).string(); }
  std::string web() const { return p("web.yml"); }

  testing::TempDir dir_;
  test_tls::TlsFiles files_;
};

TEST_F(MakeTlsContext, GoodFilesMakeAContext) {
  EXPECT_EQ(errors_for("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                       "  client_ca_file: ca.pem\n"),
            "");
}

TEST_F(MakeTlsContext, MissingFilesAreNamedAtTheirKeys) {
  EXPECT_EQ(errors_for("tls_server_config:\n  cert_file: nope.crt\n  key_file: nope.key\n"
                       "  client_ca_file: nope.pem\n"),
            web() + ":2:14: tls_server_config.cert_file: cannot open " + p("nope.crt") +
                ": No such file or directory\n" + web() +
                ":3:13: tls_server_config.key_file: cannot open " + p("nope.key") +
                ": No such file or directory\n" + web() +
                ":4:19: tls_server_config.client_ca_file: cannot open " + p("nope.pem") +
                ": No such file or directory\n");
}

TEST_F(MakeTlsContext, KeyThatDoesNotMatchTheCertificate) {
  EXPECT_EQ(errors_for("tls_server_config:\n  cert_file: server.crt\n  key_file: unrelated.key\n"),
            web() + ":3:13: tls_server_config.key_file: the private key in " + p("unrelated.key") +
                " does not match the certificate in " + p("server.crt") + "\n");
}

TEST_F(MakeTlsContext, FilesThatAreNotPem) {
  dir_.write_text("junk.pem", "not a certificate\n");
  const std::string out = errors_for(
      "tls_server_config:\n  cert_file: junk.pem\n  key_file: server.crt\n"
      "  client_ca_file: junk.pem\n");
  // The reasons after the colon are OpenSSL's own words; the rest is ours.
  const std::vector<std::string> prefixes = {
      web() + ":2:14: tls_server_config.cert_file: cannot load a certificate chain from " +
          p("junk.pem") + ": ",
      web() + ":3:13: tls_server_config.key_file: cannot load a private key from " +
          p("server.crt") + ": ",
      web() + ":4:19: tls_server_config.client_ca_file: cannot load CA certificates from " +
          p("junk.pem") + ": "};
  std::vector<std::string> lines;
  for (std::size_t start = 0, nl; (nl = out.find('\n', start)) != std::string::npos;
       start = nl + 1) {
    lines.push_back(out.substr(start, nl - start));
  }
  ASSERT_EQ(lines.size(), prefixes.size()) << out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].rfind(prefixes[i], 0), 0u) << lines[i];
    EXPECT_GT(lines[i].size(), prefixes[i].size()) << lines[i];
  }
  EXPECT_EQ(lines[0].find("(the file"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("(the file holds a certificate, not a key)"), std::string::npos)
      << lines[1];
}

TEST_F(MakeTlsContext, SwappedCertificateAndKeyAreCalledOut) {
  const std::string out =
      errors_for("tls_server_config:\n  cert_file: server.key\n  key_file: server.crt\n");
  EXPECT_NE(out.find(web() +
                     ":2:14: tls_server_config.cert_file: cannot load a certificate "
                     "chain from " +
                     p("server.key") + ": "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("(the file holds a private key, not a certificate)\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("(the file holds a certificate, not a key)\n"), std::string::npos) << out;
}

TEST_F(MakeTlsContext, KeyWithAPassphraseIsRefusedWithoutAsking) {
  test_tls::write_encrypted_pem(p("locked.key"), test_tls::new_key().get(), "secret");
  const std::string out =
      errors_for("tls_server_config:\n  cert_file: server.crt\n  key_file: locked.key\n");
  EXPECT_EQ(out.rfind(web() + ":3:13: tls_server_config.key_file: cannot load a private key from " +
                          p("locked.key") + ": ",
                      0),
            0u)
      << out;
  EXPECT_NE(out.find("(keys protected by a passphrase are not supported)\n"), std::string::npos)
      << out;
}

}  // namespace
}  // namespace ckptmon
