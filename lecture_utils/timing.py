"""Time GPU or CPU work honestly: warm up, synchronize, repeat, take the median (or, on a shared machine, the best)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.utils.benchmark import Timer

from lecture_utils.checks import check_int
from lecture_utils.device import synchronize, torch_threads


@dataclass(frozen=True)
class Timing:
    """Seconds per call over several trials.

    The median resists a stray slow trial; the fastest trial (min_s) is the one other processes
    disturbed least, so it is the steadier measure of what the hardware can do on a shared machine.
    """

    seconds: tuple[float, ...]
    calls_per_trial: int = 1

    def __post_init__(self) -> None:
        if not self.seconds:
            raise ValueError("a Timing needs at least one trial")
        if any(not s >= 0 for s in self.seconds):
            raise ValueError(f"trial times must be >= 0 seconds, got {self.seconds}")
        check_int("calls_per_trial", self.calls_per_trial)

    @property
    def median_s(self) -> float:
        """Median seconds per call."""
        return statistics.median(self.seconds)

    @property
    def min_s(self) -> float:
        """Fastest trial's seconds per call."""
        return min(self.seconds)


def time_fn(
    fn: Callable[[], object],
    device: torch.device | str,
    *,
    warmup: int = 3,
    trials: int = 10,
    min_trial_s: float = 0.0,
) -> Timing:
    """Time `fn()` on `device`: `warmup` untimed calls (kernel selection, caches), then `trials` timed ones.

    GPU kernels run asynchronously, so each trial synchronizes before starting and before
    stopping the clock; otherwise the timer measures only the launch. A call much shorter than
    the clock's overhead is repeated within a trial until the trial lasts `min_trial_s`.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    kind = torch.device(device).type
    if kind not in ("cpu", "cuda"):
        raise ValueError(f"cannot synchronize device type {kind!r}, so cannot time it; expected 'cpu' or 'cuda'")
    check_int("warmup", warmup, 0)
    check_int("trials", trials, 1)
    if isinstance(min_trial_s, bool) or not isinstance(min_trial_s, (int, float)) or not min_trial_s >= 0:
        raise ValueError(f"min_trial_s must be a number of seconds >= 0, got {min_trial_s!r}")

    def run(calls: int) -> float:
        synchronize(device)
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        synchronize(device)
        return time.perf_counter() - start

    for _ in range(warmup):
        fn()
    calls = 1
    while min_trial_s > 0 and run(calls) < min_trial_s:  # double until a trial is long enough, like timeit
        calls *= 2
    seconds = tuple(run(calls) / calls for _ in range(trials))
    return Timing(seconds, calls)


def compare_with_timer(
    fn: Callable[[], object], device: torch.device | str, *, num_threads: int, rounds: int = 7, calls: int = 20
) -> tuple[float, float]:
    """Best seconds per call by time_fn and by torch.utils.benchmark.Timer, both with `num_threads` CPU threads.

    The two alternate, round by round, so that on a shared machine both see the same load; each
    reports its fastest round, the one other processes disturbed least.
    """
    check_int("num_threads", num_threads, 1)
    check_int("rounds", rounds, 1)
    check_int("calls", calls, 1)
    timer = Timer("fn()", globals={"fn": fn}, num_threads=num_threads)
    ours, theirs = [], []
    with torch_threads(num_threads):
        for _ in range(rounds):
            # One block of `calls` calls, timed as a whole, exactly like Timer.timeit(calls).
            ours.append(time_fn(lambda: [fn() for _ in range(calls)], device, warmup=1, trials=1).min_s / calls)
            theirs.append(timer.timeit(calls).median)
    return min(ours), min(theirs)
