#include "daemon/http_get.hpp"

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

HttpGetResult http_get(const HttpUrl& url, const std::string& target, double timeout_seconds) {
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
  parser.body_limit(256 * 1024 * 1024);
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
      http::async_read(stream, buffer, parser, [&](beast::error_code re, std::size_t) {
        if (re) {
          out.error = "no answer from " + where + ": " + re.message();
          failed = true;
          return;
        }
        out.ok = true;
      });
    });
  });
  io.run();
  if (!out.ok) {
    if (!failed) out.error = "no answer from " + where;
    return out;
  }
  out.status = parser.get().result_int();
  out.body = std::move(parser.get().body());
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  return out;
}

}  // namespace ckptmon
