#include "collectors/formats/pickle.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <unordered_map>

namespace ckptmon::pickle {
namespace {

using Kind = Value::Kind;

// Opcodes, named as in Lib/pickletools.py.
enum Op : unsigned char {
  kMark = '(',
  kStop = '.',
  kPop = '0',
  kPopMark = '1',
  kDup = '2',
  kFloat = 'F',
  kInt = 'I',
  kBinInt = 'J',
  kBinInt1 = 'K',
  kLong = 'L',
  kBinInt2 = 'M',
  kNone = 'N',
  kPersId = 'P',
  kBinPersId = 'Q',
  kReduce = 'R',
  kString = 'S',
  kBinString = 'T',
  kShortBinString = 'U',
  kUnicode = 'V',
  kBinUnicode = 'X',
  kAppend = 'a',
  kBuild = 'b',
  kGlobal = 'c',
  kDict = 'd',
  kEmptyDict = '}',
  kAppends = 'e',
  kGet = 'g',
  kBinGet = 'h',
  kInst = 'i',
  kLongBinGet = 'j',
  kList = 'l',
  kEmptyList = ']',
  kObj = 'o',
  kPut = 'p',
  kBinPut = 'q',
  kLongBinPut = 'r',
  kSetItem = 's',
  kTuple = 't',
  kEmptyTuple = ')',
  kSetItems = 'u',
  kBinFloat = 'G',
  kBinBytes = 'B',
  kShortBinBytes = 'C',
  kProto = 0x80,
  kNewObj = 0x81,
  kExt1 = 0x82,
  kExt2 = 0x83,
  kExt4 = 0x84,
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kNewTrue = 0x88,
  kNewFalse = 0x89,
  kLong1 = 0x8a,
  kLong4 = 0x8b,
  kShortBinUnicode = 0x8c,
  kBinUnicode8 = 0x8d,
  kBinBytes8 = 0x8e,
  kEmptySet = 0x8f,
  kAddItems = 0x90,
  kFrozenSet = 0x91,
  kNewObjEx = 0x92,
  kStackGlobal = 0x93,
  kMemoize = 0x94,
  kFrame = 0x95,
  kByteArray8 = 0x96,
  kNextBuffer = 0x97,
  kReadonlyBuffer = 0x98,
};

std::string hex(unsigned char c) {
  static constexpr std::string_view kDigits = "0123456789abcdef";
  return {kDigits[c >> 4U], kDigits[c & 0x0FU]};
}

struct Failure {
  std::string what;
  bool refused;
};

class Reader {
 public:
  Reader(std::string_view data, AllowFn allowed, const Limits& limits)
      : data_(data), allowed_(allowed), limits_(limits) {}

  Result run() {
    Result r;
    try {
      tree_.root = loop();
      r.tree = std::move(tree_);
    } catch (const Failure& f) {
      r.error = f.what + " at byte " + std::to_string(op_at_);
      r.refused = f.refused;
    }
    return r;
  }

 private:
  [[noreturn]] static void fail(std::string what) { throw Failure{std::move(what), false}; }
  [[noreturn]] static void refuse(std::string what) { throw Failure{std::move(what), true}; }

