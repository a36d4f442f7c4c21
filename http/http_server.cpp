#include "http/http_server.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <variant>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "http/gzip.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace ckptmon {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;

HttpResponse HttpResponse::text(unsigned status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

HttpResponse HttpResponse::json(unsigned status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = std::move(body);
  return r;
}

bool parse_listen_address(const std::string& text, std::string* host, std::uint16_t* port,
                          std::string* error) {
  std::string h;
  std::string p;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      *error = "expected [ipv6]:port, got \"" + text + "\"";
      return false;
    }
    h = text.substr(1, close - 1);
    p = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string::npos) {
      *error = "expected host:port or :port, got \"" + text + "\"";
      return false;
    }
    h = text.substr(0, colon);
    p = text.substr(colon + 1);
  }
  unsigned v = 0;
  auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
  if (p.empty() || ec != std::errc() || ptr != p.data() + p.size() || v > 65535) {
    *error = "invalid port in \"" + text + "\"";
    return false;
  }
  *host = h;
  *port = static_cast<std::uint16_t>(v);
  return true;
}

std::string url_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size()) {
      unsigned v = 0;
      auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
      if (ec == std::errc() && p == s.data() + i + 3) {
        out += static_cast<char>(v);
        i += 2;
      } else {
        out += s[i];
      }
    } else {
      out += s[i];
    }
  }
  return out;
}

namespace {

// A Beast body of two pieces, a shared immutable one and a string of its
// own, written as one buffer sequence: a response that starts with a 1 MB
// exposition does not copy it.
struct SharedPrefixBody {
  // value_type and writer: the names Beast's Body concept requires.
  struct value_type {  // NOLINT(readability-identifier-naming): Beast's Body concept
    std::shared_ptr<const std::string> prefix;
    std::string rest;
  };
  static std::uint64_t size(const value_type& v) {
    return (v.prefix ? v.prefix->size() : 0) + v.rest.size();
  }
  class writer {  // NOLINT(readability-identifier-naming): Beast's Body concept
   public:
    using const_buffers_type = std::array<asio::const_buffer, 2>;
    template <bool isRequest, class Fields>
    writer(const http::header<isRequest, Fields>&, const value_type& v) : v_(v) {}
    void init(beast::error_code& ec) { ec = {}; }
    boost::optional<std::pair<const_buffers_type, bool>> get(beast::error_code& ec) {
      ec = {};
      if (done_) return boost::none;
      done_ = true;
      const_buffers_type b{v_.prefix ? asio::buffer(*v_.prefix) : asio::const_buffer(),
                           asio::buffer(v_.rest)};
      return std::make_pair(b, false);
    }

   private:
    const value_type& v_;
    bool done_ = false;
  };
};

}  // namespace

// One connection, plain or TLS. Owned by shared_ptr through its pending
// operations. The request handling is written once; only reads, writes and
// the end of the connection look at which stream it is.
class HttpServer::Session : public std::enable_shared_from_this<HttpServer::Session> {
 public:
  Session(tcp::socket socket, HttpServer& server, std::shared_ptr<bool> server_alive,
          std::shared_ptr<ssl::context> tls)
      : server_(server), server_alive_(std::move(server_alive)), tls_context_(std::move(tls)) {
    if (tls_context_) {
      stream_.emplace<TlsStream>(std::move(socket), *tls_context_);
    } else {
      stream_.emplace<PlainStream>(std::move(socket));
    }
    boost::system::error_code ec;
    auto ep = tcp_stream().socket().remote_endpoint(ec);
    if (!ec) {
      peer_ = ep.address().to_string();
      remote_ = peer_ + ":" + std::to_string(ep.port());
    }
  }

  const std::string& peer() const { return peer_; }
  // Answered a request and waiting for the head of the next one.
  bool idle() const { return idle_; }
  // Still in its TLS handshake or the head of its first request, since `head_since()`.
  bool first_head() const { return served_ == 0 && in_head_; }
  std::chrono::steady_clock::time_point head_since() const { return head_since_; }
  ~Session() {
    if (*server_alive_) server_.forget(this);
  }

  void start() {
    auto* tls = std::get_if<TlsStream>(&stream_);
    if (tls == nullptr) {
      read();
      return;
    }
    // A client that connects and says nothing must not hold a slot for
    // longer than one that sends half a request head.
    tcp_stream().expires_after(server_.limits().header_timeout);
    tls->async_handshake(
        ssl::stream_base::server,
        [self = shared_from_this()](beast::error_code ec) { self->on_handshake(ec); });
  }

