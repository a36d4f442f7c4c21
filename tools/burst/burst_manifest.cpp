#include "tools/burst/burst_manifest.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "util/text.hpp"

namespace ckptmon::burst {

namespace {

constexpr std::string_view kDomain = "ckptmon-burst-manifest v2\n";
constexpr std::size_t kMacHex = 64;

std::array<unsigned char, 32> mac(const ManifestKey& key, std::string_view content) {
  std::string msg(kDomain);
  msg += content;
  std::array<unsigned char, 32> out{};
  unsigned int n = 0;
  ::HMAC(EVP_sha256(), key.bytes.data(), static_cast<int>(key.bytes.size()),
         reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), out.data(), &n);
  return out;
}

std::string hex(const std::array<unsigned char, 32>& b) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(b.size() * 2);
  for (unsigned char c : b) {
    s += kDigits[c >> 4];
    s += kDigits[c & 15];
  }
  return s;
}

// mkdir -p with 0700 for what is missing.
bool make_parents(const std::string& dir, std::string* error) {
  if (dir.empty() || dir == "/") return true;
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return true;
    *error = dir + ": not a directory";
    return false;
  }
  const auto slash = dir.rfind('/');
  if (slash != std::string::npos && !make_parents(dir.substr(0, slash), error)) return false;
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    *error = dir + ": cannot create directory: " + errno_text(errno);
    return false;
  }
  return true;
}

bool create_key(const std::string& path, std::string* error) {
  const auto slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0 && !make_parents(path.substr(0, slash), error)) {
    return false;
  }
  ManifestKey k;
  if (::RAND_bytes(k.bytes.data(), static_cast<int>(k.bytes.size())) != 1) {
    *error = path + ": no random bytes for a new key (OpenSSL RAND_bytes failed)";
    return false;
  }
  const std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + hex(mac(k, "tmp")).substr(0, 8);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = tmp + ": cannot create: " + errno_text(errno);
    return false;
  }
  const bool written =
      ::write(fd, k.bytes.data(), k.bytes.size()) == static_cast<ssize_t>(k.bytes.size()) &&
      ::fsync(fd) == 0;
  const int werr = errno;
  ::close(fd);
  // link(): the first of two bursts creating the key at once wins, the other reads it.
  const bool linked = written && (::link(tmp.c_str(), path.c_str()) == 0 || errno == EEXIST);
  const int lerr = errno;
  ::unlink(tmp.c_str());
  if (!written) {
    *error = tmp + ": cannot write: " + errno_text(werr);
    return false;
  }
  if (!linked) {
    *error = path + ": cannot create: " + errno_text(lerr);
    return false;
  }
  return true;
}

}  // namespace

std::string default_key_file(std::string* error) {
  const char* xdg = std::getenv("XDG_STATE_HOME");  // NOLINT(concurrency-mt-unsafe): read only
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/ckptmon/burst.key";
  std::string home;
  if (const char* h = std::getenv("HOME"); h != nullptr && h[0] == '/') {  // NOLINT
    home = h;
  } else {
    struct passwd pw {};
    struct passwd* found = nullptr;
    std::vector<char> buf(16384);
    if (::getpwuid_r(::geteuid(), &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr &&
        pw.pw_dir != nullptr && pw.pw_dir[0] == '/') {
      home = pw.pw_dir;
    }
  }
  if (home.empty()) {
    *error = "no home directory for the burst key (set XDG_STATE_HOME or HOME, or --key-file)";
    return "";
  }
  while (home.size() > 1 && home.back() == '/') home.pop_back();
  return home + "/.local/state/ckptmon/burst.key";
}

bool load_key(const std::string& path, bool create, ManifestKey* key, std::string* error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && create) {
    if (!create_key(path, error)) return false;
    fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd < 0) {
    *error = "burst key " + path + ": " + errno_text(errno);
    return false;
  }
  struct stat st {};
  std::string why;
  if (::fstat(fd, &st) != 0) {
    why = errno_text(errno);
  } else if (!S_ISREG(st.st_mode)) {
    why = "not a regular file";
  } else if (st.st_uid != ::geteuid()) {
    why = "owned by uid " + std::to_string(st.st_uid) + ", not by you (uid " +
          std::to_string(::geteuid()) + ")";
  } else if ((st.st_mode & 077) != 0) {
    char mode[8];
    static_cast<void>(std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777));
    why = std::string("mode ") + mode + ": readable or writable by others (chmod 600 it)";
  } else if (st.st_size != static_cast<off_t>(key->bytes.size())) {
    why = "not a burst key (" + std::to_string(st.st_size) + " bytes, not 32)";
  } else if (::pread(fd, key->bytes.data(), key->bytes.size(), 0) !=
             static_cast<ssize_t>(key->bytes.size())) {
    why = "cannot read";
  }
  ::close(fd);
  if (!why.empty()) {
    *error = "burst key " + path + ": " + why;
    return false;
  }
  return true;
}

std::string sign_line(const ManifestKey& key, std::string_view content) {
  std::string s(content);
  s += ' ';
  s += hex(mac(key, content));
  s += '\n';
  return s;
}

ManifestCheck verify_manifest(const ManifestKey& key, std::string_view text) {
  ManifestCheck c;
  std::size_t pos = 0;
  std::size_t number = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    ++number;
    if (nl == std::string_view::npos) {
      c.torn_tail = true;  // cut short mid-write: never vouched for
      break;
    }
    const std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    c.complete_bytes = pos;
    if (line.empty()) continue;
    const std::size_t sp = line.rfind(' ');
    const std::string_view tag = sp == std::string_view::npos ? "" : line.substr(sp + 1);
    if (tag.size() != kMacHex) {
      c.why = "line " + std::to_string(number) + " carries no digest";
      c.lines.clear();
      return c;
    }
    const std::string_view content = line.substr(0, sp);
    const std::string want = hex(mac(key, content));
    if (CRYPTO_memcmp(want.data(), tag.data(), kMacHex) != 0) {
      c.why = "line " + std::to_string(number) +
              ": its digest does not match (not written by your burst, or changed since)";
      c.lines.clear();
      return c;
    }
    c.lines.emplace_back(content);
  }
  c.trusted = true;
  return c;
}

}  // namespace ckptmon::burst
