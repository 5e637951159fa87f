"""The roofline explorer of notebook 04: one matmul shape, a card and a dtype -> intensity, FLOP/s, the bound.

FLOPs, bytes, intensity and the roof come from lecture_utils.flops; the dense peak and the memory
bandwidth from the datasheet table of lecture_utils.hardware, the row a dtype runs in from
lecture_utils.peaks: the functions notebook 04's roofline cells call. Its figure is
lecture_utils.figures.calculators.draw_roofline_point.
"""

from dataclasses import dataclass
from typing import Literal

import torch

from lecture_utils.calculators.controls import dropdown, number_box, power_of_two_slider
from lecture_utils.calculators.layout import (
    Calculator,
    ResultRow,
    build_calculator,
    missing_peak,
    refresh,
    result_text,
)
from lecture_utils.checks import PositiveInt
from lecture_utils.figures.calculators import draw_roofline_point, figure_output
from lecture_utils.flops import arithmetic_intensity, attainable_flops, matmul_bytes, matmul_flops
from lecture_utils.hardware import ACCELERATORS, lookup_accelerator
from lecture_utils.memory import format_bytes
from lecture_utils.peaks import Float32Mode, matmul_precision

# The choices offered: the tensors' dtype, and for fp32 the matmul precision setting (TF32 or not).
MATMUL_DTYPES: dict[str, tuple[torch.dtype, Float32Mode | None]] = {
    "fp32": (torch.float32, "highest"),
    "fp32 as TF32": (torch.float32, "high"),
    "bf16": (torch.bfloat16, None),
    "fp16": (torch.float16, None),
    "fp8 (e4m3)": (torch.float8_e4m3fn, None),
}


@dataclass(frozen=True)
class RooflinePoint:
    """Where one matmul sits on a card's roofline (notebook 04)."""

    flops: int
    bytes_moved: int  # the fewest: each operand read once, the result written once
    intensity: float  # FLOPs per byte
    peak_flops: float  # dense datasheet peak of the dtype's row
    bandwidth_bytes_per_s: float
    ridge: float  # the intensity where the roof turns flat: peak / bandwidth
    attainable_flops: float
    bound: Literal["memory", "compute"]


def roofline_point(m: PositiveInt, n: PositiveInt, p: PositiveInt, card: str, dtype_name: str) -> RooflinePoint:
    """Intensity and attainable FLOP/s of (m x n) @ (n x p) in a dtype of MATMUL_DTYPES on a card (notebook 04).

    `card` is a lecture_utils.hardware key or GPU name. Raises ValueError for a dtype not offered
    and when the card's datasheet has no dense figure for the dtype's row (no bf16 on the T4).
    """
    if dtype_name not in MATMUL_DTYPES:
        raise ValueError(f"no dtype {dtype_name!r}; choose one of {list(MATMUL_DTYPES)}")
    dtype, float32_mode = MATMUL_DTYPES[dtype_name]
    accelerator = lookup_accelerator(card)
    peak = accelerator.peak(matmul_precision(dtype, float32_mode))
    bandwidth = accelerator.bandwidth_bytes_per_s
    flops, bytes_moved = matmul_flops((m, n), (n, p)), matmul_bytes((m, n), (n, p), dtype)
    intensity = arithmetic_intensity(flops, bytes_moved)
    ridge = peak / bandwidth
    bound = "compute" if intensity >= ridge else "memory"
    attainable = attainable_flops(intensity, peak, bandwidth)
    return RooflinePoint(flops, bytes_moved, intensity, peak, bandwidth, ridge, attainable, bound)


def _seconds_label(seconds: float) -> str:
    """A short duration in the unit that reads best."""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _result(m: int, n: int, p: int, card: str, dtype: str) -> tuple:
    """(title, rows, message) for one set of inputs; an unavailable peak becomes the message."""
    title = f"({m:,} x {n:,}) @ ({n:,} x {p:,}) in {dtype} on the {ACCELERATORS[card].name}"
    tensors, float32_mode = MATMUL_DTYPES[dtype]
    missing = missing_peak(card, matmul_precision(tensors, float32_mode))
    if missing:
        return title, [], f"No roofline: {missing}."
    pt = roofline_point(m, n, p, card, dtype)
    share, seconds = pt.attainable_flops / pt.peak_flops, pt.flops / pt.attainable_flops
    rows = [
        ResultRow("FLOPs, 2mnp", "flops", f"{pt.flops:.3g}", pt.flops),
        ResultRow("bytes moved (at least)", "bytes", format_bytes(pt.bytes_moved, binary=False), pt.bytes_moved),
        ResultRow("arithmetic intensity", "intensity", f"{pt.intensity:,.1f} FLOP/B", pt.intensity),
        ResultRow("ridge point of the card", "ridge", f"{pt.ridge:,.1f} FLOP/B", pt.ridge),
        ResultRow("attainable", "attainable", f"{pt.attainable_flops / 1e12:,.4g} TFLOP/s", pt.attainable_flops),
        ResultRow("share of the peak", "share", f"{share:.0%}", share),
        ResultRow("bound by", "bound", f"{pt.bound}", pt.bound),
        ResultRow("time, at best", "seconds", _seconds_label(seconds), seconds),
    ]
    return title, rows, ""


def _draw(v: dict) -> dict:
    """The matmul's point on its card's roofline, for the controls' values `v`."""
    point = roofline_point(v["m"], v["n"], v["p"], v["card"], v["dtype"])
    shape = f"({v['m']:,} x {v['n']:,}) @ ({v['n']:,} x {v['p']:,})"
    label = f"{shape} in {v['dtype']}, {ACCELERATORS[v['card']].name}"
    return figure_output(draw_roofline_point(point.intensity, point.peak_flops, point.bandwidth_bytes_per_s, label))


def _update(calc: Calculator) -> None:
    refresh(calc, _result, _draw)


def _describe(v: dict) -> str:
    return result_text(*_result(**v))


def roofline_calculator(
    m: PositiveInt = 4096, n: PositiveInt = 4096, p: PositiveInt = 4096, card: str = "h100-sxm", dtype: str = "bf16"
) -> Calculator:
    """The roofline widget for (m x n) @ (n x p), starting from a 4096-cubed bf16 matmul on an H100 (notebook 04).

    m (the rows: tokens in a batch) is a slider over powers of two; n and p are typed.
    """
    controls = {
        "m": power_of_two_slider("m (rows, tokens)", 0, 16, m),
        "n": number_box("n (inner)", n, 1, 1_000_000, integer=True),
        "p": number_box("p (columns)", p, 1, 1_000_000, integer=True),
        "card": dropdown("card", [(acc.name, key) for key, acc in ACCELERATORS.items()], card),
        "dtype": dropdown("dtype", [(name, name) for name in MATMUL_DTYPES], dtype),
    }
    return build_calculator("roofline", controls, _update, _describe)