  void close() {
    boost::system::error_code ec;
    tcp_stream().socket().shutdown(tcp::socket::shutdown_both, ec);
    tcp_stream().socket().close(ec);
  }

  // Sends a fixed response and closes; used when over the connection cap.
  // Over TLS that would take a handshake first, so the connection is just closed.
  void reject(unsigned status, std::string body) {
    if (std::holds_alternative<TlsStream>(stream_)) {
      close();
      return;
    }
    respond_error(status, std::move(body), "other");
  }

 private:
  using PlainStream = beast::tcp_stream;
  using TlsStream = beast::ssl_stream<beast::tcp_stream>;

  beast::tcp_stream& tcp_stream() {
    if (auto* tls = std::get_if<TlsStream>(&stream_)) return tls->next_layer();
    return std::get<PlainStream>(stream_);
  }

  // Runs fn(stream) on whichever stream this connection has.
  template <typename Fn>
  void with_stream(Fn&& fn) {
    if (auto* tls = std::get_if<TlsStream>(&stream_)) {
      fn(*tls);
    } else {
      fn(std::get<PlainStream>(stream_));
    }
  }

  void on_handshake(beast::error_code ec) {
    if (!*server_alive_) return;
    if (!ec) {
      read();
      return;
    }
    server_.count_tls_handshake_failure();
    log::debug("tls handshake failed", {{"remote", remote_}, {"err", ec.message()}});
    if (ec.category() == asio::error::get_ssl_category() &&
        ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_HTTP_REQUEST) {
      // Plain HTTP on the TLS port: say so in plain HTTP, as Go servers do,
      // rather than leave curl with an empty reply.
      static const std::string kBody = "Client sent an HTTP request to an HTTPS server.\n";
      static const std::string kReply =
          "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
          "Connection: close\r\nContent-Length: " +
          std::to_string(kBody.size()) + "\r\n\r\n" + kBody;
      tcp_stream().expires_after(server_.limits().read_timeout);
      asio::async_write(tcp_stream(), asio::buffer(kReply),
                        [self = shared_from_this()](beast::error_code write_ec, std::size_t) {
                          if (write_ec) {
                            self->close();
                            return;
                          }
                          // The rest of the request is still unread; closing
                          // now would reset the connection and could destroy
                          // the reply before the client reads it.
                          boost::system::error_code ignored;
                          self->tcp_stream().socket().shutdown(tcp::socket::shutdown_send, ignored);
                          self->drain();
                        });
      return;
    }
    close();
  }

  // Reads and drops what the client still sends until it closes (or the
  // read timeout passes), then closes.
  void drain() {
    auto scratch = std::make_shared<std::array<char, 1024>>();
    tcp_stream().async_read_some(asio::buffer(*scratch), [self = shared_from_this(), scratch](
                                                             beast::error_code ec, std::size_t) {
      if (ec || !*self->server_alive_) {
        self->close();
        return;
      }
      self->drain();
    });
  }

