"""Measured kernels placed on a roofline: FLOP/s against FLOPs per byte moved (notebook 04).

A point is one kernel at one size: its FLOPs, the fewest bytes it must move to or from memory, and
its best measured time. Element-wise adds and matrix-vector products do a FLOP or two per value
they read: memory-bound. Square matmuls reuse each value n times: compute-bound once n is large.
A language model's layer, T tokens times one weight, moves from the first to the second as T grows.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from lecture_utils.checks import NonNegativeFloat, PositiveFloat, PositiveInt, PositiveInts
from lecture_utils.flops import arithmetic_intensity, matmul_bytes, matmul_flops
from lecture_utils.matmul_benchmark import MatmulResult
from lecture_utils.op_intensity import ACTIVATION_FLOPS
from lecture_utils.peaks import matmul_precision
from lecture_utils.timing import time_fn, work_clock


@dataclass(frozen=True)
class MeasuredKernel:
    """One measured kernel: what it is, its size, FLOPs, bytes moved and best seconds per call (notebook 04)."""

    kernel: str  # "add", "matvec", "matmul", "token matmul"
    precision: str  # the datasheet row it runs in: "fp32", "bf16"
    size: PositiveInt  # elements of an add, n of an n x n matrix, tokens T of a token matmul
    flops: PositiveInt
    bytes_moved: PositiveInt
    seconds: PositiveFloat

    @property
    def intensity(self) -> float:
        """FLOPs per byte moved."""
        return arithmetic_intensity(self.flops, self.bytes_moved)

    @property
    def flops_per_s(self) -> float:
        """Achieved FLOP/s."""
        return self.flops / self.seconds

    @property
    def bytes_per_s(self) -> float:
        """Achieved bytes/s: the bandwidth the kernel got."""
        return self.bytes_moved / self.seconds


def matmul_kernel(result: MatmulResult) -> MeasuredKernel:
    """A benchmarked n x n matmul as a roofline point: 2n^3 FLOPs over 3 n^2 elements moved (notebook 04)."""
    n, dtype = result.n, getattr(torch, result.dtype)
    bytes_moved = matmul_bytes((n, n), (n, n), dtype)
    return MeasuredKernel("matmul", result.precision, n, result.flops, bytes_moved, result.seconds)


def _best_of_rounds(
    calls: Sequence[Callable[[], object]], device: torch.device, rounds: int, min_trial_s: float
) -> list[float]:
    """Best seconds per call of each fn; the fns take turns, round by round, so load hits all alike.

    On a CPU running one thread the seconds are that thread's CPU time (work_clock): another
    program holding the core does not stretch one size's calls more than another's.
    """
    clock = work_clock(device)
    best = [float("inf")] * len(calls)
    for _ in range(rounds):
        for i, fn in enumerate(calls):
            timing = time_fn(fn, device, warmup=1, trials=3, min_trial_s=min_trial_s, clock=clock)
            best[i] = min(best[i], timing.min_s)
    return best


def time_adds(
    device: torch.device | str,
    numels: PositiveInts,
    *,
    rounds: PositiveInt = 3,
    min_trial_s: NonNegativeFloat = 0.002,
) -> list[MeasuredKernel]:
    """Time fp32 `x + y` into a preallocated output at each size: 1 FLOP per 12 bytes moved (notebook 04).

    Tiny adds cost the fixed per-call overhead (time flat in size); large ones stream x and y in and
    the sum out, so their time grows with the bytes: bandwidth-bound.
    """
    device = torch.device(device)
    if not numels:
        raise ValueError("time_adds needs at least one size")
    generator = torch.Generator(device=device).manual_seed(0)
    tensors = [
        [torch.rand(n, generator=generator, device=device, dtype=torch.float32) for _ in range(3)]  # x, y, out
        for n in numels
    ]
    calls = [lambda x=x, y=y, out=out: torch.add(x, y, out=out) for x, y, out in tensors]
    seconds = _best_of_rounds(calls, device, rounds, min_trial_s)
    return [
        MeasuredKernel("add", "fp32", n, n, sum(t.nbytes for t in three), s)
        for n, three, s in zip(numels, tensors, seconds, strict=True)
    ]


def time_matvec(
    device: torch.device | str, n: PositiveInt, *, rounds: PositiveInt = 3, min_trial_s: NonNegativeFloat = 0.002
) -> MeasuredKernel:
    """Time an fp32 (n x n) @ (n,) product: 2n^2 FLOPs, each matrix value read once and used once (notebook 04).

    Its intensity is about 0.5 FLOP/byte whatever n is: batch-1 decoding of a language model
    multiplies every weight matrix by one vector like this.
    """
    device = torch.device(device)
    generator = torch.Generator(device=device).manual_seed(0)
    matrix = torch.rand(n, n, generator=generator, device=device, dtype=torch.float32)
    vector = torch.rand(n, generator=generator, device=device, dtype=torch.float32)
    out = torch.empty(n, device=device, dtype=torch.float32)
    (seconds,) = _best_of_rounds([lambda: torch.mv(matrix, vector, out=out)], device, rounds, min_trial_s)
    shapes = (n, n), (n, 1)  # a vector is an (n x 1) matrix: the same FLOPs and bytes
    return MeasuredKernel("matvec", "fp32", n, matmul_flops(*shapes), matmul_bytes(*shapes, torch.float32), seconds)


def time_token_matmuls(
    device: torch.device | str,
    tokens: PositiveInts,
    d: PositiveInt,
    f: PositiveInt,
    *,
    dtype: torch.dtype = torch.bfloat16,
    rounds: PositiveInt = 3,
    min_trial_s: NonNegativeFloat = 0.002,
) -> list[MeasuredKernel]:
    """Time (T x d) @ (d x f) for each token count T, one weight shared by all (notebook 04).

    The weight is stored (f x d) and used transposed, as torch.nn.Linear keeps it. Each product
    reads the whole weight once, whatever T is: for small T that read is nearly all the bytes, so
    the time hardly grows with T (memory-bound); for large T the 2Tdf FLOPs dominate.
    """
    device = torch.device(device)
    if not tokens:
        raise ValueError("time_token_matmuls needs at least one token count")
    generator = torch.Generator(device=device).manual_seed(0)
    weight = torch.rand(f, d, generator=generator, device=device).to(dtype)
    operands = [
        (torch.rand(t, d, generator=generator, device=device).to(dtype), torch.empty(t, f, device=device, dtype=dtype))
        for t in tokens
    ]
    calls = [lambda x=x, out=out: torch.matmul(x, weight.t(), out=out) for x, out in operands]
    seconds = _best_of_rounds(calls, device, rounds, min_trial_s)
    precision = matmul_precision(dtype)
    return [
        MeasuredKernel(
            "token matmul", precision, t, matmul_flops((t, d), (d, f)), matmul_bytes((t, d), (d, f), dtype), s
        )
        for t, s in zip(tokens, seconds, strict=True)
    ]


def time_activations(
    device: torch.device | str,
    numel: PositiveInt,
    *,
    dtype: torch.dtype = torch.float32,
    rounds: PositiveInt = 3,
    min_trial_s: NonNegativeFloat = 0.002,
) -> list[MeasuredKernel]:
    """Time ReLU and GELU on `numel` values into a preallocated output: the same bytes, x read, y written (notebook 04).

    FLOPs are counted per value as the 2026 lecture counts them (op_intensity.ACTIVATION_FLOPS).
    ReLU is max(x, 0), as torch.clamp_min, which writes into `out=`; GELU is torch's default, the
    erf form. A fresh output per call would time the allocator too: on a CPU, faulting in new pages.
    """
    device = torch.device(device)
    generator = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(numel, generator=generator, device=device).to(dtype)
    out = torch.empty_like(x)
    calls = {
        "relu": lambda: torch.clamp_min(x, 0.0, out=out),
        "gelu": lambda: torch.ops.aten.gelu.out(x, out=out),
    }
    seconds = _best_of_rounds(list(calls.values()), device, rounds, min_trial_s)
    precision = matmul_precision(dtype)
    return [
        MeasuredKernel(name, precision, numel, ACTIVATION_FLOPS[name] * numel, x.nbytes + out.nbytes, s)
        for name, s in zip(calls, seconds, strict=True)
    ]
