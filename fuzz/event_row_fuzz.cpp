// libFuzzer target for the state database's binary event rows
// (store/event_codec.hpp), read back from a file anyone with write access to
// the state directory could have changed. Beyond "never crash, never read
// past the row": a row decodes only when it is canonical, so encoding what
// any decoder returned gives the input back byte for byte.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "store/event_codec.hpp"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "event_row_fuzz: property violated: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view row(reinterpret_cast<const char*>(data), size);
  int decoded = 0;
  if (const auto s = ckptmon::decode_event_step(row)) {
    check(ckptmon::encode_event_row(*s) == row, "a decoded step re-encodes to its row");
    ++decoded;
  }
  if (const auto j = ckptmon::decode_event_job(row)) {
    check(ckptmon::encode_event_row(*j) == row, "a decoded job re-encodes to its row");
    check(j->duration.buckets.size() == j->duration.bounds.size() + 1, "buckets = bounds + 1");
    ++decoded;
  }
  if (const auto r = ckptmon::decode_event_restores(row)) {
    check(ckptmon::encode_event_row(*r) == row, "decoded restores re-encode to their row");
    ++decoded;
  }
  check(decoded <= 1, "a row decodes as one kind at most");
  return 0;
}