  // ---- input ----
  std::string_view take(std::uint64_t n) {
    if (n > data_.size() - pos_) fail("truncated: " + std::to_string(n) + " bytes wanted");
    std::string_view s = data_.substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }
  std::uint64_t le(std::size_t n) {
    const std::string_view b = take(n);
    std::uint64_t v = 0;
    for (std::size_t i = n; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(b[i]);
    return v;
  }
  std::string_view line() {
    const std::size_t nl = data_.find('\n', pos_);
    if (nl == std::string_view::npos || nl - pos_ > 1024) fail("unterminated line");
    std::string_view s = data_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    return s;
  }
  std::size_t text_length(std::uint64_t n) const {
    if (n > limits_.max_text) {
      fail("a string of " + std::to_string(n) + " bytes (over " + std::to_string(limits_.max_text) +
           ")");
    }
    return static_cast<std::size_t>(n);
  }

  // ---- values ----
  Value* make(Kind k) {
    if (tree_.arena.size() >= limits_.max_values) {
      fail("more than " + std::to_string(limits_.max_values) + " values");
    }
    Value& v = tree_.arena.emplace_back();
    v.kind = k;
    return &v;
  }
  void nest(Value* parent, const Value* child) {
    if (child == nullptr) return;
    parent->depth = std::max(parent->depth, child->depth + 1);
    if (parent->depth > limits_.max_depth) {
      fail("nested deeper than " + std::to_string(limits_.max_depth));
    }
  }
  void push(Value* v) {
    if (stack_.size() >= limits_.max_stack) {
      fail("more than " + std::to_string(limits_.max_stack) + " values on the stack");
    }
    stack_.push_back(v);
  }
  Value* pop() {
    if (stack_.size() <= floor()) fail("stack underflow");
    Value* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Value* top() {
    if (stack_.size() <= floor()) fail("stack underflow");
    return stack_.back();
  }
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  // The values above the newest mark, which is removed.
  std::vector<Value*> pop_mark() {
    if (marks_.empty()) fail("no mark");
    const std::size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Value*> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  Value* sequence(Kind k, const std::vector<Value*>& items) {
    Value* v = make(k);
    v->items.assign(items.begin(), items.end());
    for (const Value* i : items) nest(v, i);
    return v;
  }
  Value* text(Kind k, std::uint64_t n) {
    Value* v = make(k);
    v->text = std::string(take(text_length(n)));
    return v;
  }
  Value* integer(std::int64_t i) {
    Value* v = make(Kind::kInt);
    v->integer = i;
    return v;
  }
  Value* long_value(std::uint64_t n) {
    const std::string_view b = take(text_length(n));
    if (n > 8) return make(Kind::kBigInt);
    std::uint64_t u = 0;
    for (std::size_t i = b.size(); i-- > 0;) u = (u << 8) | static_cast<unsigned char>(b[i]);
    if (n > 0 && n < 8 && (static_cast<unsigned char>(b.back()) & 0x80U) != 0) {
      u |= ~std::uint64_t{0} << (8 * n);  // sign-extend
    }
    return integer(static_cast<std::int64_t>(u));
  }

  // ---- globals and calls ----
  Value* global(std::string module, std::string_view name) {
    // A protocol 2 pickle written by Python 3 names builtins by their Python 2
    // modules (pickle's fix_imports).
    if (module == "__builtin__") module = "builtins";
    if (module == "copy_reg") module = "copyreg";
    if (!allowed_(module, name)) {
      refuse("global " + module + "." + std::string(name) + " is not on the allow-list");
    }
    Value* v = make(Kind::kGlobal);
    v->text = module + "." + std::string(name);
    return v;
  }
  Value* call(Value* callable, Value* args) {
    if (!callable->is(Kind::kGlobal)) fail("a call of something that is not a class");
    if (!args->is(Kind::kTuple)) fail("call arguments that are not a tuple");
    const std::string& name = callable->text;
    if (name == "collections.OrderedDict" && args->items.empty()) return make(Kind::kDict);
    if (name == "_codecs.encode" && args->items.size() == 2 && args->items[0]->is(Kind::kStr)) {
      // Protocol 2's bytes: _codecs.encode(text, "latin1"), the text being
      // the bytes as code points below 256, pickled as UTF-8.
      return latin1_bytes(args->items[0]->text);
    }
    if ((name == "builtins.set" || name == "builtins.frozenset") && args->items.size() == 1 &&
        (args->items[0]->is(Kind::kList) || args->items[0]->is(Kind::kTuple))) {
      Value* s = make(Kind::kSet);
      s->items = args->items[0]->items;
      nest(s, args->items[0]);
      return s;
    }
    Value* o = make(Kind::kObject);
    o->text = name;
    o->args = args;
    nest(o, args);
    return o;
  }
  Value* latin1_bytes(std::string_view utf8) {
    Value* v = make(Kind::kBytes);
    for (std::size_t i = 0; i < utf8.size(); ++i) {
      const auto c = static_cast<unsigned char>(utf8[i]);
      if (c < 0x80) {
        v->text.push_back(static_cast<char>(c));
      } else if ((c == 0xC2 || c == 0xC3) && i + 1 < utf8.size()) {
        const auto d = static_cast<unsigned char>(utf8[++i]);
        v->text.push_back(static_cast<char>(((c & 0x03U) << 6) | (d & 0x3FU)));
      } else {
        fail("latin-1 bytes with a code point over 255");
      }
    }
    return v;
  }
  void build(Value* target, Value* state) {
    if (target->is(Kind::kObject)) {
      target->state = state;
      nest(target, state);
    } else if (!target->is(Kind::kDict)) {
      fail("BUILD on a value that is not an object");
    }
    // BUILD on a dict (an OrderedDict's attributes) keeps only its items.
  }

  // ---- containers ----
  void add_items(Value* target, const std::vector<Value*>& items) {
    if (!target->is(Kind::kList) && !target->is(Kind::kObject) && !target->is(Kind::kSet)) {
      fail("APPEND to a value that is not a list");
    }
    for (Value* i : items) {
      target->items.push_back(i);
      nest(target, i);
    }
  }
  void set_items(Value* target, const std::vector<Value*>& kv) {
    if (!target->is(Kind::kDict) && !target->is(Kind::kObject)) {
      fail("SETITEM on a value that is not a dict");
    }
    if (kv.size() % 2 != 0) fail("SETITEMS with an odd number of values");
    for (std::size_t i = 0; i < kv.size(); i += 2) {
      target->entries.emplace_back(kv[i], kv[i + 1]);
      nest(target, kv[i]);
      nest(target, kv[i + 1]);
    }
  }

  // ---- memo ----
  void put(std::uint64_t index) {
    memo_[index] = top();
    if (memo_.size() > limits_.max_values) fail("memo larger than the value cap");
  }
  void get(std::uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) fail("memo entry " + std::to_string(index) + " never stored");
    push(it->second);
  }

  Value* loop();
  void step(unsigned char op);
  bool done_ = false;

  std::string_view data_;
  AllowFn allowed_;
  const Limits& limits_;
  std::size_t pos_ = 0;
  std::size_t op_at_ = 0;
  Tree tree_;
  std::vector<Value*> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, Value*> memo_;
};

Value* Reader::loop() {
  while (!done_) {
    op_at_ = pos_;
    const std::string_view op = take(1);
    step(static_cast<unsigned char>(op[0]));
  }
  if (!marks_.empty()) fail("STOP with an open mark");
  if (stack_.size() != 1) fail("STOP with " + std::to_string(stack_.size()) + " values");
  return stack_.back();
}

void Reader::step(unsigned char op) {
  switch (op) {
    case kProto: {
      const std::uint64_t p = le(1);
      if (p < 2 || p > 5) refuse("protocol " + std::to_string(p) + " (2 to 5 are read)");
      tree_.protocol = static_cast<int>(p);
      return;
    }
    case kFrame:
      le(8);
      return;  // framing only groups opcodes
    case kStop:
      done_ = true;
      return;
    case kMark:
      if (marks_.size() >= static_cast<std::size_t>(limits_.max_depth)) {
        fail("marks nested deeper than " + std::to_string(limits_.max_depth));
      }
      marks_.push_back(stack_.size());
      return;
    case kPop:
      if (stack_.size() > floor()) {
        stack_.pop_back();
      } else {
        pop_mark();  // POP of a mark removes it (pickletools: "or the topmost markobject")
      }
      return;
    case kPopMark:
      pop_mark();
      return;
    case kDup:
      push(top());
      return;
    case kNone:
      push(make(Kind::kNone));
      return;
    case kNewTrue:
    case kNewFalse: {
      Value* v = make(Kind::kBool);
      v->boolean = op == kNewTrue;
      push(v);
      return;
    }
    case kBinInt:
      push(integer(static_cast<std::int32_t>(static_cast<std::uint32_t>(le(4)))));
      return;
    case kBinInt1:
      push(integer(static_cast<std::int64_t>(le(1))));
      return;
    case kBinInt2:
      push(integer(static_cast<std::int64_t>(le(2))));
      return;
    case kLong1:
      push(long_value(le(1)));
      return;
    case kLong4: {
      const auto n = static_cast<std::int32_t>(static_cast<std::uint32_t>(le(4)));
      if (n < 0) fail("LONG4 with a negative length");
      push(long_value(static_cast<std::uint64_t>(n)));
      return;
    }
    case kBinFloat: {
      const std::string_view b = take(8);
      std::uint64_t u = 0;
      for (char c : b) u = (u << 8) | static_cast<unsigned char>(c);  // big-endian
      Value* v = make(Kind::kFloat);
      v->real = std::bit_cast<double>(u);
      push(v);
      return;
    }
    case kShortBinString:
    case kShortBinUnicode:
      push(text(Kind::kStr, le(1)));
      return;
    case kBinString:
    case kBinUnicode:
      push(text(Kind::kStr, le(4)));
      return;
    case kBinUnicode8:
      push(text(Kind::kStr, le(8)));
      return;
    case kShortBinBytes:
      push(text(Kind::kBytes, le(1)));
      return;
    case kBinBytes:
      push(text(Kind::kBytes, le(4)));
      return;
    case kBinBytes8:
    case kByteArray8:
      push(text(Kind::kBytes, le(8)));
      return;
    case kEmptyTuple:
      push(sequence(Kind::kTuple, {}));
      return;
    case kTuple:
      push(sequence(Kind::kTuple, pop_mark()));
      return;
    case kTuple1:
    case kTuple2:
    case kTuple3: {
      std::vector<Value*> items(static_cast<std::size_t>(op - kTuple1 + 1));
      for (std::size_t i = items.size(); i-- > 0;) items[i] = pop();
      push(sequence(Kind::kTuple, items));
      return;
    }
    case kEmptyList:
      push(make(Kind::kList));
      return;
    case kList:
      push(sequence(Kind::kList, pop_mark()));
      return;
    case kAppend: {
      Value* item = pop();
      add_items(top(), {item});
      return;
    }
    case kAppends: {
      std::vector<Value*> items = pop_mark();
      add_items(top(), items);
      return;
    }
    case kEmptyDict:
      push(make(Kind::kDict));
      return;
    case kDict: {
      Value* d = make(Kind::kDict);
      set_items(d, pop_mark());
      push(d);
      return;
    }
    case kSetItem: {
      Value* value = pop();
      Value* key = pop();
      set_items(top(), {key, value});
      return;
    }
    case kSetItems: {
      std::vector<Value*> kv = pop_mark();
      set_items(top(), kv);
      return;
    }
    case kEmptySet:
      push(make(Kind::kSet));
      return;
    case kAddItems: {
      std::vector<Value*> items = pop_mark();
      Value* s = top();
      if (!s->is(Kind::kSet)) fail("ADDITEMS to a value that is not a set");
      add_items(s, items);
      return;
    }
    case kFrozenSet:
      push(sequence(Kind::kSet, pop_mark()));
      return;
    case kGlobal: {
      std::string module(line());
      const std::string_view name = line();
      push(global(std::move(module), name));
      return;
    }
    case kStackGlobal: {
      Value* name = pop();
      Value* module = pop();
      if (!name->is(Kind::kStr) || !module->is(Kind::kStr)) fail("STACK_GLOBAL of non-strings");
      push(global(module->text, name->text));
      return;
    }
    case kReduce: {
      Value* args = pop();
      Value* callable = pop();
      push(call(callable, args));
      return;
    }
    case kNewObj: {
      Value* args = pop();
      Value* cls = pop();
      push(call(cls, args));
      return;
    }
    case kNewObjEx: {
      pop();  // keyword arguments: not kept (no metadata class takes any)
      Value* args = pop();
      Value* cls = pop();
      push(call(cls, args));
      return;
    }
    case kBuild: {
      Value* state = pop();
      build(top(), state);
      return;
    }
    case kBinPut:
      put(le(1));
      return;
    case kLongBinPut:
      put(le(4));
      return;
    case kMemoize:
      put(memo_.size());
      return;
    case kBinGet:
      get(le(1));
      return;
    case kLongBinGet:
      get(le(4));
      return;
    case kBinPersId: {
      Value* id = pop();
      Value* v = make(Kind::kPersId);
      v->args = id;
      nest(v, id);
      push(v);
      return;
    }
    case kInst:
    case kObj:
      refuse("opcode INST/OBJ (protocol 0 and 1 classes)");
    case kExt1:
    case kExt2:
    case kExt4:
      refuse("an extension-registry opcode (EXT1/2/4)");
    case kNextBuffer:
    case kReadonlyBuffer:
      refuse("an out-of-band buffer (protocol 5 NEXT_BUFFER)");
    case kInt:
    case kLong:
    case kFloat:
    case kString:
    case kUnicode:
    case kPersId:
    case kPut:
    case kGet:
      refuse("a protocol 0 text opcode");
    default:
      fail("unknown opcode 0x" + hex(op));
  }
}

}  // namespace

const Value* Value::get(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k->kind == Kind::kStr && k->text == key) return v;
  }
  return nullptr;
}

const Value* Value::attr(std::string_view name) const {
  if (kind != Kind::kObject || state == nullptr) return nullptr;
  if (state->kind == Kind::kDict) return state->get(name);
  if (state->kind == Kind::kTuple && state->items.size() == 2) {
    // (dict, slots) as copyreg writes for classes with __slots__.
    for (const Value* part : state->items) {
      if (part->kind != Kind::kDict) continue;
      if (const Value* v = part->get(name)) return v;
    }
  }
  return nullptr;
}

Result read(std::string_view data, AllowFn allowed, const Limits& limits) {
  return Reader(data, allowed, limits).run();
}

std::optional<std::int64_t> as_int(const Value* v) {
  if (v == nullptr || v->kind != Kind::kInt) return std::nullopt;
  return v->integer;
}

std::optional<std::string_view> as_text(const Value* v) {
  if (v == nullptr || (v->kind != Kind::kStr && v->kind != Kind::kBytes)) return std::nullopt;
  return std::string_view(v->text);
}

const std::vector<const Value*>* as_sequence(const Value* v) {
  if (v == nullptr) return nullptr;
  if (v->kind == Kind::kTuple || v->kind == Kind::kList) return &v->items;
  if (v->kind == Kind::kObject && v->args != nullptr && v->args->items.size() == 1) {
    const Value* a = v->args->items[0];
    if (a->kind == Kind::kTuple || a->kind == Kind::kList) return &a->items;
  }
  return nullptr;
}

}  // namespace ckptmon::pickle
