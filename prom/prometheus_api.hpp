#pragma once
// The Prometheus HTTP API (https://prometheus.io/docs/prometheus/latest/querying/api/)
// as ckptmon speaks it: request targets for /api/v1/query and
// /api/v1/query_range, and a strict parser of their JSON answers. Pure
// functions; the HTTP itself goes through an HttpFetch (collectors/http_fetch.hpp)
// or http/http_client. Used by gpu.source prometheus and `ckptmon report/plan
// --prometheus`.

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ckptmon {

struct PromSample {
  double t = 0;  // unix seconds
  double v = 0;  // NaN and ±Inf as Prometheus writes them ("NaN", "+Inf", "-Inf")
};

struct PromSeries {
  std::map<std::string, std::string> metric;  // labels, __name__ included when present
  std::vector<PromSample> values;             // a vector result: one sample
};

struct PromResponse {
  bool ok = false;
  // Why not: the API's own "errorType: error", or what is wrong with the body
  // ("not JSON at byte 12", "more than 10000 series").
  std::string error;
  std::string result_type;  // matrix | vector | scalar | string
  std::vector<PromSeries> series;
  std::vector<std::string> warnings;
};

// Parses the body of a query or query_range answer. Anything but
// {"status":"success","data":{"resultType":...,"result":...}} with
// well-formed samples is !ok with a reason; at most `max_series` series and
// `max_samples` samples in all are accepted.
PromResponse parse_prometheus_response(std::string_view body, std::size_t max_series = 10000,
                                       std::size_t max_samples = 2'000'000);

// "/api/v1/query_range?query=...&start=...&end=...&step=..." (seconds).
std::string prometheus_query_range_target(std::string_view query, double start, double end,
                                          double step);
// "/api/v1/query?query=...&time=...".
std::string prometheus_query_target(std::string_view query, double time);

}  // namespace ckptmon
