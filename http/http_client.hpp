#pragma once
// The one HTTP/1.1 client of ckptmon: every request to a peer goes through
// it (the Alertmanager push, the dcgm and prometheus GPU sources, `report` and
// `plan --from/--prometheus`, `burst --expect-detection`).
//
// - http and https: TLS 1.2 or newer, a CA file (else the system's trust
//   store), a client certificate, `server_name`, `insecure_skip_verify`;
//   the name is verified against the certificate (RFC 6125) and sent as SNI
//   unless it is an IP literal.
// - basic auth (the password from a file) or an Authorization header (a
//   bearer token from a file), and extra headers (X-Scope-OrgID).
// - one deadline over resolve, connect, handshake, send, receive and any
//   redirects; a body cap checked on the Content-Length and as the body
//   arrives.
// - GET follows up to kMaxRedirects redirects on the same scheme, host and
//   port; a redirect to another host is an error that names it (credentials
//   never travel to a host nobody configured). POST follows none.
//
// Certificates, keys and secret files are read once, when the client is
// built; a failure there is setup_error() and every request fails with it.
// A client is immutable once built, so concurrent requests from several
// threads are safe; each request runs on the io_context it is started on
// (start()) or on a private one (fetch(), blocking).

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "collectors/http_fetch.hpp"
#include "config/rules_config.hpp"
#include "model/http_client_config.hpp"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace ckptmon {

// What a request gave: the collectors' FetchResult (collectors/http_fetch.hpp),
// one type on both sides of the fetch seam. `ok`: a whole response arrived
// (any status); `error`: why not.
using HttpClientResponse = FetchResult;

enum class HttpMethod { kGet, kPost };

inline constexpr int kMaxRedirects = 5;

struct HttpClientRequest {
  HttpMethod method = HttpMethod::kGet;
  // Appended to the base URL's path: "/api/v1/query?query=up".
  std::string target = "/";
  std::string body;  // POST
  std::string content_type;
  double timeout_seconds = 10;  // over everything, redirects included
  std::size_t max_body = std::size_t{16} << 20;
};

// One request in flight, as start() returns it.
class HttpCall {
 public:
  virtual ~HttpCall() = default;
  // Closes the connection; the completion never runs.
  virtual void abandon() = 0;
};

class HttpClient {
 public:
  HttpClient(HttpUrl base, const HttpClientConfig& config);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Why no request can work (an unreadable CA or password file, a key that
  // does not match its certificate); empty when the client is usable.
  const std::string& setup_error() const;
  const HttpUrl& base() const { return base_; }

  using Done = std::function<void(HttpClientResponse)>;
  // Starts `request` on `io`; `done` runs once, on io's thread, unless the
  // call is abandoned first. The call keeps what it needs alive.
  std::shared_ptr<HttpCall> start(boost::asio::io_context& io, HttpClientRequest request,
                                  Done done) const;
  // Blocking, on a private io_context. Never on the daemon's loop.
  HttpClientResponse fetch(HttpClientRequest request) const;

  struct Shared;  // what every call of this client reads

 private:
  HttpUrl base_;
  std::shared_ptr<const Shared> shared_;
};

// One GET of `target` with a client built for it (the one-shot commands'
// --from); the body cap defaults to 256 MiB.
HttpClientResponse http_get(const HttpUrl& base, const std::string& target, double timeout_seconds,
                            std::size_t max_body = std::size_t{256} << 20,
                            const HttpClientConfig& config = {});

// "https://[::1]:9090/prefix": the URL a base stands for, for messages.
std::string url_text(const HttpUrl& url);

// Splits "http://host:port/path?query" into the base (no path) and the
// request target ("/path?query", "/" when empty); false with `error` for
// anything parse_http_url refuses.
bool split_http_url(const std::string& url, HttpUrl& base, std::string& target, std::string& error);

// The collectors' HttpFetchFactory (collectors/http_fetch.hpp): each fetch
// it makes keeps one HttpClient per URL base, built with `config` at its
// first use.
HttpFetch make_http_fetch(const HttpClientConfig& config = {});

}  // namespace ckptmon
