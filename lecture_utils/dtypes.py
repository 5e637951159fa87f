"""Floating-point formats: their bit fields read off real tensors, their range and spacing, and figures.

Each format is 1 sign bit, `exponent_bits` of biased exponent and `fraction_bits` of fraction.
A normal number is (-1)^sign x 2^(exponent - bias) x (1 + fraction / 2^fraction_bits); an
all-zeros exponent marks a subnormal, (-1)^sign x 2^(1 - bias) x (fraction / 2^fraction_bits).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch
from jaxtyping import Float
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from lecture_utils.hardware import ACCELERATORS
from lecture_utils.plotting import COLORS

# PCIe 5.0 Base Specification: 32 GT/s per lane, 16 lanes, one bit per transfer, per direction.
# The 128b/130b line code leaves about 63 GB/s of it for data; the H100 datasheet quotes
# PCIe Gen5 as 128 GB/s, both directions together.
PCIE_GEN5_X16_BYTES_PER_S = 32e9 * 16 / 8
PCIE_SOURCE = "PCIe 5.0 spec: 32 GT/s x 16 lanes, per direction"


@dataclass(frozen=True)
class FloatFormat:
    """A float format's layout: 1 sign bit, `exponent_bits` biased exponent, `fraction_bits` fraction."""

    name: str
    dtype: torch.dtype
    exponent_bits: int
    fraction_bits: int
    # IEEE 754 reserves the all-ones exponent for inf and NaN. float8_e4m3fn ("finite, NaN") does
    # not: it has no inf, and only the all-ones exponent *and* fraction pattern is NaN.
    ieee_specials: bool = True

    @property
    def bits(self) -> int:
        """Total width: sign + exponent + fraction."""
        return 1 + self.exponent_bits + self.fraction_bits

    @property
    def bias(self) -> int:
        """What is subtracted from the stored exponent: 2^(exponent_bits - 1) - 1."""
        return 2 ** (self.exponent_bits - 1) - 1

    @property
    def int_dtype(self) -> torch.dtype:
        """The integer dtype of the same width, for reading the raw bits with tensor.view()."""
        return {32: torch.int32, 16: torch.int16, 8: torch.uint8}[self.bits]

    @property
    def smallest_subnormal(self) -> float:
        """The smallest positive value: bit pattern 0...01, that is 2^(1 - bias - fraction_bits)."""
        return math.ldexp(1.0, 1 - self.bias - self.fraction_bits)


FORMATS: dict[str, FloatFormat] = {
    f.name: f
    for f in (
        FloatFormat("fp32", torch.float32, 8, 23),
        FloatFormat("fp16", torch.float16, 5, 10),
        FloatFormat("bf16", torch.bfloat16, 8, 7),
        FloatFormat("fp8 e4m3", torch.float8_e4m3fn, 4, 3, ieee_specials=False),
        FloatFormat("fp8 e5m2", torch.float8_e5m2, 5, 2),
    )
}


def float_format(dtype: torch.dtype) -> FloatFormat:
    """The layout of a floating-point dtype (fp32, fp16, bf16, fp8 e4m3fn, fp8 e5m2)."""
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"expected a torch.dtype, got {type(dtype).__name__}")
    for fmt in FORMATS.values():
        if fmt.dtype == dtype:
            return fmt
    raise ValueError(f"no bit layout for {dtype}; expected one of {[f.dtype for f in FORMATS.values()]}")