  // The head within header_timeout (a client trickling bytes cannot hold the
  // slot for longer), then the body within read_timeout.
  void read() {
    parser_.emplace();
    apply_request_limits(*parser_, server_.limits());
    idle_ = served_ > 0;
    in_head_ = true;
    tcp_stream().expires_after(server_.limits().header_timeout);
    with_stream([this](auto& s) {
      http::async_read_header(
          s, buffer_, *parser_,
          [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
    });
  }

  void on_header(beast::error_code ec) {
    idle_ = false;
    in_head_ = false;
    request_started_ = std::chrono::steady_clock::now();
    if (ec || !*server_alive_ || parser_->is_done()) {
      on_read(ec);
      return;
    }
    tcp_stream().expires_after(server_.limits().read_timeout);
    with_stream([this](auto& s) {
      http::async_read(s, buffer_, *parser_,
                       [self = shared_from_this()](beast::error_code read_ec, std::size_t) {
                         self->on_read(read_ec);
                       });
    });
  }

  void on_read(beast::error_code ec) {
    if (!*server_alive_) return;
    // What the access log names, errors included (a 413 has a parsed head).
    req_ = HttpRequest{};
    req_.remote = remote_;
    if (parser_->is_header_done()) {
      req_.method = std::string(parser_->get().method_string());
      std::string_view target = parser_->get().target();
      req_.path = std::string(target.substr(0, target.find('?')));
    }
    if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted ||
        ec == asio::error::connection_reset || ec == asio::error::eof ||
        ec == ssl::error::stream_truncated) {
      close();
      return;
    }
    if (ec == beast::error::timeout) {
      close();
      return;
    }
    if (ec == http::error::header_limit) {
      respond_error(431, "request header fields too large\n", "other");
      return;
    }
    if (ec == http::error::body_limit) {
      respond_error(413, "request body too large\n", "other");
      return;
    }
    if (ec) {
      respond_error(400, "bad request: " + ec.message() + "\n", "other");
      return;
    }
    auto& msg = parser_->get();
    req_.accepts_gzip = accepts_gzip(msg[http::field::accept_encoding]);
    std::string_view target = msg.target();
    auto q = target.find('?');
    if (q != std::string_view::npos) {
      for (auto part : split(target.substr(q + 1), '&')) {
        if (part.empty()) continue;
        auto eq = part.find('=');
        req_.query[url_decode(part.substr(0, eq))] =
            eq == std::string_view::npos ? std::string() : url_decode(part.substr(eq + 1));
      }
    }
    req_.body = std::move(msg.body());
    if (server_.authenticator()) {
      server_.authenticator()(msg[http::field::authorization],
                              [self = shared_from_this()](AuthDecision d, std::string user) {
                                self->on_auth(d, std::move(user));
                              });
      return;
    }
    serve();
  }

  void on_auth(AuthDecision decision, std::string user) {
    if (!*server_alive_) return;
    if (decision == AuthDecision::kAllow) {
      req_.user = std::move(user);
      serve();
      return;
    }
    auto& msg = parser_->get();
    HttpResponse resp;
    if (decision == AuthDecision::kBusy) {
      resp = HttpResponse::text(503, "too many credential checks in progress; retry\n");
      resp.headers.emplace_back("Retry-After", "1");
    } else {
      resp = HttpResponse::text(401, "Unauthorized\n");
      resp.headers.emplace_back("WWW-Authenticate",
                                std::string("Basic realm=\"") + kAuthRealm + "\"");
    }
    send(std::move(resp), msg.keep_alive(), msg.version(), msg.method() == http::verb::head,
         server_.route_name(req_.path));
  }

  void serve() {
    auto& msg = parser_->get();
    auto route = std::make_shared<std::string>();
    const bool head = msg.method() == http::verb::head;
    // Answered once: a handler calling back twice sends one response.
    auto answered = std::make_shared<bool>(false);
    auto reply = [self = shared_from_this(), route, keep_alive = msg.keep_alive(),
                  version = msg.version(), head, answered](HttpResponse resp) {
      if (*answered || !*self->server_alive_) return;
      *answered = true;
      self->send(std::move(resp), keep_alive, version, head, *route);
    };
    try {
      server_.dispatch_async(req_, route.get(), reply);
    } catch (const std::exception& e) {
      log::error("http handler threw", {{"path", req_.path}, {"err", e.what()}});
      reply(HttpResponse::text(500, "internal error\n"));
    }
  }

  void send(HttpResponse resp, bool keep_alive, unsigned version, bool head,
            const std::string& route) {
    ++served_;
    auto res = std::make_shared<http::response<SharedPrefixBody>>(
        static_cast<http::status>(resp.status), version);
    res->set(http::field::server, "ckptmon");
    res->set(http::field::content_type, resp.content_type);
    for (const auto& [k, v] : resp.headers) res->set(k, v);
    res->keep_alive(keep_alive);
    const std::uint64_t bytes =
        head ? 0 : (resp.shared_body ? resp.shared_body->size() : 0) + resp.body.size();
    res->body().prefix = std::move(resp.shared_body);
    res->body().rest = std::move(resp.body);
    res->prepare_payload();
    if (head) res->body() = {};  // Content-Length stays that of the GET body
    server_.observe(route, resp.status);
    server_.observe_access(HttpAccess{
        req_, resp.status, bytes,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - request_started_)
            .count()});
    tcp_stream().expires_after(server_.limits().read_timeout);
    with_stream([&](auto& s) {
      http::async_write(
          s, *res, [self = shared_from_this(), res, keep_alive](beast::error_code ec, std::size_t) {
            if (ec || !keep_alive || !*self->server_alive_) {
              self->finish(ec);
              return;
            }
            self->read();
          });
    });
  }

  // Ends the connection after the last response: TLS says close_notify first
  // (bounded by the read timeout), so the client can tell the end from a cut.
  void finish(beast::error_code write_ec) {
    auto* tls = std::get_if<TlsStream>(&stream_);
    if (tls == nullptr || write_ec || !*server_alive_) {
      close();
      return;
    }
    tcp_stream().expires_after(server_.limits().read_timeout);
    tls->async_shutdown([self = shared_from_this()](beast::error_code) { self->close(); });
  }

