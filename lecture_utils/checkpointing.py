"""save_checkpoint and load_checkpoint as CS336 assignment 1 defines them: model, optimizer and iteration.

`out` and `src` are a path or a binary file-like object. A path is written atomically (temporary
file in the same directory, flush, fsync, os.replace), so a crash mid-save, even a SIGKILL, loses
that save but leaves the previous checkpoint whole; remove_stale_temporaries, run at start-up,
deletes what such a crash left. Loading uses torch.load(weights_only=True), which unpickles only
tensors and plain containers, so a checkpoint from elsewhere cannot run code.

A reference, not a submission: assignment 1 grades save_checkpoint and load_checkpoint. Students
taking CS336 write their own under the course's policy and hand in only their own; use this file to
check yours against (save with one, load with the other, and compare the restored state), never to
copy or hand in.

Self-contained: imports only the standard library and torch; no other lecture_utils module. In
lecture_utils the package's import hook enforces the annotations; read alone they document them.
Taught in notebook 07; asked for by assignment 1.
"""

import io
import os
from collections.abc import Callable

import torch
import torch.distributed as dist

_KEYS = ("model", "optimizer", "iteration")
_RANDOM_HEX = 12  # the temporary's random part: 6 bytes from os.urandom, as hex


def _temporary_name(target: str) -> str:
    """`.{target}.{12 hex digits}.tmp`: hidden, beside the target, recognisably a temporary."""
    return f".{target}.{os.urandom(_RANDOM_HEX // 2).hex()}.tmp"


def _is_temporary(name: str) -> bool:
    """Whether `name` has the form of an atomic_save temporary, for any target."""
    target, _, random_part = name[1:-4].rpartition(".")
    return (
        name.startswith(".")
        and name.endswith(".tmp")
        and bool(target)
        and len(random_part) == _RANDOM_HEX
        and all(c in "0123456789abcdef" for c in random_part)
    )


def _lock(fd: int, blocking: bool) -> bool | None:
    """Take a POSIX lock on the whole file behind `fd` (open for writing).

    True if taken; False if another process holds one; None if the file system refuses locks
    (ENOLCK on NFS without lockd, ENOSYS on Lustre mounted noflock, EOPNOTSUPP on some FUSE).
    """
    try:
        os.lockf(fd, os.F_LOCK if blocking else os.F_TLOCK, 0)
    except (BlockingIOError, PermissionError):  # EAGAIN or EACCES, as the system reports a held lock
        return False
    except OSError:  # no locks on this file system: the caller decides what that means
        return None
    return True


def remove_stale_temporaries(directory: str | os.PathLike, *, rank: int | None = None) -> list[str]:
    """Delete the temporaries killed saves left in `directory`, whatever checkpoint they were for (notebook 07).

    Call it at start-up, on rank 0 only (`rank` defaults to this process's rank in torch.distributed,
    or, before init_process_group, to the RANK variable torchrun sets, 0 without it; other ranks
    return at once): rank 0 is the one that saves. Two sweepers (two jobs sharing a directory) do no
    harm: a file the other already removed is skipped. A save killed before its rename (SIGKILL, the
    OOM killer, a preempted node) runs no cleanup and leaves a full-size `.{name}.{12 hex digits}.tmp`;
    with per-step names (ckpt_{step}.pt) no later save has its name, so only a sweep of the whole
    directory finds it. Stale or live is told by a lock, not by a name or an age: atomic_save holds
    a POSIX lock (os.lockf) on its temporary until the rename, and the kernel drops it when the saver
    dies, however it dies. A process id in the name would be reused (often 1 in a container) and
    means nothing in another container; an age cannot tell a slow save of a large model from a dead
    one. A POSIX lock belongs to a process, so the sweep cannot see this process's own saves: run it
    before this process saves, as start-up does. Where locks are refused (Windows has no os.lockf;
    ENOLCK, ENOSYS or EOPNOTSUPP from the file system) live cannot be told from stale, so nothing is
    removed.
    Returns the names removed.
    """
    if rank is None:
        in_group = dist.is_available() and dist.is_initialized()
        rank = dist.get_rank() if in_group else int(os.environ.get("RANK", 0))
    if rank != 0 or not hasattr(os, "lockf"):
        return []
    removed = []
    for name in sorted(os.listdir(directory)):
        if not _is_temporary(name):
            continue
        path = os.path.join(directory, name)
        try:
            fd = os.open(path, os.O_RDWR)  # a lock on the whole file needs it open for writing
        except (FileNotFoundError, PermissionError):  # renamed since the listing, or another user's
            continue
        try:
            # True: no process holds it, its writer is gone. None: locks refused, so unknown: keep it.
            if _lock(fd, blocking=False) is True:
                os.remove(path)
                removed.append(name)
        except FileNotFoundError:  # another sweeper removed it, or a live save renamed it, meanwhile
            pass
        finally:
            os.close(fd)  # releases our lock
    return removed


def atomic_save(
    obj: object, path: str | os.PathLike, *, _before_replace: Callable[[str], object] | None = None
) -> None:
    """torch.save to a temporary file beside `path`, flush and fsync it, then os.replace it onto `path`.

    A reader sees the old file or the complete new one, never a half-written one, even if the
    saving process is killed (SIGKILL, the OOM killer, a preempted node): the save in progress is
    lost, the previous checkpoint survives. The fsyncs make the new file and its rename durable
    across a power loss; the rename is atomic on a POSIX file system (local disks, and NFS, Lustre
    and the like within one directory), not on every object store. An exception removes the
    temporary; a kill cannot, so it stays until remove_stale_temporaries runs at the next start-up,
    which tells it from a live save's by the lock this function holds on it until the rename. The lock
    is best effort: on a file system that refuses POSIX locks (ENOLCK, ENOSYS, EOPNOTSUPP) the save
    still happens, unlocked, and the sweep there removes nothing. The
    file is created with mode 0o666 less the umask, as open() would make it (0644 under umask 022).
    _before_replace(temporary path), if given, runs once the bytes are on disk, before the rename:
    a hook for crash tests. Both kinds of checkpoint use this (notebook 07).
    """
    directory, target = os.path.split(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"directory {directory!r} for the checkpoint does not exist")
    tmp = os.path.join(directory, _temporary_name(target))
    # O_EXCL: never reuse a file that exists. Mode 0o666: the kernel takes the umask off, as for open().
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        # Locked until the rename, so a sweep knows this temporary is alive. (A sweep in the instant
        # between the open and the lock could remove it; the rename below would then fail loudly.)
        # Best effort: where the file system refuses locks the save goes on unlocked, and the sweep,
        # refused too, removes nothing.
        if hasattr(os, "lockf"):
            _lock(fd, blocking=True)
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())  # the bytes are on disk before the rename makes them visible
            if _before_replace is not None:
                _before_replace(tmp)
            os.replace(tmp, path)  # atomic on one filesystem: readers see the old file or the new one
        # Closing the file released the lock, after the rename.
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