@dataclass(frozen=True)
class FloatBits:
    """The three bit fields of one stored value, as unsigned integers."""

    format: FloatFormat
    sign: int
    exponent: int
    fraction: int

    def bit_string(self, sep: str = " ") -> str:
        """The bits, most significant first, with `sep` between sign, exponent and fraction."""
        fmt = self.format
        return sep.join((f"{self.sign:b}", f"{self.exponent:0{fmt.exponent_bits}b}",
                         f"{self.fraction:0{fmt.fraction_bits}b}"))

    @property
    def is_subnormal(self) -> bool:
        """An all-zeros exponent field: no implicit leading 1 (zero is one of these)."""
        return self.exponent == 0

    def value(self) -> float:
        """Rebuild the number from the fields alone, with the format's rules for zero, subnormals, inf, NaN."""
        fmt = self.format
        sign = -1.0 if self.sign else 1.0
        top_exponent = 2**fmt.exponent_bits - 1
        if self.exponent == top_exponent:
            if fmt.ieee_specials:
                return sign * math.inf if self.fraction == 0 else math.nan
            if self.fraction == 2**fmt.fraction_bits - 1:
                return math.nan
        if self.is_subnormal:
            return sign * math.ldexp(self.fraction, 1 - fmt.bias - fmt.fraction_bits)
        return sign * math.ldexp(2**fmt.fraction_bits + self.fraction, self.exponent - fmt.bias - fmt.fraction_bits)

    def formula(self) -> str:
        """The value written out from its fields, e.g. '+2^(128-127) x (1 + 4788187/2^23)'."""
        fmt = self.format
        sign = "-" if self.sign else "+"
        if self.is_subnormal:
            return f"{sign}2^(1-{fmt.bias}) x (0 + {self.fraction}/2^{fmt.fraction_bits})"
        return f"{sign}2^({self.exponent}-{fmt.bias}) x (1 + {self.fraction}/2^{fmt.fraction_bits})"


def float_bits(x: float, dtype: torch.dtype) -> FloatBits:
    """Round `x` to `dtype` and read its sign, exponent and fraction bits with tensor.view(int dtype)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"expected a Python number, got {type(x).__name__}")
    fmt = float_format(dtype)
    raw = int(torch.tensor([x], dtype=torch.float64).to(dtype).view(fmt.int_dtype).item())
    raw &= 2**fmt.bits - 1  # int32/int16 read the top bit as a sign; we want the plain bit pattern
    return FloatBits(
        fmt,
        sign=raw >> (fmt.bits - 1),
        exponent=(raw >> fmt.fraction_bits) & (2**fmt.exponent_bits - 1),
        fraction=raw & (2**fmt.fraction_bits - 1),
    )


@dataclass(frozen=True)
class FloatRange:
    """What torch.finfo says about a format, plus the smallest subnormal that finfo leaves out."""

    name: str
    bits: int
    eps: float
    max: float
    tiny: float
    smallest_subnormal: float


def float_range(dtype: torch.dtype) -> FloatRange:
    """eps (gap above 1), max, tiny (smallest normal) and smallest subnormal of a float dtype."""
    fmt = float_format(dtype)
    info = torch.finfo(dtype)
    return FloatRange(fmt.name, info.bits, info.eps, info.max, info.tiny, fmt.smallest_subnormal)


def ulp(x: Float[torch.Tensor, "*shape"], dtype: torch.dtype) -> Float[torch.Tensor, "*shape"]:
    """Gap (float64) between |x| rounded to `dtype` and the next larger value of its binade; NaN if not finite."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError(f"expected a floating-point tensor, got {type(x).__name__}")
    fmt = float_format(dtype)
    stored = x.to(dtype).to(torch.float64).abs()
    _, exponent = torch.frexp(stored)  # stored = m x 2^exponent with m in [0.5, 1); frexp(0) gives 0
    # Below the normal range (zero included) the gap stops shrinking: subnormals are spaced 2^(1-bias-fraction_bits).
    binade = torch.where(stored > 0, exponent - 1, 1 - fmt.bias).clamp(min=1 - fmt.bias)
    gap = torch.ldexp(torch.ones_like(stored), binade - fmt.fraction_bits)
    return torch.where(torch.isfinite(stored), gap, torch.nan)


def relative_spacing(x: Float[torch.Tensor, "*shape"], dtype: torch.dtype) -> Float[torch.Tensor, "*shape"]:
    """ulp / |x| after rounding x to `dtype`: the relative rounding step there; NaN where x rounds to 0 or inf."""
    gaps = ulp(x, dtype)  # first, so a bad x or dtype is rejected with ulp's message
    stored = x.to(dtype).to(torch.float64).abs()
    return torch.where(stored > 0, gaps / stored, torch.nan)


_FIELD_COLORS = {"sign": "#f4a6a6", "exponent": "#a6c8f4", "fraction": "#b9e4a8"}


