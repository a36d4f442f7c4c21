#include "store/state_lock.hpp"
#include "util/text.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace ckptmon {

namespace {

// The PID the holder wrote, or "" when the file says nothing readable.
std::string holder_pid(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  long pid = 0;
  const char* end = buf + n;
  auto [p, ec] = std::from_chars(buf, end, pid);
  if (ec != std::errc() || pid <= 0 || (p != end && *p != '\n')) return "";
  return std::to_string(pid);
}

}  // namespace

std::unique_ptr<StateDirLock> StateDirLock::acquire(const std::string& state_dir,
                                                    std::string* error) {
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  if (ec) {
    *error = "cannot create state_dir " + state_dir + ": " + ec.message();
    return nullptr;
  }
  std::string path = (std::filesystem::path(state_dir) / "ckptmon.lock").string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    *error = "cannot open the state lock " + path + ": " + errno_text(errno);
    return nullptr;
  }
  int rc = 0;
  do {
    rc = ::flock(fd, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    if (err == EWOULDBLOCK) {
      const std::string pid = holder_pid(fd);
      *error = "state_dir " + state_dir + " is in use by another ckptmon (" +
               (pid.empty() ? std::string("PID unknown") : "PID " + pid) + ", holding " + path +
               "); two daemons on one state directory would overwrite each other's state";
    } else {
      *error = "cannot lock " + path + ": " + errno_text(err);
    }
    ::close(fd);
    return nullptr;
  }
  const std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
    // The lock holds regardless; only the message of a second instance is poorer.
  }
  return std::unique_ptr<StateDirLock>(new StateDirLock(std::move(path), fd));
}

StateDirLock::~StateDirLock() { ::close(fd_); }

}  // namespace ckptmon
