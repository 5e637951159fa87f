"""Accelerator datasheet figures, looked up from a torch device name, and a labelled CPU estimate.

All figures are per GPU, in FLOP/s, from NVIDIA's datasheets (H100 Tensor Core GPU datasheet,
A100 datasheet, H200 product brief, DGX/HGX B200 datasheet). The datasheets headline tensor-core
throughput *with 2:4 structured sparsity*; dense matmuls get half of it, so dense and sparse are
kept as separate fields and only dense is ever used as a peak.
"""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass, field
from pathlib import Path

import torch

T = 1e12  # one TFLOP/s

PRECISIONS = ("fp64", "fp64_tensor", "fp32", "tf32", "bf16", "fp16", "fp8")


@dataclass(frozen=True)
class Accelerator:
    """One accelerator's datasheet: dense and 2:4-sparse FLOP/s per precision, memory and bandwidth."""

    name: str
    dense: dict[str, float]
    sparse: dict[str, float] = field(default_factory=dict)
    memory_bytes: float = 0.0
    bandwidth_bytes_per_s: float = 0.0
    source: str = ""

    def peak(self, precision: str, *, sparse: bool = False) -> float:
        """Datasheet FLOP/s for a precision; sparse=True gives the 2:4-sparsity figure."""
        _check_precision(precision)
        table = self.sparse if sparse else self.dense
        if precision not in table:
            kind = "2:4-sparse" if sparse else "dense"
            raise ValueError(
                f"the {self.name} datasheet gives no {kind} {precision} figure; "
                f"it has {sorted(table) or 'none'}"
            )
        return table[precision]


_H100_SXM_COMPUTE = dict(
    dense={"fp64": 34 * T, "fp64_tensor": 67 * T, "fp32": 67 * T, "tf32": 494.7 * T,
           "bf16": 989.5 * T, "fp16": 989.5 * T, "fp8": 1979 * T},
    sparse={"tf32": 989 * T, "bf16": 1979 * T, "fp16": 1979 * T, "fp8": 3958 * T},
)

_A100_SXM_COMPUTE = dict(
    dense={"fp64": 9.7 * T, "fp64_tensor": 19.5 * T, "fp32": 19.5 * T, "tf32": 156 * T,
           "bf16": 312 * T, "fp16": 312 * T},
    sparse={"tf32": 312 * T, "bf16": 624 * T, "fp16": 624 * T},
)

ACCELERATORS: dict[str, Accelerator] = {
    "h100-sxm": Accelerator(
        "H100 SXM", **_H100_SXM_COMPUTE, memory_bytes=80e9, bandwidth_bytes_per_s=3.35e12,
        source="NVIDIA H100 Tensor Core GPU datasheet",
    ),
    "h100-pcie": Accelerator(
        "H100 PCIe",
        dense={"fp64": 26 * T, "fp64_tensor": 51 * T, "fp32": 51 * T, "tf32": 378 * T,
               "bf16": 756.5 * T, "fp16": 756.5 * T, "fp8": 1513 * T},
        sparse={"tf32": 756 * T, "bf16": 1513 * T, "fp16": 1513 * T, "fp8": 3026 * T},
        memory_bytes=80e9, bandwidth_bytes_per_s=2.0e12,
        source="NVIDIA H100 Tensor Core GPU datasheet",
    ),
    "h200-sxm": Accelerator(
        "H200 SXM", **_H100_SXM_COMPUTE, memory_bytes=141e9, bandwidth_bytes_per_s=4.8e12,
        source="NVIDIA H200 datasheet (compute as H100 SXM)",
    ),
    "a100-sxm-40gb": Accelerator(
        "A100 SXM 40GB", **_A100_SXM_COMPUTE, memory_bytes=40e9, bandwidth_bytes_per_s=1.555e12,
        source="NVIDIA A100 Tensor Core GPU datasheet",
    ),
    "a100-sxm-80gb": Accelerator(
        "A100 SXM 80GB", **_A100_SXM_COMPUTE, memory_bytes=80e9, bandwidth_bytes_per_s=2.039e12,
        source="NVIDIA A100 Tensor Core GPU datasheet",
    ),
    "b200": Accelerator(
        "B200",
        dense={"bf16": 2250 * T, "fp16": 2250 * T, "fp8": 4500 * T},
        sparse={"bf16": 4500 * T, "fp16": 4500 * T, "fp8": 9000 * T},
        memory_bytes=180e9, bandwidth_bytes_per_s=8e12,
        source="NVIDIA DGX B200 datasheet, per GPU (memory about 180 GB)",
    ),
}

