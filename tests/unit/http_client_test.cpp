// The one HTTP client against a real peer: a Beast server on its own thread
// that records every request it gets (method, target, headers) and answers
// what the test scripts, over plain TCP or TLS with throwaway certificates.
// Expected header values are computed here independently (base64 of "u:p"
// by hand), not by the client.

#include "http/http_client.hpp"

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "temp_dir.hpp"
#include "tls_fixture.hpp"

namespace ckptmon {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

struct Seen {
  std::string method, target;
  std::map<std::string, std::string> headers;  // names lower-cased
};

// One connection at a time, handled synchronously on the server's thread:
// read one request, record it, write what `answer` returns (raw bytes; empty
// keeps the connection open without a word, for deadline tests).
class PeerServer {
 public:
  using Answer = std::function<std::string(const Seen&)>;

  explicit PeerServer(Answer answer, std::shared_ptr<ssl::context> tls = nullptr)
      : answer_(std::move(answer)), tls_(std::move(tls)), acceptor_(io_) {
    tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(ep.protocol());
    acceptor_.bind(ep);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~PeerServer() {
    io_.stop();
    thread_.join();
  }
  PeerServer(const PeerServer&) = delete;
  PeerServer& operator=(const PeerServer&) = delete;

  std::uint16_t port() const { return port_; }
  std::string base() const {
    return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
  }
  std::vector<Seen> seen() const {
    const std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  void accept() {
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket s) {
      if (ec) return;
      serve(std::move(s));
      accept();
    });
  }

