#include "util/digest.hpp"

#include <isa-l/crc.h>
#include <openssl/evp.h>
#include <xxhash.h>

#include <array>
#include <climits>
#include <cstdio>
#include <stdexcept>

namespace ckptmon {
namespace {

std::string hex_of(const unsigned char* p, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(n * 2, '0');
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[p[i] >> 4];
    out[2 * i + 1] = kDigits[p[i] & 15];
  }
  return out;
}

// CRC-32C (Castagnoli) as iSCSI and every crc32c package define it: initial
// value and final XOR 0xFFFFFFFF, reflected. ISA-L's crc32_iscsi takes and
// returns the register without the final XOR, so chunks chain directly.
class Crc32c final : public Digest {
 public:
  void update(const void* data, std::size_t n) override {
    const auto* p = static_cast<const unsigned char*>(data);
    while (n > 0) {
      const std::size_t step = std::min<std::size_t>(n, INT_MAX);
      crc_ = crc32_iscsi(const_cast<unsigned char*>(p), static_cast<int>(step), crc_);
      p += step;
      n -= step;
    }
  }
  std::string hex() override {
    std::array<char, 9> buf{};
    static_cast<void>(std::snprintf(buf.data(), buf.size(), "%08x", crc_ ^ 0xFFFFFFFFu));
    return buf.data();
  }

 private:
  unsigned int crc_ = 0xFFFFFFFFu;
};

class Xxh64 final : public Digest {
 public:
  Xxh64() : state_(XXH64_createState()) {
    if (state_ == nullptr) throw std::bad_alloc();
    XXH64_reset(state_, 0);
  }
  ~Xxh64() override { XXH64_freeState(state_); }
  Xxh64(const Xxh64&) = delete;
  Xxh64& operator=(const Xxh64&) = delete;
  void update(const void* data, std::size_t n) override { XXH64_update(state_, data, n); }
  std::string hex() override {
    std::array<char, 17> buf{};
    static_cast<void>(std::snprintf(buf.data(), buf.size(), "%016llx",
                                    static_cast<unsigned long long>(XXH64_digest(state_))));
    return buf.data();
  }

 private:
  XXH64_state_t* state_;
};

class Sha256 final : public Digest {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) {
    if (ctx_ == nullptr || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) {
      EVP_MD_CTX_free(ctx_);
      throw std::runtime_error("OpenSSL: cannot initialise SHA-256");
    }
  }
  ~Sha256() override { EVP_MD_CTX_free(ctx_); }
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, std::size_t n) override {
    if (EVP_DigestUpdate(ctx_, data, n) != 1) throw std::runtime_error("OpenSSL: SHA-256 update");
  }
  std::string hex() override {
    std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(ctx_, md.data(), &len) != 1) {
      throw std::runtime_error("OpenSSL: SHA-256 final");
    }
    return hex_of(md.data(), len);
  }

 private:
  EVP_MD_CTX* ctx_;
};

}  // namespace

std::unique_ptr<Digest> Digest::make(ChecksumAlgo algo) {
  switch (algo) {
    case ChecksumAlgo::kCrc32c:
      return std::make_unique<Crc32c>();
    case ChecksumAlgo::kSha256:
      return std::make_unique<Sha256>();
    case ChecksumAlgo::kXxh64:
      return std::make_unique<Xxh64>();
    case ChecksumAlgo::kNone:
      break;
  }
  return nullptr;
}

std::string digest_hex(ChecksumAlgo algo, std::string_view data) {
  auto d = Digest::make(algo);
  if (!d) return {};
  d->update(data.data(), data.size());
  return d->hex();
}

std::uint64_t xxh64(const void* data, std::size_t n) { return XXH64(data, n, 0); }

}  // namespace ckptmon
