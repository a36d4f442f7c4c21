#pragma once
// Test helper: a blocking HTTP/1.1 client on a raw socket with poll()
// timeouts, so that a server bug fails a test instead of hanging it.
// Responses are parsed by Beast's parser, fed by hand. Not thread-safe.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include <boost/beast/http.hpp>

namespace ckptmon::test_http {

using Response = boost::beast::http::response<boost::beast::http::string_body>;

// One client connection to 127.0.0.1:port. Not thread-safe.
class RawClient {
 public:
  // `source`: the client address to bind first (any of 127/8 is loopback).
  explicit RawClient(std::uint16_t port, const char* source = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (source != nullptr) {
      sockaddr_in b{};
      b.sin_family = AF_INET;
      ::inet_pton(AF_INET, source, &b.sin_addr);
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&b), sizeof b) != 0) {
        ::close(fd_);
        throw std::runtime_error("bind failed");
      }
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd_);
      throw std::runtime_error("connect failed");
    }
  }
  ~RawClient() { close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  bool send(const std::string& data) {
    std::size_t off = 0;
    while (off < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<std::size_t>(n);
    }
    return true;
  }

  // One response, or nullopt when the connection ended (or the cap passed)
  // before a complete one arrived. `head`: the request was HEAD, so a
  // Content-Length announces a body that is not sent.
  std::optional<Response> read_response(bool head = false) {
    boost::beast::http::response_parser<boost::beast::http::string_body> parser;
    parser.eager(true);
    parser.body_limit(16 * 1024 * 1024);
    if (head) parser.skip(true);
    const auto cap = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (true) {
      if (!buf_.empty()) {
        boost::beast::error_code ec;
        const std::size_t used = parser.put(boost::asio::buffer(buf_), ec);
        buf_.erase(0, used);
        if (parser.is_done()) return parser.release();
        if (ec && ec != boost::beast::http::error::need_more) return std::nullopt;
        if (used > 0 && !buf_.empty()) continue;
      }
      const int r = read_some(cap);
      if (r < 0) return std::nullopt;
      if (r == 0) {
        if (!parser.got_some()) return std::nullopt;  // closed before any byte of an answer
        boost::beast::error_code ec;
        parser.put_eof(ec);
        if (!ec && parser.is_done()) return parser.release();
        return std::nullopt;
      }
    }
  }

  // True when the server closes the connection (EOF or reset) within the cap.
  // Bytes received meanwhile are kept.
  bool wait_closed() {
    const auto cap = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (true) {
      const int r = read_some(cap);
      if (r == 0 || r == -2) return true;
      if (r == -1) return false;
    }
  }

  const std::string& unread() const { return buf_; }

 private:
  // >0: bytes appended; 0: EOF; -1: cap passed; -2: error (reset).
  int read_some(std::chrono::steady_clock::time_point cap) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        cap - std::chrono::steady_clock::now());
    if (left.count() <= 0) return -1;
    pollfd p{fd_, POLLIN, 0};
    const int pr = ::poll(&p, 1, static_cast<int>(left.count()));
    if (pr == 0) return -1;
    char chunk[4096];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0) return -2;
    buf_.append(chunk, static_cast<std::size_t>(n));
    return static_cast<int>(n);
  }

  int fd_ = -1;
  std::string buf_;
};

// "METHOD path HTTP/1.1" with a Host header and `extra` header lines.
inline std::string request(const std::string& path, const std::string& method = "GET",
                           const std::string& extra = "") {
  return method + " " + path + " HTTP/1.1\r\nHost: localhost\r\n" + extra + "\r\n";
}

}  // namespace ckptmon::test_http