def draw_float_formats(value: float = math.pi) -> Figure:
    """Each format's bit layout, every box holding the real bit of `value` rounded to that format."""
    names = list(FORMATS)
    bits, box = 32, 0.205  # the widest format's bit count; one bit box, in inches
    row = 2.6 * box  # a label line above each row of bit boxes
    height = 0.9 + len(names) * row + 0.5
    fig = plt.figure(figsize=(bits * box + 0.2, height))
    ax = fig.add_axes((0, 0, 1, 1))  # data coordinates are inches from the bottom left
    y = height - 0.9
    ax.text(0.1, height - 0.15, f"The bits of {value:.9g} in five formats", va="top", fontsize=13)
    ax.text(0.1, height - 0.5, "value = (-1)^sign x 2^(exponent-bias) x (1 + fraction/2^fraction_bits)",
            va="top", fontsize=11, family="monospace")
    for name in names:
        fmt = FORMATS[name]
        fields = float_bits(value, fmt.dtype)
        y -= row
        ax.text(0.1, y + box + 0.06, f"{name} (1,{fmt.exponent_bits},{fmt.fraction_bits}): "
                f"{fields.formula()} = {fields.value():.9g}", va="bottom", fontsize=11, family="monospace")
        kinds = ["sign"] + ["exponent"] * fmt.exponent_bits + ["fraction"] * fmt.fraction_bits
        for i, (bit, kind) in enumerate(zip(fields.bit_string(sep=""), kinds, strict=True)):
            ax.add_patch(Rectangle((0.1 + i * box, y), box, box, facecolor=_FIELD_COLORS[kind],
                                   edgecolor="white", lw=1.2))
            ax.text(0.1 + (i + 0.5) * box, y + box / 2, bit, ha="center", va="center", fontsize=11,
                    family="monospace")
    for i, kind in enumerate(_FIELD_COLORS):  # the legend, bottom right
        x = 0.1 + (bits - 3 * 7 + 7 * i) * box
        ax.add_patch(Rectangle((x, 0.12), box, box, facecolor=_FIELD_COLORS[kind], edgecolor="none"))
        ax.text(x + 1.3 * box, 0.12 + box / 2, kind, va="center", fontsize=11)
    ax.set_xlim(0, bits * box + 0.2)
    ax.set_ylim(0, height)
    ax.axis("off")
    return fig


def draw_float_spacing() -> Figure:
    """Relative spacing ulp/|x| against |x| for fp32, fp16, bf16: flat in the normal range, rising in subnormals."""
    x = torch.logspace(-46, 39, 20_000, dtype=torch.float64)
    fig, ax = plt.subplots(figsize=(7, 5))
    for name in ("fp32", "bf16", "fp16"):
        fmt = FORMATS[name]
        ax.plot(x.numpy(), relative_spacing(x, fmt.dtype).numpy(), color=COLORS[name], lw=1.2,
                label=f"{name}: eps {torch.finfo(fmt.dtype).eps:.2g}, max {torch.finfo(fmt.dtype).max:.5g}")
    ax.set(xscale="log", yscale="log", xlabel="magnitude |x|", ylabel="relative spacing  ulp(x) / |x|",
           title="Range against precision: where each format\ncan store a number, and how finely")
    ax.set_xlim(1e-46, 1e39)
    ax.set_ylim(1e-8, 2)
    ax.set_xticks(10.0 ** np.arange(-40, 40, 20))
    ax.annotate("subnormals: precision\nfalls off towards 0", (1e-37, 0.3), ha="left", va="top")
    ax.annotate("fp16 overflows\nabove 65504", (65504, 1e-3), xytext=(1e10, 3e-5),
                arrowprops=dict(arrowstyle="->", color=COLORS["fp16"]))
    ax.annotate("bf16 keeps fp32's range\nwith 2^16 x coarser steps", (1e25, 2.0**-8), xytext=(1e-18, 4e-6),
                ha="center", arrowprops=dict(arrowstyle="->", color=COLORS["bf16"]))
    # Below the plot: inside, the legend would cover the lines it names.
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16))
    fig.tight_layout()
    return fig


