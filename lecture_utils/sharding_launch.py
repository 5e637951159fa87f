"""Start N ranks of torch.distributed on this machine (gloo, forked processes) and collect their results (notebook 09).

Why fork: a spawned rank re-imports torch (about 5 s a rank on two cores); a forked one shares the
parent's already-imported modules and starts in milliseconds. Every rank is quiet (its stdout,
stderr and warnings go to a file in a temporary directory) and its result or its exception comes
back through a pipe. A rank that raises makes the parent kill the others and raise `RankError`
naming the rank, the exception type and its message: nothing waits forever.
"""

import argparse
import functools
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
from lecture_utils.sharding import APPROACHES, Approach
from lecture_utils.sharding_measure import RankReport, check_reports, format_reports, train_rank

RankFn = Callable[[int, int], Any]  # (rank, world_size) -> a picklable result


class RankError(RuntimeError):
    """A rank raised: carries which rank, the exception's type name and its message (notebook 09)."""

    def __init__(self, rank: int, exc_type: str, message: str, details: str = "") -> None:
        super().__init__(f"rank {rank} raised {exc_type}: {message}")
        self.rank, self.exc_type, self.message, self.details = rank, exc_type, message, details


def _rank_main(
    fn: RankFn, rank: int, world_size: int, store_path: str, log_path: str, timeout_s: float, conn: Connection
) -> None:
    """Body of one forked rank: silence it, join the group, run `fn`, send back ("ok"|"error", payload)."""
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
            result = fn(rank, world_size)
            # A rank that tears down while a peer is still connecting breaks the peer's setup.
            dist.barrier()
            dist.destroy_process_group()
        conn.send(("ok", result))
    except BaseException as exc:  # any failure must reach the parent, not vanish
        # Sent before any teardown: tearing down makes the other ranks fail too, a bit later, and the
        # parent reports the earliest failure as the cause. The process then exits without cleanup.
        conn.send(("error", (time.time(), type(exc).__name__, str(exc), traceback.format_exc())))
    finally:
        conn.close()


def run_ranks(fn: RankFn, world_size: PositiveInt, timeout_s: PositiveFloat = 30.0) -> list[Any]:
    """Run `fn(rank, world_size)` on `world_size` forked gloo ranks; return their results in rank order (notebook 09).

    `timeout_s` bounds every collective (the process group's timeout) and the whole run. The first
    rank to fail raises `RankError` here after the other ranks are killed; the rendezvous file and
    the ranks' logs live in a temporary directory that is removed on return.
    """
    if "fork" not in mp.get_all_start_methods():
        raise RuntimeError("run_ranks needs the 'fork' start method (Linux or macOS); use torchrun instead")
    ctx = mp.get_context("fork")
    with tempfile.TemporaryDirectory(prefix="ranks-") as tmp:
        procs, conns = [], []
        for rank in range(world_size):
            parent_end, child_end = ctx.Pipe(duplex=False)
            args = (
                fn,
                rank,
                world_size,
                str(Path(tmp) / "store"),
                str(Path(tmp) / f"rank{rank}.log"),
                timeout_s,
                child_end,
            )
            proc = ctx.Process(target=_rank_main, args=args, daemon=True)
            with warnings.catch_warnings():
                # Python >= 3.12 warns on any fork of a threaded process. The risk is a lock held by
                # another thread at fork time; a rank uses only torch, on one thread, which the notes'
                # tests fork repeatedly after the parent's thread pool has run.
                warnings.filterwarnings("ignore", message=".*fork.* may lead to deadlocks", category=DeprecationWarning)
                proc.start()
            child_end.close()
            procs.append(proc)
            conns.append(parent_end)
        ok = False
        try:
            results = _collect(procs, conns, timeout_s)
            ok = True
            return results
        finally:
            _stop(procs, grace_s=2.0 if ok else 0.0)
            for conn in conns:
                conn.close()


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


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command line: which engines to measure, how many steps, and (without torchrun) how many ranks (notebook 09)."""
    parser = argparse.ArgumentParser(
        prog="python -m lecture_utils.sharding_launch",
        description="Train a small model under DDP, ZeRO-1 and FSDP2 (as ZeRO-2, ZeRO-3, and ZeRO-3 in bf16) "
        "and check each rank's bytes and traffic against the ZeRO accounting. Under torchrun it uses "
        "torchrun's ranks (NCCL on CUDA); otherwise it forks --nproc gloo ranks on this machine.",
    )
    parser.add_argument("--approach", choices=(*APPROACHES, "all"), default="all")
    parser.add_argument("--nproc", type=int, default=2, help="ranks to fork when not under torchrun")
    parser.add_argument("--steps", type=int, default=3, help="AdamW steps to train")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds for any collective and the run")
    args = parser.parse_args(argv)
    for name in ("nproc", "steps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    if not args.timeout > 0:
        parser.error(f"--timeout must be positive, got {args.timeout}")
    return args


def _torchrun_reports(approach: Approach, steps: int, timeout_s: float) -> list[RankReport] | None:
    """Under torchrun: join its group (NCCL on CUDA), train, gather every rank's report on rank 0."""
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = torch.device("cpu")
    if torch.cuda.is_available():
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        torch.cuda.set_device(device)
    backend = "nccl" if device.type == "cuda" else "gloo"
    if not dist.is_initialized():
        dist.init_process_group(backend, timeout=timedelta(seconds=timeout_s))
    report = train_rank(rank, world_size, approach, steps, device)
    reports: list[RankReport | None] = [None] * world_size
    dist.all_gather_object(reports, report)
    return reports if rank == 0 else None


def main(argv: list[str] | None = None) -> int:
    """Measure the chosen engines, print one table row a rank (rank 0 only under torchrun), check them."""
    args = parse_args(argv)
    under_torchrun = "RANK" in os.environ and "WORLD_SIZE" in os.environ
    approaches = list(APPROACHES) if args.approach == "all" else [args.approach]
    try:
        for approach in approaches:
            if under_torchrun:
                reports = _torchrun_reports(approach, args.steps, args.timeout)
            else:
                fn = functools.partial(train_rank, approach=approach, steps=args.steps)
                reports = run_ranks(fn, args.nproc, args.timeout)
            if reports is not None:
                check_reports(reports, args.steps)
                print(f"{format_reports(reports)}\nmeasured == predicted on every rank", flush=True)
        if under_torchrun:
            dist.barrier()  # as in run_ranks: no rank tears down while a peer still needs it
    finally:
        if under_torchrun and dist.is_initialized():
            dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    code = main()
    if "RANK" in os.environ:
        # The work is done and printed. Under torchrun a C++ thread of gloo's can outlive the group
        # (most likely because FSDP2's device mesh still holds it), and the interpreter's teardown
        # then sometimes aborts with "terminate called without an active exception" (1 run in 12 on
        # a loaded two-core machine). Skip that teardown, as a forked rank does.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
