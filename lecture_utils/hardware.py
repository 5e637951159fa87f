"""Accelerator datasheet figures, looked up from a torch device name, and a labelled CPU estimate.

All figures are per GPU, in FLOP/s and bytes, each row naming the NVIDIA datasheet or whitepaper
table it comes from; a figure a source does not print is left out, never guessed. Many datasheets
headline tensor-core throughput *with 2:4 structured sparsity*; dense matmuls get half of it, so
dense and sparse are separate fields and only dense is ever used as a peak.

GeForce whitepapers give two tensor rates, "with FP16 accumulate" and "with FP32 accumulate".
PyTorch's bf16/fp16 matmuls accumulate in fp32, so the GeForce bf16/fp16 (and fp8) rows hold the
FP32-accumulate figures, which GeForce cards run at half the FP16-accumulate rate. Data-center
cards print a single rate. `expected_speedup` turns the table into what a notebook may assert.
"""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass, field
from pathlib import Path

import torch

T = 1e12  # one TFLOP/s

# PCIe 5.0 Base Specification: 32 GT/s per lane, 16 lanes, one bit per transfer, per direction.
# The 128b/130b line code leaves about 63 GB/s of it for data; the H100 datasheet quotes
# PCIe Gen5 as 128 GB/s, both directions together.
PCIE_GEN5_X16_BYTES_PER_S = 32e9 * 16 / 8
PCIE_SOURCE = "PCIe 5.0 spec: 32 GT/s x 16 lanes, per direction"

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


def _tensor(sparse_tflops: dict[str, float], **dense_tflops: float) -> dict[str, dict[str, float]]:
    """dense/sparse fields from a datasheet that prints tensor rates with sparsity only (dense = half).

    `dense_tflops` are the figures it prints without sparsity (FP32, FP64 on CUDA cores).
    """
    dense = {k: v * T for k, v in dense_tflops.items()} | {k: v * T / 2 for k, v in sparse_tflops.items()}
    return dict(dense=dense, sparse={k: v * T for k, v in sparse_tflops.items()})


def _rates(dense: dict[str, float], sparse: dict[str, float] | None = None) -> dict[str, dict[str, float]]:
    """dense/sparse fields, in TFLOP/s, from a source that prints both (``dense | sparse*``)."""
    return dict(dense={k: v * T for k, v in dense.items()}, sparse={k: v * T for k, v in (sparse or {}).items()})


