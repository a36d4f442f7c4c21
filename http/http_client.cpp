#include "http/http_client.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509err.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/core/detail/base64.hpp>
#include <boost/beast/http.hpp>

#include "util/text.hpp"
#include "util/version.hpp"

namespace ckptmon {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

struct HttpClient::Shared {
  std::shared_ptr<ssl::context> tls;  // https only
  HttpTlsConfig tls_config;
  std::string authorization;  // the Authorization header's value; empty = none
  std::vector<std::pair<std::string, std::string>> headers;
  std::string setup_error;
};

namespace {

constexpr std::size_t kSecretFileLimit = std::size_t{64} * 1024;

bool read_secret_file(const std::string& path, std::string& out, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read " + path + ": " + errno_text(errno);
    return false;
  }
  std::ostringstream read;
  read << in.rdbuf();
  std::string text = std::move(read).str();
  if (text.size() > kSecretFileLimit) {
    error = path + " is larger than 64 KiB";
    return false;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.find_first_of("\r\n") != std::string::npos) {
    error = path + " holds more than one line";
    return false;
  }
  out = std::move(text);
  return true;
}

// The Authorization header for `auth`, or an error naming the file.
bool authorization_header(const HttpAuthConfig& auth, std::string& out, std::string& error) {
  if (!auth.username.empty()) {
    std::string password = auth.password;
    if (!auth.password_file.empty() && !read_secret_file(auth.password_file, password, error)) {
      error = "basic_auth.password_file: " + error;
      return false;
    }
    const std::string plain = auth.username + ":" + password;
    std::string b64(beast::detail::base64::encoded_size(plain.size()), '\0');
    b64.resize(beast::detail::base64::encode(b64.data(), plain.data(), plain.size()));
    out = "Basic " + b64;
    return true;
  }
  if (!auth.type.empty()) {
    std::string credentials = auth.credentials;
    if (!auth.credentials_file.empty() &&
        !read_secret_file(auth.credentials_file, credentials, error)) {
      error = "authorization.credentials_file: " + error;
      return false;
    }
    out = auth.type;
    out += ' ';
    out += credentials;
  }
  return true;
}

// The client TLS context: TLS 1.2 or newer, the CA file (else the system's
// trust store), the client certificate and key.
std::shared_ptr<ssl::context> client_tls_context(const HttpTlsConfig& t, std::string& error) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  boost::system::error_code ec;
  if (!t.ca_file.empty()) {
    ctx->load_verify_file(t.ca_file, ec);
    if (ec) {
      error = "tls_config.ca_file " + t.ca_file + ": " + ec.message();
      return nullptr;
    }
  } else {
    ctx->set_default_verify_paths(ec);
  }
  if (!t.cert_file.empty()) {
    ctx->use_certificate_chain_file(t.cert_file, ec);
    if (ec) {
      error = "tls_config.cert_file " + t.cert_file + ": " + ec.message();
      return nullptr;
    }
    ctx->use_private_key_file(t.key_file, ssl::context::pem, ec);
    const bool mismatch =
        ec && ec.category() == asio::error::get_ssl_category() &&
        ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH;
    if (ec && !mismatch) {
      error = "tls_config.key_file " + t.key_file + ": " + ec.message();
      return nullptr;
    }
    if (mismatch || SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
      error = "tls_config.key_file " + t.key_file + ": does not match cert_file";
      return nullptr;
    }
  }
  return ctx;
}

bool same_host(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// A peer's header text for a message: at most 200 bytes, control
// characters and non-ASCII bytes as '?'.
std::string shown(std::string_view text) {
  std::string out(text.substr(0, 200));
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) c = '?';
  }
  if (text.size() > 200) out += "...";
  return out;
}

std::string seconds_text(double s) {
  char buf[32];
  static_cast<void>(std::snprintf(buf, sizeof buf, "%g s", s));
  return buf;
}

// One request: resolve, then per hop (the first and each redirect) connect,
// TLS handshake (https), write, read the header, read the body; all under
// one deadline. Owned by the shared_ptrs its pending operations hold.
class Call final : public HttpCall, public std::enable_shared_from_this<Call> {
 public:
  Call(asio::io_context& io, const HttpUrl& base, std::shared_ptr<const HttpClient::Shared> shared,
       HttpClientRequest request, HttpClient::Done done)
      : io_(io),
        url_(base),
        target_(base.path + request.target),
        shared_(std::move(shared)),
        request_(std::move(request)),
        done_(std::move(done)),
        resolver_(io),
        deadline_(io) {
    where_ = (url_.host.find(':') != std::string::npos ? "[" + url_.host + "]" : url_.host) + ":" +
             std::to_string(url_.port);
  }

