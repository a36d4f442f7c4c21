#pragma once
// Pushes alerts to Alertmanager's v2 API (POST /api/v2/alerts) through the
// one HTTP client (http/http_client.hpp: http or https, basic auth or a
// bearer token, extra headers such as a Mimir tenant's X-Scope-OrgID) from
// the daemon's io_context: firing alerts when they start and again every
// resend interval, resolved ones once (retried until accepted or too old).
// Every request, the TLS handshake included, is asynchronous with a
// deadline; nothing here blocks the loop. A certificate that fails
// verification is a failed push with the reason, like any other. Loop
// thread only (not thread-safe).

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "config/rules_config.hpp"
#include "exporter/rules.hpp"
#include "http/http_client.hpp"
#include "rules/alerts.hpp"

namespace ckptmon {

struct AlertmanagerOptions {
  HttpUrl url;  // Alertmanager base URL (url.tls: https)
  // TLS (for https), basic_auth or authorization, extra headers; files read
  // when the client is built.
  HttpClientConfig client;
  double timeout_seconds = 10;  // one POST, name resolution and connect included
  double resend_interval_seconds = 60;
  // A resolved alert Alertmanager did not accept is retried this long, then dropped.
  double resolved_retry_seconds = 900;
  std::string generator_url;  // generatorURL of every alert; may be empty
};

class AlertmanagerClient {
 public:
  AlertmanagerClient(boost::asio::io_context& io, AlertmanagerOptions options);
  // Abandons a POST in flight (its completion does nothing).
  ~AlertmanagerClient();
  AlertmanagerClient(const AlertmanagerClient&) = delete;
  AlertmanagerClient& operator=(const AlertmanagerClient&) = delete;

  // Called after each evaluation with the evaluator's firing() and
  // resolved(). Starts a POST when the set of firing alerts changed since the
  // last accepted one, when the resend interval has passed, or when resolved
  // alerts wait; does nothing while a POST is in flight (the next call
  // catches up). Returns at once.
  void update(std::span<const AlertInstance> firing, std::span<const AlertInstance> resolved,
              double now);

  const AlertmanagerStats& stats() const { return stats_; }
  std::size_t pending_resolved() const { return resolved_.size(); }

 private:
  void post(std::string body, std::set<AlertLabels> sent_firing,
            std::vector<AlertLabels> sent_resolved, double now);
  void finished(bool ok, const std::string& error, std::set<AlertLabels> sent_firing,
                const std::vector<AlertLabels>& sent_resolved, std::size_t alerts, double now);

  boost::asio::io_context& io_;
  AlertmanagerOptions options_;
  // Built once from options_ (certificates and credential files read then);
  // when that failed, its setup_error() says why and every push fails with it.
  HttpClient http_;
  AlertmanagerStats stats_;
  std::map<AlertLabels, AlertInstance> resolved_;  // waiting to be accepted
  std::set<AlertLabels> accepted_firing_;          // the firing set of the last accepted POST
  double last_accepted_ = -1;          // `now` of the last accepted POST with firing alerts
  std::shared_ptr<HttpCall> request_;  // the POST in flight
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace ckptmon
