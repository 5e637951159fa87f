"""Measure DDP, ZeRO-1 and FSDP2 from the command line: forked gloo ranks, or torchrun's (NCCL on GPUs) (notebook 09).

`python -m lecture_utils.sharding_launch --nproc 8` forks 8 gloo ranks on this machine
(lecture_utils.rank_pool); under `torchrun --nproc-per-node 8 -m lecture_utils.sharding_launch` it
joins torchrun's group, on GPU `cuda:LOCAL_RANK` with NCCL where CUDA is available. Either way it
trains each engine, prints one table row a rank and checks every rank against the prediction.
"""

import argparse
import functools
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

from lecture_utils.rank_pool import run_ranks
from lecture_utils.sharding import APPROACHES, Approach
from lecture_utils.sharding_measure import RankReport, check_reports, format_reports, train_rank


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