  void start() {
    if (!shared_->setup_error.empty()) {
      // Completes on the loop like any other failure, never inside start().
      asio::post(io_, [self = shared_from_this()] { self->fail(self->shared_->setup_error); });
      return;
    }
    deadline_.expires_after(std::chrono::milliseconds(
        static_cast<std::int64_t>(std::max(0.0, request_.timeout_seconds) * 1000)));
    deadline_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec) return;  // cancelled: the request finished first
      self->fail("timeout: no complete answer from " + self->where_ + " within " +
                 seconds_text(self->request_.timeout_seconds));
    });
    resolver_.async_resolve(
        url_.host, std::to_string(url_.port),
        [self = shared_from_this()](beast::error_code ec, const tcp::resolver::results_type& r) {
          if (ec) {
            return self->fail("cannot resolve " + self->url_.host + ": " + ec.message());
          }
          self->endpoints_ = r;
          self->connect();
        });
  }

  void abandon() override {
    done_ = nullptr;
    fail("abandoned");
  }

 private:
  void connect() {
    if (finished_) return;
    tls_stream_.reset();  // before the stream it wraps
    stream_ = std::make_unique<beast::tcp_stream>(io_);
    if (shared_->tls) make_tls_stream();
    stream_->async_connect(endpoints_, [self = shared_from_this()](beast::error_code ec,
                                                                   const tcp::endpoint&) {
      if (ec) return self->fail("cannot connect to " + self->where_ + ": " + ec.message());
      if (!self->tls_stream_) return self->write(*self->stream_);
      self->tls_stream_->async_handshake(ssl::stream_base::client, [self](beast::error_code ec2) {
        if (ec2)
          return self->fail("TLS handshake with " + self->where_ + ": " + self->tls_error(ec2));
        self->write(*self->tls_stream_);
      });
    });
  }

  void make_tls_stream() {
    tls_stream_ = std::make_unique<ssl::stream<beast::tcp_stream&>>(*stream_, *shared_->tls);
    const HttpTlsConfig& t = shared_->tls_config;
    const std::string name = t.server_name.empty() ? url_.host : t.server_name;
    boost::system::error_code ec;
    (void)asio::ip::make_address(name, ec);
    // SNI carries host names only, never an IP literal (RFC 6066).
    // SSL_set_tlsext_host_name() itself, without the macro's C cast.
    if (ec) {
      SSL_ctrl(tls_stream_->native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME,
               TLSEXT_NAMETYPE_host_name, const_cast<char*>(name.c_str()));
    }
    if (t.insecure_skip_verify) {
      tls_stream_->set_verify_mode(ssl::verify_none);
    } else {
      tls_stream_->set_verify_mode(ssl::verify_peer);
      tls_stream_->set_verify_callback(ssl::host_name_verification(name));
    }
  }

  // "certificate verify failed (self-signed certificate in certificate
  // chain)": OpenSSL's reason plus the verification result when there is one.
  // Whatever OpenSSL's error queue called it ("EVP lib" for a CA whose name
  // matches but whose key did not sign), a failed verification is said so.
  std::string tls_error(const beast::error_code& ec) const {
    if (tls_stream_) {
      const long v = SSL_get_verify_result(tls_stream_->native_handle());
      if (v != X509_V_OK) {
        return std::string("certificate verify failed (") + X509_verify_cert_error_string(v) + ")";
      }
    }
    return ec.message();
  }

  void build_request() {
    req_ = {};
    const bool post = request_.method == HttpMethod::kPost;
    req_.method(post ? http::verb::post : http::verb::get);
    req_.target(target_.empty() ? "/" : target_);
    req_.version(11);
    const bool default_port = url_.port == (url_.tls ? 443 : 80);
    const bool v6 = url_.host.find(':') != std::string::npos;
    std::string host = v6 ? "[" + url_.host + "]" : url_.host;
    if (!default_port) host += ":" + std::to_string(url_.port);
    req_.set(http::field::host, host);
    req_.set(http::field::user_agent, std::string("ckptmon/") + kVersion);
    for (const auto& [name, value] : shared_->headers) req_.set(name, value);
    if (!shared_->authorization.empty())
      req_.set(http::field::authorization, shared_->authorization);
    req_.keep_alive(false);
    if (post) {
      if (!request_.content_type.empty())
        req_.set(http::field::content_type, request_.content_type);
      req_.body() = request_.body;
      req_.prepare_payload();
    }
  }

  template <class Stream>
  void write(Stream& s) {
    if (finished_) return;
    build_request();
    http::async_write(s, req_, [self = shared_from_this(), &s](beast::error_code ec, std::size_t) {
      if (ec) return self->fail("cannot send the request to " + self->where_ + ": " + ec.message());
      self->buffer_.clear();
      self->parser_.emplace();
      self->parser_->body_limit(self->request_.max_body);
      http::async_read_header(
          s, self->buffer_, *self->parser_,
          [self, &s](beast::error_code ec2, std::size_t) { self->on_header(s, ec2); });
    });
  }

  template <class Stream>
  void on_header(Stream& s, const beast::error_code& ec) {
    if (ec == http::error::body_limit) return too_large();
    if (ec) return fail("no answer from " + where_ + ": " + ec.message());
    // A Content-Length over the cap is refused before any of the body is read.
    if (auto len = parser_->content_length(); len && *len > request_.max_body) return too_large();
    http::async_read(
        s, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec2, std::size_t) {
          if (ec2 == http::error::body_limit) return self->too_large();
          // A server closing a TLS connection without close_notify after a
          // complete response is fine.
          if (ec2 && !(ec2 == ssl::error::stream_truncated && self->parser_->is_done())) {
            return self->fail("no answer from " + self->where_ + ": " + ec2.message());
          }
          self->on_response();
        });
  }

  void too_large() {
    fail("response from " + where_ + " larger than " + std::to_string(request_.max_body) +
         " bytes");
  }

  void on_response() {
    auto& res = parser_->get();
    const unsigned status = res.result_int();
    const bool redirect =
        status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
    if (redirect && request_.method == HttpMethod::kGet) {
      const auto location = res[http::field::location];
      if (!location.empty()) return follow(std::string_view(location.data(), location.size()));
    }
    HttpClientResponse out;
    out.ok = true;
    out.status = status;
    out.content_type = std::string(res[http::field::content_type]);
    out.body = std::move(res.body());
    finish(std::move(out));
  }

  // Same scheme, host and port: the next hop. Anything else: an error.
  void follow(std::string_view location) {
    if (++redirects_ > kMaxRedirects) {
      return fail("more than " + std::to_string(kMaxRedirects) + " redirects from " + where_);
    }
    std::string next;
    if (location.starts_with("http://") || location.starts_with("https://")) {
      HttpUrl to;
      std::string target;
      std::string error;
      if (!split_http_url(std::string(location), to, target, error) || to.tls != url_.tls ||
          to.port != url_.port || !same_host(to.host, url_.host)) {
        return fail("redirected by " + where_ + " to " + shown(location) +
                    ", another host or scheme: not followed");
      }
      next = target;
    } else if (location.starts_with("//")) {
      return fail("redirected by " + where_ + " to " + shown(location) +
                  ", another host or scheme: not followed");
    } else if (location.starts_with("/")) {
      next = std::string(location);
    } else {
      // Relative to the current path's directory (RFC 3986 section 5.2.3).
      const std::string path = target_.substr(0, target_.find('?'));
      next = path.substr(0, path.rfind('/') + 1) + std::string(location);
    }
    if (next.find_first_of(" \t\r\n") != std::string::npos || next.size() > 8192) {
      return fail("redirected by " + where_ + " to an unusable location " + shown(location));
    }
    target_ = std::move(next);
    beast::error_code ignored;
    stream_->socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_->close();
    connect();
  }

  void fail(std::string error) {
    HttpClientResponse out;
    out.error = std::move(error);
    finish(std::move(out));
  }

  // Runs the completion once, whichever of deadline and I/O comes first.
  void finish(HttpClientResponse out) {
    if (finished_) return;
    finished_ = true;
    deadline_.cancel();
    resolver_.cancel();
    if (stream_) {
      beast::error_code ignored;
      stream_->socket().shutdown(tcp::socket::shutdown_both, ignored);
      stream_->close();
    }
    if (done_) {
      HttpClient::Done d = std::move(done_);
      done_ = nullptr;
      d(std::move(out));
    }
  }

  asio::io_context& io_;
  HttpUrl url_;
  std::string target_;  // the path and query of the current hop
  std::string where_;   // "host:port" for messages
  std::shared_ptr<const HttpClient::Shared> shared_;
  HttpClientRequest request_;
  HttpClient::Done done_;
  tcp::resolver resolver_;
  tcp::resolver::results_type endpoints_;
  std::unique_ptr<beast::tcp_stream> stream_;
  std::unique_ptr<ssl::stream<beast::tcp_stream&>> tls_stream_;  // https only, over stream_
  asio::steady_timer deadline_;
  http::request<http::string_body> req_;
  beast::flat_buffer buffer_;
  std::optional<http::response_parser<http::string_body>> parser_;
  int redirects_ = 0;
  bool finished_ = false;
};

}  // namespace

