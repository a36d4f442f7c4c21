#pragma once
// --web.config.file for the daemon's HTTP server: TLS and basic auth, read
// with config/web_config.hpp, checked completely (certificates loaded, key
// matched to certificate) before anything changes, and swapped in as a whole.
// A reload re-reads the file and the certificates it names, so certificates
// rotated on disk are picked up; a bad file is refused and the running
// settings stay. The server's thread only (the daemon's HTTP thread).

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "config/web_config.hpp"
#include "http/basic_auth.hpp"
#include "http/http_server.hpp"

namespace boost::asio::ssl {
class context;
}

namespace ckptmon {

// A server TLS context from `tls`: certificate chain, private key (checked to
// match), the client CA when set (then every client must present a
// certificate it signed), the protocol range. Each failure is reported at the
// key that named the file, in `source`. Null on failure.
std::shared_ptr<boost::asio::ssl::context> make_tls_context(const TlsServerConfig& tls,
                                                            const std::string& source,
                                                            std::vector<ConfigError>* errors);

class WebSecurity {
 public:
  // A web config read and checked, ready to apply.
  struct Prepared {
    WebConfig config;
    std::shared_ptr<boost::asio::ssl::context> tls;  // null: plain HTTP
  };

  // `file` empty: plain HTTP without authentication, and nothing to reload.
  WebSecurity(boost::asio::io_context& io, HttpServer& server, std::string file);
  ~WebSecurity();
  WebSecurity(const WebSecurity&) = delete;
  WebSecurity& operator=(const WebSecurity&) = delete;

  // Reads the file and loads its certificates; changes nothing. On failure
  // appends the errors and returns nullopt.
  std::optional<Prepared> prepare(std::vector<ConfigError>* errors) const;
  // The same for any file, touching no WebSecurity: safe on any thread.
  static std::optional<Prepared> prepare_file(const std::string& file,
                                              std::vector<ConfigError>* errors);
  const std::string& file() const { return file_; }
  // Puts prepared settings in force for connections accepted from now on.
  void apply(Prepared p);
  // prepare() then apply(); false (and nothing changed) when the file is bad.
  bool load(std::vector<ConfigError>* errors);

  const BasicAuth& auth() const { return auth_; }

  // Its counters for ckptmon_http_auth_failures_total and
  // ckptmon_http_tls_handshake_failures_total (exporter/self.cpp).
  void add_figures(HttpFigures* f) const;

 private:
  HttpServer& server_;
  std::string file_;
  BasicAuth auth_;
};

}  // namespace ckptmon
