"""A save caught at its worst moment, for crash demonstrations: written and fsynced, not yet renamed (notebook 07).

A real crash runs no cleanup code. To show what it leaves behind, `start_paused_save` forks a child
that runs checkpointing.atomic_save and pauses just before the rename, alive and holding its
temporary's lock, until the caller kills it (SIGKILL, as the OOM killer would) or it is left
running as a save still in progress. Forked, not spawned: the child starts with torch already
imported, in milliseconds rather than the seconds a fresh interpreter needs. POSIX only. Only
CPU tensors may cross the fork: a process forked after CUDA started cannot use CUDA, so its
torch.save could not copy a GPU tensor to the host (load what it saves with map_location="cpu").
"""

import multiprocessing as mp
import time
import warnings
from collections.abc import Iterator, Mapping
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

import torch

from lecture_utils.checkpointing import atomic_save
from lecture_utils.checks import PositiveFloat

_PAUSE_S = 60.0  # how long the child waits before its rename: far longer than any demonstration


def _save_and_pause(obj: object, path: str, conn: Connection) -> None:
    """The child: atomic_save that reports its temporary's path and sleeps just before the rename."""

    def pause(temporary: str) -> None:
        conn.send(temporary)
        conn.close()
        time.sleep(_PAUSE_S)

    atomic_save(obj, path, _before_replace=pause)


def _off_cpu(obj: object, where: str = "obj") -> Iterator[tuple[str, torch.device]]:
    """Where in `obj` (dicts, lists and tuples of tensors) a tensor lives off the CPU, and on which device."""
    if isinstance(obj, torch.Tensor):
        if obj.device.type != "cpu":
            yield where, obj.device
    elif isinstance(obj, Mapping):
        for key, value in obj.items():
            yield from _off_cpu(value, f"{where}[{key!r}]")
    elif isinstance(obj, list | tuple):
        for i, value in enumerate(obj):
            yield from _off_cpu(value, f"{where}[{i}]")


def start_paused_save(obj: object, path: str | Path, timeout_s: PositiveFloat = 60.0) -> tuple[BaseProcess, Path]:
    """Fork a process that saves `obj` to `path` with atomic_save and pauses before the rename (notebook 07).

    Returns the process, alive and paused, and its temporary file, written in full and fsynced.
    The caller ends the process (`process.kill()`, then `process.join()`). If the child fails or
    does not pause within `timeout_s`, it is killed and RuntimeError raised. A tensor off the CPU
    anywhere in `obj` raises ValueError before anything is forked.
    """
    off_cpu = next(_off_cpu(obj), None)
    if off_cpu is not None:  # checked before forking: the child could not copy it to the host
        raise ValueError(
            f"{off_cpu[0]} is on {off_cpu[1]}, not the CPU: a forked process cannot copy GPU memory "
            "to the host. Load the checkpoint with torch.load(..., weights_only=True, map_location='cpu') "
            "or move it first."
        )
    if "fork" not in mp.get_all_start_methods():
        raise RuntimeError("start_paused_save needs the 'fork' start method (Linux or macOS)")
    ctx = mp.get_context("fork")
    parent_end, child_end = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_save_and_pause, args=(obj, str(path), child_end), daemon=True)
    with warnings.catch_warnings():
        # Python >= 3.12 warns on any fork of a threaded process, for fear of a lock another thread
        # holds. The child only pickles tensors and writes one file, on the thread that forked it.
        warnings.filterwarnings("ignore", message=".*fork.* may lead to deadlocks", category=DeprecationWarning)
        process.start()
    child_end.close()
    try:
        if not parent_end.poll(timeout_s):
            raise RuntimeError(f"the save did not reach its rename within {timeout_s} s")
        temporary = Path(parent_end.recv())
    except (RuntimeError, EOFError) as error:
        process.kill()
        process.join()
        raise RuntimeError(f"the paused save failed: exit code {process.exitcode}") from error
    finally:
        parent_end.close()
    return process, temporary
