#include "http/http_get.hpp"

#include <chrono>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace ckptmon {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

HttpGetResult http_get(const HttpUrl& url, const std::string& target, double timeout_seconds,
                       std::size_t max_body) {
  HttpGetResult out;
  asio::io_context io;
  beast::tcp_stream stream(io);
  const auto deadline = std::chrono::milliseconds(static_cast<long>(timeout_seconds * 1000));
  const std::string where = url.host + ":" + std::to_string(url.port);
  beast::error_code ec;
  asio::ip::tcp::resolver resolver(io);
  auto endpoints = resolver.resolve(url.host, std::to_string(url.port), ec);
  if (ec) {
    out.error = "cannot resolve " + url.host + ": " + ec.message();
    return out;
  }
  http::request<http::empty_body> req{http::verb::get, url.path + target, 11};
  req.set(http::field::host, url.host);
  req.set(http::field::user_agent, "ckptmon");
  http::response_parser<http::string_body> parser;
  parser.body_limit(max_body);
  beast::flat_buffer buffer;
  // Everything asynchronous on a private loop, so one deadline covers it all.
  stream.expires_after(deadline);
  bool failed = false;
  stream.async_connect(endpoints, [&](beast::error_code e, const asio::ip::tcp::endpoint&) {
    if (e) {
      out.error = "cannot connect to " + where + ": " + e.message();
      failed = true;
      return;
    }
    http::async_write(stream, req, [&](beast::error_code we, std::size_t) {
      if (we) {
        out.error = "cannot send the request to " + where + ": " + we.message();
        failed = true;
        return;
      }
      // The header first, so a Content-Length over the cap is refused before
      // any of the body is read; the parser's limit covers chunked bodies.
      http::async_read_header(stream, buffer, parser, [&](beast::error_code he, std::size_t) {
        auto too_large = [&] {
          out.error =
              "response from " + where + " larger than " + std::to_string(max_body) + " bytes";
          failed = true;
        };
        if (he == http::error::body_limit) return too_large();
        if (he) {
          out.error = "no answer from " + where + ": " + he.message();
          failed = true;
          return;
        }
        if (auto len = parser.content_length(); len && *len > max_body) return too_large();
        http::async_read(stream, buffer, parser, [&, too_large](beast::error_code re, std::size_t) {
          if (re == http::error::body_limit || (!re && parser.get().body().size() > max_body))
            return too_large();
          if (re) {
            out.error = "no answer from " + where + ": " + re.message();
            failed = true;
            return;
          }
          out.ok = true;
        });
      });
    });
  });
  io.run();
  if (!out.ok) {
    if (!failed) out.error = "no answer from " + where;
    return out;
  }
  out.status = parser.get().result_int();
  out.content_type = std::string(parser.get()[http::field::content_type]);
  out.body = std::move(parser.get().body());
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  return out;
}

HttpFetch make_http_fetch() {
  return [](const std::string& url, double timeout_seconds, std::size_t max_bytes) {
    FetchResult r;
    // Split "http://host:port/path?query" into what parse_http_url takes
    // (no query) and the request target.
    const auto scheme = url.find("://");
    const auto slash =
        scheme == std::string::npos ? std::string::npos : url.find_first_of("/?", scheme + 3);
    const std::string base = slash == std::string::npos ? url : url.substr(0, slash);
    std::string target = slash == std::string::npos ? "/" : url.substr(slash);
    if (target.front() == '?') target.insert(0, "/");
    std::string error;
    auto u = parse_http_url(base, &error);
    if (!u) {
      r.error = "bad URL " + url + ": " + error;
      return r;
    }
    if (u->tls) {
      r.error = "https is not supported for " + url + " (use http://)";
      return r;
    }
    auto g = http_get(*u, target, timeout_seconds, max_bytes);
    r.ok = g.ok;
    r.status = g.status;
    r.content_type = std::move(g.content_type);
    r.body = std::move(g.body);
    r.error = std::move(g.error);
    return r;
  };
}

}  // namespace ckptmon
