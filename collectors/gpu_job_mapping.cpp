#include "collectors/gpu_job_mapping.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>

#include "collectors/gpu_source.hpp"
#include "model/settings.hpp"
#include "util/text.hpp"

namespace ckptmon {

std::string gpu_label_value(std::string_view s) {
  constexpr std::size_t kMax = 128;
  std::string out;
  out.reserve(std::min(s.size(), kMax));
  std::size_t i = 0;
  while (i < s.size() && out.size() < kMax) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80           ? 1
                      : (c >> 5) == 0x6  ? 2
                      : (c >> 4) == 0xE  ? 3
                      : (c >> 3) == 0x1E ? 4
                                         : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) {
      ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    }
    if (ok && len == 2) ok = c >= 0xC2;  // overlong
    if (ok && len == 3) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);  // overlong, surrogates
    }
    if (ok && len == 4) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = c <= 0xF4 && !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (!ok) {
      if (out.size() + 3 > kMax) break;
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    if (len == 1 && (c < 0x20 || c == 0x7F)) {
      out += '_';
    } else {
      if (out.size() + len > kMax) break;
      out.append(s.substr(i, len));
    }
    i += len;
  }
  return out;
}

namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

bool valid_utf8(std::string_view s) { return gpu_label_value(s) == s || s.size() > 128; }

}  // namespace

JobMappingRead read_job_mapping_dir(const std::string& dir) {
  JobMappingRead out;
  struct CloseDir {
    void operator()(DIR* p) const { ::closedir(p); }
  };
  std::unique_ptr<DIR, CloseDir> d(::opendir(dir.c_str()));
  if (!d) {
    out.errors.push_back(dir + ": cannot list: " + errno_text(errno));
    return out;
  }
  std::size_t entries = 0;
  while (dirent* e = ::readdir(d.get())) {
    if (++entries > 4096) {
      out.errors.push_back(dir + ": more than 4096 entries; the rest are ignored");
      break;
    }
    const std::string_view name(e->d_name);
    unsigned index = 0;
    auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), index);
    if (ec != std::errc() || p != name.data() + name.size() || name.empty()) continue;
    const std::string path = dir + "/" + std::string(name);
    if (index >= kMaxGpus) {
      out.errors.push_back(path + ": GPU index " + std::string(name) + " is not below " +
                           std::to_string(kMaxGpus));
      continue;
    }
    Fd f;
    f.fd = ::openat(::dirfd(d.get()), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (f.fd < 0) {
      out.errors.push_back(path + ": cannot open: " + errno_text(errno));
      continue;
    }
    struct stat st {};
    if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      out.errors.push_back(path + ": not a regular file");
      continue;
    }
    std::string text(kMaxJobMappingFileBytes + 1, '\0');
    std::size_t got = 0;
    bool read_error = false;
    while (got < text.size()) {
      const ssize_t n = ::read(f.fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        out.errors.push_back(path + ": cannot read: " + errno_text(errno));
        read_error = true;
        break;
      }
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
    }
    if (read_error) continue;
    text.resize(got);
    if (got > kMaxJobMappingFileBytes) {
      out.errors.push_back(path + ": larger than " + std::to_string(kMaxJobMappingFileBytes) +
                           " bytes; not a job mapping file");
      continue;
    }
    if (text.find('\0') != std::string::npos) {
      out.errors.push_back(path + ": binary content (NUL byte); expected job ids as text");
      continue;
    }
    std::vector<std::string> jobs;
    std::size_t i = 0;
    bool bad = false;
    std::size_t count = 0;
    while (i < text.size()) {
      while (i < text.size() && std::strchr(" \t\r\n", text[i]) != nullptr && text[i] != '\0') ++i;
      std::size_t j = i;
      while (j < text.size() && std::strchr(" \t\r\n", text[j]) == nullptr) ++j;
      if (j > i) {
        const std::string_view id(text.data() + i, j - i);
        ++count;
        if (!valid_utf8(id)) {
          out.errors.push_back(path + ": job id " + std::to_string(count) +
                               " is not valid UTF-8 text");
          bad = true;
          break;
        }
        if (count <= kMaxJobsPerGpu) jobs.push_back(gpu_label_value(id));
      }
      i = j;
    }
    if (bad) continue;
    if (count > kMaxJobsPerGpu) {
      out.errors.push_back(path + ": names " + std::to_string(count) + " jobs (at most " +
                           std::to_string(kMaxJobsPerGpu) + " per GPU); file ignored");
      continue;
    }
    if (jobs.empty()) {
      // What an epilog leaves: the GPU runs no job, so no job is charged for it.
      out.errors.push_back(path + ": empty (no job on GPU " + std::to_string(index) + ")");
      out.jobs[index] = {};
      continue;
    }
    out.jobs[index] = std::move(jobs);
  }
  return out;
}

}  // namespace ckptmon
