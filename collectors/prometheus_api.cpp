#include "collectors/prometheus_api.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "util/text.hpp"

namespace ckptmon {

namespace {

using nlohmann::json;

// A sample value: Prometheus sends it as a string ("1.5", "NaN", "+Inf").
bool parse_value(const json& j, double* out) {
  if (!j.is_string()) return false;
  const auto& s = j.get_ref<const std::string&>();
  if (s.empty()) return false;
  if (s == "NaN") {
    *out = std::nan("");
    return true;
  }
  if (s == "+Inf" || s == "Inf") {
    *out = HUGE_VAL;
    return true;
  }
  if (s == "-Inf") {
    *out = -HUGE_VAL;
    return true;
  }
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

// [ <unix time as number>, "<value>" ]
bool parse_sample(const json& j, PromSample* out) {
  if (!j.is_array() || j.size() != 2 || !j[0].is_number()) return false;
  out->t = j[0].get<double>();
  return std::isfinite(out->t) && parse_value(j[1], &out->v);
}

bool parse_metric(const json& j, std::map<std::string, std::string>* out) {
  if (!j.is_object()) return false;
  for (const auto& [k, v] : j.items()) {
    if (!v.is_string()) return false;
    (*out)[k] = v.get<std::string>();
  }
  return true;
}

PromResponse fail(std::string why) {
  PromResponse r;
  r.error = std::move(why);
  return r;
}

}  // namespace

PromResponse parse_prometheus_response(std::string_view body, std::size_t max_series,
                                       std::size_t max_samples) {
  json j = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return fail("the answer is not JSON");
  if (!j.is_object() || !j.contains("status") || !j["status"].is_string())
    return fail("the answer has no \"status\"");
  PromResponse r;
  if (j.contains("warnings") && j["warnings"].is_array()) {
    for (const auto& w : j["warnings"])
      if (w.is_string() && r.warnings.size() < 16) r.warnings.push_back(w.get<std::string>());
  }
  if (j["status"] != "success") {
    std::string type = j.contains("errorType") && j["errorType"].is_string()
                           ? j["errorType"].get<std::string>()
                           : "unknown";
    std::string msg =
        j.contains("error") && j["error"].is_string() ? j["error"].get<std::string>() : "";
    r.error = "Prometheus answered " + type + (msg.empty() ? "" : ": " + msg);
    return r;
  }
  if (!j.contains("data") || !j["data"].is_object()) return fail("the answer has no \"data\"");
  const auto& data = j["data"];
  if (!data.contains("resultType") || !data["resultType"].is_string() || !data.contains("result"))
    return fail("the answer's data has no resultType or result");
  r.result_type = data["resultType"].get<std::string>();
  const auto& result = data["result"];
  std::size_t samples = 0;
  if (r.result_type == "scalar") {
    PromSeries s;
    PromSample p;
    if (!parse_sample(result, &p)) return fail("a malformed scalar");
    s.values.push_back(p);
    r.series.push_back(std::move(s));
  } else if (r.result_type == "vector" || r.result_type == "matrix") {
    if (!result.is_array()) return fail("the result is not a list");
    if (result.size() > max_series)
      return fail("more than " + std::to_string(max_series) + " series");
    const bool matrix = r.result_type == "matrix";
    for (const auto& e : result) {
      PromSeries s;
      if (!e.is_object() || !e.contains("metric") || !parse_metric(e["metric"], &s.metric))
        return fail("a series without well-formed labels");
      if (matrix) {
        if (!e.contains("values") || !e["values"].is_array())
          return fail("a matrix series without values");
        samples += e["values"].size();
        if (samples > max_samples)
          return fail("more than " + std::to_string(max_samples) + " samples");
        for (const auto& v : e["values"]) {
          PromSample p;
          if (!parse_sample(v, &p)) return fail("a malformed sample");
          s.values.push_back(p);
        }
      } else {
        PromSample p;
        if (!e.contains("value") || !parse_sample(e["value"], &p))
          return fail("a vector series without a well-formed value");
        s.values.push_back(p);
        if (++samples > max_samples)
          return fail("more than " + std::to_string(max_samples) + " samples");
      }
      r.series.push_back(std::move(s));
    }
  } else {
    return fail("result type " + r.result_type + " is not supported");
  }
  r.ok = true;
  return r;
}

namespace {
std::string seconds(double t) {
  char buf[64];
  static_cast<void>(std::snprintf(buf, sizeof buf, "%.3f", t));
  return buf;
}
}  // namespace

std::string prometheus_query_range_target(std::string_view query, double start, double end,
                                          double step) {
  return "/api/v1/query_range?query=" + url_encode(query) + "&start=" + seconds(start) +
         "&end=" + seconds(end) + "&step=" + seconds(step);
}

std::string prometheus_query_target(std::string_view query, double time) {
  return "/api/v1/query?query=" + url_encode(query) + "&time=" + seconds(time);
}

}  // namespace ckptmon
