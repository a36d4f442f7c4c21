// util/label: the one sanitiser of label values. Expected values by hand from
// the rules in docs/metrics.md ("Label values"): U+FFFD per maximal subpart
// (Unicode ch. 3; Python's decode(errors="replace") agrees on each case),
// controls replaced, 128 bytes at most, "~" + SHA-256 prefix (from
// `printf ... | sha256sum`) when anything changed.

#include <gtest/gtest.h>

#include <string>

#include "util/label.hpp"

namespace ckptmon {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(LabelValue, CleanValuesPassUnchanged) {
  EXPECT_EQ(label_value(""), "");
  EXPECT_EQ(label_value("plain-job_1.2"), "plain-job_1.2");
  EXPECT_EQ(label_value("q\"uote\\back slash"), "q\"uote\\back slash");
  EXPECT_EQ(label_value("j\xC3\xB6"
                        "b"),
            "j\xC3\xB6"
            "b");                                                  // valid "jöb"
  EXPECT_EQ(label_value("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");  // U+1F600
  EXPECT_EQ(label_value(std::string(128, 'a')), std::string(128, 'a'));
  EXPECT_TRUE(is_clean_label_value(std::string(128, 'a')));
  EXPECT_FALSE(is_clean_label_value(std::string(129, 'a')));
}

TEST(LabelValue, Latin1ByteReplaced) {
  EXPECT_EQ(label_value("j\xF6"
                        "b"),
            "j" + kFffd + "b~a26debb5");
  // Same shape, another byte: another label.
  EXPECT_EQ(label_value("j\xFC"
                        "b"),
            "j" + kFffd + "b~49e3d739");
  EXPECT_FALSE(
      is_clean_label_value("j\xF6"
                           "b"));
}

TEST(LabelValue, MaximalSubparts) {
  // E2 82 starts a 3-byte sequence that stops early: one replacement.
  EXPECT_EQ(label_value("a\xE2\x82"
                        "b"),
            "a" + kFffd + "b~c15a32f2");
  // A truncated 4-byte sequence at the end: one replacement.
  EXPECT_EQ(label_value("\xF0\x9F\x98"), kFffd + "~b38af6ae");
  // A surrogate (ED A0 80): ED cannot be followed by A0, so three.
  EXPECT_EQ(label_value("\xED\xA0\x80"), kFffd + kFffd + kFffd + "~91a681b9");
  // Above U+10FFFF (F4 90 80 80): four.
  EXPECT_EQ(label_value("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd + "~fb16995e");
  // Overlong '/' (C0 AF): two.
  EXPECT_EQ(label_value("\xC0\xAF"), kFffd + kFffd + "~caf573f0");
}

TEST(LabelValue, ControlCharactersReplaced) {
  EXPECT_EQ(label_value("x\ny"), "x" + kFffd + "y~9ab9de25");
}

TEST(LabelValue, LongNamesCutWithSuffix) {
  const std::string a = label_value(std::string(200, 'a'));
  EXPECT_EQ(a, std::string(119, 'a') + "~c2a908d9");
  EXPECT_EQ(a.size(), kLabelValueMaxBytes);
  // 100 x "é" (2 bytes each): 59 of them fit in 119 bytes, never half of one.
  std::string e;
  for (int i = 0; i < 100; ++i) e += "\xC3\xA9";
  std::string want;
  for (int i = 0; i < 59; ++i) want += "\xC3\xA9";
  EXPECT_EQ(label_value(e), want + "~f42ec48e");
  EXPECT_EQ(label_value(e).size(), 127u);
}

TEST(LabelValue, OutputIsAlwaysCleanAndBounded) {
  // Every single byte and every pair of bytes, as a name and after a long prefix.
  for (int b0 = 0; b0 < 256; ++b0) {
    for (int b1 = 0; b1 < 256; b1 += 7) {
      const std::string raw{static_cast<char>(b0), static_cast<char>(b1)};
      for (const std::string& s : {raw, std::string(120, 'z') + raw}) {
        const std::string v = label_value(s);
        EXPECT_TRUE(is_clean_label_value(v)) << b0 << " " << b1;
        EXPECT_LE(v.size(), kLabelValueMaxBytes);
        EXPECT_EQ(label_value(v), v);  // idempotent
      }
    }
  }
}

TEST(DisplayName, InvalidBytesAsHexEscapes) {
  EXPECT_EQ(display_name("j\xF6"
                         "b"),
            "j\\xf6b");
  EXPECT_EQ(display_name("a\xE2\x82"
                         "b"),
            "a\\xe2\\x82b");
  EXPECT_EQ(display_name("\xED\xA0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(display_name("x\ny \xC3\xA9"), "x\ny \xC3\xA9");  // valid text unchanged
  EXPECT_EQ(display_name(std::string(300, 'a')), std::string(300, 'a'));
}

}  // namespace
}  // namespace ckptmon
