// A DCP `.metadata` as Python 3.11's pickler writes torch's dataclasses at
// protocol 4 (copyreg's NEWOBJ of the class, BUILD of its field dict;
// torch.Size by REDUCE of a tuple; TensorProperties by its tuple state; an
// Enum member by getattr),
// unframed and without memo entries (both optional in the format). What
// `ckptmon burst` writes; read_metadata reads it back like a real one.

#include <cstdint>
#include <string>
#include <vector>

#include "collectors/formats/dcp_metadata.hpp"

namespace ckptmon::dcp {
namespace {

constexpr const char* kMeta = "torch.distributed.checkpoint.metadata";

// Appends pickle opcodes (Lib/pickletools.py's names in the comments).
class PickleWriter {
 public:
  PickleWriter() { op(0x80).op(4); }  // PROTO 4

  PickleWriter& op(int c) {
    out_.push_back(static_cast<char>(c));
    return *this;
  }
  PickleWriter& str(const std::string& s) {
    if (s.size() < 256) {
      op(0x8c).op(static_cast<int>(s.size()));  // SHORT_BINUNICODE
    } else {
      op('X');  // BINUNICODE, 4-byte length
      le(s.size(), 4);
    }
    out_ += s;
    return *this;
  }
  // BININT1, BININT (signed 4 bytes) or LONG1 (two's complement, shortest).
  PickleWriter& integer(std::int64_t v) {
    if (v >= 0 && v < 256) return op('K').op(static_cast<int>(v));
    if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');
      return le(static_cast<std::uint32_t>(v), 4);
    }
    std::string b;
    auto u = static_cast<std::uint64_t>(v);
    for (int i = 0; i < 8; ++i) b.push_back(static_cast<char>((u >> (8 * i)) & 0xFFU));
    // Drop high bytes that only repeat the sign.
    while (b.size() > 1) {
      const auto top = static_cast<unsigned char>(b.back());
      const auto next = static_cast<unsigned char>(b[b.size() - 2]);
      if ((top == 0 && (next & 0x80U) == 0) || (top == 0xFF && (next & 0x80U) != 0)) {
        b.pop_back();
      } else {
        break;
      }
    }
    op(0x8a).op(static_cast<int>(b.size()));
    out_ += b;
    return *this;
  }
  PickleWriter& none() { return op('N'); }
  PickleWriter& global(const std::string& module, const std::string& name) {
    return str(module).str(name).op(0x93);  // STACK_GLOBAL
  }
  PickleWriter& mark() { return op('('); }

  // A dataclass: cls.__new__(cls) (EMPTY_TUPLE NEWOBJ), then BUILD with
  // the dict `fields` fills between MARK and SETITEMS.
  template <typename Fn>
  PickleWriter& dataclass(const std::string& module, const std::string& cls, Fn fields) {
    global(module, cls).op(')').op(0x81).op('}').mark();
    fields();
    return op('u').op('b');
  }
  PickleWriter& torch_size(const std::vector<std::int64_t>& dims) {
    global("torch", "Size").mark();
    for (std::int64_t d : dims) integer(d);
    return op('t').op(0x85).op('R');  // TUPLE, TUPLE1, REDUCE
  }

  std::string take() {
    op('.');  // STOP
    return std::move(out_);
  }

 private:
  PickleWriter& le(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) op(static_cast<int>((v >> (8 * i)) & 0xFFU));
    return *this;
  }
  std::string out_;
};

struct Slice {
  std::string fqn;
  std::uint64_t per_rank = 0;  // elements (bytes: torch.uint8) of each rank's chunk
  std::uint64_t at = 0;        // where the chunk starts in each rank's file
};

void tensor(PickleWriter& w, const Slice& s, std::size_t ranks) {
  w.dataclass(kMeta, "TensorStorageMetadata", [&] {
    // TensorProperties.__getstate__: (dtype, layout, requires_grad,
    // memory_format, pin_memory).
    w.str("properties").global(kMeta, "TensorProperties").op(')').op(0x81);
    w.mark().global("torch", "uint8").global("torch", "strided").op(0x89);
    // Python 3.11 and later pickle an Enum member as getattr(cls, name).
    w.global("builtins", "getattr").global(kMeta, "_MEM_FORMAT_ENCODING");
    w.str("TORCH_CONTIGUOUS_FORMAT").op(0x86).op('R');  // TUPLE2, REDUCE
    w.op(0x89).op('t').op('b');
    w.str("size").torch_size({static_cast<std::int64_t>(s.per_rank * ranks)});
    w.str("chunks").op(']').mark();
    for (std::size_t k = 0; k < ranks; ++k) {
      w.dataclass(kMeta, "ChunkStorageMetadata", [&] {
        w.str("offsets").torch_size({static_cast<std::int64_t>(s.per_rank * k)});
        w.str("sizes").torch_size({static_cast<std::int64_t>(s.per_rank)});
      });
    }
    w.op('e');  // APPENDS
  });
}

}  // namespace

std::string synthetic_metadata(std::size_t ranks, std::uint64_t shard_bytes) {
  const std::uint64_t half = shard_bytes / 2;
  const std::vector<Slice> slices = {{"model.weight", half, 0},
                                     {"optim.state.weight.exp_avg", shard_bytes - half, half}};
  PickleWriter w;
  w.dataclass(kMeta, "Metadata", [&] {
    w.str("state_dict_metadata").op('}').mark();
    for (const Slice& s : slices) {
      w.str(s.fqn);
      tensor(w, s, ranks);
    }
    w.op('u');
    w.str("planner_data").none();
    w.str("storage_data").op('}').mark();
    for (const Slice& s : slices) {
      for (std::size_t k = 0; k < ranks; ++k) {
        w.dataclass(kMeta, "MetadataIndex", [&] {
          w.str("fqn").str(s.fqn);
          w.str("offset").torch_size({static_cast<std::int64_t>(s.per_rank * k)});
          w.str("index").integer(static_cast<std::int64_t>(k));
        });
        w.dataclass("torch.distributed.checkpoint.filesystem", "_StorageInfo", [&] {
          w.str("relative_path").str("__" + std::to_string(k) + "_0.distcp");
          w.str("offset").integer(static_cast<std::int64_t>(s.at));
          w.str("length").integer(static_cast<std::int64_t>(s.per_rank));
          w.str("transform_descriptors").none();
        });
      }
    }
    w.op('u');
    w.str("storage_meta").none();
    w.str("version").str("1.0.0");
  });
  return w.take();
}

}  // namespace ckptmon::dcp
