#include "http/basic_auth.hpp"

#include <crypt.h>

#include <algorithm>
#include <cstring>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <boost/asio/post.hpp>

namespace ckptmon {
namespace {

// Successful checks remembered per user: a scraper's password, plus room for
// a rotation in progress. Failures are not cached, so wrong guesses can never
// push a scraper's entry out.
constexpr std::size_t kCachePerUser = 4;

void wipe(std::string& s) {
  if (!s.empty()) OPENSSL_cleanse(s.data(), s.size());
  s.clear();
}

bool iequals_prefix(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != prefix[i]) return false;
  }
  return true;
}

// "Basic" followed by at least one space (RFC 7235: the scheme is
// case-insensitive).
bool is_basic_scheme(std::string_view header) {
  return iequals_prefix(header, "basic") && header.size() > 5 && header[5] == ' ';
}

bool is_base64_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/';
}

}  // namespace

bool parse_basic_authorization(std::string_view header, std::string* user, std::string* password) {
  if (!is_basic_scheme(header)) return false;
  std::string_view b64 = header.substr(6);
  while (!b64.empty() && b64.front() == ' ') b64.remove_prefix(1);
  while (!b64.empty() && b64.back() == ' ') b64.remove_suffix(1);
  if (b64.empty() || b64.size() % 4 != 0) return false;
  std::size_t padding = 0;
  for (std::size_t i = 0; i < b64.size(); ++i) {
    if (b64[i] == '=' && i + 2 >= b64.size()) {
      ++padding;
    } else if (padding > 0 || !is_base64_char(b64[i])) {
      return false;  // '=' only at the end; nothing but the alphabet before it
    }
  }
  std::string decoded(b64.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                                reinterpret_cast<const unsigned char*>(b64.data()),
                                static_cast<int>(b64.size()));
  if (n < 0 || static_cast<std::size_t>(n) != decoded.size()) {
    wipe(decoded);
    return false;
  }
  decoded.resize(decoded.size() - padding);  // EVP_DecodeBlock counts padding as zero bytes
  const auto colon = decoded.find(':');
  if (colon == std::string::npos) {
    wipe(decoded);
    return false;
  }
  *user = decoded.substr(0, colon);
  *password = decoded.substr(colon + 1);
  wipe(decoded);
  return true;
}

bool bcrypt_verify(const std::string& password, const std::string& hash) {
  // crypt_r takes C strings: a NUL inside the password would cut it short.
  if (password.find('\0') != std::string::npos) return false;
  auto data = std::make_unique<crypt_data>();  // value-initialised: crypt_r wants it zeroed
  const char* out = crypt_r(password.c_str(), hash.c_str(), data.get());
  // On failure libxcrypt returns a string starting with '*', never a match.
  const bool ok = out != nullptr && std::strlen(out) == hash.size() &&
                  CRYPTO_memcmp(out, hash.data(), hash.size()) == 0;
  OPENSSL_cleanse(data.get(), sizeof(crypt_data));
  return ok;
}

BasicAuth::BasicAuth(boost::asio::io_context& io, std::size_t threads, std::size_t max_pending)
    : io_(io),
      max_pending_(max_pending),
      mailbox_(std::make_shared<Mailbox>()),
      pool_(std::make_unique<WorkerPool>(threads)) {
  mailbox_->io = &io_;
  mailbox_->owner = this;
  // The cache holds HMACs of passwords under a key that never leaves this
  // process, so a memory dump does not hand out fast-to-crack digests.
  if (RAND_bytes(hmac_key_.data(), static_cast<int>(hmac_key_.size())) != 1) {
    throw std::runtime_error("RAND_bytes failed: no entropy for the credential cache key");
  }
}

BasicAuth::~BasicAuth() {
  {
    std::lock_guard lock(mailbox_->mu);
    mailbox_->io = nullptr;
    mailbox_->owner = nullptr;
  }
  for (auto& p : pending_) wipe(p.password);
  pool_.reset();
  OPENSSL_cleanse(hmac_key_.data(), hmac_key_.size());
}

