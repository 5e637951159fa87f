"""Forked gloo ranks on this machine: run a function on each, collect the results, kept for several runs (notebook 09).

Why fork: a spawned rank re-imports torch (about 5 s a rank on two cores); a forked one shares the
parent's already-imported modules and starts in milliseconds. Every rank is quiet (its stdout,
stderr and warnings go to a file in a temporary directory) and its result or its exception comes
back through a pipe. A rank that raises makes the parent kill the others and raise `RankError`
naming the rank, the exception type and its message: nothing waits forever. `RankPool` keeps its
ranks and their process group for several measurements; `run_ranks` starts ranks for one.
"""

import io
import multiprocessing as mp
import os
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from datetime import timedelta
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from lecture_utils.checks import PositiveFloat, PositiveInt

RankFn = Callable[[int, int], Any]  # (rank, world_size) -> a picklable result


class RankError(RuntimeError):
    """A rank raised: carries which rank, the exception's type name and its message (notebook 09)."""

    def __init__(self, rank: int, exc_type: str, message: str, details: str = "") -> None:
        super().__init__(f"rank {rank} raised {exc_type}: {message}")
        self.rank, self.exc_type, self.message, self.details = rank, exc_type, message, details


def _rank_main(
    fn: RankFn | None,
    rank: int,
    world_size: int,
    store_path: str,
    log_path: str,
    timeout_s: float,
    conn: Connection,
    parent_pid: int,
) -> None:
    """Body of one forked rank: silence it, join the group, run each function it is given, send back results.

    `fn` is the first function (inherited through the fork); the next ones come through `conn`, until
    None. Each result goes back as ("ok", result), a failure as ("error", details), after which the
    rank stops: its group may be broken.
    """
    # The parent's fds 1 and 2 may be a notebook's output stream: a rank must not write there.
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    sys.stdout = sys.stderr = io.StringIO()
    torch.set_num_threads(1)  # two cores shared by N ranks: more threads only contend
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            store = dist.FileStore(store_path, world_size)
            dist.init_process_group(
                "gloo", store=store, rank=rank, world_size=world_size, timeout=timedelta(seconds=timeout_s)
            )
            while fn is not None:
                conn.send(("ok", fn(rank, world_size)))
                fn = _next_function(conn, parent_pid)
            # A rank that tears down while a peer is still connecting breaks the peer's setup.
            dist.barrier()
            dist.destroy_process_group()
    except BaseException as exc:  # any failure must reach the parent, not vanish
        # Sent before any teardown: tearing down makes the other ranks fail too, a bit later, and the
        # parent reports the earliest failure as the cause. The process then exits without cleanup.
        conn.send(("error", (time.time(), type(exc).__name__, str(exc), traceback.format_exc())))
    finally:
        conn.close()


def _next_function(conn: Connection, parent_pid: int) -> RankFn | None:
    """Wait for the parent's next function (None: stop). A rank whose parent died exits at once."""
    while not conn.poll(1.0):
        if os.getppid() != parent_pid:
            os._exit(0)  # nobody is left to answer, or to stop this rank
    return conn.recv()


