#include "daemon/alertmanager_client.hpp"

#include <chrono>
#include <functional>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "util/log.hpp"
#include "util/version.hpp"

namespace ckptmon {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {
constexpr std::size_t kResponseLimit = 64 * 1024;
}

// One POST: resolve, connect, write, read, under one deadline. Owned by the
// shared_ptrs its pending operations hold; the client keeps one to cancel it.
struct AlertmanagerClient::Request : std::enable_shared_from_this<Request> {
  using Done = std::function<void(bool ok, std::string error)>;

  Request(asio::io_context& io, const HttpUrl& url, std::string body, Done done)
      : resolver_(io), stream_(io), deadline_(io), done_(std::move(done)) {
    req_.method(http::verb::post);
    req_.target(url.path + "/api/v2/alerts");
    req_.version(11);
    const bool v6 = url.host.find(':') != std::string::npos;
    req_.set(http::field::host,
             (v6 ? "[" + url.host + "]" : url.host) + ":" + std::to_string(url.port));
    req_.set(http::field::user_agent, std::string("ckptmon/") + kVersion);
    req_.set(http::field::content_type, "application/json");
    req_.keep_alive(false);
    req_.body() = std::move(body);
    req_.prepare_payload();
    host_ = url.host;
    port_ = std::to_string(url.port);
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
        [self = shared_from_this()](beast::error_code ec, tcp::resolver::results_type results) {
          if (ec) return self->finish(false, "resolve: " + ec.message());
          self->stream_.async_connect(results, [self](beast::error_code ec2, const tcp::endpoint&) {
            if (ec2) return self->finish(false, "connect: " + ec2.message());
            self->write();
          });
        });
  }

  void write() {
    http::async_write(
        stream_, req_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
          if (ec) return self->finish(false, "write: " + ec.message());
          self->parser_.body_limit(kResponseLimit);
          http::async_read(self->stream_, self->buffer_, self->parser_,
                           [self](beast::error_code ec2, std::size_t) {
                             if (ec2) return self->finish(false, "read: " + ec2.message());
                             const unsigned status = self->parser_.get().result_int();
                             if (status / 100 != 2) {
                               std::string body = self->parser_.get().body().substr(0, 200);
                               return self->finish(false,
                                                   "HTTP " + std::to_string(status) + ": " + body);
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
  asio::steady_timer deadline_;
  http::request<http::string_body> req_;
  beast::flat_buffer buffer_;
  http::response_parser<http::string_body> parser_;
  std::string host_;
  std::string port_;
  Done done_;
  bool finished_ = false;
};

AlertmanagerClient::AlertmanagerClient(asio::io_context& io, AlertmanagerOptions options)
    : io_(io), options_(std::move(options)) {}

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
  stats_.in_flight = true;
  request_ = std::make_shared<Request>(
      io_, options_.url, std::move(body),
      [this, alive = alive_, sent_firing = std::move(sent_firing),
       sent_resolved = std::move(sent_resolved), alerts, now](bool ok, std::string error) mutable {
        if (!*alive) return;
        finished(ok, error, std::move(sent_firing), sent_resolved, alerts, now);
      });
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
      log::warn("alertmanager push failed",
                {{"url", "http://" + options_.url.host + ":" + std::to_string(options_.url.port) +
                             options_.url.path},
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