void BasicAuth::set_users(std::map<std::string, std::string> users) {
  if (users == users_) return;  // a reload of the same file keeps the cache
  users_ = std::move(users);
  cache_.clear();
  ++generation_;
  // Unknown users are checked against a hash of the same cost as a real one
  // (the cost is the two digits after "$2?$"), so the answer's timing does not
  // tell which user names exist. The salt and hash are arbitrary but valid.
  std::string cost = "10";
  if (!users_.empty()) cost = users_.begin()->second.substr(4, 2);
  dummy_hash_ = "$2b$" + cost + "$pi50YzIRJ8iFPBJShr0zM.93xi.MsCkGeyi/29Mhmh0K/BMT/TNue";
}

void BasicAuth::check(std::string_view authorization, HttpAuthDone done) {
  if (!is_basic_scheme(authorization)) {
    ++stats_.missing;
    done(AuthDecision::kDeny, {});
    return;
  }
  std::string user;
  std::string password;
  if (!parse_basic_authorization(authorization, &user, &password) ||
      password.find('\0') != std::string::npos) {
    wipe(password);
    ++stats_.invalid;
    done(AuthDecision::kDeny, {});
    return;
  }
  check_credentials(std::move(user), std::move(password), std::move(done));
}

BasicAuth::Digest BasicAuth::digest_of(const std::string& password) const {
  Digest d{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), hmac_key_.data(), static_cast<int>(hmac_key_.size()),
       reinterpret_cast<const unsigned char*>(password.data()), password.size(), d.data(), &len);
  return d;
}

void BasicAuth::check_credentials(std::string user, std::string password, HttpAuthDone done) {
  const Digest d = digest_of(password);
  const auto user_it = users_.find(user);
  if (user_it != users_.end()) {
    bool hit = false;
    if (auto c = cache_.find(user); c != cache_.end()) {
      // Every entry is compared, in constant time, whatever matched before.
      for (const Digest& e : c->second) {
        hit |= CRYPTO_memcmp(e.data(), d.data(), d.size()) == 0;
      }
    }
    if (hit) {
      ++stats_.cache_hits;
      wipe(password);
      done(AuthDecision::kAllow, user);
      return;
    }
  }
  // The same credentials on several connections at once: one bcrypt for all.
  for (auto& p : pending_) {
    if (p.user == user && CRYPTO_memcmp(p.digest.data(), d.data(), d.size()) == 0) {
      p.waiters.push_back(std::move(done));
      wipe(password);
      return;
    }
  }
  if (pending_.size() >= max_pending_) {
    ++stats_.busy;
    wipe(password);
    done(AuthDecision::kBusy, {});
    return;
  }
  const bool known = user_it != users_.end();
  const std::string hash = known ? user_it->second : dummy_hash_;
  Pending& p = pending_.emplace_back();
  p.id = next_id_++;
  p.user = std::move(user);
  p.password = std::move(password);
  p.digest = d;
  p.waiters.push_back(std::move(done));
  ++stats_.bcrypt_runs;
  pool_->post([mailbox = mailbox_, id = p.id, generation = generation_, password = p.password, hash,
               known]() mutable {
    const bool ok = bcrypt_verify(password, hash) && known;
    wipe(password);
    std::lock_guard lock(mailbox->mu);
    if (mailbox->io == nullptr) return;
    boost::asio::post(*mailbox->io, [mailbox, id, generation, ok] {
      BasicAuth* owner = nullptr;
      {
        std::lock_guard inner(mailbox->mu);
        owner = mailbox->owner;
      }
      if (owner != nullptr) owner->finished(id, generation, ok);
    });
  });
}

void BasicAuth::finished(std::uint64_t id, std::uint64_t generation, bool ok) {
  auto it =
      std::find_if(pending_.begin(), pending_.end(), [id](const Pending& p) { return p.id == id; });
  if (it == pending_.end()) return;
  Pending p = std::move(*it);
  pending_.erase(it);
  if (generation != generation_) {
    // The users changed while bcrypt ran: decide again under the new ones.
    for (auto& w : p.waiters) check_credentials(p.user, p.password, std::move(w));
    wipe(p.password);
    return;
  }
  wipe(p.password);
  if (ok) {
    auto& entries = cache_[p.user];
    entries.push_back(p.digest);
    if (entries.size() > kCachePerUser) entries.pop_front();
  } else {
    stats_.invalid += p.waiters.size();
  }
  for (auto& w : p.waiters) {
    if (ok) {
      w(AuthDecision::kAllow, p.user);
    } else {
      w(AuthDecision::kDeny, {});
    }
  }
}

}  // namespace ckptmon
