// libFuzzer target for the configuration loader (config/config.hpp): YAML
// text from --config.file, SIGHUP and /-/reload. Beyond "never crash" (ASan +
// UBSan), every input either loads or says why: a failed load has at least
// one error, each naming where; a loaded config has its tiers.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "config/config.hpp"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "config_yaml_fuzz: property violated: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const ckptmon::LoadResult r = ckptmon::parse_config(text, "fuzz.yaml");
  if (r.config) {
    check(!r.config->tiers.empty(), "a loaded config has tiers");
    check(r.config->source == "fuzz.yaml", "a loaded config names its file");
  } else {
    check(!r.errors.empty(), "a refused config says why");
    for (const auto& e : r.errors) check(!e.message.empty(), "every error has a message");
  }
  return 0;
}
