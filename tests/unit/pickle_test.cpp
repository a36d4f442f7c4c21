// The restricted unpickler, opcode by opcode, on pickles assembled here byte
// by byte from Lib/pickletools.py's opcode table (the argument encodings and
// stack effects are written out in each builder call, not produced by the
// code under test), and every refusal.

#include "collectors/formats/pickle.hpp"

#include "tests/unit/pickle_builder.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>

namespace ckptmon::pickle {
namespace {

using Kind = Value::Kind;
using testing_pickle::P;

bool allow_some(std::string_view m, std::string_view n) {
  return (m == "t" && (n == "Obj" || n == "Size")) || (m == "builtins" && n == "set") ||
         (m == "_codecs" && n == "encode") || (m == "collections" && n == "OrderedDict");
}

Result rd(const P& p, const Limits& l = {}) { return read(p.bytes(), &allow_some, l); }

const Value& root(const Result& r) {
  EXPECT_TRUE(r.tree) << r.error;
  static const Value kNone;
  return r.tree ? *r.tree->root : kNone;
}

TEST(Pickle, Integers) {
  // BININT1 200, BININT2 0xBEEF, BININT -2 (two's complement), in a tuple.
  auto r = rd(
      P().op(0x28).op('K').u8(200).op('M').le(0xBEEF, 2).op('J').le(0xFFFFFFFEU, 4).op('t').stop());
  const Value& t = root(r);
  ASSERT_EQ(t.kind, Kind::kTuple);
  ASSERT_EQ(t.items.size(), 3U);
  EXPECT_EQ(t.items[0]->integer, 200);
  EXPECT_EQ(t.items[1]->integer, 0xBEEF);
  EXPECT_EQ(t.items[2]->integer, -2);
  EXPECT_EQ(r.tree->protocol, 4);
}

TEST(Pickle, Longs) {
  // LONG1: 3 bytes 0x00 0x00 0x80 is -8388608; 2 bytes 0xFF 0x00 is 255;
  // 0 bytes is 0; 9 bytes is wider than 64 bits; LONG4 with 8 bytes 2^62.
  auto r = rd(P().op(0x28)
                  .op(0x8a)
                  .u8(3)
                  .raw(std::string("\x00\x00\x80", 3))
                  .op(0x8a)
                  .u8(2)
                  .raw(std::string("\xff\x00", 2))
                  .op(0x8a)
                  .u8(0)
                  .op(0x8a)
                  .u8(9)
                  .raw(std::string(9, '\x01'))
                  .op(0x8b)
                  .le(8, 4)
                  .le(std::uint64_t{1} << 62, 8)
                  .op('t')
                  .stop());
  const Value& t = root(r);
  ASSERT_EQ(t.items.size(), 5U);
  EXPECT_EQ(t.items[0]->integer, -8388608);
  EXPECT_EQ(t.items[1]->integer, 255);
  EXPECT_EQ(t.items[2]->integer, 0);
  EXPECT_EQ(t.items[3]->kind, Kind::kBigInt);
  EXPECT_FALSE(as_int(t.items[3]));  // unknown, not a number
  EXPECT_EQ(t.items[4]->integer, std::int64_t{1} << 62);
}

TEST(Pickle, ScalarsAndStrings) {
  // BINFLOAT is big-endian: 1.5 is 3F F8 00.. ; NONE, NEWTRUE, NEWFALSE;
  // SHORT_BINUNICODE, BINUNICODE, BINUNICODE8, SHORT_BINBYTES, BINBYTES,
  // BINBYTES8, BYTEARRAY8, SHORT_BINSTRING (protocol 1's str).
  auto r = rd(P().op(0x28)
                  .op('G')
                  .raw(std::string("\x3f\xf8\x00\x00\x00\x00\x00\x00", 8))
                  .op('N')
                  .op(0x88)
                  .op(0x89)
                  .str("ab")
                  .op('X')
                  .le(3, 4)
                  .raw("cde")
                  .op(0x8d)
                  .le(1, 8)
                  .raw("f")
                  .op('C')
                  .u8(2)
                  .raw(std::string("\x00\xff", 2))
                  .op('B')
                  .le(1, 4)
                  .raw("g")
                  .op(0x8e)
                  .le(1, 8)
                  .raw("h")
                  .op(0x96)
                  .le(1, 8)
                  .raw("i")
                  .op('U')
                  .u8(1)
                  .raw("j")
                  .op('t')
                  .stop());
  const Value& t = root(r);
  ASSERT_EQ(t.items.size(), 12U);
  EXPECT_DOUBLE_EQ(t.items[0]->real, 1.5);
  EXPECT_EQ(t.items[1]->kind, Kind::kNone);
  EXPECT_TRUE(t.items[2]->boolean);
  EXPECT_EQ(t.items[3]->kind, Kind::kBool);
  EXPECT_FALSE(t.items[3]->boolean);
  EXPECT_EQ(t.items[4]->text, "ab");
  EXPECT_EQ(t.items[5]->text, "cde");
  EXPECT_EQ(t.items[6]->text, "f");
  EXPECT_EQ(t.items[7]->kind, Kind::kBytes);
  EXPECT_EQ(t.items[7]->text, std::string("\x00\xff", 2));
  EXPECT_EQ(t.items[8]->text, "g");
  EXPECT_EQ(t.items[9]->text, "h");
  EXPECT_EQ(t.items[10]->kind, Kind::kBytes);
  EXPECT_EQ(t.items[11]->kind, Kind::kStr);
}

TEST(Pickle, TuplesListsDictsSets) {
  // (1,), (1, 2), (1, 2, 3) by TUPLE1..3; [1, 2, 3] by EMPTY_LIST, APPEND,
  // MARK..APPENDS; {"a": 1, "b": 2} by EMPTY_DICT, SETITEM, MARK..SETITEMS;
  // DICT and LIST from a mark; a set by EMPTY_SET and ADDITEMS; FROZENSET.
  P p;
  p.op(0x28);
  p.op('K').u8(1).op(0x85);
  p.op('K').u8(1).op('K').u8(2).op(0x86);
  p.op('K').u8(1).op('K').u8(2).op('K').u8(3).op(0x87);
  p.op(']').op('K').u8(1).op('a').op(0x28).op('K').u8(2).op('K').u8(3).op('e');
  p.op('}').str("a").op('K').u8(1).op('s').op(0x28).str("b").op('K').u8(2).op('u');
  p.op(0x28).str("k").op('K').u8(7).op('d');
  p.op(0x28).op('K').u8(8).op('l');
  p.op(0x8f).op(0x28).op('K').u8(4).op('K').u8(5).op(0x90);
  p.op(0x28).op('K').u8(6).op(0x91);
  p.op('t').stop();
  auto r = rd(p);
  const Value& t = root(r);
  ASSERT_EQ(t.items.size(), 9U);
  EXPECT_EQ(t.items[0]->items.size(), 1U);
  EXPECT_EQ(t.items[1]->items.size(), 2U);
  EXPECT_EQ(t.items[2]->items[2]->integer, 3);
  ASSERT_EQ(t.items[3]->kind, Kind::kList);
  ASSERT_EQ(t.items[3]->items.size(), 3U);
  EXPECT_EQ(t.items[3]->items[2]->integer, 3);
  ASSERT_EQ(t.items[4]->kind, Kind::kDict);
  EXPECT_EQ(as_int(t.items[4]->get("a")), 1);
  EXPECT_EQ(as_int(t.items[4]->get("b")), 2);
  EXPECT_EQ(t.items[4]->get("c"), nullptr);
  EXPECT_EQ(as_int(t.items[5]->get("k")), 7);
  EXPECT_EQ(t.items[6]->kind, Kind::kList);
  EXPECT_EQ(t.items[7]->kind, Kind::kSet);
  EXPECT_EQ(t.items[7]->items.size(), 2U);
  EXPECT_EQ(t.items[8]->kind, Kind::kSet);
  EXPECT_EQ(t.items[0]->depth, 2);
}

TEST(Pickle, StackOpcodes) {
  // DUP, POP, POP_MARK: (1, 1) after pushing 9 and popping it, and a
  // marked 5 6 discarded.
  auto r = rd(P().op('K')
                  .u8(1)
                  .op('2')
                  .op('K')
                  .u8(9)
                  .op('0')
                  .op(0x28)
                  .op('K')
                  .u8(5)
                  .op('K')
                  .u8(6)
                  .op('1')
                  .op(0x86)
                  .stop());
  const Value& t = root(r);
  ASSERT_EQ(t.items.size(), 2U);
  EXPECT_EQ(t.items[0], t.items[1]);  // DUP shares the value
}

TEST(Pickle, MemoSharesValues) {
  // BINPUT 0 / BINGET 0, LONG_BINPUT 300 / LONG_BINGET 300, MEMOIZE (index
  // = memo size) / BINGET of it: each fetched value is the stored one.
  P p;
  p.str("x").op('q').u8(0);
  p.str("y").op('r').le(300, 4);
  p.str("z").op(0x94);  // memo size is 2 here: index 2
  p.op('h').u8(0).op('j').le(300, 4).op('h').u8(2);
  p.op(0x28);       // collect all six into a tuple: mark must come first
  auto r0 = rd(p);  // no STOP: truncated
  EXPECT_FALSE(r0.tree);
  EXPECT_NE(r0.error.find("truncated"), std::string::npos) << r0.error;

  P q;
  q.op(0x28);
  q.str("x").op('q').u8(0);
  q.str("y").op('r').le(300, 4);
  q.str("z").op(0x94);
  q.op('h').u8(0).op('j').le(300, 4).op('h').u8(2);
  q.op('t').stop();
  auto r = rd(q);
  const Value& t = root(r);
  ASSERT_EQ(t.items.size(), 6U);
  EXPECT_EQ(t.items[0], t.items[3]);
  EXPECT_EQ(t.items[1], t.items[4]);
  EXPECT_EQ(t.items[2], t.items[5]);
  EXPECT_EQ(t.items[5]->text, "z");
}

TEST(Pickle, MemoEntryNeverStored) {
  auto r = rd(P().op('h').u8(5).stop());
  EXPECT_FALSE(r.tree);
  EXPECT_FALSE(r.refused);
  EXPECT_NE(r.error.find("memo entry 5 never stored"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("at byte 2"), std::string::npos) << r.error;  // after PROTO 4
}

TEST(Pickle, SelfReferenceIsKeptWithoutLooping) {
  // l = []; l.append(l): EMPTY_LIST BINPUT 0 BINGET 0 APPEND.
  auto r = rd(P().op(']').op('q').u8(0).op('h').u8(0).op('a').stop());
  const Value& l = root(r);
  ASSERT_EQ(l.items.size(), 1U);
  EXPECT_EQ(l.items[0], &l);
}

TEST(Pickle, AllowedGlobalsBecomeObjects) {
  // t.Obj() by NEWOBJ with BUILD of a dict state; t.Size((2, 3)) by REDUCE;
  // GLOBAL (protocol 2's text form) of t.Obj with BUILD of (dict, slots).
  P p;
  p.op(0x28);
  p.global("t", "Obj").op(')').op(0x81).op('}').str("a").op('K').u8(4).op('s').op('b');
  p.global("t", "Size").op('K').u8(2).op('K').u8(3).op(0x86).op(0x85).op('R');
  p.op('c')
      .raw("t\nObj\n")
      .op(')')
      .op(0x81)
      .op('N')
      .op('}')
      .str("s")
      .op('K')
      .u8(9)
      .op('s')
      .op(0x86)
      .op('b');
  p.op('t').stop();
  auto r = rd(p);
  const Value& t = root(r);
  ASSERT_EQ(t.items.size(), 3U);
  const Value* obj = t.items[0];
  EXPECT_EQ(obj->kind, Kind::kObject);
  EXPECT_EQ(obj->text, "t.Obj");
  EXPECT_EQ(as_int(obj->attr("a")), 4);
  const auto* size = as_sequence(t.items[1]);
  ASSERT_NE(size, nullptr);
  ASSERT_EQ(size->size(), 2U);
  EXPECT_EQ((*size)[1]->integer, 3);
  EXPECT_EQ(as_int(t.items[2]->attr("s")), 9);  // from the slots half
}

TEST(Pickle, Protocol2BuiltinsAndBytes) {
  // Python 3 writing protocol 2 names builtins "__builtin__"; bytes become
  // _codecs.encode("\u00ff\u0001", "latin1"); OrderedDict() is a dict.
  P p(2);
  p.op(0x28);
  p.op('c').raw("__builtin__\nset\n").op(']').op('K').u8(1).op('a').op(0x85).op('R');
  p.op('c')
      .raw("_codecs\nencode\n")
      .op('X')
      .le(3, 4)
      .raw("\xc3\xbf\x01")
      .op('X')
      .le(6, 4)
      .raw("latin1")
      .op(0x86)
      .op('R');
  p.op('c').raw("collections\nOrderedDict\n").op(')').op('R').str("k").op('K').u8(1).op('s');
  p.op('t').stop();
  auto r = rd(p);
  const Value& t = root(r);
  ASSERT_EQ(t.items.size(), 3U);
  EXPECT_EQ(t.items[0]->kind, Kind::kSet);
  EXPECT_EQ(t.items[1]->kind, Kind::kBytes);
  EXPECT_EQ(t.items[1]->text, std::string("\xff\x01", 2));
  EXPECT_EQ(t.items[2]->kind, Kind::kDict);
  EXPECT_EQ(as_int(t.items[2]->get("k")), 1);
}

TEST(Pickle, PersistentIdIsData) {
  // BINPERSID of ("storage", 7): torch's reference to a storage record.
  auto r = rd(P().str("storage").op('K').u8(7).op(0x86).op('Q').stop());
  const Value& v = root(r);
  EXPECT_EQ(v.kind, Kind::kPersId);
  ASSERT_NE(v.args, nullptr);
  EXPECT_EQ(v.args->items[0]->text, "storage");
}

TEST(Pickle, RefusesGlobalsOffTheList) {
  // The classic: os.system("...") by REDUCE. Refused at the global, so the
  // REDUCE is never reached.
  P p;
  p.global("os", "system").str("touch /tmp/pwned").op(0x85).op('R').stop();
  auto r = rd(p);
  EXPECT_FALSE(r.tree);
  EXPECT_TRUE(r.refused);
  EXPECT_NE(r.error.find("global os.system is not on the allow-list"), std::string::npos)
      << r.error;
  // GLOBAL's text form too, and a builtin by its protocol 2 name.
  auto g = rd(P(2).op('c').raw("__builtin__\neval\n").stop());
  EXPECT_TRUE(g.refused);
  EXPECT_NE(g.error.find("builtins.eval"), std::string::npos) << g.error;
  // A call of a non-global (a string) is malformed, not refused.
  auto c = rd(P().str("x").op(')').op('R').stop());
  EXPECT_FALSE(c.refused);
  EXPECT_NE(c.error.find("not a class"), std::string::npos) << c.error;
}

TEST(Pickle, RefusesOpcodesThatNeedPython) {
  for (int op : std::initializer_list<int>{'i', 'o', 0x82, 0x83, 0x84, 0x97, 0x98, 'I', 'L', 'F',
                                           'S', 'V', 'P', 'p', 'g'}) {
    auto r = rd(P().op(op).stop());
    EXPECT_FALSE(r.tree) << op;
    EXPECT_TRUE(r.refused) << op << ": " << r.error;
  }
  auto bad = rd(P().op(0xff).stop());
  EXPECT_FALSE(bad.refused);
  EXPECT_NE(bad.error.find("unknown opcode 0xff"), std::string::npos) << bad.error;
}

TEST(Pickle, RefusesProtocolsOutsideTwoToFive) {
  EXPECT_TRUE(rd(P(1).op('N').stop()).refused);
  EXPECT_TRUE(rd(P(6).op('N').stop()).refused);
  EXPECT_TRUE(rd(P(5).op('N').stop()).tree);
  EXPECT_TRUE(rd(P(0).op('N').stop()).tree);  // no PROTO at all: binary opcodes still read
}

TEST(Pickle, Caps) {
  // A string claiming 2^40 bytes: refused before anything is allocated.
  auto big = rd(P().op(0x8d).le(std::uint64_t{1} << 40, 8).stop());
  EXPECT_FALSE(big.tree);
  EXPECT_NE(big.error.find("a string of 1099511627776 bytes"), std::string::npos) << big.error;
  // 100 nested lists built by APPEND: over the depth of 64.
  P deep;
  for (int i = 0; i < 100; ++i) deep.op(']');
  for (int i = 0; i < 99; ++i) deep.op('a');
  deep.stop();
  auto d = rd(deep);
  EXPECT_FALSE(d.tree);
  EXPECT_NE(d.error.find("nested deeper than 64"), std::string::npos) << d.error;
  // 65 open marks.
  P marks;
  for (int i = 0; i < 65; ++i) marks.op(0x28);
  auto m = rd(marks.stop());
  EXPECT_NE(m.error.find("marks nested deeper"), std::string::npos) << m.error;
  // The value cap.
  Limits few;
  few.max_values = 3;
  P many;
  many.op(0x28);
  for (int i = 0; i < 4; ++i) many.op('N');
  auto v = rd(many.op('t').stop(), few);
  EXPECT_NE(v.error.find("more than 3 values"), std::string::npos) << v.error;
  // The stack cap.
  Limits shallow;
  shallow.max_stack = 2;
  auto s = rd(P().op('N').op('N').op('N').stop(), shallow);
  EXPECT_NE(s.error.find("on the stack"), std::string::npos) << s.error;
}

TEST(Pickle, MalformedStreams) {
  EXPECT_NE(rd(P().op('a').stop()).error.find("stack underflow"), std::string::npos);
  EXPECT_NE(rd(P().op('N').op('N').stop()).error.find("STOP with 2 values"), std::string::npos);
  EXPECT_NE(rd(P().op(0x28).op('N').stop()).error.find("open mark"), std::string::npos);
  EXPECT_NE(rd(P().op('t').stop()).error.find("no mark"), std::string::npos);
  EXPECT_NE(rd(P().op('K').u8(1).op('N').op('a').stop()).error.find("not a list"),
            std::string::npos);
  EXPECT_NE(rd(P().op('c').raw("t").stop()).error.find("unterminated"), std::string::npos);
  EXPECT_NE(rd(P().op(0x8c).u8(10).raw("abc")).error.find("truncated"), std::string::npos);
  EXPECT_NE(rd(P().op(0x8b).le(0xFFFFFFFFU, 4).stop()).error.find("negative"), std::string::npos);
  EXPECT_FALSE(read("", &allow_some).tree);
}

}  // namespace
}  // namespace ckptmon::pickle
