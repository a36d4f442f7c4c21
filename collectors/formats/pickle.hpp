#pragma once
// A restricted reader of Python pickles (protocols 2 to 5), for the metadata
// that checkpoint frameworks pickle: PyTorch DCP's `.metadata` and the
// `data.pkl` record of torch zip files (Megatron's model_optim_rng.pt,
// Lightning's .ckpt, torch.save).
//
// It never imports or calls anything. The result is a plain tree: a class
// reference (GLOBAL, STACK_GLOBAL) on the caller's allow-list becomes a
// `kGlobal` node, and calling it (REDUCE, NEWOBJ, NEWOBJ_EX) an `kObject`
// node holding the class name and its arguments; BUILD attaches the state.
// Any other global is refused, naming it, before anything else is read. So
// are the opcodes that need Python's machinery (the protocol 0/1 class
// opcodes INST and OBJ, the extension registry, out-of-band buffers) and the
// text opcodes of protocol 0, which neither torch nor DCP writes.
//
// The format: Python's Lib/pickletools.py (each opcode, its argument and its
// stack effect) and PEP 307 (protocol 2), PEP 3154 (protocol 4), PEP 574
// (protocol 5). Pure: no I/O, no allocation beyond the caps below.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ckptmon::pickle {

struct Value {
  enum class Kind : std::uint8_t {
    kNone,
    kBool,
    kInt,     // fits in 64 bits
    kBigInt,  // a LONG wider than 64 bits: its value is not kept
    kFloat,
    kStr,    // text (UTF-8 as pickled)
    kBytes,  // bytes, bytearray
    kTuple,
    kList,
    kSet,  // set, frozenset
    kDict,
    kGlobal,  // a class or function reference: `text` is "module.name"
    kObject,  // a call of an allowed global: `text` is "module.name"
    kPersId,  // a persistent id (BINPERSID): `args` is the id
  };
  Kind kind = Kind::kNone;
  bool boolean = false;
  std::int64_t integer = 0;
  double real = 0;
  std::string text;                 // kStr, kBytes, kGlobal, kObject
  std::vector<const Value*> items;  // kTuple, kList, kSet; kObject: APPENDs onto it
  std::vector<std::pair<const Value*, const Value*>> entries;  // kDict; kObject: SETITEMs
  const Value* args = nullptr;   // kObject: the argument tuple; kPersId: the id
  const Value* state = nullptr;  // kObject: what BUILD gave, or nullptr
  int depth = 1;                 // nesting below and including this node (at build time)

  bool is(Kind k) const { return kind == k; }
  // The value of a kDict's or kObject's string key, or nullptr.
  const Value* get(std::string_view key) const;
  // An object's attribute: from its BUILD state when that is a dict (or the
  // dict of a (dict, slots) pair), else nullptr.
  const Value* attr(std::string_view name) const;
};

// What a caller lets a pickle name, and the limits it reads within.
struct Limits {
  std::size_t max_values = std::size_t{1} << 22;  // nodes built, all kinds
  std::size_t max_stack = std::size_t{1} << 20;   // values on the stack at once
  int max_depth = 64;                             // nesting of containers
  std::size_t max_text = std::size_t{64} << 20;   // one string or bytes value
};

// Every value the pickle built; nodes point at each other (the memo may make
// them share, and even cycle), so they live as long as the tree.
struct Tree {
  std::deque<Value> arena;
  const Value* root = nullptr;
  int protocol = 0;  // from PROTO; 0 when the pickle has none
};

struct Result {
  std::optional<Tree> tree;
  // Why there is no tree: "<what> at byte N". `refused` is set when the
  // pickle is well formed as far as read but names a global or an opcode
  // this reader does not allow (it is hostile, or of a newer format).
  std::string error;
  bool refused = false;
};

// `allowed(module, name)` says whether a global may be named.
using AllowFn = bool (*)(std::string_view module, std::string_view name);

Result read(std::string_view data, AllowFn allowed, const Limits& limits = {});

// Helpers for the readers of the tree.
std::optional<std::int64_t> as_int(const Value* v);
std::optional<std::string_view> as_text(const Value* v);  // kStr and kBytes
// A tuple's or list's items, or an object's single tuple argument's items
// (torch.Size((1, 2)) is an object whose args hold the tuple): nullptr when
// `v` is neither.
const std::vector<const Value*>* as_sequence(const Value* v);

}  // namespace ckptmon::pickle
