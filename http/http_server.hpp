#pragma once
// HTTP/1.1 server on an io_context of its own (Boost.Beast), plain or TLS;
// the daemon runs it on its HTTP thread. Handlers run on that thread and must
// be quick: they render what is already in memory. Enforces a header size limit, a body limit, a
// read timeout (which also bounds the TLS handshake) and a cap on concurrent connections; an
// optional authenticator guards every path. Only the thread that runs its io_context may touch it
// ("its thread" below).

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

namespace boost::asio::ssl {
class context;
}

#include "util/text.hpp"

namespace ckptmon {

struct HttpRequest {
  std::string method;                        // "GET", "POST", ...
  std::string path;                          // without the query string
  std::map<std::string, std::string> query;  // decoded
  std::string body;
  std::string remote;         // client address:port
  std::string user;           // the basic-auth user the request was allowed as; empty: none
  bool accepts_gzip = false;  // Accept-Encoding admits gzip
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  // What is sent: *shared_body (when set), then body. The shared part is
  // written from where it lies, not copied per response: /metrics serves
  // the published exposition to every scraper this way.
  std::shared_ptr<const std::string> shared_body;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;

  static HttpResponse text(unsigned status, std::string body);
  static HttpResponse json(unsigned status, std::string body);
};

struct HttpLimits {
  std::size_t header_limit = std::size_t{8} * 1024;
  std::size_t body_limit = std::size_t{64} * 1024;
  // From the start of a request (or of the connection) to the end of its
  // head; also bounds the TLS handshake and an idle keep-alive connection.
  std::chrono::milliseconds header_timeout = std::chrono::seconds(5);
  // For the body and for writing the response.
  std::chrono::milliseconds read_timeout = std::chrono::seconds(10);
  std::size_t max_connections = 512;
  // Per client address: one address cannot take the slots of the others.
  std::size_t max_connections_per_peer = 64;
};

// Whether a new connection from a peer is admitted.
enum class Admission {
  kAdmit,
  kAdmitAfterClosingAnIdle,
  kAdmitAfterClosingASlowHead,
  kPeerFull,
  kFull
};
// `peer_open`: connections open from the same address; `open`: all open;
// `idle`: open keep-alive connections waiting for their next request, which
// are closed first when the global cap is reached; `heads`: connections
// still sending the head of their first request (or their TLS handshake),
// of which the oldest is closed next, whatever its peer: many addresses
// trickling heads cannot fill the cap against a scraper from a new one.
// Connections whose request was read (being answered, or sending a body)
// are never closed for a newcomer. Pure; tested on its own.
Admission admit_connection(std::size_t peer_open, std::size_t open, std::size_t idle,
                           std::size_t heads, const HttpLimits& limits);

// The request parser's limits, set in one place for the server and for
// fuzz/http_request_fuzz.cpp (a Beast request_parser).
template <typename Parser>
void apply_request_limits(Parser& parser, const HttpLimits& limits) {
  parser.header_limit(static_cast<std::uint32_t>(limits.header_limit));
  parser.body_limit(limits.body_limit);
}

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;
// A handler that answers later: it starts the work (on a worker, the store
// thread) and returns at once; `reply` must then be called once, on the
// server's thread. The connection waits meanwhile; that thread does not. The connection
// is dropped without an answer if the server closes first.
using HttpRespond = std::function<void(HttpResponse)>;
using AsyncHttpHandler = std::function<void(const HttpRequest&, HttpRespond reply)>;

enum class AuthDecision { kAllow, kDeny, kBusy };
// What an authenticator says: the decision and, when allowed, as whom
// (HttpRequest::user).
using HttpAuthDone = std::function<void(AuthDecision, std::string user)>;
// Decides from the Authorization header value (empty when absent) whether a
// request may be served. Must call `done` once, on the server's thread, at once or
// later; the connection waits meanwhile.
using HttpAuthenticator = std::function<void(std::string_view authorization, HttpAuthDone done)>;
// Sent with 401 answers.
inline constexpr const char* kAuthRealm = "ckptmon";
// Called after every response: route path (or "other"), status code.
using HttpObserver = std::function<void(const std::string& route, unsigned status)>;
// One answered request, for an access log. `request` has no path or method
// when the head could not be parsed; its query is never what to log.
struct HttpAccess {
  const HttpRequest& request;
  unsigned status = 0;
  std::uint64_t bytes = 0;  // the body sent (0 for HEAD)
  double seconds = 0;  // from the end of the request's head to the response handed to the socket
};
using HttpAccessObserver = std::function<void(const HttpAccess&)>;

// "host:port", "[v6]:port" or ":port" (all interfaces). Port 0 picks a free one.
bool parse_listen_address(const std::string& text, std::string* host, std::uint16_t* port,
                          std::string* error);

// Decodes %XX and '+' in a query component.
std::string url_decode(std::string_view s);
// url_encode (the inverse) is in util/text.hpp.

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, HttpLimits limits);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // `methods` such as {"GET"}; GET routes answer HEAD too.
  void route(std::string path, std::vector<std::string> methods, HttpHandler handler);
  void route_async(std::string path, std::vector<std::string> methods, AsyncHttpHandler handler);
  void set_observer(HttpObserver observer) { observer_ = std::move(observer); }
  // Called with every answered request, after the observer; empty: none.
  void set_access_observer(HttpAccessObserver o) { access_observer_ = std::move(o); }
  // TLS for connections accepted from now on; null serves plain HTTP. Open
  // connections keep the context they started with, so certificates can be
  // swapped without dropping anyone.
  void set_tls(std::shared_ptr<boost::asio::ssl::context> tls) { tls_ = std::move(tls); }
  bool tls() const { return tls_ != nullptr; }
  // Guards every request, unknown paths included (as exporter-toolkit does).
  // Empty: no authentication.
  void set_authenticator(HttpAuthenticator a) { authenticator_ = std::move(a); }

  // Binds and starts accepting. On success returns the bound endpoint.
  bool listen(const std::string& address, boost::asio::ip::tcp::endpoint* bound,
              std::string* error);
  // Stops accepting and closes every open connection.
  void close();

  std::size_t connections() const { return sessions_.size(); }
  std::size_t peers() const { return per_peer_.size(); }
  std::uint64_t rejected_connections() const { return rejected_; }
  std::uint64_t rejected_per_peer() const { return rejected_per_peer_; }
  std::uint64_t idle_closed() const { return idle_closed_; }
  std::uint64_t slow_heads_closed() const { return slow_heads_closed_; }
  // Open connections still in their TLS handshake or first request head.
  std::size_t first_heads() const;
  std::uint64_t tls_handshake_failures() const { return tls_handshake_failures_; }

  // Used by sessions.
  HttpResponse dispatch(const HttpRequest& req, std::string* route_name) const;
  // dispatch() for every route, asynchronous ones included: `reply` gets the
  // response, at once or later.
  void dispatch_async(const HttpRequest& req, std::string* route_name,
                      std::function<void(HttpResponse)> reply) const;
  void observe(const std::string& route, unsigned status) const {
    if (observer_) observer_(route, status);
  }
  void observe_access(const HttpAccess& a) const {
    if (access_observer_) access_observer_(a);
  }
  const HttpLimits& limits() const { return limits_; }
  const HttpAuthenticator& authenticator() const { return authenticator_; }
  // The route label for `path`: the path when it is routed, else "other".
  std::string route_name(const std::string& path) const;
  void count_tls_handshake_failure() { ++tls_handshake_failures_; }

  class Session;

 private:
  struct Route {
    std::vector<std::string> methods;
    HttpHandler handler;
    AsyncHttpHandler async_handler;  // set instead of handler for route_async()
  };
  // The route for `req`, or null with `refusal` set (404, 405).
  const Route* find_route(const HttpRequest& req, std::string* route_name,
                          HttpResponse* refusal) const;
  void accept();
  void accept_on(boost::asio::ip::tcp::acceptor* a);
  void forget(Session* s);

  boost::asio::io_context& io_;
  HttpLimits limits_;
  std::vector<std::unique_ptr<boost::asio::ip::tcp::acceptor>> acceptors_;
  std::map<std::string, Route> routes_;
  std::set<Session*> sessions_;
  std::map<std::string, std::size_t> per_peer_;  // open connections by client address
  std::uint64_t rejected_ = 0;                   // at the global cap
  std::uint64_t rejected_per_peer_ = 0;
  std::uint64_t idle_closed_ = 0;
  std::uint64_t slow_heads_closed_ = 0;
  std::uint64_t tls_handshake_failures_ = 0;
  HttpObserver observer_;
  HttpAccessObserver access_observer_;
  HttpAuthenticator authenticator_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
  bool closed_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// What the HTTP server and its guard (web_security) counted, for the
// ckptmon_http_* families (exporter/self.hpp).
struct HttpFigures {
  std::uint64_t connections = 0;
  std::uint64_t rejected = 0;
  std::uint64_t rejected_per_peer = 0;
  std::uint64_t idle_closed = 0;
  std::uint64_t slow_heads_closed = 0;
  std::uint64_t history_queries_refused = 0;
  std::uint64_t auth_missing = 0;
  std::uint64_t auth_invalid = 0;
  std::uint64_t tls_handshake_failures = 0;
};

}  // namespace ckptmon
