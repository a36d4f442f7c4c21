"""ckptmon events around PyTorch Distributed Checkpoint (DCP) saves.

    from dcp_hook import save_with_events
    log = EventLog(f"{ckpt_root}/events-rank{rank}.jsonl", job="llama", rank=rank, tier="rapid")
    save_with_events(state_dict, f"{ckpt_root}/step-{step}", step, log)

Every rank writes its own log (one log per rank: O_APPEND is not atomic
across nodes of a network file system). Each rank reports the shards it wrote;
DCP's FileSystemWriter names them ``__{rank}_{n}.distcp``. The coordinator
(rank 0) writes ``.metadata`` last, after every rank finished, so rank 0 also
reports the commit with the directory's file and byte totals.

torch is imported inside the functions, so this file can be read, imported and
syntax-checked where torch is not installed.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ckptmon_events import dir_totals, sha256_file  # noqa: E402


def _rank():
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return 0


def _report_shards(log, checkpoint_dir, step, rank, start_ts, checksums):
    prefix = f"__{rank}_"
    for name in sorted(os.listdir(checkpoint_dir)):
        if not (name.startswith(prefix) and name.endswith(".distcp")):
            continue
        path = os.path.join(checkpoint_dir, name)
        st = os.stat(path)
        # The file's mtime is when this shard's last byte landed: the shard's end time.
        log.shard_written(step, path=path, bytes=st.st_size, start_ts=start_ts, rank=rank,
                          checksum=sha256_file(path) if checksums else None, ts=st.st_mtime)


def save_with_events(state_dict, checkpoint_dir, step, log, *, checksums=False, **save_kwargs):
    """torch.distributed.checkpoint.save(state_dict, checkpoint_id=checkpoint_dir,
    **save_kwargs) wrapped in checkpoint_start / pause / shard_written /
    checkpoint_commit (or checkpoint_failed) events. ``checksums=True`` reads
    every shard back to hash it: accurate, but a full extra read."""
    import torch.distributed.checkpoint as dcp

    rank = _rank()
    checkpoint_dir = os.fspath(checkpoint_dir)
    start = time.time()
    log.checkpoint_start(step, rank=rank)
    try:
        with log.pause(step, rank=rank):  # a synchronous save blocks training throughout
            metadata = dcp.save(state_dict, checkpoint_id=checkpoint_dir, **save_kwargs)
    except BaseException as e:
        log.checkpoint_failed(step, f"{type(e).__name__}: {e}", rank=rank)
        raise
    _report_shards(log, checkpoint_dir, step, rank, start, checksums)
    if rank == 0:
        files, total = dir_totals(checkpoint_dir)
        log.checkpoint_commit(step, files=files, bytes=total, rank=rank)
    return metadata


def async_save_with_events(state_dict, checkpoint_dir, step, log, *, checksums=False,
                           **save_kwargs):
    """The same for torch.distributed.checkpoint.async_save: training is
    paused only while the state is staged, and the shards and the commit are
    reported when the returned future completes."""
    import torch.distributed.checkpoint as dcp

    rank = _rank()
    checkpoint_dir = os.fspath(checkpoint_dir)
    start = time.time()
    log.checkpoint_start(step, rank=rank)
    try:
        with log.pause(step, rank=rank):
            future = dcp.async_save(state_dict, checkpoint_id=checkpoint_dir, **save_kwargs)
    except BaseException as e:
        log.checkpoint_failed(step, f"{type(e).__name__}: {e}", rank=rank)
        raise

    def finished(f):
        error = f.exception()
        if error is not None:
            log.checkpoint_failed(step, f"{type(error).__name__}: {error}", rank=rank)
            return
        _report_shards(log, checkpoint_dir, step, rank, start, checksums)
        # .metadata is the commit marker: report the commit only once it exists.
        if rank == 0 and os.path.exists(os.path.join(checkpoint_dir, ".metadata")):
            files, total = dir_totals(checkpoint_dir)
            log.checkpoint_commit(step, files=files, bytes=total, rank=rank)

    if hasattr(future, "add_done_callback"):
        future.add_done_callback(finished)
    return future
