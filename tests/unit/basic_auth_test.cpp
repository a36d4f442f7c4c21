#include "http/basic_auth.hpp"

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

namespace ckptmon {
namespace {

// crypt_blowfish (Openwall) test vectors: "U*U" and "U*U*" at cost 05.
constexpr const char* kHashUU = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW";
constexpr const char* kHashUUU = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.VGOzA784oUp/Z0DY336zx7pLYAy0lwK";
// base64("prometheus:U*U"), base64("prometheus:U*U*"), base64("nobody:U*U").
constexpr const char* kGoodHeader = "Basic cHJvbWV0aGV1czpVKlU=";
constexpr const char* kOtherHeader = "Basic cHJvbWV0aGV1czpVKlUq";
constexpr const char* kUnknownUserHeader = "Basic bm9ib2R5OlUqVQ==";

TEST(ParseBasicAuthorization, SplitsUserAndPasswordAtTheFirstColon) {
  struct Case {
    const char* header;
    const char* user;
    const char* password;
  };
  for (const Case& c : {Case{"Basic dTpw", "u", "p"}, Case{"basic dTpw", "u", "p"},
                        Case{"BASIC   dTpw  ", "u", "p"}, Case{"Basic dTpwOnE=", "u", "p:q"},
                        Case{"Basic dTo=", "u", ""}, Case{"Basic Ong=", "", "x"}}) {
    std::string user;
    std::string password;
    ASSERT_TRUE(parse_basic_authorization(c.header, &user, &password)) << c.header;
    EXPECT_EQ(user, c.user) << c.header;
    EXPECT_EQ(password, c.password) << c.header;
  }
  std::string user;
  std::string password;
  ASSERT_TRUE(parse_basic_authorization("Basic dTphAGI=", &user, &password));
  EXPECT_EQ(password, std::string("a\0b", 3));
}

TEST(ParseBasicAuthorization, RejectsOtherSchemesAndBadBase64) {
  for (const char* h :
       {"", "Basic", "Basic ", "Bearer dTpw", "Basicx dTpw", "Basic dTpw=", "Basic dT=w",
        "Basic d*pw", "Basic dXNlcg==" /* "user": no colon */, "Basic dTpw dTpw"}) {
    std::string user;
    std::string password;
    EXPECT_FALSE(parse_basic_authorization(h, &user, &password)) << h;
  }
}

TEST(BcryptVerify, MatchesTheReferenceVectors) {
  EXPECT_TRUE(bcrypt_verify("U*U", kHashUU));
  EXPECT_TRUE(bcrypt_verify("U*U*", kHashUUU));
  EXPECT_FALSE(bcrypt_verify("U*U*", kHashUU));
  EXPECT_FALSE(bcrypt_verify("", kHashUU));
  // $2y$ and $2b$ are the same algorithm as $2a$ for ASCII passwords.
  EXPECT_TRUE(bcrypt_verify("U*U", "$2y$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"));
  EXPECT_TRUE(bcrypt_verify("U*U", "$2b$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"));
  EXPECT_FALSE(bcrypt_verify("U*U", "not a hash"));
  EXPECT_FALSE(bcrypt_verify("U*U", ""));
  // A NUL would end the C string crypt_r sees: "U*U\0junk" must not pass as "U*U".
  EXPECT_FALSE(bcrypt_verify(std::string("U*U\0junk", 8), kHashUU));
}

// BasicAuth on an io_context this test drives: decisions that need bcrypt
// arrive once the loop runs the worker's result.
class BasicAuthTest : public ::testing::Test {
 protected:
  void make(std::size_t max_pending = 32) {
    auth_ = std::make_unique<BasicAuth>(io_, 2, max_pending);
    auth_->set_users({{"prometheus", kHashUU}});
  }

  // Starts a check; the slot is filled when the decision arrives.
  std::shared_ptr<std::optional<AuthDecision>> start(std::string_view header) {
    auto out = std::make_shared<std::optional<AuthDecision>>();
    auth_->check(header, [this, out](AuthDecision d, const std::string& user) {
      *out = d;
      users_.push_back(user);
    });
    return out;
  }

  // Runs the loop until every slot is filled. The cap only turns a bug into a
  // failure instead of a hang; nothing is asserted about how long it took.
  void settle(const std::vector<std::shared_ptr<std::optional<AuthDecision>>>& slots) {
    auto all = [&] {
      for (const auto& s : slots) {
        if (!s->has_value()) return false;
      }
      return true;
    };
    const auto cap = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!all()) {
      if (std::chrono::steady_clock::now() > cap) {
        // Callers dereference the slots next: end the test here.
        throw std::runtime_error("no decision within 10 s");
      }
      io_.run_one_for(std::chrono::milliseconds(10));
    }
  }

