#pragma once
// Test helpers for TLS: throwaway certificates made with the OpenSSL API (no
// openssl binary needed), and a TLS client driven by its own io_context with a
// time cap, so that a server bug fails a test instead of hanging it.
// Not thread-safe.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

namespace ckptmon::test_tls {

using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using CertPtr = std::unique_ptr<X509, decltype(&X509_free)>;

inline KeyPtr new_key() {
  KeyPtr k(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"), EVP_PKEY_free);
  if (!k) throw std::runtime_error("EC key generation failed");
  return k;
}

enum class CertKind { kCa, kServer, kClient };

// A certificate for `key` named `cn`, signed by `issuer` (self-signed when null).
inline CertPtr new_cert(EVP_PKEY* key, const std::string& cn, CertKind kind, X509* issuer,
                        EVP_PKEY* issuer_key, long serial) {
  CertPtr x(X509_new(), X509_free);
  X509_set_version(x.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(x.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), 7 * 24 * 3600);
  X509_set_pubkey(x.get(), key);
  X509_NAME* name = X509_get_subject_name(x.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(x.get(), issuer != nullptr ? X509_get_subject_name(issuer) : name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer != nullptr ? issuer : x.get(), x.get(), nullptr, nullptr, 0);
  auto add = [&](int nid, const char* value) {
    X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    if (e == nullptr) throw std::runtime_error(std::string("bad extension ") + value);
    X509_add_ext(x.get(), e, -1);
    X509_EXTENSION_free(e);
  };
  add(NID_subject_key_identifier, "hash");
  if (kind == CertKind::kCa) {
    add(NID_basic_constraints, "critical,CA:TRUE");
    add(NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add(NID_basic_constraints, "critical,CA:FALSE");
    add(NID_key_usage, "critical,digitalSignature");
    add(NID_ext_key_usage, kind == CertKind::kServer ? "serverAuth" : "clientAuth");
    if (kind == CertKind::kServer) add(NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
  }
  if (X509_sign(x.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) == 0) {
    throw std::runtime_error("X509_sign failed");
  }
  return x;
}

inline void write_pem(const std::filesystem::path& p, X509* cert) {
  std::unique_ptr<BIO, decltype(&BIO_free)> b(BIO_new_file(p.c_str(), "w"), BIO_free);
  if (!b || PEM_write_bio_X509(b.get(), cert) != 1) throw std::runtime_error("write " + p.string());
}

inline void write_pem(const std::filesystem::path& p, EVP_PKEY* key) {
  std::unique_ptr<BIO, decltype(&BIO_free)> b(BIO_new_file(p.c_str(), "w"), BIO_free);
  if (!b || PEM_write_bio_PrivateKey(b.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    throw std::runtime_error("write " + p.string());
  }
}

inline void write_encrypted_pem(const std::filesystem::path& p, EVP_PKEY* key,
                                const std::string& passphrase) {
  std::unique_ptr<BIO, decltype(&BIO_free)> b(BIO_new_file(p.c_str(), "w"), BIO_free);
  if (!b || PEM_write_bio_PrivateKey(b.get(), key, EVP_aes_256_cbc(),
                                     reinterpret_cast<const unsigned char*>(passphrase.data()),
                                     static_cast<int>(passphrase.size()), nullptr, nullptr) != 1) {
    throw std::runtime_error("write " + p.string());
  }
}

// A CA with a server certificate (localhost, 127.0.0.1) and a client
// certificate it signed, plus a second CA's client certificate that the first
// CA does not vouch for. File names below `dir`.
struct TlsFiles {
  std::string ca, server_cert, server_key, client_cert, client_key;
  std::string stranger_cert, stranger_key;  // signed by another CA
  std::string unrelated_key;                // matches no certificate
};

inline TlsFiles make_tls_files(const std::filesystem::path& dir,
                               const std::string& server_cn = "ckptmon-test-server") {
  TlsFiles f;
  auto ca_key = new_key();
  auto ca = new_cert(ca_key.get(), "ckptmon test CA", CertKind::kCa, nullptr, nullptr, 1);
  auto server_key = new_key();
  auto server = new_cert(server_key.get(), server_cn, CertKind::kServer, ca.get(), ca_key.get(), 2);
  auto client_key = new_key();
  auto client = new_cert(client_key.get(), "scraper", CertKind::kClient, ca.get(), ca_key.get(), 3);
  auto other_ca_key = new_key();
  auto other_ca = new_cert(other_ca_key.get(), "other CA", CertKind::kCa, nullptr, nullptr, 4);
  auto stranger_key = new_key();
  auto stranger = new_cert(stranger_key.get(), "stranger", CertKind::kClient, other_ca.get(),
                           other_ca_key.get(), 5);
  auto unrelated = new_key();
  auto path = [&](const char* name) { return (dir / name).string(); };
  write_pem(f.ca = path("ca.pem"), ca.get());
  write_pem(f.server_cert = path("server.crt"), server.get());
  write_pem(f.server_key = path("server.key"), server_key.get());
  write_pem(f.client_cert = path("client.crt"), client.get());
  write_pem(f.client_key = path("client.key"), client_key.get());
  write_pem(f.stranger_cert = path("stranger.crt"), stranger.get());
  write_pem(f.stranger_key = path("stranger.key"), stranger_key.get());
  write_pem(f.unrelated_key = path("unrelated.key"), unrelated.get());
  return f;
}

using Response = boost::beast::http::response<boost::beast::http::string_body>;

// One TLS connection to 127.0.0.1:port that trusts `ca` and checks the
// server's name is "localhost". Every operation is capped at 10 s.
class TlsClient {
 public:
  struct Options {
    std::string client_cert;
    std::string client_key;
    int max_version = 0;  // e.g. TLS1_2_VERSION; 0: library default
  };

  TlsClient(std::uint16_t port, const std::string& ca, const Options& o)
      : ctx_(make_context(ca, o)), stream_(io_, ctx_) {
    if (o.max_version != 0) SSL_set_max_proto_version(stream_.native_handle(), o.max_version);
    stream_.set_verify_callback(boost::asio::ssl::host_name_verification("localhost"));
    // SSL_set_tlsext_host_name() without the macro's C cast.
    SSL_ctrl(stream_.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
             const_cast<char*>("localhost"));
    stream_.lowest_layer().connect({boost::asio::ip::make_address("127.0.0.1"), port});
  }
  TlsClient(std::uint16_t port, const std::string& ca) : TlsClient(port, ca, Options{}) {}

  boost::system::error_code handshake() {
    return run([&](auto handler) {
      stream_.async_handshake(boost::asio::ssl::stream_base::client, handler);
    });
  }

  // Sends `raw` without reading an answer.
  bool send(const std::string& raw) {
    return !run([&](auto handler) {
      boost::asio::async_write(stream_, boost::asio::buffer(raw), handler);
    });
  }

  // Reads one response; nullopt when the connection failed or ended first.
  std::optional<Response> read_response() {
    Response res;
    auto ec =
        run([&](auto handler) { boost::beast::http::async_read(stream_, buf_, res, handler); });
    if (ec) return std::nullopt;
    return res;
  }

  // Sends `raw` (a whole request) and reads one response; nullopt when the
  // connection failed or ended first.
  std::optional<Response> request(const std::string& raw) {
    auto ec = run([&](auto handler) {
      boost::asio::async_write(stream_, boost::asio::buffer(raw), handler);
    });
    if (ec) return std::nullopt;
    Response res;
    ec = run([&](auto handler) { boost::beast::http::async_read(stream_, buf_, res, handler); });
    if (ec) return std::nullopt;
    return res;
  }

  // The common name of the certificate the server presented.
  std::string peer_common_name() {
    X509* cert = SSL_get0_peer_certificate(stream_.native_handle());
    if (cert == nullptr) return "";
    char cn[256] = {};
    X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof cn);
    return cn;
  }

 private:
  // Configured before the stream exists: an SSL object copies its settings
  // from the context when it is made.
  static boost::asio::ssl::context make_context(const std::string& ca, const Options& o) {
    boost::asio::ssl::context ctx(boost::asio::ssl::context::tls_client);
    ctx.load_verify_file(ca);
    ctx.set_verify_mode(boost::asio::ssl::verify_peer);
    if (!o.client_cert.empty()) {
      ctx.use_certificate_chain_file(o.client_cert);
      ctx.use_private_key_file(o.client_key, boost::asio::ssl::context::pem);
    }
    return ctx;
  }

  template <typename Start>
  boost::system::error_code run(Start start) {
    std::optional<boost::system::error_code> result;
    start([&](boost::system::error_code ec, auto&&...) { result = ec; });
    io_.restart();
    io_.run_for(std::chrono::seconds(10));
    if (result) return *result;
    boost::system::error_code ignored;
    stream_.lowest_layer().close(ignored);
    io_.restart();
    io_.run();
    return boost::asio::error::timed_out;
  }

  boost::asio::io_context io_;
  boost::asio::ssl::context ctx_;
  boost::asio::ssl::stream<boost::asio::ip::tcp::socket> stream_;
  boost::beast::flat_buffer buf_;
};

}  // namespace ckptmon::test_tls
