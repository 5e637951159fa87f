"""Time GPU or CPU work honestly: warm up, synchronize, repeat, take the median or the best (notebook 04)."""

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch
from torch.utils.benchmark import Timer

from lecture_utils.checks import NonNegativeFloat, NonNegativeFloats, NonNegativeInt, PositiveInt
from lecture_utils.device import device_type, torch_threads

# What a trial's clock counts: "wall" time, or the calling "thread"'s CPU time (time.thread_time).
Clock = Literal["wall", "thread"]


def _one_cpu_thread(device: torch.device | str) -> bool:
    """Torch runs on the CPU on one thread, and the thread clock is fine enough to time a call."""
    one_thread = device_type(device) == "cpu" and torch.get_num_threads() == 1
    return one_thread and time.get_clock_info("thread_time").resolution <= 1e-6


def work_clock(device: torch.device | str) -> Clock:
    """The clock that counts only the work: "thread" on a CPU running torch on one thread, else "wall" (notebook 04).

    On one CPU thread the work is the calling thread's CPU time, which the waits for a core that
    other programs cause on a shared machine do not add to. On several threads, or on a GPU, the
    work happens outside the calling thread, so only wall time counts it, as it does where the
    thread clock is coarse (Windows ticks it every 15.6 ms) and where the matmul library may start
    threads of its own: only MKL is known to keep to torch's thread count (Apple's Accelerate or an
    OpenBLAS built with pthreads may not).
    """
    return "thread" if _one_cpu_thread(device) and torch.backends.mkl.is_available() else "wall"


@dataclass(frozen=True)
class Timing:
    """Seconds per call over several trials (notebook 04).

    The median resists a stray slow trial; the fastest trial (min_s) is the one other processes
    disturbed least, so it is the steadier measure of what the hardware can do on a shared machine.
    """

    seconds: NonNegativeFloats
    calls_per_trial: PositiveInt = 1

    def __post_init__(self) -> None:
        if not self.seconds:
            raise ValueError("a Timing needs at least one trial: with none there is no median and no best")

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
    warmup: NonNegativeInt = 3,
    trials: PositiveInt = 10,
    min_trial_s: NonNegativeFloat = 0.0,
    clock: Clock = "wall",
) -> Timing:
    """Time `fn()` on `device`: `warmup` untimed calls (kernel selection), then `trials` timed ones (notebook 04).

    GPU kernels run asynchronously, so each trial synchronizes before starting and before
    stopping the clock; otherwise the timer measures only the launch. A call much shorter than
    the clock's overhead is repeated within a trial until the trial lasts `min_trial_s`.
    `clock="thread"` counts the calling thread's CPU time instead of wall time (see work_clock).
    """
    if clock == "thread" and not _one_cpu_thread(device):
        raise ValueError(
            "clock='thread' counts only the calling thread's CPU time: it needs a CPU with torch on one "
            f"thread (here {torch.device(device).type}, {torch.get_num_threads()} threads); use clock='wall'"
        )
    # torch's own synchronize, not lecture_utils.device's: the package's import hook checks the
    # arguments of every call to its functions, and the clock must not time that check.
    dev = torch.device(device)
    sync = (lambda: torch.cuda.synchronize(dev)) if device_type(device) == "cuda" else (lambda: None)
    now = time.thread_time if clock == "thread" else time.perf_counter

    def run(calls: int) -> float:  # the hook checks this call outside the clock: before start, after stop
        sync()
        start = now()
        for _ in range(calls):
            fn()
        sync()
        return now() - start

    for _ in range(warmup):
        fn()
    calls = 1
    while min_trial_s > 0 and run(calls) < min_trial_s:  # double until a trial is long enough, like timeit
        calls *= 2
    seconds = tuple(run(calls) / calls for _ in range(trials))
    return Timing(seconds, calls)


def compare_with_timer(
    fn: Callable[[], object],
    device: torch.device | str,
    *,
    num_threads: PositiveInt,
    rounds: PositiveInt = 7,
    calls: PositiveInt = 20,
) -> tuple[float, float]:
    """Best seconds per call by time_fn and by torch.utils.benchmark.Timer, on `num_threads` threads (notebook 04).

    The two alternate, round by round, so that on a shared machine both see the same load; each
    reports its fastest round, the one other processes disturbed least.
    """
    timer = Timer("fn()", globals={"fn": fn}, num_threads=num_threads)
    ours, theirs = [], []
    with torch_threads(num_threads):
        for _ in range(rounds):
            # One block of `calls` calls, timed as a whole, exactly like Timer.timeit(calls).
            ours.append(time_fn(lambda: [fn() for _ in range(calls)], device, warmup=1, trials=1).min_s / calls)
            theirs.append(timer.timeit(calls).median)
    return min(ours), min(theirs)
