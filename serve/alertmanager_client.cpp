#include "serve/alertmanager_client.hpp"

#include <cstddef>
#include <utility>

#include "api/alerts_wire.hpp"
#include "util/log.hpp"

namespace ckptmon {

namespace {
constexpr std::size_t kResponseLimit = std::size_t{64} * 1024;
}

AlertmanagerClient::AlertmanagerClient(boost::asio::io_context& io, AlertmanagerOptions options)
    : io_(io), options_(std::move(options)), http_(options_.url, options_.client) {
  if (!http_.setup_error().empty()) {
    log::error("alertmanager push cannot be set up; every push fails until fixed",
               {{"err", http_.setup_error()}});
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
  if (!http_.setup_error().empty()) {
    finished(false, http_.setup_error(), std::move(sent_firing), sent_resolved, alerts, now);
    return;
  }
  stats_.in_flight = true;
  HttpClientRequest req;
  req.method = HttpMethod::kPost;
  req.target = "/api/v2/alerts";
  req.body = std::move(body);
  req.content_type = "application/json";
  req.timeout_seconds = options_.timeout_seconds;
  req.max_body = kResponseLimit;
  request_ = http_.start(
      io_, std::move(req),
      [this, alive = alive_, sent_firing = std::move(sent_firing),
       sent_resolved = std::move(sent_resolved), alerts, now](const HttpClientResponse& r) mutable {
        if (!*alive) return;
        std::string error = r.error;
        if (r.ok && r.status / 100 != 2) {
          error = "HTTP " + std::to_string(r.status) + ": " + r.body.substr(0, 200);
        }
        finished(error.empty(), error, std::move(sent_firing), sent_resolved, alerts, now);
      });
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
      log::warn("alertmanager push failed", {{"url", url_text(options_.url)}, {"err", error}});
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
