"""Time GPU or CPU work honestly: warm up, synchronize, repeat, take the median."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from lecture_utils.device import synchronize


@dataclass(frozen=True)
class Timing:
    """Seconds per call over several trials; the median resists a stray slow trial."""

    seconds: tuple[float, ...]

    @property
    def median_s(self) -> float:
        return statistics.median(self.seconds)

    @property
    def min_s(self) -> float:
        return min(self.seconds)


def time_fn(fn: Callable[[], object], device: torch.device | str, *, warmup: int = 3, trials: int = 10) -> Timing:
    """Time `fn()` on `device`: `warmup` untimed calls (kernel selection, caches), then `trials` timed ones.

    GPU kernels run asynchronously, so each trial synchronizes before starting and before
    stopping the clock; otherwise the timer measures only the launch.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
    if trials < 1:
        raise ValueError(f"trials must be >= 1 to measure anything, got {trials}")
    for _ in range(warmup):
        fn()
    seconds = []
    for _ in range(trials):
        synchronize(device)
        start = time.perf_counter()
        fn()
        synchronize(device)
        seconds.append(time.perf_counter() - start)
    return Timing(tuple(seconds))