HttpClient::HttpClient(HttpUrl base, const HttpClientConfig& config) : base_(std::move(base)) {
  auto shared = std::make_shared<Shared>();
  shared->tls_config = config.tls;
  shared->headers = config.headers;
  if (base_.tls) shared->tls = client_tls_context(config.tls, shared->setup_error);
  if (shared->setup_error.empty()) {
    authorization_header(config.auth, shared->authorization, shared->setup_error);
  }
  shared_ = std::move(shared);
}

HttpClient::~HttpClient() = default;

const std::string& HttpClient::setup_error() const { return shared_->setup_error; }

std::shared_ptr<HttpCall> HttpClient::start(asio::io_context& io, HttpClientRequest request,
                                            Done done) const {
  auto call = std::make_shared<Call>(io, base_, shared_, std::move(request), std::move(done));
  call->start();
  return call;
}

HttpClientResponse HttpClient::fetch(HttpClientRequest request) const {
  asio::io_context io;
  HttpClientResponse out;
  auto call = start(io, std::move(request), [&out](HttpClientResponse r) { out = std::move(r); });
  io.run();
  return out;
}

HttpClientResponse http_get(const HttpUrl& base, const std::string& target, double timeout_seconds,
                            std::size_t max_body, const HttpClientConfig& config) {
  HttpClientRequest req;
  req.target = target;
  req.timeout_seconds = timeout_seconds;
  req.max_body = max_body;
  return HttpClient(base, config).fetch(std::move(req));
}

