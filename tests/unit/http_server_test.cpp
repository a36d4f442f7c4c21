#include "http/http_server.hpp"

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/http.hpp>
#include "loop_helpers.hpp"

#include "tests/unit/http_client.hpp"

namespace ckptmon {
namespace {

using namespace std::chrono_literals;
namespace http = boost::beast::http;
using test_http::RawClient;
using test_http::Response;

std::string get(const std::string& path, const std::string& method = "GET",
                const std::string& extra = "") {
  return test_http::request(path, method, extra);
}

// A real server on 127.0.0.1:0 with its loop on a thread of its own.
class HttpServerTest : public ::testing::Test {
 protected:
  void start(HttpLimits limits = {}) {
    server_ = std::make_unique<HttpServer>(loop_.io(), limits);
    server_->route("/hello", {"GET"}, [](const HttpRequest& r) {
      HttpResponse resp = HttpResponse::text(200, "hello " + r.remote.substr(0, 9) + "\n");
      resp.headers.emplace_back("X-Test", "yes");
      return resp;
    });
    server_->route("/echo", {"GET"}, [](const HttpRequest& r) {
      std::string out;
      for (const auto& [k, v] : r.query) out += k + "=" + v + ";";
      return HttpResponse::text(200, out);
    });
    server_->route("/reload", {"POST", "PUT"}, [](const HttpRequest& r) {
      return HttpResponse::text(200, "got " + std::to_string(r.body.size()) + " bytes\n");
    });
    server_->route("/throw", {"GET"}, [](const HttpRequest&) -> HttpResponse {
      throw std::runtime_error("handler bug");
    });
    server_->set_observer([this](const std::string& route, unsigned status) {
      observed_.emplace_back(route, status);  // loop thread
    });
    boost::asio::ip::tcp::endpoint ep;
    std::string error;
    ASSERT_TRUE(server_->listen("127.0.0.1:0", &ep, &error)) << error;
    ASSERT_NE(ep.port(), 0);
    port_ = ep.port();
    loop_.start();
  }

  // The server is loop-only: run on its thread, poll there.
  template <typename Fn>
  auto on_loop(Fn fn) {
    return loop_.run(std::move(fn));
  }
  template <typename Pred>
  bool eventually(Pred pred) {
    return loop_.eventually(std::move(pred));
  }

  ~HttpServerTest() override {
    loop_.stop([this] {
      if (server_) server_->close();
    });
    server_.reset();
  }

  testing::LoopThread loop_;  // before what lives on it, so destroyed after it
  std::unique_ptr<HttpServer> server_;
  std::uint16_t port_ = 0;
  std::vector<std::pair<std::string, unsigned>> observed_;
};

TEST_F(HttpServerTest, AnswersARoute) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send(get("/hello")));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 200u);
  EXPECT_EQ(r->body(), "hello 127.0.0.1\n");
  EXPECT_EQ((*r)[http::field::content_type], "text/plain; charset=utf-8");
  EXPECT_EQ((*r)["X-Test"], "yes");
  EXPECT_EQ((*r)[http::field::content_length], "16");
  EXPECT_TRUE(eventually([this] { return observed_.size() == 1; }));
  EXPECT_EQ(on_loop([this] { return observed_[0]; }),
            (std::pair<std::string, unsigned>{"/hello", 200}));
}

TEST_F(HttpServerTest, UnknownPathIs404) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send(get("/nope?x=1")));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 404u);
  EXPECT_EQ(r->body(), "not found: /nope\n");
  EXPECT_TRUE(eventually([this] { return observed_.size() == 1; }));
  EXPECT_EQ(on_loop([this] { return observed_[0].first; }), "other");
}

TEST_F(HttpServerTest, WrongMethodIs405WithAllow) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send(get("/hello", "POST", "Content-Length: 0\r\n")));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 405u);
  EXPECT_EQ((*r)[http::field::allow], "GET, HEAD");
  ASSERT_TRUE(c.send(get("/reload", "GET")));
  r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 405u);
  EXPECT_EQ((*r)[http::field::allow], "POST, PUT");
  ASSERT_TRUE(c.send(get("/reload", "DELETE")));
  r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 405u);
}