  AuthDecision decide(std::string_view header) {
    auto slot = start(header);
    settle({slot});
    return **slot;
  }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_ =
      boost::asio::make_work_guard(io_);
  std::unique_ptr<BasicAuth> auth_;
  std::vector<std::string> users_;  // handed to each decision, in order
};

TEST_F(BasicAuthTest, RightPasswordPassesAndIsThenServedFromTheCache) {
  make();
  EXPECT_TRUE(auth_->enabled());
  EXPECT_EQ(decide(kGoodHeader), AuthDecision::kAllow);
  EXPECT_EQ(auth_->stats().bcrypt_runs, 1u);
  // Decided without the loop running: straight from the cache.
  auto again = start(kGoodHeader);
  ASSERT_TRUE(again->has_value());
  EXPECT_EQ(**again, AuthDecision::kAllow);
  EXPECT_EQ(auth_->stats().bcrypt_runs, 1u);
  EXPECT_EQ(auth_->stats().cache_hits, 1u);
  EXPECT_EQ(auth_->stats().invalid, 0u);
  // Both decisions, bcrypt's and the cache's, name the user (the access log's).
  EXPECT_EQ(users_, (std::vector<std::string>{"prometheus", "prometheus"}));
}

TEST_F(BasicAuthTest, WrongPasswordIsDeniedEveryTimeWithBcrypt) {
  make();
  EXPECT_EQ(decide(kOtherHeader), AuthDecision::kDeny);
  EXPECT_EQ(decide(kOtherHeader), AuthDecision::kDeny);
  // Failures are not cached: a guess can never evict a scraper's entry.
  EXPECT_EQ(auth_->stats().bcrypt_runs, 2u);
  EXPECT_EQ(auth_->stats().invalid, 2u);
  EXPECT_EQ(auth_->stats().cache_hits, 0u);
  // A denied request names nobody.
  EXPECT_EQ(users_, (std::vector<std::string>{"", ""}));
}

TEST_F(BasicAuthTest, UnknownUserIsDeniedAfterADummyBcrypt) {
  make();
  EXPECT_EQ(decide(kUnknownUserHeader), AuthDecision::kDeny);
  EXPECT_EQ(auth_->stats().bcrypt_runs, 1u);
  EXPECT_EQ(auth_->stats().invalid, 1u);
}

TEST_F(BasicAuthTest, MissingAndMalformedHeadersAreDeniedAtOnce) {
  make();
  for (const char* h : {"", "Bearer abc", "Basic !!!!", "Basic dTphAGI=" /* NUL in password */}) {
    auto slot = start(h);
    ASSERT_TRUE(slot->has_value()) << h;
    EXPECT_EQ(**slot, AuthDecision::kDeny) << h;
  }
  EXPECT_EQ(auth_->stats().missing, 2u);
  EXPECT_EQ(auth_->stats().invalid, 2u);
  EXPECT_EQ(auth_->stats().bcrypt_runs, 0u);
}

TEST_F(BasicAuthTest, SameCredentialsInFlightShareOneBcrypt) {
  make();
  auto a = start(kGoodHeader);
  auto b = start(kGoodHeader);
  auto c = start(kGoodHeader);
  EXPECT_EQ(auth_->pending(), 1u);
  settle({a, b, c});
  EXPECT_EQ(**a, AuthDecision::kAllow);
  EXPECT_EQ(**b, AuthDecision::kAllow);
  EXPECT_EQ(**c, AuthDecision::kAllow);
  EXPECT_EQ(auth_->stats().bcrypt_runs, 1u);
}

TEST_F(BasicAuthTest, TooManyChecksInFlightAreAnsweredBusy) {
  make(/*max_pending=*/1);
  auto first = start(kOtherHeader);
  auto second = start(kUnknownUserHeader);
  ASSERT_TRUE(second->has_value());
  EXPECT_EQ(**second, AuthDecision::kBusy);
  EXPECT_EQ(auth_->stats().busy, 1u);
  settle({first});
  EXPECT_EQ(**first, AuthDecision::kDeny);
  // Room again once the first is done.
  EXPECT_EQ(decide(kGoodHeader), AuthDecision::kAllow);
}

TEST_F(BasicAuthTest, NewUsersForgetTheCache) {
  make();
  EXPECT_EQ(decide(kGoodHeader), AuthDecision::kAllow);
  auth_->set_users({{"prometheus", kHashUUU}});  // the password is now "U*U*"
  EXPECT_EQ(decide(kGoodHeader), AuthDecision::kDeny);
  EXPECT_EQ(decide(kOtherHeader), AuthDecision::kAllow);
  EXPECT_EQ(auth_->stats().bcrypt_runs, 3u);
  // The same users again keep what is cached.
  auth_->set_users({{"prometheus", kHashUUU}});
  auto cached = start(kOtherHeader);
  ASSERT_TRUE(cached->has_value());
  EXPECT_EQ(**cached, AuthDecision::kAllow);
  auth_->set_users({});
  EXPECT_FALSE(auth_->enabled());
}

TEST_F(BasicAuthTest, ACheckInFlightWhenUsersChangeIsDecidedUnderTheNewOnes) {
  make();
  auto slot = start(kGoodHeader);  // would pass under the old hash
  auth_->set_users({{"prometheus", kHashUUU}});
  settle({slot});
  EXPECT_EQ(**slot, AuthDecision::kDeny);
  EXPECT_EQ(auth_->stats().bcrypt_runs, 2u);
}

TEST_F(BasicAuthTest, DestroyedWithChecksInFlightDropsThemQuietly) {
  make();
  auto slot = start(kGoodHeader);
  auth_.reset();
  // Whatever the worker posts now finds no owner; nothing is decided. Run the
  // loop until nothing but this test holds the slot (no callback that could
  // fill it is left anywhere), then once more for anything posted meanwhile.
  const auto cap = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (slot.use_count() > 1 && std::chrono::steady_clock::now() < cap) {
    io_.run_one_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(slot.use_count(), 1);
  io_.poll();
  EXPECT_FALSE(slot->has_value());
}

}  // namespace
}  // namespace ckptmon
