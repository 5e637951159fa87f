"""Accelerator datasheet figures, and which row a torch device name is (notebooks 00, 01, 04, 08).

All figures are per GPU, in FLOP/s and bytes, each row naming the NVIDIA datasheet or whitepaper
table it comes from; a figure a source does not print is left out, never guessed. Many datasheets
headline tensor-core throughput *with 2:4 structured sparsity*; dense matmuls get half of it, so
dense and sparse are separate fields and only dense is ever used as a peak.

GeForce whitepapers give two tensor rates, "with FP16 accumulate" and "with FP32 accumulate".
PyTorch's bf16/fp16 matmuls accumulate in fp32, so the GeForce bf16/fp16 (and fp8) rows hold the
FP32-accumulate figures, which GeForce cards run at half the FP16-accumulate rate. Data-center
cards print a single rate. lecture_utils.peaks turns the table into the peak a measurement is held to.
"""

import re
from dataclasses import dataclass, field
from typing import Literal, get_args

TFLOPS = 1e12  # one TFLOP/s, the unit datasheets print

# PCIe 5.0 Base Specification: 32 GT/s per lane, 16 lanes, one bit per transfer, per direction.
# The 128b/130b line code leaves about 63 GB/s of it for data; the H100 datasheet quotes
# PCIe Gen5 as 128 GB/s, both directions together.
PCIE_GEN5_X16_BYTES_PER_S = 32e9 * 16 / 8
PCIE_SOURCE = "PCIe 5.0 spec: 32 GT/s x 16 lanes, per direction"

# The datasheet precision keys: a datasheet row of FLOP/s (a name "precision" in the code means one of these).
Precision = Literal["fp64", "fp64_tensor", "fp32", "tf32", "bf16", "fp16", "fp8"]
PRECISIONS: tuple[Precision, ...] = get_args(Precision)


@dataclass(frozen=True)
class Accelerator:
    """One accelerator's datasheet: dense and 2:4-sparse FLOP/s per precision, memory, bandwidth (notebook 04)."""

    name: str
    dense: dict[Precision, float]
    sparse: dict[Precision, float] = field(default_factory=dict)
    memory_bytes: float = 0.0
    bandwidth_bytes_per_s: float = 0.0
    source: str = ""
    # GeForce: the whitepaper's figures are at the spec boost clock, and GPU Boost runs a cool card
    # above it, so a measurement may beat the row. Data-centre rows are at the maximum boost clock
    # for their kind of math (lecture_utils.measured_checks.datasheet_peak_check).
    beatable: bool = False

    def peak(self, precision: Precision, *, sparse: bool = False) -> float:
        """Datasheet FLOP/s for a precision; sparse=True gives the 2:4-sparsity figure."""
        table = self.sparse if sparse else self.dense
        if precision not in table:
            kind, listed = "2:4-sparse" if sparse else "dense", ", ".join(sorted(table)) or "none"
            raise ValueError(f"the {self.name} datasheet gives no {kind} {precision} figure; it lists {listed}")
        return table[precision]


def _card(
    name: str,
    memory_gb: float,
    bandwidth_gb_s: float,
    source: str,
    dense: dict,
    sparse: dict,
    *,
    beatable: bool = False,
) -> Accelerator:
    """A table row from figures as sources print them: TFLOP/s, GB and GB/s."""
    return Accelerator(
        name,
        dense={k: v * TFLOPS for k, v in dense.items()},
        sparse={k: v * TFLOPS for k, v in sparse.items()},
        memory_bytes=memory_gb * 1e9,
        bandwidth_bytes_per_s=bandwidth_gb_s * 1e9,
        source=source,
        beatable=beatable,
    )


def _sparse_printed(sparse: dict, **cuda_cores: float) -> tuple[dict, dict]:
    """(dense, sparse) from a datasheet that prints tensor rates with sparsity only: dense is half.

    `cuda_cores` are the figures it prints without sparsity (FP32, FP64 on CUDA cores).
    """
    return cuda_cores | {k: v / 2 for k, v in sparse.items()}, sparse