  void respond_error(unsigned status, std::string body, const std::string& route) {
    HttpResponse r = HttpResponse::text(status, std::move(body));
    send(std::move(r), false, 11, false, route);
  }

  HttpServer& server_;
  std::shared_ptr<bool> server_alive_;
  std::shared_ptr<ssl::context> tls_context_;  // outlives the stream that refers to it
  std::variant<std::monostate, PlainStream, TlsStream> stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpRequest req_;
  // When the current request's head was read (its access log duration).
  std::chrono::steady_clock::time_point request_started_ = std::chrono::steady_clock::now();
  std::string peer_;    // client address
  std::string remote_;  // address:port
  std::uint64_t served_ = 0;
  bool idle_ = false;
  bool in_head_ = true;  // from the accept (the TLS handshake, the first head) to the end of a head
  std::chrono::steady_clock::time_point head_since_ = std::chrono::steady_clock::now();
};

Admission admit_connection(std::size_t peer_open, std::size_t open, std::size_t idle,
                           std::size_t heads, const HttpLimits& limits) {
  if (peer_open >= limits.max_connections_per_peer) return Admission::kPeerFull;
  if (open < limits.max_connections) return Admission::kAdmit;
  if (idle > 0) return Admission::kAdmitAfterClosingAnIdle;
  return heads > 0 ? Admission::kAdmitAfterClosingASlowHead : Admission::kFull;
}

void HttpServer::forget(Session* s) {
  if (sessions_.erase(s) == 0) return;  // a rejected one was never counted
  auto it = per_peer_.find(s->peer());
  if (it != per_peer_.end() && --it->second == 0) per_peer_.erase(it);
}

HttpServer::HttpServer(asio::io_context& io, HttpLimits limits) : io_(io), limits_(limits) {}

HttpServer::~HttpServer() {
  close();
  *alive_ = false;
}

void HttpServer::route(std::string path, std::vector<std::string> methods, HttpHandler handler) {
  routes_[std::move(path)] = Route{std::move(methods), std::move(handler), {}};
}

std::string HttpServer::route_name(const std::string& path) const {
  return routes_.contains(path) ? path : "other";
}

void HttpServer::route_async(std::string path, std::vector<std::string> methods,
                             AsyncHttpHandler handler) {
  routes_[std::move(path)] = Route{std::move(methods), {}, std::move(handler)};
}

const HttpServer::Route* HttpServer::find_route(const HttpRequest& req, std::string* route_name,
                                                HttpResponse* refusal) const {
  auto it = routes_.find(req.path);
  if (it == routes_.end()) {
    *route_name = "other";
    *refusal = HttpResponse::text(404, "not found: " + req.path + "\n");
    return nullptr;
  }
  *route_name = it->first;
  const auto& methods = it->second.methods;
  bool allowed = false;
  std::string allow;
  for (const auto& m : methods) {
    if (m == req.method || (m == "GET" && req.method == "HEAD")) allowed = true;
    allow += (allow.empty() ? "" : ", ") + m;
    if (m == "GET") allow += ", HEAD";
  }
  if (!allowed) {
    *refusal = HttpResponse::text(405, "method " + req.method + " not allowed for " + req.path +
                                           "; allowed: " + allow + "\n");
    refusal->headers.emplace_back("Allow", allow);
    return nullptr;
  }
  return &it->second;
}

HttpResponse HttpServer::dispatch(const HttpRequest& req, std::string* route_name) const {
  HttpResponse refusal;
  const Route* r = find_route(req, route_name, &refusal);
  if (r == nullptr) return refusal;
  if (!r->handler) return HttpResponse::text(500, "asynchronous route\n");
  return r->handler(req);
}

void HttpServer::dispatch_async(const HttpRequest& req, std::string* route_name,
                                std::function<void(HttpResponse)> reply) const {
  HttpResponse refusal;
  const Route* r = find_route(req, route_name, &refusal);
  if (r == nullptr) {
    reply(std::move(refusal));
  } else if (r->async_handler) {
    r->async_handler(req, std::move(reply));
  } else {
    reply(r->handler(req));
  }
}