_H100_SXM_COMPUTE = _rates(
    {"fp64": 34, "fp64_tensor": 67, "fp32": 67, "tf32": 494.7, "bf16": 989.5, "fp16": 989.5, "fp8": 1979},
    {"tf32": 989, "bf16": 1979, "fp16": 1979, "fp8": 3958},
)
_A100_COMPUTE = _rates(  # the same in every A100 column: SXM and PCIe, 40 GB and 80 GB
    {"fp64": 9.7, "fp64_tensor": 19.5, "fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312},
    {"tf32": 312, "bf16": 624, "fp16": 624},
)
# GH200 datasheet, GH200 column: it prints dense and sparse ("989* | 494"); both memory variants
# have the same GPU compute.
_GH200_COMPUTE = _rates(
    {"fp64": 34, "fp64_tensor": 67, "fp32": 67, "tf32": 494, "bf16": 990, "fp16": 990, "fp8": 1979},
    {"tf32": 989, "bf16": 1979, "fp16": 1979, "fp8": 3958},
)
# Volta has tensor cores for FP16 (with FP32 accumulate) only: no bf16, TF32 or 2:4 sparsity.
_V100 = {"sxm2": ("V100 SXM2", {"fp64": 7.8, "fp32": 15.7, "fp16": 125}),
         "pcie": ("V100 PCIe", {"fp64": 7, "fp32": 14, "fp16": 112})}
_V100_SOURCE = "NVIDIA Tesla V100 datasheet (V100 PCIe and V100 SXM2 columns; 900 GB/s for both memory sizes)"
_A100_SOURCE = "NVIDIA A100 Tensor Core GPU datasheet"

ACCELERATORS: dict[str, Accelerator] = {
    "h100-sxm": Accelerator(
        "H100 SXM", **_H100_SXM_COMPUTE, memory_bytes=80e9, bandwidth_bytes_per_s=3.35e12,
        source="NVIDIA H100 Tensor Core GPU datasheet",
    ),
    "h100-pcie": Accelerator(
        "H100 PCIe",
        **_rates({"fp64": 26, "fp64_tensor": 51, "fp32": 51, "tf32": 378, "bf16": 756.5, "fp16": 756.5, "fp8": 1513},
                 {"tf32": 756, "bf16": 1513, "fp16": 1513, "fp8": 3026}),
        memory_bytes=80e9, bandwidth_bytes_per_s=2.0e12, source="NVIDIA H100 Tensor Core GPU datasheet",
    ),
    # Current datasheet, per GPU (94 GB); older ones listed a bridged pair (188 GB) as one card.
    "h100-nvl": Accelerator(
        "H100 NVL", **_tensor({"tf32": 835, "bf16": 1671, "fp16": 1671, "fp8": 3341}, fp32=60),
        memory_bytes=94e9, bandwidth_bytes_per_s=3.9e12,
        source="NVIDIA H100 Tensor Core GPU datasheet, H100 NVL column (tensor rates printed with sparsity)",
    ),
    "h200-sxm": Accelerator(
        "H200 SXM", **_H100_SXM_COMPUTE, memory_bytes=141e9, bandwidth_bytes_per_s=4.8e12,
        source="NVIDIA H200 datasheet (compute as H100 SXM)",
    ),
    "gh200-96gb": Accelerator(
        "GH200 96GB", **_GH200_COMPUTE, memory_bytes=96e9, bandwidth_bytes_per_s=4.0e12,
        source="NVIDIA GH200 Grace Hopper Superchip datasheet, GH200 column (96 GB HBM3)",
    ),
    "gh200-144gb": Accelerator(
        "GH200 144GB", **_GH200_COMPUTE, memory_bytes=144e9, bandwidth_bytes_per_s=4.9e12,
        source="NVIDIA GH200 Grace Hopper Superchip datasheet, GH200 column (144 GB HBM3e)",
    ),
    "a100-sxm-40gb": Accelerator(
        "A100 SXM 40GB", **_A100_COMPUTE, memory_bytes=40e9, bandwidth_bytes_per_s=1.555e12, source=_A100_SOURCE,
    ),
    "a100-sxm-80gb": Accelerator(
        "A100 SXM 80GB", **_A100_COMPUTE, memory_bytes=80e9, bandwidth_bytes_per_s=2.039e12, source=_A100_SOURCE,
    ),
    "a100-pcie-40gb": Accelerator(
        "A100 PCIe 40GB", **_A100_COMPUTE, memory_bytes=40e9, bandwidth_bytes_per_s=1.555e12,
        source=f"{_A100_SOURCE} (40 GB edition, A100 for PCIe column)",
    ),
    "a100-pcie-80gb": Accelerator(
        "A100 PCIe 80GB", **_A100_COMPUTE, memory_bytes=80e9, bandwidth_bytes_per_s=1.935e12,
        source=f"{_A100_SOURCE} (A100 80GB PCIe column)",
    ),
    "b200": Accelerator(
        "B200",
        **_rates({"bf16": 2250, "fp16": 2250, "fp8": 4500}, {"bf16": 4500, "fp16": 4500, "fp8": 9000}),
        memory_bytes=180e9, bandwidth_bytes_per_s=8e12,
        source="NVIDIA DGX B200 datasheet, per GPU (memory about 180 GB)",
    ),
    "l40s": Accelerator(  # prints "dense | sparse*"; BF16/FP16 "362.05 | 733*" is not exactly half
        "L40S",
        **_rates({"fp32": 91.6, "tf32": 183, "bf16": 362.05, "fp16": 362.05, "fp8": 733},
                 {"tf32": 366, "bf16": 733, "fp16": 733, "fp8": 1466}),
        memory_bytes=48e9, bandwidth_bytes_per_s=864e9, source="NVIDIA L40S datasheet",
    ),
    "l4": Accelerator(
        "L4", **_tensor({"tf32": 120, "bf16": 242, "fp16": 242, "fp8": 485}, fp32=30.3),
        memory_bytes=24e9, bandwidth_bytes_per_s=300e9,
        source="NVIDIA L4 Tensor Core GPU datasheet (tensor rates printed with sparsity)",
    ),
    "a10": Accelerator(
        "A10",
        **_rates({"fp32": 31.2, "tf32": 62.5, "bf16": 125, "fp16": 125}, {"tf32": 125, "bf16": 250, "fp16": 250}),
        memory_bytes=24e9, bandwidth_bytes_per_s=600e9, source="NVIDIA A10 Tensor Core GPU datasheet",
    ),
    # Turing: FP16 tensor cores only ("mixed precision FP16/FP32"); no bf16, TF32 or sparsity.
    "t4": Accelerator(
        "T4", **_rates({"fp32": 8.1, "fp16": 65}), memory_bytes=16e9, bandwidth_bytes_per_s=300e9,
        source="NVIDIA T4 Tensor Core GPU datasheet (300 GB/s; the product page says 320+ GB/s)",
    ),
    **{
        f"v100-{form}-{gb}gb": Accelerator(
            f"{name} {gb}GB", **_rates(rates), memory_bytes=gb * 1e9, bandwidth_bytes_per_s=900e9,
            source=_V100_SOURCE,
        )
        for form, (name, rates) in _V100.items()
        for gb in (16, 32)
    },
    # GeForce: bf16/fp16/fp8 are the "with FP32 accumulate" rows (see the module docstring).
    "rtx-3090": Accelerator(
        "RTX 3090",
        **_rates({"fp32": 35.6, "tf32": 35.6, "bf16": 71, "fp16": 71}, {"tf32": 71, "bf16": 142, "fp16": 142}),
        memory_bytes=24e9, bandwidth_bytes_per_s=936e9,
        source="NVIDIA Ampere GA102 GPU Architecture whitepaper v2, Appendix A, Table 9 (GeForce RTX 3090)",
    ),
    "rtx-4090": Accelerator(
        "RTX 4090",
        **_rates({"fp32": 82.6, "tf32": 82.6, "bf16": 165.2, "fp16": 165.2, "fp8": 330.3},
                 {"tf32": 165.2, "bf16": 330.4, "fp16": 330.4, "fp8": 660.6}),
        memory_bytes=24e9, bandwidth_bytes_per_s=1008e9,
        source="NVIDIA Ada GPU Architecture whitepaper v2.1, Appendix A, Table 2 (GeForce RTX 4090)",
    ),
}

# torch.cuda.get_device_name() spellings, e.g. "NVIDIA H100 80GB HBM3" (SXM), "NVIDIA A100-PCIE-40GB",
# "Tesla V100-SXM2-16GB", "NVIDIA GeForce RTX 3090". Look-alikes with other clocks, memory or
# silicon must not match: A10G (AWS), A40, L40 (not L40S), V100S, RTX 3090 Ti, RTX 4090 D and
# laptop parts, H200 NVL, GB200. Each name matches at most one rule.
_NAME_RULES: list[tuple[str, str]] = [
    (r"H100.*(PCIE)", "h100-pcie"),
    (r"H100(?!.*(NVL|PCIE)).*(SXM|HBM3)", "h100-sxm"),
    (r"\bH100 NVL\b", "h100-nvl"),
    (r"(?<!G)H200(?!.*NVL)", "h200-sxm"),  # not GH200 (Grace Hopper: other memory)
    # "480GB" names the Grace CPU's LPDDR5X, not the GPU's memory; boards with that name carry the
    # 96 GB HBM3 GPU (they report about 95 GiB of device memory). Other GH200 names: use the key.
    (r"\bGH200 480GB\b", "gh200-96gb"),
    (r"\bGH200 144G\b", "gh200-144gb"),
    (r"A100.*SXM.*40GB", "a100-sxm-40gb"),
    (r"A100.*SXM.*80GB", "a100-sxm-80gb"),
    (r"A100\b.*\bPCIE\b.*\b40GB\b", "a100-pcie-40gb"),
    (r"A100\b(.*\bPCIE\b.*\b80GB\b|.*\b80GB\b.*\bPCIE\b)", "a100-pcie-80gb"),
    (r"(?<!G)B200", "b200"),  # not GB200 (Grace Blackwell: other clocks)
    (r"\bL40S\b", "l40s"),
    (r"\bL4\b", "l4"),
    (r"\bA10\b", "a10"),
    (r"\bT4\b", "t4"),
    *[(rf"\bV100-{form.upper()}-{gb}GB\b", f"v100-{form}-{gb}gb") for form in _V100 for gb in (16, 32)],
    (r"\bRTX 3090\b(?!.*\b(TI|LAPTOP)\b)", "rtx-3090"),
    (r"\bRTX 4090\b(?!.*\b(D|LAPTOP)\b)", "rtx-4090"),
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
    raise UnknownAcceleratorError(
        f"no datasheet figures for {name!r}; table keys: {', '.join(ACCELERATORS)}. Look-alikes "
        "(A10G, A40, L40, V100S, RTX 3090 Ti, GB200) have other clocks or memory and are left out. "
        "Pass a key if you know the card, add a sourced row, or report achieved FLOP/s only."
    )


def expected_speedup(accelerator: Accelerator | str, fast: str, slow: str) -> float:
    """Dense datasheet peak ratio peak(fast) / peak(slow): the most a large matmul gains by switching.

    `accelerator` is an Accelerator, a table key or a torch.cuda.get_device_name() string;
    `fast` and `slow` are PRECISIONS rows (matmul_precision(dtype) names the row of a dtype), e.g.
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
    thread_word = "thread" if threads == 1 else "threads"
    formula = (f"estimate: {threads} {thread_word} x {mhz / 1000:.2f} GHz x {flops_per_cycle} FLOP/cycle "
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
