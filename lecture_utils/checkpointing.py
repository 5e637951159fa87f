"""save_checkpoint and load_checkpoint as CS336 assignment 1 defines them: model, optimizer and iteration.

`out` and `src` are a path or a binary file-like object. A path is written atomically (temporary
file in the same directory, flush, fsync, os.replace), so a crash mid-save, even a SIGKILL, leaves
the previous checkpoint whole, and the next save of that path removes what the crash left. Loading
uses torch.load(weights_only=True), which unpickles only tensors and plain containers, so a
checkpoint from elsewhere cannot run code.

A reference, not a submission: assignment 1 grades save_checkpoint and load_checkpoint. Students
taking CS336 write their own under the course's policy and hand in only their own; use this file to
check yours against (save with one, load with the other, and compare the restored state), never to
copy or hand in.

Self-contained: imports only io, os, collections and torch; no other lecture_utils module. In
lecture_utils the package's import hook enforces the annotations; read alone they document them.
Taught in notebook 07; asked for by assignment 1.
"""

import io
import os
from collections.abc import Callable

import torch

_KEYS = ("model", "optimizer", "iteration")
_RANDOM_HEX = 12  # the temporary's random part: 6 bytes from os.urandom, as hex


def _temporary_name(target: str) -> str:
    """`.{target}.{12 hex digits}.tmp`: hidden, beside the target, recognisably its own."""
    return f".{target}.{os.urandom(_RANDOM_HEX // 2).hex()}.tmp"


def _is_temporary_of(name: str, target: str) -> bool:
    """Whether `name` is a temporary that atomic_save made for `target` (and for no other file)."""
    prefix, suffix = f".{target}.", ".tmp"
    middle = name[len(prefix) : -len(suffix)]
    return (
        name.startswith(prefix)
        and name.endswith(suffix)
        and len(name) == len(prefix) + _RANDOM_HEX + len(suffix)
        and all(c in "0123456789abcdef" for c in middle)
    )


def _remove_orphans(directory: str, target: str) -> None:
    """Delete the temporaries a killed save of `target` left: no cleanup code runs after SIGKILL."""
    for name in os.listdir(directory):
        if _is_temporary_of(name, target):
            try:
                os.remove(os.path.join(directory, name))
            except FileNotFoundError:  # another saver removed it first
                pass


def atomic_save(
    obj: object, path: str | os.PathLike, *, _before_replace: Callable[[str], object] | None = None
) -> None:
    """torch.save to a temporary file beside `path`, flush and fsync it, then os.replace it onto `path`.

    A reader sees the old file or the complete new one, never a half-written one, even if the
    saving process is killed (SIGKILL, the OOM killer, a preempted node). An exception removes
    the temporary; a kill cannot, so each save first deletes the temporaries that earlier saves of
    the same `path` left (`.ckpt.pt.<12 hex digits>.tmp` for ckpt.pt), and no other file. The file
    is created with mode 0o666 less the umask, as open() would make it (0644 under umask 022).
    One process saves a given path at a time (rank 0, say): two saving it at once never leave a torn
    file, but one's sweep may delete the other's temporary, whose save then raises FileNotFoundError.
    _before_replace(temporary path), if given, runs once the bytes are on disk, before the rename:
    a hook for crash tests. Both kinds of checkpoint use this (notebook 07).
    """
    directory, target = os.path.split(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"directory {directory!r} for the checkpoint does not exist")
    _remove_orphans(directory, target)
    tmp = os.path.join(directory, _temporary_name(target))
    # O_EXCL: never reuse a file that exists. Mode 0o666: the kernel takes the umask off, as for open().
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())  # the bytes are on disk before the rename makes them visible
        if _before_replace is not None:
            _before_replace(tmp)
        os.replace(tmp, path)  # atomic on one filesystem: readers see the old file or the new one
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    if os.name == "posix":  # make the rename itself durable (Windows cannot open a directory)
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def save_checkpoint(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    iteration: int,
    out: str | os.PathLike | io.BufferedIOBase,
) -> None:
    """Write the model's and the optimizer's state_dict and the iteration number to `out` (notebook 07)."""
    checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": iteration}
    if isinstance(out, (str, os.PathLike)):
        atomic_save(checkpoint, out)
    else:
        torch.save(checkpoint, out)  # a file object: its owner decides where the bytes go


def load_checkpoint(
    src: str | os.PathLike | io.BufferedIOBase,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
) -> int:
    """Restore model and optimizer from a save_checkpoint checkpoint in place; return its iteration (notebook 07).

    Tensors are loaded onto the CPU first; load_state_dict then copies them to wherever the
    model's parameters live, so a checkpoint written on a GPU loads on a CPU-only machine.
    """
    checkpoint = torch.load(src, map_location="cpu", weights_only=True)
    if not isinstance(checkpoint, dict) or not set(_KEYS) <= set(checkpoint):
        found = sorted(checkpoint) if isinstance(checkpoint, dict) else type(checkpoint).__name__
        raise ValueError(f"not a save_checkpoint checkpoint: expected keys {list(_KEYS)}, found {found}")
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    return checkpoint["iteration"]
