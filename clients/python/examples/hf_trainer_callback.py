"""ckptmon events from a Hugging Face transformers Trainer.

    from hf_trainer_callback import make_ckptmon_callback
    trainer = Trainer(..., callbacks=[make_ckptmon_callback(job="llama-sft", tier="rapid")])

How it maps onto the Trainer's callback API:
- ``on_step_end`` / ``on_epoch_end``: the Trainer's DefaultFlowCallback runs
  first and sets ``control.should_save`` when a save is due; the Trainer then
  saves right after the callbacks return. Seeing the flag, this callback
  writes checkpoint_start and pause_start (the save blocks training).
- ``on_save``: called after ``checkpoint-<step>/`` was written. This callback
  writes pause_end, then on the main process one shard_written per file and
  checkpoint_commit with the totals. The Trainer does not say which rank wrote
  which file, so files are reported as the main process's.

Each process writes its own log, ``<output_dir>/ckptmon-events-rank<i>.jsonl``
by default (O_APPEND is not atomic across nodes of a network file system).

transformers is imported when the callback is made, so this file can be read
and syntax-checked where it is not installed.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ckptmon_events import EventLog, dir_totals, sha256_file  # noqa: E402


def make_ckptmon_callback(job, *, log_path=None, tier=None, checksums=False):
    """A TrainerCallback instance writing ckptmon events. ``log_path`` may use
    ``{rank}`` (default: ``<output_dir>/ckptmon-events-rank{rank}.jsonl``)."""
    from transformers import TrainerCallback

    class CkptmonCallback(TrainerCallback):
        def __init__(self):
            self._log = None
            self._started = {}  # step -> time the save began

        def _log_for(self, args):
            if self._log is None:
                rank = args.process_index
                pattern = log_path or os.path.join(args.output_dir,
                                                   "ckptmon-events-rank{rank}.jsonl")
                path = pattern.format(rank=rank)
                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
                self._log = EventLog(path, job=job, tier=tier, rank=rank)
            return self._log

        def _maybe_start(self, args, state, control):
            step = state.global_step
            if control.should_save and step not in self._started:
                self._started[step] = time.time()
                log = self._log_for(args)
                log.checkpoint_start(step)
                log.pause_start(step)

        def on_step_end(self, args, state, control, **kwargs):
            self._maybe_start(args, state, control)

        def on_epoch_end(self, args, state, control, **kwargs):
            self._maybe_start(args, state, control)

        def on_save(self, args, state, control, **kwargs):
            step = state.global_step
            log = self._log_for(args)
            start = self._started.pop(step, None)
            if start is None:
                # The save was decided after on_step_end (e.g. save_strategy="best").
                start = time.time()
                log.checkpoint_start(step)
            else:
                log.pause_end(step)
            if not state.is_world_process_zero:
                return
            ckpt_dir = os.path.join(args.output_dir, f"checkpoint-{step}")
            if not os.path.isdir(ckpt_dir):
                log.checkpoint_failed(step, f"{ckpt_dir} not found after save")
                return
            for root, _dirs, names in os.walk(ckpt_dir):
                for name in sorted(names):
                    path = os.path.join(root, name)
                    st = os.stat(path)
                    log.shard_written(step, path=path, bytes=st.st_size, start_ts=start,
                                      checksum=sha256_file(path) if checksums else None,
                                      ts=st.st_mtime)
            files, total = dir_totals(ckpt_dir)
            log.checkpoint_commit(step, files=files, bytes=total)

        def on_train_end(self, args, state, control, **kwargs):
            if self._log is not None:
                self._log.close()
                self._log = None

    return CkptmonCallback()