# torch.cuda.get_device_name() spellings, e.g. "NVIDIA H100 80GB HBM3" (SXM), "NVIDIA H100 PCIe",
# "NVIDIA A100-SXM4-80GB", "NVIDIA H200". Variants with other clocks or memory (NVL, A100 PCIe)
# have other datasheets, so they must not match.
_NAME_RULES: list[tuple[str, str]] = [
    (r"H100.*(PCIE)", "h100-pcie"),
    (r"H100(?!.*(NVL|PCIE)).*(SXM|HBM3)", "h100-sxm"),
    (r"(?<!G)H200(?!.*NVL)", "h200-sxm"),  # not GH200 (Grace Hopper: other memory)
    (r"A100.*SXM.*40GB", "a100-sxm-40gb"),
    (r"A100.*SXM.*80GB", "a100-sxm-80gb"),
    (r"(?<!G)B200", "b200"),  # not GB200 (Grace Blackwell: other clocks)
]


class UnknownAcceleratorError(ValueError):
    """The device is not in the datasheet table, so no honest peak can be given."""


def lookup_accelerator(name: str) -> Accelerator:
    """The datasheet entry for a table key ('h100-sxm') or a torch.cuda.get_device_name() string."""
    if not isinstance(name, str):
        raise TypeError(f"expected a device name string, got {type(name).__name__}")
    key = name.strip().lower()
    if key in ACCELERATORS:
        return ACCELERATORS[key]
    upper = name.upper()
    for pattern, key in _NAME_RULES:
        if re.search(pattern, upper):
            return ACCELERATORS[key]
    known = ", ".join(a.name for a in ACCELERATORS.values())
    raise UnknownAcceleratorError(
        f"no datasheet figures for {name!r}; known accelerators: {known}. "
        "Add its entry to lecture_utils.hardware.ACCELERATORS, or report achieved FLOP/s only."
    )


def _check_precision(precision: str) -> None:
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; expected one of {PRECISIONS}")


def matmul_precision(dtype: torch.dtype, float32_matmul_precision: str | None = None) -> str:
    """Which datasheet row bounds a matmul in this dtype: fp32 'highest' is fp32, 'high' is TF32.

    PyTorch's default for fp32 matmuls is 'highest' (true fp32). On CUDA both 'high' and 'medium'
    let cuBLAS use TF32 tensor cores (torch.set_float32_matmul_precision's documentation); the
    datasheet rows this returns are GPU rows.
    """
    if dtype == torch.float32:
        mode = float32_matmul_precision or torch.get_float32_matmul_precision()
        by_mode = {"highest": "fp32", "high": "tf32", "medium": "tf32"}
        if mode not in by_mode:
            raise ValueError(f"unknown float32 matmul precision {mode!r}; expected one of {list(by_mode)}")
        return by_mode[mode]
    by_dtype = {
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
    """A peak FLOP/s with where it came from; estimate=True means it was not read off a datasheet."""

    flops_per_s: float
    source: str
    estimate: bool


def cpu_peak_estimate(dtype: torch.dtype = torch.float32, *, threads: int | None = None) -> Peak:
    """Estimated CPU peak = cores x clock x FLOPs/cycle, from the ISA's vector width and 2 FMA units.

    There is no datasheet for "this laptop", so the result is labelled an estimate. Only fp32 and
    fp64 are estimated: bf16/fp16 throughput on CPUs depends on extensions (AMX, AVX512-BF16) that
    this simple model does not cover. It errs high: it counts torch's threads (hyperthreads share a
    core's FMA units), the base clock, and full-width FMA units (some cores split 512-bit work in two).
    """
    lanes_per_512_bits = {torch.float32: 16, torch.float64: 8}
    if dtype not in lanes_per_512_bits:
        raise ValueError(f"no CPU peak estimate for {dtype}; only float32 and float64 are estimated")
    threads = threads if threads is not None else torch.get_num_threads()
    if threads <= 0:
        raise ValueError(f"threads must be positive, got {threads}")
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
    formula = (f"estimate: {threads} threads x {mhz / 1000:.2f} GHz x {flops_per_cycle} FLOP/cycle "
               f"({isa}, {lanes} {str(dtype).removeprefix('torch.')} lanes x 2 FMA units x 2)")
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
    """The dense peak FLOP/s that bounds a matmul in `dtype` on `device` (datasheet on a GPU, estimate on a CPU)."""
    device = torch.device(device)
    if device.type == "cpu":
        return cpu_peak_estimate(dtype)
    if device.type == "cuda":
        accelerator = lookup_accelerator(torch.cuda.get_device_name(device))
        precision = matmul_precision(dtype)
        return Peak(accelerator.peak(precision), f"{accelerator.name} dense {precision}, {accelerator.source}", False)
    raise ValueError(f"no peak for device type {device.type!r}; expected 'cpu' or 'cuda'")
