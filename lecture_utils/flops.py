"""Count FLOPs two ways (closed-form formulas, PyTorch's FlopCounterMode), and turn them into MFU and a roofline."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch.utils.flop_counter import FlopCounterMode

from lecture_utils.checks import check_dims, check_positive

# No device that runs PyTorch is slower than this; a smaller "peak" is a placeholder or a figure
# given in TFLOP/s instead of FLOP/s.
_SLOWEST_PLAUSIBLE_PEAK = 1e9


def _matmul_dims(a_shape: Sequence[int], b_shape: Sequence[int]) -> tuple[int, int, int, int]:
    """(batch, m, n, p) of a @ b for shapes (..., m, n) @ (..., n, p), with broadcast batch dims."""
    if len(a_shape) < 2 or len(b_shape) < 2:
        raise ValueError(f"matmul shapes need 2+ dims each, got {tuple(a_shape)} and {tuple(b_shape)}")
    *a_batch, m, n = a_shape
    *b_batch, n2, p = b_shape
    check_dims(m=m, n=n, p=p, n_of_b=n2)
    for i, size in enumerate([*a_batch, *b_batch]):
        check_dims(**{f"batch dim {i}": size})
    if n != n2:
        raise ValueError(f"inner dimensions differ: {tuple(a_shape)} @ {tuple(b_shape)} ({n} != {n2})")
    batch = []
    for x, y in zip(reversed(a_batch), reversed(b_batch)):
        if x != y and 1 not in (x, y):
            raise ValueError(f"batch dimensions do not broadcast: {tuple(a_shape)} @ {tuple(b_shape)}")
        batch.append(max(x, y))
    longer = a_batch if len(a_batch) > len(b_batch) else b_batch
    batch += list(reversed(longer[: abs(len(a_batch) - len(b_batch))]))
    return math.prod(batch), m, n, p


def matmul_flops(a_shape: Sequence[int], b_shape: Sequence[int]) -> int:
    """FLOPs of a @ b for shapes (..., m, n) @ (..., n, p): 2 x batch x m x n x p (one multiply + one add each)."""
    batch, m, n, p = _matmul_dims(a_shape, b_shape)
    return 2 * batch * m * n * p


def matmul_bytes(a_shape: Sequence[int], b_shape: Sequence[int], dtype: torch.dtype) -> int:
    """Fewest bytes a @ b can move: read a and b once, write the (batch, m, p) result once."""
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype, got {type(dtype).__name__}")
    batch, m, _, p = _matmul_dims(a_shape, b_shape)
    return (math.prod(a_shape) + math.prod(b_shape) + batch * m * p) * dtype.itemsize


def linear_flops(tokens: int, d_in: int, d_out: int) -> int:
    """Forward FLOPs of a bias-free linear layer on `tokens` rows: 2 x tokens x d_in x d_out."""
    check_dims(tokens=tokens, d_in=d_in, d_out=d_out)
    return 2 * tokens * d_in * d_out


def arithmetic_intensity(flops: float, bytes_moved: float) -> float:
    """FLOPs done per byte moved to or from memory: the x axis of a roofline."""
    check_positive(flops=flops, bytes_moved=bytes_moved)
    return flops / bytes_moved


def attainable_flops(intensity: float, peak_flops: float, bandwidth_bytes_per_s: float) -> float:
    """Roofline bound: min(peak, intensity x bandwidth); below the ridge memory limits, above it compute does."""
    check_positive(intensity=intensity, peak_flops=peak_flops, bandwidth_bytes_per_s=bandwidth_bytes_per_s)
    return min(peak_flops, intensity * bandwidth_bytes_per_s)


def mfu(flops: float, seconds: float, peak_flops: float) -> float:
    """Model FLOPs utilization: (useful FLOPs / seconds) / the peak FLOP/s of the dtype in effect.

    A result above 1 cannot happen: it means the peak belongs to another dtype or device, the FLOP
    count is too high, or the timer stopped before the work finished (a missing synchronize).
    """
    check_positive(flops=flops, seconds=seconds, peak_flops=peak_flops)
    if peak_flops < _SLOWEST_PLAUSIBLE_PEAK:
        raise ValueError(
            f"a peak of {peak_flops:g} FLOP/s is not a real device's; pass the dense peak in FLOP/s "
            "(e.g. 989.5e12 for an H100 SXM in bf16), or report achieved FLOP/s only"
        )
    achieved = flops / seconds
    utilization = achieved / peak_flops
    if utilization > 1:
        raise ValueError(
            f"MFU {utilization:.2f} > 1: achieved {achieved:.3g} FLOP/s exceeds the peak {peak_flops:.3g} FLOP/s; "
            "check that the peak is for this device and dtype, the FLOP count, and that timing synchronized"
        )
    return utilization


@dataclass(frozen=True)
class FlopReport:
    """FlopCounterMode's tally: the total, and FLOPs per module (module name -> op name -> FLOPs)."""

    total: int
    by_module: dict[str, dict[str, int]]

    def module_total(self, name: str) -> int:
        """All FLOPs counted inside one module, e.g. 'Sequential.0' (the whole run is 'Global')."""
        if name not in self.by_module:
            raise KeyError(f"no module {name!r} in the count; have {sorted(self.by_module)}")
        return sum(self.by_module[name].values())


def count_flops(fn: Callable[[], object]) -> FlopReport:
    """Run `fn()` under FlopCounterMode and report what it counted (matmul-like ops only)."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    with FlopCounterMode(display=False) as counter:
        fn()
    by_module = {
        module: {str(op).removeprefix("aten."): int(n) for op, n in ops.items()}
        for module, ops in counter.get_flop_counts().items()
    }
    return FlopReport(total=int(counter.get_total_flops()), by_module=by_module)