TEST_F(HttpServerTest, HeadHasContentLengthButNoBody) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send(get("/hello", "HEAD")));
  auto r = c.read_response(/*head=*/true);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 200u);
  EXPECT_EQ((*r)[http::field::content_length], "16");  // that of the GET body
  EXPECT_EQ(r->body(), "");
  // Had the server sent the body after all, it would be read as the start of
  // the next response: a GET on the same connection must parse cleanly.
  ASSERT_TRUE(c.send(get("/hello")));
  r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 200u);
  EXPECT_EQ(r->body(), "hello 127.0.0.1\n");
  EXPECT_EQ(c.unread(), "");
}

TEST_F(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  start();
  RawClient c(port_);
  // Two requests pipelined in one write, then a third after the answers.
  ASSERT_TRUE(c.send(get("/hello") + get("/echo?a=1&b=x%20y+z")));
  auto r1 = c.read_response();
  auto r2 = c.read_response();
  ASSERT_TRUE(r1 && r2);
  EXPECT_EQ(r1->body(), "hello 127.0.0.1\n");
  EXPECT_EQ(r2->body(), "a=1;b=x y z;");
  ASSERT_TRUE(c.send(get("/echo?k")));
  auto r3 = c.read_response();
  ASSERT_TRUE(r3);
  EXPECT_EQ(r3->body(), "k=;");
  EXPECT_EQ(on_loop([this] { return server_->connections(); }), 1u);
}

TEST_F(HttpServerTest, ConnectionCloseIsHonoured) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send(get("/hello", "GET", "Connection: close\r\n")));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 200u);
  EXPECT_TRUE(c.wait_closed());
  EXPECT_TRUE(eventually([this] { return server_->connections() == 0; }));
}

TEST_F(HttpServerTest, PostBodyReachesTheHandler) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send(get("/reload", "POST", "Content-Length: 5\r\n") + "abcde"));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 200u);
  EXPECT_EQ(r->body(), "got 5 bytes\n");
}

TEST_F(HttpServerTest, HandlerExceptionIs500) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send(get("/throw")));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 500u);
  EXPECT_EQ(r->body(), "internal error\n");
  // The server keeps serving.
  ASSERT_TRUE(c.send(get("/hello")));
  r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 200u);
}

TEST_F(HttpServerTest, OversizedHeadersAre431) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send(get("/hello", "GET", "X-Big: " + std::string(9000, 'a') + "\r\n")));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 431u);
  EXPECT_TRUE(c.wait_closed());
}

TEST_F(HttpServerTest, HeadersJustUnderTheLimitAreFine) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send(get("/hello", "GET", "X-Big: " + std::string(7000, 'a') + "\r\n")));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 200u);
}

TEST_F(HttpServerTest, OversizedBodyIs413) {
  HttpLimits limits;
  limits.body_limit = 1024;
  start(limits);
  RawClient c(port_);
  ASSERT_TRUE(c.send(get("/reload", "POST", "Content-Length: 4096\r\n") + std::string(4096, 'x')));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 413u);
  EXPECT_TRUE(c.wait_closed());
}

TEST_F(HttpServerTest, GarbageIs400) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send("THIS IS NOT HTTP\r\n\r\n"));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 400u);
  EXPECT_TRUE(c.wait_closed());
}

// Both slots held by requests past their heads (sending bodies): nothing can
// be closed for a newcomer (heads still being sent could, the test below).
TEST_F(HttpServerTest, ConnectionCapAnswers503AndCounts) {
  HttpLimits limits;
  limits.max_connections = 2;
  start(limits);
  const std::string body_pending = "GET /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n";
  RawClient a(port_);
  RawClient b(port_);
  ASSERT_TRUE(a.send(body_pending));
  ASSERT_TRUE(b.send(body_pending));
  ASSERT_TRUE(eventually([this] { return server_->connections() == 2; }));
  RawClient c(port_);
  auto r = c.read_response();  // answered without being asked
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 503u);
  EXPECT_EQ(r->body(), "too many connections\n");
  EXPECT_TRUE(c.wait_closed());
  EXPECT_EQ(on_loop([this] { return server_->rejected_connections(); }), 1u);
  EXPECT_EQ(on_loop([this] { return server_->connections(); }), 2u);

  // The two admitted connections still work.
  ASSERT_TRUE(a.send("ok"));
  auto ra = a.read_response();
  ASSERT_TRUE(ra);
  EXPECT_EQ(ra->result_int(), 200u);

  // Once one leaves, a new one is admitted.
  b.close();
  ASSERT_TRUE(eventually([this] { return server_->connections() == 1; }));
  RawClient d(port_);
  ASSERT_TRUE(d.send(get("/hello")));
  auto rd = d.read_response();
  ASSERT_TRUE(rd);
  EXPECT_EQ(rd->result_int(), 200u);
  EXPECT_EQ(on_loop([this] { return server_->rejected_connections(); }), 1u);
}

