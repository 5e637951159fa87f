"""Pick the device the notes run on, and size problems so a cell stays fast on it (every notebook)."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal, TypeVar

import torch

from lecture_utils.checks import PositiveInt

Choice = TypeVar("Choice")  # what per_device() picks between: a size, a trial count, a label, a thread count


def pick_device() -> torch.device:
    """The first CUDA GPU if there is one, else the CPU; notebooks never need two GPUs (notebook 00).

    Apple's GPU (torch's "mps" device) is left out on purpose: MPS has no float64 and no float8
    tensors, which notebooks 01 and 08 use, and its timers and memory counters are not CUDA's, so
    every measured cell would need a third branch. A Mac runs the notes on its CPU: the same
    lessons at CPU sizes, with achieved FLOP/s but no estimated peak (macOS has no /proc/cpuinfo).
    """
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def device_type(device: torch.device | str) -> Literal["cpu", "cuda"]:
    """'cpu' or 'cuda': the two device types the notes can size, synchronize, time and name (notebook 04).

    "mps" raises: see pick_device for why Apple's GPU is left out.
    """
    kind = torch.device(device).type
    if kind not in ("cpu", "cuda"):
        raise ValueError(f"device type {kind!r} is not supported: the notes run on 'cpu' or 'cuda'")
    return kind


def per_device(device: torch.device | str, *, cpu: Choice, cuda: Choice) -> Choice:
    """The CPU's or the GPU's value: sizes small enough for a 2-core CPU, big enough to fill a GPU (notebook 02)."""
    return cpu if device_type(device) == "cpu" else cuda


def synchronize(device: torch.device | str) -> None:
    """Wait for queued GPU work to finish, so a timer measures the work and not its launch (notebook 04)."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def device_name(device: torch.device | str) -> str:
    """What the device is called: the GPU's marketing name, or 'cpu' (notebook 04)."""
    return "cpu" if device_type(device) == "cpu" else torch.cuda.get_device_name(device)


def has_fast_bf16(device: torch.device | str) -> bool:
    """Whether bf16 matmuls run in vector kernels on this device, not a scalar fallback (notebook 04).

    A CPU needs a oneDNN bf16 kernel: native (AVX512_BF16, AMX, AVX2-VNNI-2) or AVX-512 emulating
    bf16, which is slower than native but still vectorized. With AVX2 only, torch falls back to a
    plain loop: measured here with oneDNN held to AVX2 (ONEDNN_MAX_CPU_ISA=AVX2), a 512^3 bf16
    matmul on one thread ran at 2.5 GFLOP/s against fp32's 90. A GPU needs compute capability 8.0
    (Ampere) or newer; older cards emulate bf16.
    """
    if device_type(device) == "cuda":
        return torch.cuda.is_bf16_supported(including_emulation=False)
    try:
        return torch.backends.mkldnn.is_available() and bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a build without oneDNN's bf16 query
        return False


@contextmanager
def torch_threads(count: PositiveInt | None) -> Iterator[None]:
    """Run the block with `count` CPU threads (None: as they are), then restore torch's setting (notebook 08).

    Tiny ops are fastest on one thread (OpenMP's per-op fork and barrier cost more than the
    arithmetic), and a benchmark on a shared machine is steadier on a fixed count.
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(count or previous)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
