// libFuzzer target for the web config (config/web_config.hpp, Prometheus
// exporter-toolkit's format: TLS files and basic-auth users). Beyond "never
// crash", every input either loads or says why, and every user it accepts
// has a bcrypt hash.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "config/web_config.hpp"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "web_config_fuzz: property violated: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const ckptmon::WebConfigResult r = ckptmon::parse_web_config(text, "/etc/ckptmon/web.yml");
  if (r.config) {
    for (const auto& [user, hash] : r.config->basic_auth_users) {
      check(ckptmon::is_bcrypt_hash(hash), "an accepted user has a bcrypt hash");
    }
    if (r.config->tls) {
      check(!r.config->tls->cert_file.path.empty() && !r.config->tls->key_file.path.empty(),
            "TLS has a certificate and a key");
    }
  } else {
    check(!r.errors.empty(), "a refused web config says why");
  }
  return 0;
}
