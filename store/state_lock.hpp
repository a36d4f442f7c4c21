#pragma once
// Exclusive ownership of a state directory: `ckptmon serve` holds an flock(2)
// on state_dir/ckptmon.lock for as long as it runs, with its PID written in
// the file, so a second daemon on the same directory refuses to start (two
// writers would overwrite each other's totals and counters would go
// backwards). The kernel drops the lock when the process ends, kill -9
// included; a stale file left behind locks nothing. Read-only tools (`scan`)
// take no lock. Not thread-safe; hold one per process.

#include <memory>
#include <string>

namespace ckptmon {

class StateDirLock {
 public:
  // Creates state_dir/ckptmon.lock as needed and locks it. nullptr with
  // `error` set when another process holds it (naming its PID) or the file
  // cannot be opened.
  static std::unique_ptr<StateDirLock> acquire(const std::string& state_dir, std::string* error);
  ~StateDirLock();
  StateDirLock(const StateDirLock&) = delete;
  StateDirLock& operator=(const StateDirLock&) = delete;

  const std::string& path() const { return path_; }

 private:
  StateDirLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
};

}  // namespace ckptmon
