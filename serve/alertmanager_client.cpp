#include "serve/alertmanager_client.hpp"

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/core/detail/base64.hpp>
#include <boost/beast/http.hpp>

#include "api/alerts_wire.hpp"
#include "util/log.hpp"
#include "util/text.hpp"
#include "util/version.hpp"

namespace ckptmon {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

namespace {
constexpr std::size_t kResponseLimit = std::size_t{64} * 1024;
}

// One POST: resolve, connect, TLS handshake (https), write, read, under one
// deadline. Owned by the shared_ptrs its pending operations hold; the client
// keeps one to cancel it.
struct AlertmanagerClient::Request : std::enable_shared_from_this<Request> {
  using Done = std::function<void(bool ok, std::string error)>;

  Request(asio::io_context& io, const HttpUrl& url, std::string body, Done done,
          const std::shared_ptr<ssl::context>& tls, const AlertmanagerTlsConfig& tls_config,
          const std::string& authorization)
      : resolver_(io), stream_(io), deadline_(io), done_(std::move(done)) {
    req_.method(http::verb::post);
    req_.target(url.path + "/api/v2/alerts");
    req_.version(11);
    const bool v6 = url.host.find(':') != std::string::npos;
    req_.set(http::field::host,
             (v6 ? "[" + url.host + "]" : url.host) + ":" + std::to_string(url.port));
    req_.set(http::field::user_agent, std::string("ckptmon/") + kVersion);
    req_.set(http::field::content_type, "application/json");
    if (!authorization.empty()) req_.set(http::field::authorization, authorization);
    req_.keep_alive(false);
    req_.body() = std::move(body);
    req_.prepare_payload();
    host_ = url.host;
    port_ = std::to_string(url.port);
    if (tls) {
      tls_stream_ = std::make_unique<ssl::stream<beast::tcp_stream&>>(stream_, *tls);
      const std::string name = tls_config.server_name.empty() ? url.host : tls_config.server_name;
      boost::system::error_code ec;
      (void)asio::ip::make_address(name, ec);
      const bool is_ip = !ec;
      // SNI carries host names only, never an IP literal (RFC 6066).
      // SSL_set_tlsext_host_name() itself, without the macro's C cast.
      if (!is_ip) {
        SSL_ctrl(tls_stream_->native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME,
                 TLSEXT_NAMETYPE_host_name, const_cast<char*>(name.c_str()));
      }
      if (tls_config.insecure_skip_verify) {
        tls_stream_->set_verify_mode(ssl::verify_none);
      } else {
        tls_stream_->set_verify_mode(ssl::verify_peer);
        tls_stream_->set_verify_callback(ssl::host_name_verification(name));
      }
    }
  }

  void start(double timeout_seconds) {
    deadline_.expires_after(
        std::chrono::milliseconds(static_cast<std::int64_t>(timeout_seconds * 1000)));
    deadline_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec) return;  // cancelled: the request finished first
      self->finish(false, "timed out");
    });
    resolver_.async_resolve(
        host_, port_,
        [self = shared_from_this()](beast::error_code ec,
                                    const tcp::resolver::results_type& results) {
          if (ec) return self->finish(false, "resolve: " + ec.message());
          self->stream_.async_connect(results, [self](beast::error_code ec2, const tcp::endpoint&) {
            if (ec2) return self->finish(false, "connect: " + ec2.message());
            if (!self->tls_stream_) return self->write(self->stream_);
            self->tls_stream_->async_handshake(
                ssl::stream_base::client, [self](beast::error_code ec3) {
                  if (ec3) return self->finish(false, "TLS handshake: " + tls_error(ec3, *self));
                  self->write(*self->tls_stream_);
                });
          });
        });
  }

  // "certificate verify failed (self-signed certificate in certificate
  // chain)": OpenSSL's reason plus the verification result when there is one.
  static std::string tls_error(const beast::error_code& ec, Request& self) {
    std::string text = ec.message();
    if (self.tls_stream_) {
      const long v = SSL_get_verify_result(self.tls_stream_->native_handle());
      if (v != X509_V_OK) text += std::string(" (") + X509_verify_cert_error_string(v) + ")";
    }
    return text;
  }

  template <class Stream>
  void write(Stream& s) {
    http::async_write(s, req_, [self = shared_from_this(), &s](beast::error_code ec, std::size_t) {
      if (ec) return self->finish(false, "write: " + ec.message());
      self->parser_.body_limit(kResponseLimit);
      http::async_read(s, self->buffer_, self->parser_, [self](beast::error_code ec2, std::size_t) {
        // A server closing a TLS connection without
        // close_notify after a complete response is fine.
        if (ec2 && !(ec2 == ssl::error::stream_truncated && self->parser_.is_done())) {
          return self->finish(false, "read: " + ec2.message());
        }
        const unsigned status = self->parser_.get().result_int();
        if (status / 100 != 2) {
          std::string body = self->parser_.get().body().substr(0, 200);
          return self->finish(false, "HTTP " + std::to_string(status) + ": " + body);
        }
        self->finish(true, "");
      });
    });
  }

  // Runs the completion once, whichever of deadline and I/O comes first.
  void finish(bool ok, std::string error) {
    if (finished_) return;
    finished_ = true;
    deadline_.cancel();
    resolver_.cancel();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    if (done_) {
      Done d = std::move(done_);
      done_ = nullptr;
      d(ok, std::move(error));
    }
  }

  void abandon() {
    done_ = nullptr;
    finish(false, "abandoned");
  }

  tcp::resolver resolver_;
  beast::tcp_stream stream_;
  std::unique_ptr<ssl::stream<beast::tcp_stream&>> tls_stream_;  // https only, over stream_
  asio::steady_timer deadline_;
  http::request<http::string_body> req_;
  beast::flat_buffer buffer_;
  http::response_parser<http::string_body> parser_;
  std::string host_;
  std::string port_;
  Done done_;
  bool finished_ = false;
};

