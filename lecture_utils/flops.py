"""Count FLOPs two ways, closed-form formulas and PyTorch's FlopCounterMode, and turn them into MFU (notebooks 04, 05).

The formulas price a matmul, a linear layer, the two-layer net and attention of notebook 05, and
a transformer's training step per token (6N plus attention); the tests hold each one to
FlopCounterMode's count of the real computation.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.utils.flop_counter import FlopCounterMode

from lecture_utils.checks import NonNegativeInts, PositiveFloat, PositiveInt

# No device that runs PyTorch is slower than this; a smaller "peak" is a placeholder or a figure
# given in TFLOP/s instead of FLOP/s.
_SLOWEST_PLAUSIBLE_PEAK = 1e9


def _matmul_dims(a_shape: NonNegativeInts, b_shape: NonNegativeInts) -> tuple[int, int, int, int]:
    """(batch, m, n, p) of a @ b for shapes (..., m, n) @ (..., n, p), with broadcast batch dims."""
    if len(a_shape) < 2 or len(b_shape) < 2:
        raise ValueError(
            f"a matmul multiplies matrices: shapes need 2+ dims each, got {tuple(a_shape)}, {tuple(b_shape)}"
        )
    *a_batch, m, n = a_shape
    *b_batch, n_of_b, p = b_shape
    if n != n_of_b:
        raise ValueError(f"inner dimensions differ: {tuple(a_shape)} @ {tuple(b_shape)} ({n} != {n_of_b})")
    try:
        batch = torch.broadcast_shapes(tuple(a_batch), tuple(b_batch))
    except RuntimeError as error:
        raise ValueError(f"batch dimensions do not broadcast: {tuple(a_shape)} @ {tuple(b_shape)}") from error
    return math.prod(batch), m, n, p


def matmul_flops(a_shape: NonNegativeInts, b_shape: NonNegativeInts) -> int:
    """FLOPs of a @ b for shapes (..., m, n) @ (..., n, p): 2 x batch x m x n x p (notebook 04).

    Each of the batch x m x p outputs takes n multiplies and n adds.
    """
    batch, m, n, p = _matmul_dims(a_shape, b_shape)
    return 2 * batch * m * n * p


def matmul_bytes(a_shape: NonNegativeInts, b_shape: NonNegativeInts, dtype: torch.dtype) -> int:
    """Fewest bytes a @ b can move: read a and b once, write the (batch, m, p) result once (notebook 04)."""
    batch, m, _, p = _matmul_dims(a_shape, b_shape)
    return (math.prod(a_shape) + math.prod(b_shape) + batch * m * p) * dtype.itemsize


def linear_flops(tokens: PositiveInt, d_in: PositiveInt, d_out: PositiveInt) -> int:
    """Forward FLOPs of a bias-free linear layer on `tokens` rows: 2 x tokens x d_in x d_out (notebook 04)."""
    return 2 * tokens * d_in * d_out


def two_layer_forward_flops(batch: PositiveInt, d: PositiveInt, k: PositiveInt) -> int:
    """Forward FLOPs of notebook 05's two-layer net x (B x D) -> w1 (D x D) -> w2 (D x K): 2BDD + 2BDK."""
    return matmul_flops((batch, d), (d, d)) + matmul_flops((batch, d), (d, k))


def two_layer_backward_flops(batch: PositiveInt, d: PositiveInt, k: PositiveInt, *, input_grad: bool = False) -> int:
    """Backward FLOPs of the two-layer net: 2BDD + 4BDK, or 2 x forward when x needs a gradient (notebook 05)."""
    flops = (
        matmul_flops((d, batch), (batch, k))  # w2.grad = h1^T h2.grad
        + matmul_flops((batch, k), (k, d))  # h1.grad = h2.grad w2^T
        + matmul_flops((d, batch), (batch, d))  # w1.grad = x^T h1.grad
    )
    if input_grad:
        flops += matmul_flops((batch, d), (d, d))  # x.grad = h1.grad w1^T
    return flops


def attention_forward_flops(
    batch: PositiveInt, n_heads: PositiveInt, seq_len: PositiveInt, head_dim: PositiveInt
) -> int:
    """Forward FLOPs of one layer's q k^T and weights @ v over full T x T scores: 4 B H T^2 Q (notebook 05)."""
    scores = matmul_flops((batch, n_heads, seq_len, head_dim), (batch, n_heads, head_dim, seq_len))
    mix = matmul_flops((batch, n_heads, seq_len, seq_len), (batch, n_heads, seq_len, head_dim))
    return scores + mix


