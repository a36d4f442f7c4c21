// gzip for scrapes: members zlib decodes back to the input, concatenated
// members decode to the concatenated texts, and which Accept-Encoding
// values admit gzip (RFC 9110 section 12.5.3).

#include <zlib.h>

#include <gtest/gtest.h>

#include "http/gzip.hpp"

namespace ckptmon {
namespace {

// zlib's own decoder, member after member (windowBits 15 + 16: gzip only).
std::string gunzip(const std::string& in) {
  std::string out;
  std::size_t pos = 0;
  while (pos < in.size()) {
    z_stream zs{};
    EXPECT_EQ(inflateInit2(&zs, 15 + 16), Z_OK);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + pos));
    zs.avail_in = static_cast<uInt>(in.size() - pos);
    int rc = Z_OK;
    char buf[4096];
    while (rc == Z_OK) {
      zs.next_out = reinterpret_cast<Bytef*>(buf);
      zs.avail_out = sizeof buf;
      rc = inflate(&zs, Z_NO_FLUSH);
      out.append(buf, sizeof buf - zs.avail_out);
    }
    EXPECT_EQ(rc, Z_STREAM_END);
    pos += zs.total_in;
    inflateEnd(&zs);
    if (rc != Z_STREAM_END) break;
  }
  return out;
}

TEST(GzipTest, RoundTripsThroughZlib) {
  std::string text;
  for (int i = 0; i < 20000; ++i) {
    text += "ckpt_checkpoints{tier=\"rapid\",training_job=\"job-" + std::to_string(i % 100) +
            "\",state=\"committed\"} " + std::to_string(i) + "\n";
  }
  const std::string z = gzip_compress(text);
  EXPECT_EQ(static_cast<unsigned char>(z[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(z[1]), 0x8b);
  EXPECT_LT(z.size(), text.size() / 4);
  EXPECT_EQ(gunzip(z), text);
  EXPECT_EQ(gunzip(gzip_compress("")), "");
}

TEST(GzipTest, ConcatenatedMembersDecodeToTheConcatenatedTexts) {
  EXPECT_EQ(gunzip(gzip_compress("a 1\n") + gzip_compress("b 2\n")), "a 1\nb 2\n");
}

TEST(GzipTest, AcceptEncoding) {
  EXPECT_TRUE(accepts_gzip("gzip"));
  EXPECT_TRUE(accepts_gzip("GZIP"));
  EXPECT_TRUE(accepts_gzip("identity, gzip"));
  EXPECT_TRUE(accepts_gzip("gzip;q=0.5, identity"));
  EXPECT_TRUE(accepts_gzip("br, *"));
  EXPECT_TRUE(accepts_gzip("gzip; q=1.0"));
  EXPECT_FALSE(accepts_gzip(""));
  EXPECT_FALSE(accepts_gzip("identity"));
  EXPECT_FALSE(accepts_gzip("deflate, br"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("gzip; q=0.000"));
  EXPECT_FALSE(accepts_gzip("x-gzip"));
}

}  // namespace
}  // namespace ckptmon