class RankPool:
    """`world_size` forked gloo ranks in one process group, kept to run several functions in turn (notebook 09).

    Starting ranks costs more than a small measurement: the fork and the group's set-up, and in
    each new rank the first call of an engine (FSDP2's first step takes several times its next
    ones). A pool pays that once. `run(fn)` runs `fn(rank, world_size)` on every rank and returns the
    results in rank order; the first function is inherited through the fork, later ones travel
    pickled (a module-level function, or a functools.partial of one). `timeout_s` bounds every
    collective and each run. A rank that raises makes `run` kill the ranks and raise `RankError`;
    the next `run` starts new ones. `close()` (or leaving a `with` block) ends them; they also end
    when this process does.
    """

    def __init__(self, world_size: PositiveInt, timeout_s: PositiveFloat = 30.0) -> None:
        if "fork" not in mp.get_all_start_methods():
            raise RuntimeError("RankPool needs the 'fork' start method (Linux or macOS); use torchrun instead")
        self.world_size, self.timeout_s = world_size, timeout_s
        self._procs: list[BaseProcess] = []
        self._conns: list[Connection] = []
        self._tmp: tempfile.TemporaryDirectory | None = None

    def run(self, fn: RankFn) -> list[Any]:
        """Run `fn(rank, world_size)` on every rank; return the results in rank order (notebook 09)."""
        if self._procs:
            for conn in self._conns:
                conn.send(fn)
        else:
            self._start(fn)
        ok = False
        try:
            results = _collect(self._procs, self._conns, self.timeout_s)
            ok = True
            return results
        finally:
            if not ok:  # a rank failed, or this process was interrupted: the group cannot be trusted
                self._shut_down(grace_s=0.0)

    def close(self) -> None:
        """Stop the ranks: they leave the group together and exit (notebook 09)."""
        for conn in self._conns:
            try:
                conn.send(None)
            except OSError:  # that rank is gone already
                pass
        self._shut_down(grace_s=2.0)

    def __enter__(self) -> "RankPool":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _start(self, fn: RankFn) -> None:
        ctx = mp.get_context("fork")
        self._tmp = tempfile.TemporaryDirectory(prefix="ranks-")
        for rank in range(self.world_size):
            parent_end, child_end = ctx.Pipe(duplex=True)
            args = (
                fn,
                rank,
                self.world_size,
                str(Path(self._tmp.name) / "store"),
                str(Path(self._tmp.name) / f"rank{rank}.log"),
                self.timeout_s,
                child_end,
                os.getpid(),
            )
            proc = ctx.Process(target=_rank_main, args=args, daemon=True)
            with warnings.catch_warnings():
                # Python >= 3.12 warns on any fork of a threaded process. The risk is a lock held by
                # another thread at fork time; a rank uses only torch, on one thread, which the notes'
                # tests fork repeatedly after the parent's thread pool has run.
                warnings.filterwarnings("ignore", message=".*fork.* may lead to deadlocks", category=DeprecationWarning)
                proc.start()
            child_end.close()
            self._procs.append(proc)
            self._conns.append(parent_end)

    def _shut_down(self, grace_s: float) -> None:
        _stop(self._procs, grace_s)
        for conn in self._conns:
            conn.close()
        if self._tmp is not None:
            self._tmp.cleanup()
        self._procs, self._conns, self._tmp = [], [], None


def run_ranks(fn: RankFn, world_size: PositiveInt, timeout_s: PositiveFloat = 30.0) -> list[Any]:
    """Run `fn(rank, world_size)` on `world_size` forked gloo ranks; return their results in rank order (notebook 09).

    `timeout_s` bounds every collective (the process group's timeout) and the whole run. The first
    rank to fail raises `RankError` here after the other ranks are killed; the rendezvous file and
    the ranks' logs live in a temporary directory that is removed on return. One RankPool, used once.
    """
    with RankPool(world_size, timeout_s) as pool:
        return pool.run(fn)


def _collect(procs: list[BaseProcess], conns: list[Connection], timeout_s: float) -> list[Any]:
    """Wait for one message a rank; raise at the first error, a silent death, or the deadline."""
    results: dict[int, Any] = {}
    deadline = time.monotonic() + timeout_s
    waiting = dict(enumerate(conns))
    while waiting:
        ready = wait(list(waiting.values()), timeout=max(0.0, deadline - time.monotonic()))
        if not ready:
            late = sorted(waiting)
            raise RankError(late[0], "TimeoutError", f"ranks {late} sent nothing within {timeout_s} s")
        for rank in [r for r, c in waiting.items() if c in ready]:
            try:
                status, payload = waiting.pop(rank).recv()
            except EOFError:
                procs[rank].join(1.0)
                raise RankError(
                    rank, "ProcessExit", f"exited with code {procs[rank].exitcode} without a result"
                ) from None
            if status == "error":
                raise _earliest_error({rank: payload}, waiting)
            results[rank] = payload
    return [results[r] for r in range(len(procs))]


def _earliest_error(errors: dict[int, tuple], waiting: dict[int, Connection]) -> RankError:
    """The first failure is the cause; the others are ranks losing their peers. Wait 0.5 s for them."""
    for conn in wait(list(waiting.values()), timeout=0.5):
        rank = next(r for r, c in waiting.items() if c is conn)
        try:
            status, payload = conn.recv()
        except EOFError:
            continue
        if status == "error":
            errors[rank] = payload
    rank = min(errors, key=lambda r: errors[r][0])
    return RankError(rank, *errors[rank][1:])


def _stop(procs: list[BaseProcess], grace_s: float) -> None:
    """Give ranks `grace_s` in all to exit, then terminate and finally kill the ones still running."""
    deadline = time.monotonic() + grace_s
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
            proc.join(1.0)
        if proc.is_alive():
            proc.kill()
            proc.join(1.0)
