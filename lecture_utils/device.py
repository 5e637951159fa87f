"""Pick the device the notes run on, and size problems so a cell stays fast on it."""

from __future__ import annotations

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
