#include "http/web_security.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>

#include "config/yaml_reader.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace ckptmon {

namespace ssl = boost::asio::ssl;

namespace {

void add_error(std::vector<ConfigError>* errors, const std::string& source, const WebConfigFile& f,
               std::string message) {
  errors->push_back(ConfigError{source, f.line, f.column, f.key, std::move(message)});
}

// OpenSSL's own messages for a missing file are vague ("system library");
// opening it first gives the usual "No such file or directory". Only regular
// files: OpenSSL would wait forever on a FIFO.
bool readable(const WebConfigFile& f, const std::string& source, std::vector<ConfigError>* errors) {
  const int fd = ::open(f.path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    add_error(errors, source, f, "cannot open " + f.path + ": " + errno_text(errno));
    return false;
  }
  struct stat st {};
  const bool stat_ok = ::fstat(fd, &st) == 0;
  const int stat_errno = errno;
  ::close(fd);
  if (!stat_ok) {
    add_error(errors, source, f, "cannot stat " + f.path + ": " + errno_text(stat_errno));
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    add_error(errors, source, f, f.path + " is " + file_kind(st.st_mode) + ", not a regular file");
    return false;
  }
  return true;
}

// Why a PEM file did not load, when its first lines show a common mistake:
// key and certificate swapped, or a key under a passphrase ("BEGIN ENCRYPTED
// PRIVATE KEY", or "Proc-Type: 4,ENCRYPTED" in the traditional format).
std::string pem_hint(const std::string& path, bool want_key) {
  std::ifstream in(path, std::ios::binary);
  std::string head(8192, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  const bool has_key = head.find("PRIVATE KEY-----") != std::string::npos;
  const bool has_cert = head.find("BEGIN CERTIFICATE-----") != std::string::npos;
  if (want_key && head.find("ENCRYPTED") != std::string::npos) {
    return " (keys protected by a passphrase are not supported)";
  }
  if (want_key && has_cert && !has_key) return " (the file holds a certificate, not a key)";
  if (!want_key && has_key && !has_cert)
    return " (the file holds a private key, not a certificate)";
  return "";
}

bool is_key_mismatch(const boost::system::error_code& ec) {
  return ec.category() == boost::asio::error::get_ssl_category() &&
         ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH;
}

}  // namespace

std::shared_ptr<ssl::context> make_tls_context(const TlsServerConfig& tls,
                                               const std::string& source,
                                               std::vector<ConfigError>* errors) {
  const std::size_t before = errors->size();
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                   ssl::context::single_dh_use);
  SSL_CTX* native = ctx->native_handle();
  auto version = [](TlsVersion v) {
    return v == TlsVersion::kTls13 ? TLS1_3_VERSION : TLS1_2_VERSION;
  };
  SSL_CTX_set_min_proto_version(native, version(tls.min_version));
  SSL_CTX_set_max_proto_version(native, version(tls.max_version));
  // An encrypted key must fail to load, not wait for a passphrase on a
  // terminal that a daemon does not have.
  ctx->set_password_callback(
      [](std::size_t, ssl::context::password_purpose) { return std::string(); });

  boost::system::error_code ec;
  bool cert_ok = false;
  if (readable(tls.cert_file, source, errors)) {
    ctx->use_certificate_chain_file(tls.cert_file.path, ec);
    if (ec) {
      add_error(errors, source, tls.cert_file,
                "cannot load a certificate chain from " + tls.cert_file.path + ": " + ec.message() +
                    pem_hint(tls.cert_file.path, false));
    } else {
      cert_ok = true;
    }
  }
  if (readable(tls.key_file, source, errors)) {
    ec.clear();
    ctx->use_private_key_file(tls.key_file.path, ssl::context::pem, ec);
    if (cert_ok && (is_key_mismatch(ec) || (!ec && SSL_CTX_check_private_key(native) != 1))) {
      add_error(errors, source, tls.key_file,
                "the private key in " + tls.key_file.path + " does not match the certificate in " +
                    tls.cert_file.path);
    } else if (ec) {
      add_error(errors, source, tls.key_file,
                "cannot load a private key from " + tls.key_file.path + ": " + ec.message() +
                    pem_hint(tls.key_file.path, true));
    }
  }
  if (tls.client_ca_file && readable(*tls.client_ca_file, source, errors)) {
    const WebConfigFile& ca = *tls.client_ca_file;
    ec.clear();
    ctx->load_verify_file(ca.path, ec);
    if (ec) {
      add_error(errors, source, ca,
                "cannot load CA certificates from " + ca.path + ": " + ec.message());
    } else {
      // Tell clients which CAs are accepted, so one holding several
      // certificates can pick the right one.
      if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(ca.path.c_str())) {
        SSL_CTX_set_client_CA_list(native, names);
      }
      ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
      // Session resumption with client certificates needs an id context.
      static const unsigned char kSessionContext[] = "ckptmon";
      SSL_CTX_set_session_id_context(native, kSessionContext, sizeof kSessionContext - 1);
    }
  }
  ERR_clear_error();  // nothing left over for the next OpenSSL call on this thread
  if (errors->size() != before) return nullptr;
  return ctx;
}

WebSecurity::WebSecurity(boost::asio::io_context& io, HttpServer& server, std::string file)
    : server_(server), file_(std::move(file)), auth_(io) {}

WebSecurity::~WebSecurity() { server_.set_authenticator({}); }

std::optional<WebSecurity::Prepared> WebSecurity::prepare(std::vector<ConfigError>* errors) const {
  return prepare_file(file_, errors);
}

std::optional<WebSecurity::Prepared> WebSecurity::prepare_file(const std::string& file,
                                                               std::vector<ConfigError>* errors) {
  Prepared p;
  if (file.empty()) return p;
  WebConfigResult r = load_web_config_file(file);
  if (!r.config) {
    errors->insert(errors->end(), r.errors.begin(), r.errors.end());
    return std::nullopt;
  }
  p.config = std::move(*r.config);
  if (p.config.tls) {
    p.tls = make_tls_context(*p.config.tls, file, errors);
    if (!p.tls) return std::nullopt;
  }
  return p;
}

void WebSecurity::apply(Prepared p) {
  server_.set_tls(p.tls);
  const std::size_t users = p.config.basic_auth_users.size();
  auth_.set_users(std::move(p.config.basic_auth_users));
  if (auth_.enabled()) {
    server_.set_authenticator([this](std::string_view authorization, HttpAuthDone done) {
      auth_.check(authorization, std::move(done));
    });
  } else {
    server_.set_authenticator({});
  }
  if (!file_.empty()) {
    log::info("web config loaded", {{"file", file_},
                                    {"tls", p.tls ? "true" : "false"},
                                    {"basic_auth_users", static_cast<int>(users)}});
  }
}

bool WebSecurity::load(std::vector<ConfigError>* errors) {
  auto p = prepare(errors);
  if (!p) return false;
  apply(std::move(*p));
  return true;
}

void WebSecurity::add_figures(HttpFigures* f) const {
  f->auth_missing = auth_.stats().missing;
  f->auth_invalid = auth_.stats().invalid;
  f->tls_handshake_failures = server_.tls_handshake_failures();
}

}  // namespace ckptmon