# (dense, sparse) in TFLOP/s, shared by several rows. The H100 datasheet prints TF32 with sparsity
# only (989); its dense 494.7 is the H100 whitepaper's figure, whose sparse one is 989.4.
_H100_SXM = (
    {"fp64": 34, "fp64_tensor": 67, "fp32": 67, "tf32": 494.7, "bf16": 989.5, "fp16": 989.5, "fp8": 1979},
    {"tf32": 989, "bf16": 1979, "fp16": 1979, "fp8": 3958},
)
_H100_PCIE = (
    {"fp64": 26, "fp64_tensor": 51, "fp32": 51, "tf32": 378, "bf16": 756.5, "fp16": 756.5, "fp8": 1513},
    {"tf32": 756, "bf16": 1513, "fp16": 1513, "fp8": 3026},
)
_A100 = (  # the same in every A100 column: SXM and PCIe, 40 GB and 80 GB
    {"fp64": 9.7, "fp64_tensor": 19.5, "fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312},
    {"tf32": 312, "bf16": 624, "fp16": 624},
)
# GH200 datasheet, GH200 column: it prints dense and sparse ("989* | 494"); both memory variants
# have the same GPU compute.
_GH200 = (
    {"fp64": 34, "fp64_tensor": 67, "fp32": 67, "tf32": 494, "bf16": 990, "fp16": 990, "fp8": 1979},
    {"tf32": 989, "bf16": 1979, "fp16": 1979, "fp8": 3958},
)
# L40S prints "dense | sparse*"; its BF16/FP16 "362.05 | 733*" is not exactly half.
_L40S = (
    {"fp32": 91.6, "tf32": 183, "bf16": 362.05, "fp16": 362.05, "fp8": 733},
    {"tf32": 366, "bf16": 733, "fp16": 733, "fp8": 1466},
)
_A10 = {"fp32": 31.2, "tf32": 62.5, "bf16": 125, "fp16": 125}, {"tf32": 125, "bf16": 250, "fp16": 250}
_RTX_3090 = {"fp32": 35.6, "tf32": 35.6, "bf16": 71, "fp16": 71}, {"tf32": 71, "bf16": 142, "fp16": 142}
_RTX_4090 = (
    {"fp32": 82.6, "tf32": 82.6, "bf16": 165.2, "fp16": 165.2, "fp8": 330.3},
    {"tf32": 165.2, "bf16": 330.4, "fp16": 330.4, "fp8": 660.6},
)
# Volta has tensor cores for FP16 (with FP32 accumulate) only, and Turing likewise ("mixed
# precision FP16/FP32"): no bf16, TF32 or 2:4 sparsity.
_V100_SXM2 = {"fp64": 7.8, "fp32": 15.7, "fp16": 125}, {}
_V100_PCIE = {"fp64": 7, "fp32": 14, "fp16": 112}, {}

_H100_SHEET = "NVIDIA H100 Tensor Core GPU datasheet"
_A100_SHEET = "NVIDIA A100 Tensor Core GPU datasheet"
_GH200_SHEET = "NVIDIA GH200 Grace Hopper Superchip datasheet, GH200 column"
_V100 = "NVIDIA Tesla V100 datasheet (V100 PCIe and V100 SXM2 columns; 900 GB/s for both memory sizes)"
_SPARSE_ONLY = "tensor rates printed with sparsity"
_AMPERE = "NVIDIA Ampere GA102 GPU Architecture whitepaper v2, Appendix A, Table 9"
_ADA = "NVIDIA Ada GPU Architecture whitepaper v2.1, Appendix A, Table 2"
_H100_NVL = _sparse_printed({"tf32": 835, "bf16": 1671, "fp16": 1671, "fp8": 3341}, fp32=60)
_L4 = _sparse_printed({"tf32": 120, "bf16": 242, "fp16": 242, "fp8": 485}, fp32=30.3)
# NVIDIA's HGX B200 table, one Blackwell GPU: FP8 9, FP16/BF16 4.5, TF32 2.2 PFLOPS, all printed
# "with sparsity" (dense: half), FP32 75 and FP64/FP64 Tensor Core 37 TFLOPS, 180 GB HBM3e at
# 7.7 TB/s. The 2026 lecture's code uses the same 75e12 fp32 and 4.5e15 / 2 bf16 for a B200.
_B200_SOURCE = "NVIDIA HGX B200 datasheet, one GPU (tensor rates printed with sparsity)"
_B200 = _sparse_printed({"tf32": 2200, "bf16": 4500, "fp16": 4500, "fp8": 9000}, fp32=75, fp64=37, fp64_tensor=37)
_T4 = {"fp32": 8.1, "fp16": 65}, {}

ACCELERATORS: dict[str, Accelerator] = {
    "h100-sxm": _card("H100 SXM", 80, 3350, _H100_SHEET, *_H100_SXM),
    "h100-pcie": _card("H100 PCIe", 80, 2000, _H100_SHEET, *_H100_PCIE),
    # Current datasheet, per GPU (94 GB); older ones listed a bridged pair (188 GB) as one card.
    "h100-nvl": _card("H100 NVL", 94, 3900, f"{_H100_SHEET}, H100 NVL column ({_SPARSE_ONLY})", *_H100_NVL),
    "h200-sxm": _card("H200 SXM", 141, 4800, "NVIDIA H200 datasheet (compute as H100 SXM)", *_H100_SXM),
    "gh200-96gb": _card("GH200 96GB", 96, 4000, f"{_GH200_SHEET} (96 GB HBM3)", *_GH200),
    "gh200-144gb": _card("GH200 144GB", 144, 4900, f"{_GH200_SHEET} (144 GB HBM3e)", *_GH200),
    "a100-sxm-40gb": _card("A100 SXM 40GB", 40, 1555, _A100_SHEET, *_A100),
    "a100-sxm-80gb": _card("A100 SXM 80GB", 80, 2039, _A100_SHEET, *_A100),
    "a100-pcie-40gb": _card("A100 PCIe 40GB", 40, 1555, f"{_A100_SHEET} (40 GB edition, A100 for PCIe column)", *_A100),
    "a100-pcie-80gb": _card("A100 PCIe 80GB", 80, 1935, f"{_A100_SHEET} (A100 80GB PCIe column)", *_A100),
    "b200": _card("B200", 180, 7700, _B200_SOURCE, *_B200),
    "l40s": _card("L40S", 48, 864, "NVIDIA L40S datasheet", *_L40S),
    "l4": _card("L4", 24, 300, f"NVIDIA L4 Tensor Core GPU datasheet ({_SPARSE_ONLY})", *_L4),
    "a10": _card("A10", 24, 600, "NVIDIA A10 Tensor Core GPU datasheet", *_A10),
    "t4": _card("T4", 16, 300, "NVIDIA T4 Tensor Core GPU datasheet (300 GB/s; the product page says 320+ GB/s)", *_T4),
    **{
        f"v100-{form.lower()}-{gb}gb": _card(f"V100 {form} {gb}GB", gb, 900, _V100, *rates)
        for form, rates in (("SXM2", _V100_SXM2), ("PCIe", _V100_PCIE))
        for gb in (16, 32)
    },
    # GeForce: bf16/fp16/fp8 are the "with FP32 accumulate" rows (see the module docstring).
    "rtx-3090": _card("RTX 3090", 24, 936, f"{_AMPERE} (GeForce RTX 3090)", *_RTX_3090, beatable=True),
    "rtx-4090": _card("RTX 4090", 24, 1008, f"{_ADA} (GeForce RTX 4090)", *_RTX_4090, beatable=True),
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
    *[
        (rf"\bV100-{form.upper()}-{gb}GB\b", f"v100-{form.lower()}-{gb}gb")
        for form in ("SXM2", "PCIe")
        for gb in (16, 32)
    ],
    (r"\bRTX 3090\b(?!.*\b(TI|LAPTOP)\b)", "rtx-3090"),
    (r"\bRTX 4090\b(?!.*\b(D|LAPTOP)\b)", "rtx-4090"),
]


class UnknownAcceleratorError(ValueError):
    """The device is not in the datasheet table, so no honest peak can be given (notebook 04)."""


class MigSliceError(UnknownAcceleratorError):
    """A MIG slice: a share of a card's SMs and memory, which its card's datasheet row does not bound (notebook 04)."""


def lookup_accelerator(name: str) -> Accelerator:
    """The datasheet entry for a table key ('h100-sxm') or a torch.cuda.get_device_name() string (notebook 04)."""
    key = name.strip().lower()
    if key in ACCELERATORS:
        return ACCELERATORS[key]
    upper = name.upper()
    if re.search(r"\bMIG\b", upper):  # "NVIDIA A100-SXM4-80GB MIG 1g.10gb": a slice, not the card
        raise MigSliceError(
            f"{name!r} is a MIG slice: a share of the card's SMs and memory, with no datasheet of its "
            "own. Its full card's peak and bandwidth would make every MFU read several times low: "
            "no peak, no MFU; report achieved FLOP/s only."
        )
    for pattern, key in _NAME_RULES:
        if re.search(pattern, upper):
            return ACCELERATORS[key]
    raise UnknownAcceleratorError(
        f"no datasheet figures for {name!r}; table keys: {', '.join(ACCELERATORS)}. Look-alikes "
        "(A10G, A40, L40, V100S, RTX 3090 Ti, GB200) have other clocks or memory and are left out. "
        "Pass a key if you know the card, add a sourced row, or report achieved FLOP/s only."
    )
