// libFuzzer target for the HTTP request head as the server reads it: Beast's
// request_parser with the server's limits (apply_request_limits, the same
// call http_server.cpp makes), fed the bytes at once and in two pieces split
// anywhere, as a socket delivers them. Beyond "never crash": both feeds agree
// on whether the request is complete and on its method, target and body; a
// head longer than the limit is never accepted.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "http/http_server.hpp"

namespace {

namespace http = boost::beast::http;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "http_request_fuzz: property violated: %s\n", what);
    std::abort();
  }
}

struct Outcome {
  bool done = false;
  bool failed = false;
  bool header_limit = false;
  std::string method, target, body;
};

Outcome feed(std::string_view data, std::size_t split) {
  http::request_parser<http::string_body> parser;
  ckptmon::apply_request_limits(parser, ckptmon::HttpLimits{});
  parser.eager(true);
  Outcome out;
  std::string pending;
  for (std::string_view piece : {data.substr(0, split), data.substr(split)}) {
    pending.append(piece);
    while (!pending.empty() && !parser.is_done()) {
      boost::beast::error_code ec;
      const std::size_t n = parser.put(boost::asio::buffer(pending.data(), pending.size()), ec);
      if (ec == http::error::need_more) break;
      if (ec) {
        out.failed = true;
        out.header_limit = ec == http::error::header_limit;
        return out;
      }
      pending.erase(0, n);
      if (n == 0) break;
    }
  }
  out.done = parser.is_done();
  if (parser.is_header_done()) {
    const auto& msg = parser.get();
    out.method = std::string(msg.method_string());
    out.target = std::string(msg.target());
  }
  if (out.done) out.body = parser.get().body();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t split = size ? data[0] % (size + 1) : 0;
  const Outcome whole = feed(input, size);
  const Outcome pieces = feed(input, split);
  const ckptmon::HttpLimits limits;
  for (const Outcome* o : {&whole, &pieces}) {
    check(!o->done || o->target.size() <= limits.header_limit,
          "a head over the limit is never accepted");
    check(!o->done || o->body.size() <= limits.body_limit,
          "a body over the limit is never accepted");
  }
  if (whole.done && pieces.done) {
    check(
        whole.method == pieces.method && whole.target == pieces.target && whole.body == pieces.body,
        "a request parses the same however the bytes arrive");
  }
  return 0;
}