namespace {

bool read_secret_file(const std::string& path, std::string& out, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read " + path + ": " + errno_text(errno);
    return false;
  }
  std::ostringstream read;
  read << in.rdbuf();
  std::string text = std::move(read).str();
  if (text.size() > std::size_t{64} * 1024) {
    error = path + " is larger than 64 KiB";
    return false;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  out = std::move(text);
  return true;
}

// The Authorization header for `auth`, or an error naming the file.
bool authorization_header(const AlertmanagerAuthConfig& auth, std::string& out,
                          std::string& error) {
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
    out = auth.type + " " + credentials;
  }
  return true;
}

// The client TLS context: TLS 1.2 or newer, the CA file (else the system's
// trust store), the client certificate and key.
std::shared_ptr<ssl::context> client_tls_context(const AlertmanagerTlsConfig& t,
                                                 std::string& error) {
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
    if (!ec && SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
      error = "tls_config.key_file " + t.key_file + ": does not match cert_file";
      return nullptr;
    }
    if (ec) {
      error = "tls_config.key_file " + t.key_file + ": " + ec.message();
      return nullptr;
    }
  }
  return ctx;
}

}  // namespace

AlertmanagerClient::AlertmanagerClient(asio::io_context& io, AlertmanagerOptions options)
    : io_(io), options_(std::move(options)) {
  if (options_.url.tls) tls_ = client_tls_context(options_.tls, setup_error_);
  if (setup_error_.empty()) authorization_header(options_.auth, authorization_, setup_error_);
  if (!setup_error_.empty()) {
    log::error("alertmanager push cannot be set up; every push fails until fixed",
               {{"err", setup_error_}});
  }
}

AlertmanagerClient::~AlertmanagerClient() {
  *alive_ = false;
  if (request_) request_->abandon();
}

void AlertmanagerClient::update(std::span<const AlertInstance> firing,
                                std::span<const AlertInstance> resolved, double now) {
  for (const AlertInstance& a : resolved) resolved_[a.labels] = a;
  std::erase_if(resolved_, [&](const auto& kv) {
    return kv.second.resolved_at < now - options_.resolved_retry_seconds;
  });
  // An alert that fires again is no longer resolved.
  for (const AlertInstance& a : firing) resolved_.erase(a.labels);
  if (request_) return;

  std::set<AlertLabels> firing_set;
  for (const AlertInstance& a : firing) firing_set.insert(a.labels);
  const bool changed = firing_set != accepted_firing_;
  const bool resend = !firing.empty() && (last_accepted_ < 0 || now < last_accepted_ ||
                                          now - last_accepted_ >= options_.resend_interval_seconds);
  if (!changed && !resend && resolved_.empty()) return;
  // Nothing firing and nothing resolved: an empty POST tells Alertmanager nothing.
  if (firing.empty() && resolved_.empty()) {
    accepted_firing_.clear();
    return;
  }

  std::vector<AlertInstance> res;
  std::vector<AlertLabels> res_labels;
  for (const auto& [labels, a] : resolved_) {
    res.push_back(a);
    res_labels.push_back(labels);
  }
  std::string body = alertmanager_payload(firing, res, now, options_.resend_interval_seconds,
                                          options_.generator_url);
  post(std::move(body), std::move(firing_set), std::move(res_labels), now);
}

void AlertmanagerClient::post(std::string body, std::set<AlertLabels> sent_firing,
                              std::vector<AlertLabels> sent_resolved, double now) {
  const std::size_t alerts = sent_firing.size() + sent_resolved.size();
  if (!setup_error_.empty()) {
    finished(false, setup_error_, std::move(sent_firing), sent_resolved, alerts, now);
    return;
  }
  stats_.in_flight = true;
  request_ = std::make_shared<Request>(
      io_, options_.url, std::move(body),
      [this, alive = alive_, sent_firing = std::move(sent_firing),
       sent_resolved = std::move(sent_resolved), alerts,
       now](bool ok, const std::string& error) mutable {
        if (!*alive) return;
        finished(ok, error, std::move(sent_firing), sent_resolved, alerts, now);
      },
      tls_, options_.tls, authorization_);
  request_->start(options_.timeout_seconds);
}

void AlertmanagerClient::finished(bool ok, const std::string& error,
                                  std::set<AlertLabels> sent_firing,
                                  const std::vector<AlertLabels>& sent_resolved, std::size_t alerts,
                                  double now) {
  request_.reset();
  stats_.in_flight = false;
  ++stats_.posts_total;
  if (!ok) {
    ++stats_.post_errors_total;
    if (stats_.last_error.empty()) {
      log::warn(
          "alertmanager push failed",
          {{"url", std::string(options_.url.tls ? "https://" : "http://") + options_.url.host +
                       ":" + std::to_string(options_.url.port) + options_.url.path},
           {"err", error}});
    }
    stats_.last_error = error;
    return;
  }
  if (!stats_.last_error.empty()) log::info("alertmanager push recovered");
  stats_.last_error.clear();
  stats_.alerts_sent_total += alerts;
  stats_.last_success = now;
  for (const AlertLabels& l : sent_resolved) resolved_.erase(l);
  if (!sent_firing.empty()) last_accepted_ = now;
  accepted_firing_ = std::move(sent_firing);
}

}  // namespace ckptmon
