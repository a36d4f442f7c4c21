// libFuzzer target for /proc/<pid>/mountinfo parsing (collectors/mountinfo.hpp).
// Beyond "never crash": a mount it returns has an absolute mount point;
// lines it skips are counted, never more than there are lines; find_mount on
// what it parsed returns one of the mounts or none.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "collectors/mountinfo.hpp"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "mountinfo_fuzz: property violated: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  int skipped = 0;
  const auto mounts = ckptmon::parse_mountinfo(text, &skipped);
  const auto lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  check(skipped >= 0 && static_cast<std::size_t>(skipped) + mounts.size() <= lines,
        "every line is a mount or skipped, once");
  for (const auto& m : mounts) {
    (void)ckptmon::has_option(m.mount_options, "ro");
  }
  for (std::string_view path : {"/", "/lustre/ckpt/job", "/mnt/nvme0/ckpt"}) {
    const ckptmon::MountInfo* m = ckptmon::find_mount(mounts, path, std::nullopt);
    check(m == nullptr || (m >= mounts.data() && m < mounts.data() + mounts.size()),
          "find_mount returns one of the mounts");
    if (!mounts.empty()) {
      const auto dev = std::make_pair(mounts.front().major, mounts.front().minor);
      m = ckptmon::find_mount(mounts, path, dev);
      check(m == nullptr || (m >= mounts.data() && m < mounts.data() + mounts.size()),
            "find_mount with a device returns one of the mounts");
    }
  }
  return 0;
}
