"""The peak FLOP/s a measurement is held to: a datasheet row on a GPU, a labelled estimate on a CPU (notebook 04).

lecture_utils.hardware holds the datasheet table; this module picks the row a dtype runs in,
compares rows, and estimates a CPU, whose maker prints no such figure.
"""

import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch

from lecture_utils.checks import PositiveInt
from lecture_utils.device import device_type
from lecture_utils.hardware import Accelerator, Precision, lookup_accelerator

# torch.set_float32_matmul_precision's settings: "highest" keeps fp32 matmuls fp32; "high" and "medium" allow TF32.
Float32Mode = Literal["highest", "high", "medium"]


def expected_speedup(accelerator: Accelerator | str, fast: Precision, slow: Precision) -> float:
    """Dense datasheet peak ratio peak(fast) / peak(slow): the most a large matmul gains by switching (notebook 08).

    `accelerator` is an Accelerator, a table key or a torch.cuda.get_device_name() string;
    `fast` and `slow` are precision keys (matmul_precision(dtype) names the row of a dtype), e.g.
    expected_speedup("NVIDIA GeForce RTX 3090", "bf16", "fp32") is 71 / 35.6, about 2.
    Achieved throughput falls short of peak by a different factor in each precision, so a notebook
    asserts a measured ratio (best of several trials, large matmuls) against a fraction of this,
    `measured >= fraction * expected`, never equality and never an upper bound; where the ratio is
    about 1 (TF32 vs fp32 on GeForce) it asserts no speedup at all. Raises UnknownAcceleratorError
    for a card not in the table and ValueError when its datasheet lacks either row (no bf16 on T4).
    """
    acc = accelerator if isinstance(accelerator, Accelerator) else lookup_accelerator(accelerator)
    try:
        return acc.peak(fast) / acc.peak(slow)
    except ValueError as error:
        raise ValueError(f"no expected {fast}/{slow} speedup on the {acc.name}: {error}") from error


def matmul_precision(dtype: torch.dtype, float32_mode: Float32Mode | None = None) -> Precision:
    """Which datasheet row bounds a matmul in this dtype: fp32 'highest' is fp32, 'high' is TF32 (notebook 04).

    PyTorch's default for fp32 matmuls is 'highest' (true fp32). On CUDA both 'high' and 'medium'
    let cuBLAS use TF32 tensor cores (torch.set_float32_matmul_precision's documentation); the
    datasheet rows this returns are GPU rows.
    """
    if dtype == torch.float32:
        mode = float32_mode or torch.get_float32_matmul_precision()
        return "fp32" if mode == "highest" else "tf32"
    by_dtype: dict[torch.dtype, Precision] = {
        torch.float64: "fp64_tensor",
        torch.bfloat16: "bf16",
        torch.float16: "fp16",
        torch.float8_e4m3fn: "fp8",
        torch.float8_e5m2: "fp8",
    }
    if dtype not in by_dtype:
        raise ValueError(f"no peak is defined for dtype {dtype}; expected one of {[torch.float32, *by_dtype]}")
    return by_dtype[dtype]


@dataclass(frozen=True)
class Peak:
    """A peak FLOP/s with where it came from; estimate=True means it was not read off a datasheet (notebook 04)."""

    flops_per_s: float
    source: str
    estimate: bool


def cpu_peak_estimate(dtype: torch.dtype = torch.float32, *, threads: PositiveInt | None = None) -> Peak:
    """Estimated CPU peak = cores x clock x FLOPs/cycle, from the vector width and 2 FMA units (notebook 04).

    There is no datasheet for "this laptop", so the result is labelled an estimate. Only fp32 and
    fp64 are estimated: bf16/fp16 throughput on CPUs depends on extensions (AMX, AVX512-BF16) that
    this simple model does not cover. Each assumption moves it one way. Counting torch's threads as
    cores errs high where they are hyperthreads (two share one core's FMA units). Assuming two
    full-width FMA units errs high on cores with one, or that split 512-bit work into two halves.
    The clock read from /proc/cpuinfo is usually near the base clock, and cores turbo above it, so
    that errs low (though heavy AVX-512 work can pull all-core clocks below base).
    """
    lanes_per_512_bits = {torch.float32: 16, torch.float64: 8}
    if dtype not in lanes_per_512_bits:
        raise ValueError(f"no CPU peak estimate for {dtype}; only float32 and float64 are estimated")
    threads = threads if threads is not None else torch.get_num_threads()
    flags, mhz = _read_cpuinfo()
    if "avx512f" in flags:
        bits, isa = 512, "AVX-512"
    elif "avx2" in flags and "fma" in flags:
        bits, isa = 256, "AVX2+FMA"
    elif "asimd" in flags or platform.machine().lower() in ("arm64", "aarch64"):
        bits, isa = 128, "NEON"
    else:
        raise ValueError("cannot tell this CPU's vector width; report achieved FLOP/s only")
    if mhz is None:
        raise ValueError("cannot read this CPU's clock; report achieved FLOP/s only")
    lanes = lanes_per_512_bits[dtype] * bits // 512
    flops_per_cycle = lanes * 2 * 2  # an FMA is 2 FLOPs; assume 2 FMA units per core
    value = threads * mhz * 1e6 * flops_per_cycle
    thread_word = "thread" if threads == 1 else "threads"
    formula = (
        f"estimate: {threads} {thread_word} x {mhz / 1000:.2f} GHz x {flops_per_cycle} FLOP/cycle "
        f"({isa}, {lanes} {str(dtype).removeprefix('torch.')} lanes x 2 FMA units x 2)"
    )
    return Peak(value, formula, estimate=True)


def _read_cpuinfo() -> tuple[set[str], float | None]:
    """The CPU's feature flags and clock in MHz from /proc/cpuinfo (empty and None where there is none)."""
    path = Path("/proc/cpuinfo")
    if not path.exists():
        return set(), None
    flags: set[str] = set()
    mhz = None
    for line in path.read_text().splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("flags", "Features") and not flags:
            flags = set(value.split())
        elif key == "cpu MHz" and mhz is None:
            mhz = float(value)
    return flags, mhz


def peak_flops(device: torch.device | str, dtype: torch.dtype = torch.float32) -> Peak:
    """The dense peak FLOP/s bounding a matmul in `dtype` on `device`: a GPU datasheet, a CPU estimate (notebook 04)."""
    if device_type(device) == "cpu":
        return cpu_peak_estimate(dtype)
    accelerator = lookup_accelerator(torch.cuda.get_device_name(device))
    precision = matmul_precision(dtype)
    return Peak(accelerator.peak(precision), f"{accelerator.name} dense {precision}, {accelerator.source}", False)
