#include "util/columns.hpp"

#include <gtest/gtest.h>

namespace ckptmon {
namespace {

TEST(TextColumns, PadsEachColumnToItsWidestCellPlusTwo) {
  // "PATH" is 4 wide, "a/bb" 4, "c" 1 -> column 0 is 4 + 2; the last column is not padded.
  const std::string out = text_columns({{"PATH", "STATE"}, {"a/bb", "committed"}, {"c", "x"}});
  EXPECT_EQ(out,
            "PATH  STATE\n"
            "a/bb  committed\n"
            "c     x\n");
}

TEST(TextColumns, DropsTrailingBlanksAndIndents) {
  // The empty last cell would leave "b" + 2 spaces; the line ends at "b".
  EXPECT_EQ(text_columns({{"a", "long"}, {"bbb", ""}}, "  "),
            "  a    long\n"
            "  bbb\n");
}

TEST(TextColumns, RaggedRowsTakeWidthOverTheRowsThatHaveTheColumn) {
  EXPECT_EQ(text_columns({{"k", "vvvv", "z"}, {"kk"}, {"k", "v", "z"}}),
            "k   vvvv  z\n"
            "kk\n"
            "k   v     z\n");
  EXPECT_EQ(text_columns({}), "");
}

}  // namespace
}  // namespace ckptmon
