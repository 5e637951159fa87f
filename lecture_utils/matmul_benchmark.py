"""Measure how close large matmuls get to the device's peak: FLOP/s and MFU (notebooks 04, 08).

bf16, fp32 ("highest") and, on CUDA, TF32 ("high") matmuls of square sizes, each against the
peak of the datasheet row it runs in. lecture_utils.matmul_reference records a run as JSON.
"""

import textwrap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import torch

from lecture_utils.checks import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, PositiveInts
from lecture_utils.device import per_device, torch_threads
from lecture_utils.flops import matmul_flops, mfu
from lecture_utils.hardware import Precision
from lecture_utils.peaks import Float32Mode, matmul_precision, peak_flops
from lecture_utils.timing import time_fn, work_clock

Case = Literal["bf16", "fp32", "tf32"]

# label -> (dtype, torch.set_float32_matmul_precision mode); the mode only matters for float32.
CASES: dict[Case, tuple[torch.dtype, Float32Mode]] = {
    "bf16": (torch.bfloat16, "highest"),
    "fp32": (torch.float32, "highest"),
    "tf32": (torch.float32, "high"),
}
_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


@dataclass(frozen=True)
class MatmulResult:
    """One timed (n x n) @ (n x n) matmul: what ran, how long it took, the peak it is held to (notebook 04)."""

    n: PositiveInt
    dtype: str  # "bfloat16"
    precision: Precision  # the datasheet row that bounds it: "bf16", "fp32", "tf32"
    flops: PositiveInt
    seconds: PositiveFloat  # fastest trial, per matmul
    peak_flops_per_s: float | None
    peak_source: str  # where the peak comes from, or why there is none
    peak_estimate: bool

    @property
    def flops_per_s(self) -> float:
        """Achieved FLOP/s."""
        return self.flops / self.seconds

    @property
    def mfu(self) -> float | None:
        """Achieved / peak FLOP/s, or None where no honest peak is known."""
        if self.peak_flops_per_s is None:
            return None
        return mfu(self.flops, self.seconds, self.peak_flops_per_s)


@contextmanager
def float32_matmul_mode(mode: Float32Mode) -> Iterator[None]:
    """Set torch's float32 matmul mode ('highest' = fp32, 'high' = TF32 on CUDA) inside the block (notebook 04)."""
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(mode)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(previous)


def cases_for(device: torch.device | str) -> list[Case]:
    """The CASES labels that make sense on a device: TF32 is a CUDA tensor-core mode, not a CPU's (notebook 04)."""
    return per_device(device, cpu=["fp32", "bf16"], cuda=["bf16", "fp32", "tf32"])


def benchmark_matmul(
    n: PositiveInt,
    dtype: torch.dtype,
    device: torch.device | str,
    *,
    float32_mode: Float32Mode = "highest",
    warmup: NonNegativeInt = 3,
    trials: PositiveInt = 10,
    min_trial_s: NonNegativeFloat = 0.0,
    seed: int = 0,
) -> MatmulResult:
    """Time an (n x n) @ (n x n) matmul in `dtype` on random normal inputs into a preallocated output (notebook 04).

    The result keeps the fastest trial: throughput is what the hardware can do, and on a machine
    shared with other processes the fastest trial is the one they disturbed least. A peak the
    measurement beats (a low CPU estimate, or a datasheet row of another card or dtype) is dropped
    with the reason, so the result has no MFU rather than one above 1.
    """
    if dtype not in _DTYPES:
        raise ValueError(f"cannot benchmark dtype {dtype}; expected one of {_DTYPES}")
    device = torch.device(device)
    with float32_matmul_mode(float32_mode):
        precision = matmul_precision(dtype)
        if device.type == "cpu" and precision == "tf32":
            raise ValueError(
                "TF32 ('high') is benchmarked as a CUDA tensor-core mode only: most CPUs run 'high' "
                "as plain fp32, and no CPU datasheet gives a TF32 peak to hold it to"
            )
        # Drawn on the device: the values only need to be random (zeros draw less power and run faster).
        generator = torch.Generator(device=device).manual_seed(seed)
        a = torch.randn(n, n, generator=generator, device=device, dtype=dtype)
        b = torch.randn(n, n, generator=generator, device=device, dtype=dtype)
        out = torch.empty(n, n, device=device, dtype=dtype)
        timing = time_fn(
            lambda: torch.matmul(a, b, out=out), device, warmup=warmup, trials=trials, min_trial_s=min_trial_s
        )
        why = ""
        try:
            peak = peak_flops(device, dtype)
        except ValueError as err:  # unknown accelerator, or no CPU estimate for this dtype
            peak, why = None, str(err)
    flops = matmul_flops(a.shape, b.shape)
    achieved = flops / timing.min_s
    # A measurement above its peak is never reported as MFU > 1: the peak is what is wrong.
    if peak is not None and achieved > peak.flops_per_s:
        if peak.estimate:
            why = f"achieved {achieved:.3g} FLOP/s beats the estimate ({peak.source}), so it is too low for this CPU"
        else:
            why = f"achieved {achieved:.3g} FLOP/s beats the {peak.source} ({peak.flops_per_s:.4g}): wrong card or row?"
        peak = None
    return MatmulResult(
        n=n,
        dtype=str(dtype).removeprefix("torch."),
        precision=precision,
        flops=flops,
        seconds=timing.min_s,
        peak_flops_per_s=peak.flops_per_s if peak else None,
        peak_source=peak.source if peak else why,
        peak_estimate=peak.estimate if peak else False,
    )