TEST(AdmitConnection, PerPeerCapFirstThenIdleKeepAlivesThenSlowHeadsMakeRoomAtTheGlobalCap) {
  HttpLimits l;
  l.max_connections = 10;
  l.max_connections_per_peer = 3;
  EXPECT_EQ(admit_connection(0, 0, 0, 0, l), Admission::kAdmit);
  EXPECT_EQ(admit_connection(2, 9, 0, 0, l), Admission::kAdmit);
  EXPECT_EQ(admit_connection(3, 5, 0, 0, l), Admission::kPeerFull);
  // The peer cap holds even when idle connections could be closed.
  EXPECT_EQ(admit_connection(3, 10, 4, 4, l), Admission::kPeerFull);
  EXPECT_EQ(admit_connection(0, 10, 0, 0, l), Admission::kFull);
  EXPECT_EQ(admit_connection(0, 10, 1, 0, l), Admission::kAdmitAfterClosingAnIdle);
  // An idle one goes before a slow head.
  EXPECT_EQ(admit_connection(0, 10, 1, 5, l), Admission::kAdmitAfterClosingAnIdle);
  EXPECT_EQ(admit_connection(0, 10, 0, 5, l), Admission::kAdmitAfterClosingASlowHead);
}

// One address holding its share leaves room for another (loopback is all
// of 127/8, so 127.0.0.2 is a second client address).
TEST_F(HttpServerTest, OnePeerAtItsCapLeavesTheOthersServed) {
  HttpLimits limits;
  limits.max_connections_per_peer = 2;
  start(limits);
  RawClient a(port_);
  RawClient b(port_);
  ASSERT_TRUE(eventually([this] { return server_->connections() == 2; }));
  RawClient c(port_);
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 503u);
  EXPECT_EQ(r->body(), "too many connections from 127.0.0.1\n");
  EXPECT_EQ(on_loop([this] { return server_->rejected_per_peer(); }), 1u);
  EXPECT_EQ(on_loop([this] { return server_->rejected_connections(); }), 0u);

  RawClient other(port_, "127.0.0.2");
  ASSERT_TRUE(other.send(get("/hello")));
  auto ro = other.read_response();
  ASSERT_TRUE(ro);
  EXPECT_EQ(ro->result_int(), 200u);
  EXPECT_EQ(on_loop([this] { return server_->peers(); }), 2u);
}

// At the global cap a connection that finished a request and waits for the
// next is closed to make room; one in the middle of a request is not.
TEST_F(HttpServerTest, AnIdleKeepAliveIsClosedFirstAtTheCap) {
  HttpLimits limits;
  limits.max_connections = 2;
  start(limits);
  RawClient kept(port_);
  ASSERT_TRUE(kept.send(get("/hello")));
  ASSERT_TRUE(kept.read_response());  // now idle, kept alive
  RawClient partial(port_);
  ASSERT_TRUE(partial.send("GET /hello HTTP/1.1\r\nHost: x\r\n"));
  ASSERT_TRUE(eventually([this] { return server_->connections() == 2; }));
  RawClient fresh(port_);
  ASSERT_TRUE(fresh.send(get("/hello")));
  auto r = fresh.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 200u);
  EXPECT_TRUE(kept.wait_closed());
  EXPECT_EQ(on_loop([this] { return server_->idle_closed(); }), 1u);
  ASSERT_TRUE(partial.send("\r\n"));
  auto rp = partial.read_response();
  ASSERT_TRUE(rp);
  EXPECT_EQ(rp->result_int(), 200u);
}

