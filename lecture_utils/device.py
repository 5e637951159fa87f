"""Pick the device the notes run on, and size problems so a cell stays fast on it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

import torch

T = TypeVar("T")


def pick_device() -> torch.device:
    """The first CUDA GPU if there is one, else the CPU (notebooks never need two GPUs)."""
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def sized(device: torch.device | str, *, cpu: T, cuda: T) -> T:
    """Choose a problem size for the device: small enough for a 2-core CPU, big enough to fill a GPU."""
    kind = torch.device(device).type
    if kind == "cpu":
        return cpu
    if kind == "cuda":
        return cuda
    raise ValueError(f"no problem size for device type {kind!r}; expected 'cpu' or 'cuda'")


def synchronize(device: torch.device | str) -> None:
    """Wait for queued GPU work to finish, so a timer measures the work and not its launch."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def device_name(device: torch.device | str) -> str:
    """What the device is called: the GPU's marketing name, or 'cpu'."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "cpu":
        return "cpu"
    raise ValueError(f"unsupported device type {device.type!r}; expected 'cpu' or 'cuda'")


@contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """Run the block with `count` CPU threads (None: as they are), then restore torch's setting.

    Tiny ops are fastest on one thread (OpenMP's per-op fork and barrier cost more than the
    arithmetic), and a benchmark on a shared machine is steadier on a fixed count.
    """
    if count is not None and (not isinstance(count, int) or count < 1):
        raise ValueError(f"thread count must be a positive int or None, got {count!r}")
    previous = torch.get_num_threads()
    torch.set_num_threads(count or previous)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