def run_benchmark(
    device: torch.device | str,
    sizes: PositiveInts,
    cases: Sequence[Case] | None = None,
    *,
    warmup: NonNegativeInt = 3,
    trials: PositiveInt = 10,
    min_trial_s: NonNegativeFloat = 0.0,
    num_threads: PositiveInt | None = None,
) -> list[MatmulResult]:
    """benchmark_matmul for every case label (default: cases_for(device)) at every size (notebooks 04, 08).

    `num_threads` sets torch's CPU threads for the run (and so the threads a CPU peak estimate
    counts). One thread gives steady CPU figures on a busy machine: a multi-threaded matmul waits
    for its slowest thread, so one thread descheduled by another process stalls the whole call.
    """
    cases = cases_for(device) if cases is None else list(cases)
    with torch_threads(num_threads):
        return [
            benchmark_matmul(
                n,
                CASES[case][0],
                device,
                float32_mode=CASES[case][1],
                warmup=warmup,
                trials=trials,
                min_trial_s=min_trial_s,
            )
            for case in cases
            for n in sizes
        ]


def copy_bandwidth(device: torch.device | str, numel: PositiveInt, *, trials: PositiveInt = 5) -> float:
    """Measured bytes/s of copying `numel` fp32 values to another buffer: a read and a write each (notebook 04).

    Timed by work_clock: on a CPU running one thread, the CPU time the copy took.
    """
    generator = torch.Generator(device=device).manual_seed(0)
    src = torch.rand(numel, generator=generator, device=device)
    dst = torch.empty_like(src)
    timing = time_fn(lambda: dst.copy_(src), device, warmup=2, trials=trials, clock=work_clock(device))
    return 2 * src.nbytes / timing.min_s  # the fastest trial: the bandwidth other processes left alone


def _si(value: float, unit: str) -> str:
    """A value with an SI prefix, e.g. 67.0 TFLOP/s."""
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M")):
        if value >= factor:
            return f"{value / factor:.1f} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def format_results(results: Sequence[MatmulResult]) -> str:
    """A table of results (size, dtype, time, achieved and peak FLOP/s, MFU), each peak's source below (notebook 04).

    A peak that is an estimate (a CPU's) says "est." and its MFU carries a "~" and is called a guess,
    so neither reads as a datasheet figure.
    """
    lines = [f"{'n':>6}  {'dtype':9}{'row':5}{'ms/matmul':>10}  {'achieved':>14}  {'peak':>20}  {'MFU':>6}"]
    sources: list[str] = []
    for r in results:
        if r.peak_source not in sources:
            sources.append(r.peak_source)
        mark = "*" * (sources.index(r.peak_source) + 1)
        estimate = " est." if r.peak_estimate else ""
        peak = "none" if r.peak_flops_per_s is None else _si(r.peak_flops_per_s, "FLOP/s") + estimate
        mfu_text = "-" if r.mfu is None else ("~" if r.peak_estimate else "") + f"{r.mfu:.3f}"
        lines.append(
            f"{r.n:>6}  {r.dtype:9}{r.precision:5}{r.seconds * 1e3:>10.3f}  "
            f"{_si(r.flops_per_s, 'FLOP/s'):>14}  {peak:>17}{mark:<3}  {mfu_text:>6}"
        )
    for i, source in enumerate(sources):  # wrapped: a projector at 150% shows about 90 characters
        mark = "*" * (i + 1)
        lines.append(textwrap.fill(f"{mark} {source}", width=88, subsequent_indent=" " * (len(mark) + 1)))
    if any(r.peak_estimate for r in results):  # a CPU's clock, and so its peak, is assumed
        lines.append("~ an MFU against an estimated peak is a guess: the estimate is no bound")
    return "\n".join(lines)
