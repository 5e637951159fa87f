"""save_checkpoint and load_checkpoint as CS336 assignment 1 defines them: model, optimizer and iteration.

`out` and `src` are a path or a binary file-like object. A path is written atomically (temporary
file in the same directory, flush, fsync, os.replace), so a crash mid-save leaves the previous
checkpoint whole. Loading uses torch.load(weights_only=True), which unpickles only tensors and
plain containers, so a checkpoint from elsewhere cannot run code.

Copyable: imports only io, os, tempfile and torch; no other lecture_utils module. In
lecture_utils the package's import hook enforces the annotations; copied alone they document them.
Taught in notebook 07; asked for by assignment 1.
"""

import io
import os
import tempfile

import torch

_KEYS = ("model", "optimizer", "iteration")


def atomic_save(obj: object, path: str | os.PathLike) -> None:
    """torch.save to a temporary file beside `path`, flush and fsync it, then os.replace it onto `path`.

    A reader, or a crash, sees the old file or the complete new one, never a half-written one;
    a failed save leaves no temporary file behind. Both kinds of checkpoint use it (notebook 07).
    """
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"directory {directory!r} for the checkpoint does not exist")
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())  # the bytes are on disk before the rename makes them visible
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