def forward_flops_per_token(
    n_params: PositiveInt, n_layers: PositiveInt, n_heads: PositiveInt, head_dim: PositiveInt, seq_len: PositiveInt
) -> int:
    """Forward FLOPs per token: 2N for the weights plus 4 L H Q T for attention (notebook 05)."""
    return 2 * n_params + 4 * n_layers * n_heads * head_dim * seq_len


def training_flops_per_token(
    n_params: PositiveInt, n_layers: PositiveInt, n_heads: PositiveInt, head_dim: PositiveInt, seq_len: PositiveInt
) -> int:
    """Training FLOPs per token, 6N + 12 L H Q T, as backward = 2 x forward (notebook 05).

    The formula of PaLM (Chowdhery et al. 2022, appendix B).
    """
    return 3 * forward_flops_per_token(n_params, n_layers, n_heads, head_dim, seq_len)


def arithmetic_intensity(flops: PositiveFloat, bytes_moved: PositiveFloat) -> float:
    """FLOPs done per byte moved to or from memory: the x axis of a roofline (notebook 04)."""
    return flops / bytes_moved


def attainable_flops(
    intensity: PositiveFloat, peak_flops: PositiveFloat, bandwidth_bytes_per_s: PositiveFloat
) -> float:
    """Roofline bound min(peak, intensity x bandwidth): memory limits below the ridge, compute above (notebook 04)."""
    return min(peak_flops, intensity * bandwidth_bytes_per_s)


def tokens_to_ridge(d: PositiveInt, f: PositiveInt, ridge: PositiveFloat, dtype: torch.dtype) -> int:
    """Fewest tokens T that put a (T x d) @ (d x f) matmul at or past a ridge point, in closed form (notebook 04).

    Its intensity 2Tdf / (b(Td + df + Tf)), b bytes per element, reaches `ridge` where
    T = ridge b df / (2df - ridge b (d + f)). It grows with T towards 2df / (b(d + f)) and never
    gets there: a ridge at or above that limit raises ValueError.
    """
    b = dtype.itemsize
    room = 2 * d * f - ridge * b * (d + f)
    if room <= 0:
        limit = 2 * d * f / (b * (d + f))
        raise ValueError(
            f"a ({d} x {f}) weight in {dtype} never reaches {ridge:g} FLOP/byte: however many tokens share it, "
            f"its intensity stays below {limit:.1f}"
        )
    return max(1, math.ceil(ridge * b * d * f / room))


def mfu(flops: PositiveFloat, seconds: PositiveFloat, peak_flops: PositiveFloat) -> float:
    """Model FLOPs utilization: (useful FLOPs / seconds) / the peak FLOP/s of the dtype in effect (notebook 04).

    A result above 1 cannot happen: it means the peak belongs to another dtype or device, the FLOP
    count is too high, or the timer stopped before the work finished (a missing synchronize).
    """
    if peak_flops < _SLOWEST_PLAUSIBLE_PEAK:
        raise ValueError(
            f"a peak of {peak_flops:g} FLOP/s is not a real device's; pass the dense peak in FLOP/s "
            "(e.g. 989.5e12 for an H100 SXM in bf16), or report achieved FLOP/s only"
        )
    achieved = flops / seconds
    utilization = achieved / peak_flops
    if utilization > 1:
        raise ValueError(
            f"MFU {utilization:.2f} > 1: achieved {achieved:.3g} FLOP/s exceeds the peak {peak_flops:.3g} FLOP/s;\n"
            "check that the peak is for this device and dtype, the FLOP count, and that timing synchronized"
        )
    return utilization


@dataclass(frozen=True)
class FlopReport:
    """FlopCounterMode's tally: the total, and FLOPs per module, module name -> op name -> FLOPs (notebook 04)."""

    total: int
    by_module: dict[str, dict[str, int]]

    def module_total(self, name: str) -> int:
        """All FLOPs counted inside one module, e.g. 'Sequential.0' (the whole run is 'Global')."""
        if name not in self.by_module:
            raise KeyError(f"no module {name!r} in the count; have {sorted(self.by_module)}")
        return sum(self.by_module[name].values())


def count_flops(fn: Callable[[], object]) -> FlopReport:
    """Run `fn()` under FlopCounterMode and report what it counted, matmul-like ops only (notebook 04)."""
    with FlopCounterMode(display=False) as counter:
        fn()
    by_module = {
        module: {str(op).removeprefix("aten."): int(n) for op, n in ops.items()}
        for module, ops in counter.get_flop_counts().items()
    }
    return FlopReport(total=int(counter.get_total_flops()), by_module=by_module)