  // False when the answer is silence (the connection is kept open).
  template <class Stream>
  bool exchange(Stream& stream) {
    beast::flat_buffer buf;
    http::request<http::string_body> req;
    beast::error_code ec;
    http::read(stream, buf, req, ec);
    if (ec) return true;
    Seen s;
    s.method = std::string(req.method_string());
    s.target = std::string(req.target());
    for (const auto& field : req) {
      std::string name(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      s.headers[name] = std::string(field.value());
    }
    {
      const std::lock_guard lock(mu_);
      seen_.push_back(s);
    }
    const std::string raw = answer_(s);
    if (raw.empty()) return false;
    asio::write(stream, asio::buffer(raw), ec);
    return true;
  }

  void serve(tcp::socket s) {
    if (!tls_) {
      // A silent answer keeps the socket open until the server stops.
      if (!exchange(s)) silent_.push_back(std::move(s));
      return;
    }
    ssl::stream<tcp::socket> stream(std::move(s), *tls_);
    beast::error_code ec;
    stream.handshake(ssl::stream_base::server, ec);
    if (ec) return;  // the client refused our certificate
    if (exchange(stream)) stream.shutdown(ec);
  }

  Answer answer_;
  std::shared_ptr<ssl::context> tls_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<Seen> seen_;
  std::vector<tcp::socket> silent_;
};

std::string ok(const std::string& body) {
  return "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

std::string redirect(const std::string& location) {
  return "HTTP/1.1 302 Found\r\nLocation: " + location +
         "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
}

std::shared_ptr<ssl::context> server_tls(const test_tls::TlsFiles& f) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  ctx->use_certificate_chain_file(f.server_cert);
  ctx->use_private_key_file(f.server_key, ssl::context::pem);
  return ctx;
}

HttpUrl url_of(const std::string& text) {
  std::string error;
  auto u = parse_http_url(text, &error);
  EXPECT_TRUE(u) << error;
  return u.value_or(HttpUrl{});
}

HttpClientRequest get(const std::string& target, double timeout = 10) {
  HttpClientRequest r;
  r.target = target;
  r.timeout_seconds = timeout;
  return r;
}

// Over https with the CA that signed the server: a bearer token from a file,
// a tenant header, the base URL's path prefix and the Host header all reach
// the server as written.
TEST(HttpClient, HttpsWithABearerTokenFileAndATenantHeader) {
  testing::TempDir dir;
  const auto files = test_tls::make_tls_files(dir.path());
  PeerServer server([](const Seen&) { return ok("up 1\n"); }, server_tls(files));
  HttpClientConfig c;
  c.tls.ca_file = files.ca;
  c.auth.type = "Bearer";
  c.auth.credentials_file = dir.write_text("token", "s3cr3t-token\n").string();
  c.headers = {{"X-Scope-OrgID", "team-a"}};
  HttpClient client(url_of(server.base() + "/prom"), c);
  ASSERT_EQ(client.setup_error(), "");
  HttpClientResponse r = client.fetch(get("/api/v1/query?query=up"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, "up 1\n");
  EXPECT_EQ(r.content_type, "text/plain");
  auto seen = server.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "GET");
  EXPECT_EQ(seen[0].target, "/prom/api/v1/query?query=up");
  EXPECT_EQ(seen[0].headers["authorization"], "Bearer s3cr3t-token");  // the newline trimmed
  EXPECT_EQ(seen[0].headers["x-scope-orgid"], "team-a");
  EXPECT_EQ(seen[0].headers["host"], "127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(seen[0].headers["user-agent"].rfind("ckptmon/", 0), 0u);
}

TEST(HttpClient, BasicAuthReadsThePasswordFile) {
  testing::TempDir dir;
  PeerServer server([](const Seen&) { return ok("x"); });
  HttpClientConfig c;
  c.auth.username = "u";
  c.auth.password_file = dir.write_text("pw", "p").string();
  auto r = HttpClient(url_of(server.base()), c).fetch(get("/"));
  ASSERT_TRUE(r.ok) << r.error;
  // base64("u:p") = "dTpw" (RFC 4648: 0x75 0x3a 0x70 -> 011101 010011 101001 110000).
  EXPECT_EQ(server.seen().at(0).headers["authorization"], "Basic dTpw");
}

// A certificate nobody vouched for, or a name it does not carry, fails the
// request with OpenSSL's reason; insecure_skip_verify accepts both.
TEST(HttpClient, VerifiesTheServerCertificateAndItsName) {
  testing::TempDir dir;
  testing::TempDir other;
  const auto files = test_tls::make_tls_files(dir.path());
  const auto strangers = test_tls::make_tls_files(other.path());
  PeerServer server([](const Seen&) { return ok("x"); }, server_tls(files));

  HttpClientConfig wrong_ca;
  wrong_ca.tls.ca_file = strangers.ca;
  auto r = HttpClient(url_of(server.base()), wrong_ca).fetch(get("/"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("TLS handshake with 127.0.0.1:" + std::to_string(server.port()) +
                         ": certificate verify failed"),
            std::string::npos)
      << r.error;

  HttpClientConfig wrong_name;
  wrong_name.tls.ca_file = files.ca;
  wrong_name.tls.server_name = "prometheus.example";
  r = HttpClient(url_of(server.base()), wrong_name).fetch(get("/"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("certificate verify failed"), std::string::npos) << r.error;

  HttpClientConfig right_name = wrong_name;
  right_name.tls.server_name = "localhost";  // the certificate's DNS name
  r = HttpClient(url_of(server.base()), right_name).fetch(get("/"));
  EXPECT_TRUE(r.ok) << r.error;

  HttpClientConfig skip = wrong_ca;
  skip.tls.insecure_skip_verify = true;
  r = HttpClient(url_of(server.base()), skip).fetch(get("/"));
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(server.seen().size(), 2u);  // the refused handshakes sent no request
}

// Files that cannot be read make a client that says why, and every request
// fails with that, before any connection.
TEST(HttpClient, SetupErrorsNameTheFile) {
  testing::TempDir dir;
  const auto files = test_tls::make_tls_files(dir.path());
  PeerServer server([](const Seen&) { return ok("x"); }, server_tls(files));
  HttpClientConfig c;
  c.tls.ca_file = dir.file("missing-ca.pem");
  HttpClient no_ca(url_of(server.base()), c);
  EXPECT_NE(no_ca.setup_error().find("tls_config.ca_file " + dir.file("missing-ca.pem")),
            std::string::npos)
      << no_ca.setup_error();
  auto r = no_ca.fetch(get("/"));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, no_ca.setup_error());

  c = {};
  c.tls.cert_file = files.client_cert;
  c.tls.key_file = files.unrelated_key;
  EXPECT_NE(HttpClient(url_of(server.base()), c).setup_error().find("does not match cert_file"),
            std::string::npos);

  c = {};
  c.auth.username = "u";
  c.auth.password_file = dir.file("nope");
  EXPECT_NE(HttpClient(url_of(server.base()), c).setup_error().find("basic_auth.password_file"),
            std::string::npos);
  c.auth.password_file = dir.write_text("two-lines", "a\nb\n").string();
  EXPECT_NE(HttpClient(url_of(server.base()), c).setup_error().find("more than one line"),
            std::string::npos);
  EXPECT_TRUE(server.seen().empty());
}

// GET follows a redirect on the same host (credentials kept); a redirect to
// another host is refused and named; a loop stops after kMaxRedirects.
TEST(HttpClient, RedirectsStayOnTheSameHost) {
  std::atomic<std::uint16_t> port{0};
  PeerServer server([&port](const Seen& s) {
    if (s.target == "/old") return redirect("/new?x=1");
    if (s.target == "/abs") {
      return redirect("http://127.0.0.1:" + std::to_string(port.load()) + "/new?x=2");
    }
    if (s.target == "/away") return redirect("http://127.0.0.2:9/steal");
    if (s.target == "/scheme") return redirect("//evil.example/x");
    if (s.target.rfind("/loop", 0) == 0) return redirect("/loop");
    return ok("at " + s.target);
  });
  port = server.port();
  HttpClientConfig c;
  c.auth.type = "Bearer";
  c.auth.credentials = "t";
  HttpClient client(url_of(server.base()), c);

  auto r = client.fetch(get("/old"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.body, "at /new?x=1");
  r = client.fetch(get("/abs"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.body, "at /new?x=2");
  auto seen = server.seen();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[1].headers["authorization"], "Bearer t");

  r = client.fetch(get("/away"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("to http://127.0.0.2:9/steal, another host or scheme: not followed"),
            std::string::npos)
      << r.error;
  r = client.fetch(get("/scheme"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("not followed"), std::string::npos) << r.error;

  const std::size_t before = server.seen().size();
  r = client.fetch(get("/loop"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("more than 5 redirects"), std::string::npos) << r.error;
  EXPECT_EQ(server.seen().size() - before, static_cast<std::size_t>(kMaxRedirects) + 1);

  // POST follows none: the 302 is the answer.
  HttpClientRequest post;
  post.method = HttpMethod::kPost;
  post.target = "/old";
  post.body = "{}";
  post.content_type = "application/json";
  r = client.fetch(post);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 302u);
  EXPECT_EQ(server.seen().back().method, "POST");
  EXPECT_EQ(server.seen().back().headers["content-type"], "application/json");
}

// The cap holds on a Content-Length over it and on a chunked body that grows
// past it; a peer that never answers fails at the deadline.
TEST(HttpClient, CapsTheBodyAndKeepsTheDeadline) {
  PeerServer server([](const Seen& s) -> std::string {
    if (s.target == "/big") return ok(std::string(5000, 'x'));
    if (s.target == "/chunked") {
      std::string raw =
          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
      for (int i = 0; i < 5; ++i) raw += "3e8\r\n" + std::string(1000, 'y') + "\r\n";
      return raw + "0\r\n\r\n";
    }
    if (s.target == "/silent") return "";
    return ok("small");
  });
  HttpClient client(url_of(server.base()), {});
  HttpClientRequest r = get("/big");
  r.max_body = 4096;
  auto big = client.fetch(r);
  EXPECT_FALSE(big.ok);
  EXPECT_NE(big.error.find("larger than 4096 bytes"), std::string::npos) << big.error;
  r.target = "/chunked";
  auto chunked = client.fetch(r);
  EXPECT_FALSE(chunked.ok);
  EXPECT_NE(chunked.error.find("larger than 4096 bytes"), std::string::npos) << chunked.error;
  r.max_body = 5000;
  r.target = "/big";
  EXPECT_TRUE(client.fetch(r).ok);

  auto silent = client.fetch(get("/silent", 0.3));
  EXPECT_FALSE(silent.ok);
  EXPECT_EQ(silent.error.rfind("timeout: no complete answer from 127.0.0.1:", 0), 0u)
      << silent.error;
}

// The collectors' fetch: one client per base, bad URLs refused without a
// connection.
TEST(HttpFetch, SplitsTheUrlAndRefusesBadOnes) {
  PeerServer server([](const Seen& s) { return ok(s.target); });
  HttpClientConfig c;
  c.headers = {{"X-Scope-OrgID", "t1"}};
  HttpFetch fetch = make_http_fetch(c);
  auto q = fetch(server.base() + "/api/v1/query?query=up", 10, 1 << 20);
  ASSERT_TRUE(q.ok) << q.error;
  EXPECT_EQ(q.body, "/api/v1/query?query=up");
  EXPECT_EQ(server.seen().at(0).headers["x-scope-orgid"], "t1");
  auto root = fetch(server.base() + "?x=1", 10, 1 << 20);
  ASSERT_TRUE(root.ok) << root.error;
  EXPECT_EQ(root.body, "/?x=1");
  EXPECT_FALSE(fetch("ftp://x/y", 10, 100).ok);
  auto frag = fetch(server.base() + "#top", 10, 100);
  EXPECT_FALSE(frag.ok);
  EXPECT_EQ(server.seen().size(), 2u);
}

}  // namespace
}  // namespace ckptmon