std::string url_text(const HttpUrl& url) {
  const bool v6 = url.host.find(':') != std::string::npos;
  return std::string(url.tls ? "https://" : "http://") + (v6 ? "[" + url.host + "]" : url.host) +
         ":" + std::to_string(url.port) + url.path;
}

bool split_http_url(const std::string& url, HttpUrl& base, std::string& target,
                    std::string& error) {
  const auto scheme = url.find("://");
  const auto slash =
      scheme == std::string::npos ? std::string::npos : url.find_first_of("/?#", scheme + 3);
  const std::string head = slash == std::string::npos ? url : url.substr(0, slash);
  target = slash == std::string::npos ? "/" : url.substr(slash);
  if (target.front() == '#') {
    error = "a URL with a fragment";
    return false;
  }
  if (target.front() == '?') target.insert(0, "/");
  if (target.find_first_of(" \t\r\n") != std::string::npos) {
    error = "a URL with white space";
    return false;
  }
  auto u = parse_http_url(head, &error);
  if (!u) return false;
  base = std::move(*u);
  return true;
}

HttpFetch make_http_fetch(const HttpClientConfig& config) {
  struct Clients {
    std::mutex mu;
    HttpClientConfig config;
    std::vector<std::pair<std::string, std::shared_ptr<const HttpClient>>> by_base;
  };
  auto clients = std::make_shared<Clients>();
  clients->config = config;
  return [clients](const std::string& url, double timeout_seconds, std::size_t max_bytes) {
    FetchResult r;
    HttpUrl base;
    HttpClientRequest req;
    std::string error;
    if (!split_http_url(url, base, req.target, error)) {
      r.error = "bad URL " + shown(url) + ": " + error;
      return r;
    }
    std::shared_ptr<const HttpClient> client;
    {
      const std::lock_guard lock(clients->mu);
      const std::string key = url_text(base);
      for (const auto& [k, c] : clients->by_base) {
        if (k == key) client = c;
      }
      if (!client) {
        client = std::make_shared<const HttpClient>(base, clients->config);
        // A source queries one base; a handful covers every caller.
        if (clients->by_base.size() >= 8) clients->by_base.erase(clients->by_base.begin());
        clients->by_base.emplace_back(key, client);
      }
    }
    req.timeout_seconds = timeout_seconds;
    req.max_body = max_bytes;
    return client->fetch(std::move(req));
  };
}

}  // namespace ckptmon
