#pragma once
// HTTP basic authentication against bcrypt hashes (exporter-toolkit's
// basic_auth_users). bcrypt takes tens of milliseconds by design, so it never
// runs on the event loop: an uncached check goes to a thread of its own and its
// outcome is cached per (user, keyed SHA-256 of the password), so a scraper
// that sends the same credentials every 15 s pays for bcrypt once.
// The thread of its io_context only (the daemon's HTTP thread); the bcrypt
// threads work on copies.

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "http/http_server.hpp"
#include "util/worker_pool.hpp"

namespace ckptmon {

// Splits an Authorization header value "Basic base64(user:password)". False
// when the scheme is not Basic or the credentials are not valid base64 with a
// colon.
bool parse_basic_authorization(std::string_view header, std::string* user, std::string* password);

// True when `password` hashes to `hash` with crypt_r (libxcrypt; $2a$, $2b$,
// $2y$). Compares in constant time. Blocking (that is bcrypt); thread-safe.
bool bcrypt_verify(const std::string& password, const std::string& hash);

class BasicAuth {
 public:
  struct Stats {
    std::uint64_t missing = 0;  // no Authorization header, or not Basic
    std::uint64_t invalid = 0;  // malformed, unknown user or wrong password
    std::uint64_t busy = 0;     // refused because too many checks were queued
    std::uint64_t bcrypt_runs = 0;
    std::uint64_t cache_hits = 0;
  };

  // `threads` run bcrypt; past `max_pending` distinct checks in flight, new
  // ones are answered kBusy instead of queueing without bound (a flood of
  // wrong passwords must not delay a scraper whose credentials are cached).
  explicit BasicAuth(boost::asio::io_context& io, std::size_t threads = 2,
                     std::size_t max_pending = 32);
  ~BasicAuth();
  BasicAuth(const BasicAuth&) = delete;
  BasicAuth& operator=(const BasicAuth&) = delete;

  // User name -> bcrypt hash. Forgets every cached outcome when they differ
  // from the current ones; checks in flight are redone against the new users.
  void set_users(std::map<std::string, std::string> users);
  bool enabled() const { return !users_.empty(); }

  // Decides on an Authorization header value (empty when absent). `done` runs
  // on the thread of its io_context: at once when the outcome is cached or the header is
  // unusable, after bcrypt otherwise. It is handed the user name when the
  // decision is kAllow, an empty one otherwise.
  void check(std::string_view authorization, HttpAuthDone done);

  const Stats& stats() const { return stats_; }
  std::size_t pending() const { return pending_.size(); }

 private:
  using Digest = std::array<unsigned char, 32>;
  struct Pending {
    std::uint64_t id = 0;
    std::string user;
    std::string password;  // wiped when the check ends
    Digest digest{};
    std::vector<HttpAuthDone> waiters;
  };
  // Where bcrypt threads post their results; cut off when this object goes,
  // so a thread that finishes late never touches a dead io_context.
  struct Mailbox {
    std::mutex mu;
    boost::asio::io_context* io = nullptr;
    BasicAuth* owner = nullptr;
  };

  void check_credentials(std::string user, std::string password, HttpAuthDone done);
  Digest digest_of(const std::string& password) const;
  void finished(std::uint64_t id, std::uint64_t generation, bool ok);

  boost::asio::io_context& io_;
  std::size_t max_pending_;
  std::map<std::string, std::string> users_;
  std::string dummy_hash_;  // checked for unknown users, so they take as long as known ones
  std::array<unsigned char, 32> hmac_key_{};
  std::map<std::string, std::deque<Digest>> cache_;  // successes only
  std::deque<Pending> pending_;
  std::uint64_t next_id_ = 1;
  std::uint64_t generation_ = 0;
  Stats stats_;
  std::shared_ptr<Mailbox> mailbox_;
  std::unique_ptr<WorkerPool> pool_;
};

}  // namespace ckptmon