// The head has a deadline of its own, shorter than the body's: a client that
// trickles its head is cut at header_timeout.
TEST_F(HttpServerTest, ASlowHeadIsCutAtTheHeaderTimeout) {
  HttpLimits limits;
  limits.header_timeout = 50ms;
  limits.read_timeout = std::chrono::hours(1);
  start(limits);
  RawClient partial(port_);
  ASSERT_TRUE(partial.send("GET /hello HTTP/1.1\r\nHost: x\r\n"));
  EXPECT_TRUE(partial.wait_closed());
  EXPECT_TRUE(eventually([this] { return server_->connections() == 0; }));
}

// Every slot held by a connection past its head (here: sending a body it
// never finishes): nothing can be closed for the newcomer, which gets 503.
TEST_F(HttpServerTest, ConnectionOverTheCapThatSentARequestStillGets503) {
  HttpLimits limits;
  limits.max_connections = 1;
  start(limits);
  RawClient a(port_);
  ASSERT_TRUE(a.send("GET /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"));
  ASSERT_TRUE(eventually([this] { return server_->connections() == 1; }));
  // What a scraper does: connect and send at once.
  RawClient c(port_);
  ASSERT_TRUE(c.send(get("/hello")));
  auto r = c.read_response();
  ASSERT_TRUE(r) << "connection ended without a response";
  EXPECT_EQ(r->result_int(), 503u);
  EXPECT_EQ(on_loop([this] { return server_->slow_heads_closed(); }), 0u);
}

// Issue 27 item 10: many addresses each under the per-peer cap, all
// trickling request heads, fill the global cap. A scraper from a fresh
// address is still served: the connection that has sent its head the
// longest is closed for it, whatever its address; those that came later
// are kept.
TEST_F(HttpServerTest, SlowHeadsFromManyAddressesDoNotLockOutAFreshScraper) {
  HttpLimits limits;
  limits.max_connections = 6;
  limits.max_connections_per_peer = 2;
  limits.header_timeout = std::chrono::hours(1);
  start(limits);
  std::vector<std::unique_ptr<RawClient>> slow;
  auto add_slow = [&](const std::string& address) {
    slow.push_back(std::make_unique<RawClient>(port_, address.c_str()));
    return slow.back()->send("GET /hello HTTP/1.1\r\nHost: x\r\n");
  };
  for (int peer = 2; peer <= 4; ++peer) {
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(add_slow("127.0.0." + std::to_string(peer)));
      const std::size_t n = slow.size();
      ASSERT_TRUE(eventually([this, n] { return server_->connections() == n; }));
    }
  }
  for (int k = 0; k < 3; ++k) {
    if (k > 0) {  // back at the cap with a newer slow head from another address
      ASSERT_TRUE(add_slow("127.0.0." + std::to_string(10 + k)));
      ASSERT_TRUE(eventually([this] { return server_->connections() == 6; }));
    }
    {
      RawClient scraper(port_, "127.0.0.9");
      ASSERT_TRUE(scraper.send(get("/hello")));
      auto r = scraper.read_response();
      ASSERT_TRUE(r) << "scrape " << k << " got no response";
      EXPECT_EQ(r->result_int(), 200u) << "scrape " << k;
    }
    // The oldest slow head went for it: the originals in their order, never the newer ones.
    EXPECT_TRUE(slow[static_cast<std::size_t>(k)]->wait_closed()) << k;
    ASSERT_TRUE(eventually([this] { return server_->connections() == 5; }));
  }
  EXPECT_EQ(on_loop([this] { return server_->slow_heads_closed(); }), 3u);
  EXPECT_EQ(on_loop([this] { return server_->rejected_connections(); }), 0u);
  // The younger ones are untouched: one finishes its head and is answered.
  ASSERT_TRUE(slow.back()->send("\r\n"));
  auto rl = slow.back()->read_response();
  ASSERT_TRUE(rl);
  EXPECT_EQ(rl->result_int(), 200u);
}

TEST_F(HttpServerTest, IdleConnectionIsClosedAfterTheReadTimeout) {
  HttpLimits limits;
  limits.read_timeout = 100ms;
  limits.header_timeout = 100ms;  // an idle connection and a half head wait on this one
  start(limits);
  RawClient idle(port_);
  RawClient partial(port_);
  ASSERT_TRUE(partial.send("GET /hello HTTP/1.1\r\nHost: x\r\n"));  // never finished
  EXPECT_TRUE(idle.wait_closed());
  EXPECT_TRUE(partial.wait_closed());
  EXPECT_EQ(idle.unread(), "");
  EXPECT_TRUE(eventually([this] { return server_->connections() == 0; }));
}

