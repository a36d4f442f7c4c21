"""PyTorch DCP checkpoints written as torch writes them, without torch.

Debian's python3-torch has no working torch.distributed.checkpoint, and no
framework can run here; but DCP's `.metadata` is nothing more than
`pickle.dump(Metadata)` of a few dataclasses (torch/distributed/checkpoint/
metadata.py and filesystem.py, torch 2.0 to 2.9). This module defines those
classes under their real module and class names, with torch's pickling
(torch.Size reduces to a tuple, dtypes and layouts pickle by name,
TensorProperties' __getstate__ tuple, an Enum for the memory format), and
lets Python's own pickler write the bytes at whichever protocol: an
implementation independent of ckptmon's reader. The shard files hold each
chunk's bytes at the offsets storage_data records, as FileSystemWriter lays
them out.

Usage: write_dcp(dir, state, ranks=2, protocol=4) -> expected component bytes.
"""

import dataclasses
import enum
import os
import pathlib
import pickle
import sys
import types
from typing import Any, List, Optional


def _module(name):
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        n = ".".join(parts[:i])
        if n not in sys.modules:
            sys.modules[n] = types.ModuleType(n)
            if i > 1:
                setattr(sys.modules[".".join(parts[:i - 1])], parts[i - 1], sys.modules[n])
    return sys.modules[name]


_torch = _module("torch")
_meta = _module("torch.distributed.checkpoint.metadata")
_fs = _module("torch.distributed.checkpoint.filesystem")


def _place(module, cls):
    cls.__module__ = module.__name__
    setattr(module, cls.__name__, cls)
    return cls


class Size(tuple):
    def __reduce__(self):
        return (Size, (tuple(self),))


_place(_torch, Size)


class _ByName:
    """torch.dtype and torch.layout: pickled as the global torch.<name>."""

    def __init__(self, name, itemsize=0):
        self.name, self.itemsize = name, itemsize

    def __reduce__(self):
        return self.name


_ByName.__module__ = "torch"
DTYPES = {n: _ByName(n, s) for n, s in
          (("float32", 4), ("bfloat16", 2), ("float16", 2), ("int64", 8), ("uint8", 1))}
for _n, _d in DTYPES.items():
    setattr(_torch, _n, _d)
_torch.strided = _ByName("strided")


class _MEM_FORMAT_ENCODING(enum.Enum):
    TORCH_CONTIGUOUS_FORMAT = 0
    TORCH_CHANNELS_LAST = 1
    TORCH_PRESERVE_FORMAT = 2


_place(_meta, _MEM_FORMAT_ENCODING)


@dataclasses.dataclass
class ChunkStorageMetadata:
    offsets: Size
    sizes: Size


@dataclasses.dataclass
class TensorProperties:
    dtype: Any
    layout: Any = None
    requires_grad: bool = False
    memory_format: Any = _MEM_FORMAT_ENCODING.TORCH_CONTIGUOUS_FORMAT
    pin_memory: bool = False

    def __getstate__(self):
        return (self.dtype, self.layout, self.requires_grad, self.memory_format, self.pin_memory)

    def __setstate__(self, state):
        (self.dtype, self.layout, self.requires_grad, self.memory_format, self.pin_memory) = state


@dataclasses.dataclass
class TensorStorageMetadata:
    properties: TensorProperties
    size: Size
    chunks: List[ChunkStorageMetadata]


@dataclasses.dataclass
class BytesStorageMetadata:
    pass


@dataclasses.dataclass
class StorageMeta:
    checkpoint_id: Any = None
    save_id: Optional[str] = None
    load_id: Optional[str] = None
    modules: List[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Metadata:
    state_dict_metadata: dict
    planner_data: Any = None
    storage_data: Any = None
    storage_meta: Optional[StorageMeta] = None
    version: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class MetadataIndex:
    fqn: str
    offset: Optional[Size] = None
    index: Optional[int] = dataclasses.field(hash=False, compare=False, default=None)


@dataclasses.dataclass
class _StorageInfo:
    relative_path: str
    offset: int
    length: int
    transform_descriptors: Any = None


for _c in (ChunkStorageMetadata, TensorProperties, TensorStorageMetadata, BytesStorageMetadata,
           StorageMeta, Metadata, MetadataIndex):
    _place(_meta, _c)
_place(_fs, _StorageInfo)

GROUP = {"model": "model", "module": "model", "optim": "optimizer", "optimizer": "optimizer",
         "state": "optimizer", "param_groups": "optimizer", "lr_scheduler": "scheduler",
         "rng": "rng", "rng_state": "rng", "dataloader": "dataloader", "scaler": "scaler"}


class Hostile:
    """A value whose unpickling would call os.system: what the reader must refuse."""

    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


def write_dcp(path, state, ranks=2, protocol=4, save_id=None):
    """Writes a DCP checkpoint directory. `state` maps fqn to ("tensor",
    dtype, rows, cols) or ("bytes", n). Tensors are split by rows over the
    ranks, bytes items go to rank 0. Returns {component: stored bytes}."""
    os.makedirs(path, exist_ok=True)
    files = [bytearray() for _ in range(ranks)]
    sdm, storage, expected = {}, {}, {}
    for fqn, spec in state.items():
        group = GROUP.get(fqn.split(".")[0], "other")
        if spec[0] == "bytes":
            blob = bytes([len(fqn) % 251]) * spec[1]
            sdm[fqn] = BytesStorageMetadata()
            storage[MetadataIndex(fqn)] = _StorageInfo("__0_0.distcp", len(files[0]), len(blob))
            files[0] += blob
            expected[group] = expected.get(group, 0) + len(blob)
            continue
        _, dtype, rows, cols = spec
        chunks = []
        per = (rows + ranks - 1) // ranks
        for r in range(ranks):
            lo, hi = r * per, min(rows, (r + 1) * per)
            if lo >= hi:
                continue
            chunk = ChunkStorageMetadata(Size((lo, 0)), Size((hi - lo, cols)))
            chunks.append(chunk)
            n = (hi - lo) * cols * DTYPES[dtype].itemsize
            storage[MetadataIndex(fqn, Size((lo, 0)), len(chunks) - 1)] = _StorageInfo(
                f"__{r}_0.distcp", len(files[r]), n)
            files[r] += b"\x01" * n
            expected[group] = expected.get(group, 0) + n
        sdm[fqn] = TensorStorageMetadata(
            TensorProperties(DTYPES[dtype], _torch.strided), Size((rows, cols)), chunks)
    for r, data in enumerate(files):
        with open(os.path.join(path, f"__{r}_0.distcp"), "wb") as f:
            f.write(data)
    meta = Metadata(sdm, planner_data={k: (k,) for k in state}, storage_data=storage,
                    storage_meta=StorageMeta(pathlib.PosixPath(path), save_id=save_id),
                    version="1.0.0")
    with open(os.path.join(path, ".metadata"), "wb") as f:
        pickle.dump(meta, f, protocol=protocol)
    return expected
