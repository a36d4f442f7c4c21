#include "prom/prometheus_api.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <simdjson.h>

#include "util/text.hpp"

namespace ckptmon {

namespace {

namespace od = simdjson::ondemand;

// A sample value: Prometheus sends it as a string ("1.5", "NaN", "+Inf").
bool parse_value(std::string_view s, double* out) {
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
  const std::string text(s);  // strtod needs the terminator
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

// Element `n` of a sample [ <unix time as number>, "<value>" ] into `out`.
bool read_sample_element(std::size_t n, od::value v, PromSample* out) {
  if (n == 0) return !v.get_double().get(out->t) && std::isfinite(out->t);
  std::string_view text;
  return n == 1 && !v.get_string().get(text) && parse_value(text, &out->v);
}

// [ <unix time as number>, "<value>" ]
bool parse_sample(od::value j, PromSample* out) {
  od::array a;
  if (j.get_array().get(a)) return false;
  std::size_t n = 0;
  for (auto element : a) {
    od::value v;
    if (element.get(v) || !read_sample_element(n++, v, out)) return false;
  }
  return n == 2;
}

// Keeps `p` in `s` when the cap allows one more sample: counted before it
// is kept, so memory stays within the cap.
bool keep_sample(const PromSample& p, PromSeries* s, std::size_t* samples, std::size_t max_samples,
                 std::string* why) {
  if (++*samples > max_samples) {
    *why = "more than " + std::to_string(max_samples) + " samples";
    return false;
  }
  s->values.push_back(p);
  return true;
}

bool parse_metric(od::value j, std::map<std::string, std::string>* out) {
  od::object o;
  if (j.get_object().get(o)) return false;
  for (auto field : o) {
    std::string_view key;
    std::string_view value;
    if (field.unescaped_key().get(key) || field.value().get_string().get(value)) return false;
    (*out)[std::string(key)] = std::string(value);
  }
  return true;
}

PromResponse fail(std::string why) {
  PromResponse r;
  r.error = std::move(why);
  return r;
}

// What "result" held, before "resultType" (which may come after it) says
// what it should have been.
struct ParsedResult {
  bool present = false;
  bool scalar = false;      // [t, "v"]
  bool any_value = false;   // a series with "value" (vector)
  bool any_values = false;  // a series with "values" (matrix)
};

// One series of a vector or matrix: {"metric": {...}, "value": [..]} or
// {"metric": {...}, "values": [[..], ...]}, fields in any order.
bool parse_series(od::value j, PromSeries* s, ParsedResult* shape, std::size_t* samples,
                  std::size_t max_samples, std::string* why) {
  od::object o;
  if (j.get_object().get(o)) {
    *why = "a series without well-formed labels";
    return false;
  }
  bool has_metric = false;
  bool has_value = false;
  for (auto field : o) {
    std::string_view key;
    od::value v;
    if (field.unescaped_key().get(key) || field.value().get(v)) {
      *why = "a series that is not JSON";
      return false;
    }
    if (key == "metric") {
      if (!parse_metric(v, &s->metric)) {
        *why = "a series without well-formed labels";
        return false;
      }
      has_metric = true;
    } else if (key == "value") {
      PromSample p;
      if (!parse_sample(v, &p)) {
        *why = "a vector series without a well-formed value";
        return false;
      }
      if (!keep_sample(p, s, samples, max_samples, why)) return false;
      shape->any_value = true;
      has_value = true;
    } else if (key == "values") {
      od::array a;
      if (v.get_array().get(a)) {
        *why = "a matrix series without values";
        return false;
      }
      for (auto element : a) {
        od::value sv;
        PromSample p;
        if (element.get(sv) || !parse_sample(sv, &p)) {
          *why = "a malformed sample";
          return false;
        }
        if (!keep_sample(p, s, samples, max_samples, why)) return false;
      }
      shape->any_values = true;
      has_value = true;
    }
  }
  if (!has_metric) {
    *why = "a series without well-formed labels";
    return false;
  }
  if (!has_value) {
    *why = "a series without value or values";
    return false;
  }
  return true;
}

// "result": a scalar [t, "v"] or a list of series.
bool parse_result(od::value j, PromResponse* r, ParsedResult* shape, std::size_t max_series,
                  std::size_t max_samples, std::string* why) {
  shape->present = true;
  od::array a;
  if (j.get_array().get(a)) {
    *why = "the result is not a list";
    return false;
  }
  std::size_t samples = 0;
  std::size_t index = 0;
  PromSample scalar;
  for (auto element : a) {
    od::value v;
    if (element.get(v)) {
      *why = "the answer is not JSON";
      return false;
    }
    od::json_type type;
    if (v.type().get(type)) {
      *why = "the answer is not JSON";
      return false;
    }
    if (index == 0 && type == od::json_type::number) shape->scalar = true;
    if (shape->scalar) {
      // [t, "v"]: its first element is read already, so element by element here.
      if (!read_sample_element(index++, v, &scalar)) {
        *why = "a malformed scalar";
        return false;
      }
      continue;
    }
    if (++index > max_series) {
      *why = "more than " + std::to_string(max_series) + " series";
      return false;
    }
    PromSeries s;
    if (!parse_series(v, &s, shape, &samples, max_samples, why)) return false;
    r->series.push_back(std::move(s));
  }
  if (shape->scalar) {
    if (index != 2) {
      *why = "a malformed scalar";
      return false;
    }
    PromSeries s;
    s.values.push_back(scalar);
    r->series.push_back(std::move(s));
  }
  return true;
}

}  // namespace

// simdjson's On-Demand parser: the answer is read once, front to back, into
// the series and samples kept (16 bytes a sample), counted against the caps
// as they come; no document tree is built. Memory: the body, simdjson's
// padded copy and index of it (about the body's size each), and at most
// max_samples samples. nlohmann's tree of a 15 MiB matrix took 377 MB.
PromResponse parse_prometheus_response(std::string_view body, std::size_t max_series,
                                       std::size_t max_samples) {
  od::parser parser;
  const simdjson::padded_string padded(body);
  od::document doc;
  od::object top;
  if (parser.iterate(padded).get(doc) || doc.get_object().get(top)) {
    return fail("the answer is not JSON");
  }
  PromResponse r;
  std::string status;
  std::string error_type = "unknown";
  std::string error_msg;
  std::string result_type;
  bool has_data = false;
  ParsedResult shape;
  std::string why;
  for (auto field : top) {
    std::string_view key;
    od::value v;
    if (field.unescaped_key().get(key) || field.value().get(v))
      return fail("the answer is not JSON");
    std::string_view text;
    if (key == "status") {
      if (v.get_string().get(text)) return fail("the answer has no \"status\"");
      status = text;
    } else if (key == "errorType") {
      if (!v.get_string().get(text)) error_type = text;
    } else if (key == "error") {
      if (!v.get_string().get(text)) error_msg = text;
    } else if (key == "warnings") {
      od::array a;
      if (v.get_array().get(a)) continue;
      for (auto w : a) {
        std::string_view wt;
        if (!w.get_string().get(wt) && r.warnings.size() < 16) r.warnings.emplace_back(wt);
      }
    } else if (key == "data") {
      od::object data;
      if (v.get_object().get(data)) return fail("the answer has no \"data\"");
      has_data = true;
      for (auto df : data) {
        std::string_view dkey;
        od::value dv;
        if (df.unescaped_key().get(dkey) || df.value().get(dv)) {
          return fail("the answer is not JSON");
        }
        if (dkey == "resultType") {
          if (dv.get_string().get(text)) {
            return fail("the answer's data has no resultType or result");
          }
          result_type = text;
        } else if (dkey == "result") {
          if (shape.present) return fail("the answer's data has two results");
          if (!parse_result(dv, &r, &shape, max_series, max_samples, &why)) return fail(why);
        }
      }
    }
  }
  // The whole document, trailing bytes included, must have been JSON.
  // (current_location() is out of bounds once everything was read.)
  if (doc.current_location().error() == simdjson::SUCCESS) return fail("the answer is not JSON");
  if (status.empty()) return fail("the answer has no \"status\"");
  r.warnings.shrink_to_fit();
  if (status != "success") {
    PromResponse e;
    e.warnings = std::move(r.warnings);
    e.error = "Prometheus answered " + error_type + (error_msg.empty() ? "" : ": " + error_msg);
    return e;
  }
  if (!has_data) return fail("the answer has no \"data\"");
  if (result_type.empty() || !shape.present) {
    return fail("the answer's data has no resultType or result");
  }
  r.result_type = result_type;
  if (result_type == "scalar") {
    if (!shape.scalar) return fail("a malformed scalar");
  } else if (result_type == "vector") {
    if (shape.scalar || shape.any_values) {
      return fail("a vector series without a well-formed value");
    }
  } else if (result_type == "matrix") {
    if (shape.scalar || shape.any_value) return fail("a matrix series without values");
  } else {
    return fail("result type " + result_type + " is not supported");
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