TEST_F(HttpServerTest, KeptAliveConnectionIsClosedWhenIdleAfterAResponse) {
  HttpLimits limits;
  limits.read_timeout = 100ms;
  limits.header_timeout = 100ms;
  start(limits);
  RawClient c(port_);
  ASSERT_TRUE(c.send(get("/hello")));
  ASSERT_TRUE(c.read_response());
  EXPECT_TRUE(c.wait_closed());
}

TEST_F(HttpServerTest, CloseDropsOpenConnectionsAndStopsAccepting) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(eventually([this] { return server_->connections() == 1; }));
  on_loop([this] { server_->close(); });
  EXPECT_TRUE(c.wait_closed());
  // The listener is gone: connecting fails or is closed at once.
  bool refused = false;
  try {
    RawClient late(port_);
    refused = late.wait_closed();
  } catch (const std::runtime_error&) {
    refused = true;
  }
  EXPECT_TRUE(refused);
}

TEST(HttpServerListen, PortInUseIsAnError) {
  boost::asio::io_context io;
  HttpServer a(io, {});
  HttpServer b(io, {});
  boost::asio::ip::tcp::endpoint ep;
  std::string error;
  ASSERT_TRUE(a.listen("127.0.0.1:0", &ep, &error)) << error;
  const std::string addr = "127.0.0.1:" + std::to_string(ep.port());
  EXPECT_FALSE(b.listen(addr, nullptr, &error));
  EXPECT_TRUE(error.starts_with("cannot listen on " + addr + ": ")) << error;
}

TEST(ParseListenAddress, AcceptsHostPortForms) {
  std::string host;
  std::uint16_t port = 0;
  std::string error;
  ASSERT_TRUE(parse_listen_address("127.0.0.1:9100", &host, &port, &error));
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 9100);
  ASSERT_TRUE(parse_listen_address(":10025", &host, &port, &error));
  EXPECT_EQ(host, "");
  EXPECT_EQ(port, 10025);
  ASSERT_TRUE(parse_listen_address("[::1]:0", &host, &port, &error));
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 0);
  ASSERT_TRUE(parse_listen_address("localhost:65535", &host, &port, &error));
  EXPECT_EQ(port, 65535);
}

TEST(ParseListenAddress, RejectsWithTheReason) {
  std::string host;
  std::uint16_t port = 0;
  std::string error;
  EXPECT_FALSE(parse_listen_address("9100", &host, &port, &error));
  EXPECT_EQ(error, "expected host:port or :port, got \"9100\"");
  EXPECT_FALSE(parse_listen_address("host:65536", &host, &port, &error));
  EXPECT_EQ(error, "invalid port in \"host:65536\"");
  EXPECT_FALSE(parse_listen_address("host:", &host, &port, &error));
  EXPECT_EQ(error, "invalid port in \"host:\"");
  EXPECT_FALSE(parse_listen_address("host:-1", &host, &port, &error));
  EXPECT_FALSE(parse_listen_address("host:80x", &host, &port, &error));
  EXPECT_FALSE(parse_listen_address("[::1]9100", &host, &port, &error));
  EXPECT_EQ(error, "expected [ipv6]:port, got \"[::1]9100\"");
}

TEST(UrlDecode, DecodesPercentAndPlus) {
  EXPECT_EQ(url_decode("a%20b+c"), "a b c");
  EXPECT_EQ(url_decode("%2Fx%2f"), "/x/");
  EXPECT_EQ(url_decode("100%"), "100%");
  EXPECT_EQ(url_decode("%zz"), "%zz");
  EXPECT_EQ(url_decode("%4"), "%4");
  EXPECT_EQ(url_decode("%41"), "A");
}

TEST(UrlEncode, JobNamesSurviveTheRoundTrip) {
  EXPECT_EQ(url_encode("run-1_a.b~c"), "run-1_a.b~c");
  EXPECT_EQ(url_encode("a b&c#d+e%f"), "a%20b%26c%23d%2Be%25f");
  for (const std::string name :
       {"a&b", "a#b", "a+b", "100%", "%41", "a b", "x=y?z", "caf\xC3\xA9", "\xFF", ""}) {
    EXPECT_EQ(url_decode(url_encode(name)), name) << name;
  }
}

}  // namespace
}  // namespace ckptmon
