"""Count FLOPs two ways: closed-form formulas, and PyTorch's FlopCounterMode on the real ops."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from torch.utils.flop_counter import FlopCounterMode


def _check_dims(**dims: int) -> None:
    for name, value in dims.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value <= 0:
            raise ValueError(f"{name} must be positive, got {value}")


def matmul_flops(a_shape: Sequence[int], b_shape: Sequence[int]) -> int:
    """FLOPs of a @ b for shapes (..., m, n) @ (..., n, p): 2 x batch x m x n x p (one multiply + one add each)."""
    if len(a_shape) < 2 or len(b_shape) < 2:
        raise ValueError(f"matmul_flops needs shapes of 2+ dims, got {tuple(a_shape)} and {tuple(b_shape)}")
    *a_batch, m, n = a_shape
    *b_batch, n2, p = b_shape
    _check_dims(m=m, n=n, p=p)
    if n != n2:
        raise ValueError(f"inner dimensions differ: {tuple(a_shape)} @ {tuple(b_shape)} ({n} != {n2})")
    batch = []
    for x, y in zip(reversed(a_batch), reversed(b_batch)):
        if x != y and 1 not in (x, y):
            raise ValueError(f"batch dimensions do not broadcast: {tuple(a_shape)} @ {tuple(b_shape)}")
        batch.append(max(x, y))
    longer = a_batch if len(a_batch) > len(b_batch) else b_batch
    batch += list(reversed(longer[: abs(len(a_batch) - len(b_batch))]))
    return 2 * math.prod(batch) * m * n * p


def linear_flops(tokens: int, d_in: int, d_out: int) -> int:
    """Forward FLOPs of a bias-free linear layer on `tokens` rows: 2 x tokens x d_in x d_out."""
    _check_dims(tokens=tokens, d_in=d_in, d_out=d_out)
    return 2 * tokens * d_in * d_out


@dataclass(frozen=True)
class FlopReport:
    """FlopCounterMode's tally: the total, and FLOPs per module (module name -> op name -> FLOPs)."""

    total: int
    by_module: dict[str, dict[str, int]]

    def module_total(self, name: str) -> int:
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