bool HttpServer::listen(const std::string& address, tcp::endpoint* bound, std::string* error) {
  std::string host;
  std::uint16_t port = 0;
  if (!parse_listen_address(address, &host, &port, error)) return false;
  // One endpoint, assigned in place: g++ 12 reports -Wnull-dereference in
  // vector::_M_realloc_insert relocating an endpoint after push_back.
  std::vector<tcp::endpoint> endpoints(1);
  boost::system::error_code ec;
  if (host.empty()) {
    endpoints[0] = tcp::endpoint(asio::ip::address_v6::any(), port);  // dual-stack where possible
  } else {
    auto addr = asio::ip::make_address(host, ec);
    if (!ec) {
      endpoints[0] = tcp::endpoint(addr, port);
    } else {
      tcp::resolver resolver(io_);
      auto results = resolver.resolve(host, std::to_string(port), ec);
      if (ec) {
        *error = "cannot resolve " + host + ": " + ec.message();
        return false;
      }
      if (results.empty()) {
        *error = "cannot resolve " + host + ": no address";
        return false;
      }
      endpoints[0] = results.begin()->endpoint();
    }
  }
  for (auto ep : endpoints) {
    auto acceptor = std::make_unique<tcp::acceptor>(io_);
    acceptor->open(ep.protocol(), ec);
    if (ec && host.empty()) {
      // No IPv6 on this machine: fall back to IPv4 any.
      ep = tcp::endpoint(asio::ip::address_v4::any(), port);
      ec.clear();
      acceptor->open(ep.protocol(), ec);
    }
    if (!ec && ep.address().is_v6() && host.empty())
      acceptor->set_option(asio::ip::v6_only(false), ec);
    if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor->bind(ep, ec);
    if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      *error = "cannot listen on " + address + ": " + ec.message();
      return false;
    }
    if (bound != nullptr) *bound = acceptor->local_endpoint(ec);
    acceptors_.push_back(std::move(acceptor));
  }
  closed_ = false;
  accept();
  return true;
}

void HttpServer::accept() {
  for (auto& acc : acceptors_) accept_on(acc.get());
}

void HttpServer::accept_on(tcp::acceptor* a) {
  a->async_accept([this, a, alive = alive_](boost::system::error_code ec, tcp::socket socket) {
    if (!*alive || closed_ || ec == asio::error::operation_aborted) return;
    if (!ec) {
      auto s = std::make_shared<Session>(std::move(socket), *this, alive_, tls_);
      auto peer = per_peer_.find(s->peer());
      const std::size_t peer_open = peer == per_peer_.end() ? 0 : peer->second;
      Session* idle = nullptr;
      Session* slowest_head = nullptr;
      std::size_t idle_count = 0;
      std::size_t head_count = 0;
      if (sessions_.size() >= limits_.max_connections) {
        for (Session* o : sessions_) {
          if (o->idle()) {
            if (idle == nullptr) idle = o;
            ++idle_count;
          } else if (o->first_head()) {
            if (slowest_head == nullptr || o->head_since() < slowest_head->head_since()) {
              slowest_head = o;
            }
            ++head_count;
          }
        }
      }
      auto admit = [this](const std::shared_ptr<Session>& session) {
        sessions_.insert(session.get());
        ++per_peer_[session->peer()];
        session->start();
      };
      switch (admit_connection(peer_open, sessions_.size(), idle_count, head_count, limits_)) {
        case Admission::kPeerFull:
          ++rejected_per_peer_;
          s->reject(503, "too many connections from " + s->peer() + "\n");
          break;
        case Admission::kFull:
          ++rejected_;
          s->reject(503, "too many connections\n");
          break;
        case Admission::kAdmitAfterClosingAnIdle:
          ++idle_closed_;
          idle->close();
          forget(idle);  // its slot is free now, whenever its handlers run
          admit(s);
          break;
        case Admission::kAdmitAfterClosingASlowHead:
          ++slow_heads_closed_;
          slowest_head->close();
          forget(slowest_head);
          admit(s);
          break;
        case Admission::kAdmit:
          admit(s);
          break;
      }
    } else {
      // Out of file descriptors and the like: back off instead of spinning.
      log::warn("http accept failed", {{"err", ec.message()}});
      auto timer = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(100));
      timer->async_wait([this, a, timer, alive](boost::system::error_code) {
        if (*alive && !closed_) accept_on(a);
      });
      return;
    }
    accept_on(a);
  });
}

std::size_t HttpServer::first_heads() const {
  return static_cast<std::size_t>(std::count_if(sessions_.begin(), sessions_.end(),
                                                [](const Session* s) { return s->first_head(); }));
}

void HttpServer::close() {
  closed_ = true;
  for (auto& a : acceptors_) {
    boost::system::error_code ec;
    a->close(ec);
  }
  for (auto* s : std::set<Session*>(sessions_)) s->close();
}

}  // namespace ckptmon