def _box(ax: plt.Axes, xy: tuple[float, float], w: float, h: float, text: str, color: str) -> None:
    """A rounded, labelled box at xy (lower left)."""
    ax.add_patch(FancyBboxPatch(xy, w, h, boxstyle="round,pad=0.02,rounding_size=0.15", facecolor=color,
                                edgecolor="#555555", lw=1.2))
    ax.text(xy[0] + w / 2, xy[1] + h / 2, text, ha="center", va="center", fontsize=12)


def _arrow(ax: plt.Axes, start: tuple[float, float], end: tuple[float, float], width: float, color: str) -> None:
    """An arrow whose line width (and head) stands for a bandwidth."""
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=14 + 6 * width, lw=width,
                                 color=color, shrinkA=0, shrinkB=0))


def draw_host_to_gpu() -> Figure:
    """Host RAM -> PCIe -> GPU HBM -> compute, with datasheet/spec bandwidths (H100 SXM, PCIe Gen5 x16)."""
    h100 = ACCELERATORS["h100-sxm"]
    hbm = h100.bandwidth_bytes_per_s
    fig = plt.figure(figsize=(7, 7.4))
    ax = fig.add_axes((0, 0, 1, 1))  # data coordinates are inches from the bottom left
    # The host on top, the GPU below, the PCIe link between: each label has the full width.
    ax.add_patch(FancyBboxPatch((0.15, 5.35), 6.7, 1.9, boxstyle="round,pad=0.05", facecolor="#f2f2f2",
                                edgecolor="#888888"))
    ax.text(3.5, 6.95, "host (CPU, DDR RAM)", ha="center", fontsize=13, fontweight="bold")
    _box(ax, (0.4, 5.55), 2.6, 1.0, "pageable memory\ntorch.randn(...)", "#ffffff")
    _box(ax, (4.0, 5.55), 2.6, 1.0, "pinned memory\nx.pin_memory()", "#fde3b5")
    _arrow(ax, (3.05, 6.05), (3.95, 6.05), 1.5, "#888888")
    ax.text(3.5, 5.45, "staging\ncopy", ha="center", va="bottom", fontsize=11, color="#555555")

    _arrow(ax, (5.3, 5.45), (5.3, 3.55), 1.2, COLORS["fp16"])
    ax.text(4.9, 4.95, f"PCIe Gen5 x16: {PCIE_GEN5_X16_BYTES_PER_S / 1e9:.0f} GB/s", ha="right",
            fontsize=13, fontweight="bold")
    ax.text(4.9, 4.55, PCIE_SOURCE, ha="right", fontsize=11, color="#555555")
    ax.text(4.9, 4.0, "x.to('cuda', non_blocking=True)", ha="right", fontsize=11, family="monospace")

    ax.add_patch(FancyBboxPatch((0.15, 1.15), 6.7, 2.3, boxstyle="round,pad=0.05", facecolor="#eaf3e6",
                                edgecolor="#888888"))
    ax.text(3.5, 3.1, f"GPU ({h100.name})", ha="center", fontsize=13, fontweight="bold")
    _box(ax, (0.4, 1.35), 2.0, 1.5, f"HBM3\n{h100.memory_bytes / 1e9:.0f} GB", "#ffffff")
    _box(ax, (4.6, 1.35), 2.0, 1.5, "SMs\n(tensor cores)", "#ffffff")
    _arrow(ax, (2.45, 2.1), (4.55, 2.1), 7, COLORS["bf16"])
    ax.text(3.5, 2.45, f"{hbm / 1e12:.2f} TB/s", ha="center", fontsize=13, fontweight="bold")
    ax.text(3.5, 1.75, "H100 SXM datasheet", ha="center", va="top", fontsize=11, color="#555555")
    ax.text(3.5, 0.85, f"HBM feeds the SMs {hbm / PCIE_GEN5_X16_BYTES_PER_S:.0f}x faster than PCIe feeds the GPU:\n"
            "move data to the GPU once and keep it there.", ha="center", va="top", fontsize=12, style="italic")
    ax.set_xlim(0, 7)
    ax.set_ylim(0, 7.4)
    ax.axis("off")
    return fig
