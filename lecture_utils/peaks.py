"""The peak FLOP/s a measurement is held to: a datasheet row on a GPU, a labelled estimate on a CPU (notebook 04).

lecture_utils.hardware holds the datasheet table; this module picks the row a dtype runs in,
compares rows, and estimates a CPU, whose maker prints no such figure.
"""

from dataclasses import dataclass
from typing import Literal

import torch

from lecture_utils.checks import PositiveInt
from lecture_utils.cpu import clock_hz, flops_per_cycle, read_cpuinfo, read_max_khz
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
    """Estimated CPU peak = cores x clock x FLOP/cycle, from /proc/cpuinfo (notebook 04).

    There is no datasheet for "this laptop", so the result is labelled an estimate, and its source
    names every assumption. FLOP/cycle comes from the vector pipes the CPU family really executes
    (lecture_utils.cpu: AMD Zen 4 runs AVX-512 on 256-bit pipes, 32 fp32 FLOP/cycle); the clock is
    cpufreq's max clock, or the reported clock times an assumed boost; `threads` (default: torch's)
    count as cores up to the physical cores, since hyperthreads share one core's FMA pipes. Float32,
    float64, and bfloat16 on CPUs with AVX512_BF16 are estimated; anything else raises ValueError.
    """
    info = read_cpuinfo()
    per_cycle, pipes = flops_per_cycle(dtype, info)
    clock, clock_note = clock_hz(info, read_max_khz())
    cores = min(threads if threads is not None else torch.get_num_threads(), info.cores)
    core_word = "core" if cores == 1 else "cores"
    source = (
        f"estimate: {cores} {core_word} x {clock / 1e9:.2f} GHz x {per_cycle} FLOP/cycle ({pipes}; clock {clock_note})"
    )
    return Peak(cores * clock * per_cycle, source, estimate=True)


def peak_flops(device: torch.device | str, dtype: torch.dtype = torch.float32) -> Peak:
    """The dense peak FLOP/s bounding a matmul in `dtype` on `device`: a GPU datasheet, a CPU estimate (notebook 04)."""
    if device_type(device) == "cpu":
        return cpu_peak_estimate(dtype)
    accelerator = lookup_accelerator(torch.cuda.get_device_name(device))
    precision = matmul_precision(dtype)
    return Peak(accelerator.peak(precision), f"{accelerator.name} dense {precision}, {accelerator.source}", False)
