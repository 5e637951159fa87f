"""Figures of floating-point formats (notebook 01): each format's bits, and its range against its precision."""

import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from lecture_utils.dtypes import FORMATS, float_bits, relative_spacing
from lecture_utils.figures.style import COLORS

_FIELD_COLORS = {"sign": "#f4a6a6", "exponent": "#a6c8f4", "fraction": "#b9e4a8"}


def draw_float_formats(value: float = math.pi) -> Figure:
    """Each format's bit layout, every box holding the real bit of `value` rounded to that format (notebook 01)."""
    names = list(FORMATS)
    bits, box = 32, 0.205  # the widest format's bit count; one bit box, in inches
    row = 2.6 * box  # a label line above each row of bit boxes
    height = 0.9 + len(names) * row + 0.5
    fig = plt.figure(figsize=(bits * box + 0.2, height))
    ax = fig.add_axes((0, 0, 1, 1))  # data coordinates are inches from the bottom left
    y = height - 0.9
    ax.text(0.1, height - 0.15, f"The bits of {value:.9g} in five formats", va="top", fontsize=13)
    ax.text(
        0.1,
        height - 0.5,
        "value = (-1)^sign x 2^(exponent-bias) x (1 + fraction/2^fraction_bits)",
        va="top",
        fontsize=11,
        family="monospace",
    )
    for name in names:
        fmt = FORMATS[name]
        fields = float_bits(value, fmt.dtype)
        y -= row
        ax.text(
            0.1,
            y + box + 0.06,
            f"{name} (1,{fmt.exponent_bits},{fmt.fraction_bits}): {fields.formula()} = {fields.value():.9g}",
            va="bottom",
            fontsize=11,
            family="monospace",
        )
        kinds = ["sign"] + ["exponent"] * fmt.exponent_bits + ["fraction"] * fmt.fraction_bits
        for i, (bit, kind) in enumerate(zip(fields.bit_string(sep=""), kinds, strict=True)):
            ax.add_patch(
                Rectangle((0.1 + i * box, y), box, box, facecolor=_FIELD_COLORS[kind], edgecolor="white", lw=1.2)
            )
            ax.text(0.1 + (i + 0.5) * box, y + box / 2, bit, ha="center", va="center", fontsize=11, family="monospace")
    for i, kind in enumerate(_FIELD_COLORS):  # the legend, bottom right
        x = 0.1 + (bits - 3 * 7 + 7 * i) * box
        ax.add_patch(Rectangle((x, 0.12), box, box, facecolor=_FIELD_COLORS[kind], edgecolor="none"))
        ax.text(x + 1.3 * box, 0.12 + box / 2, kind, va="center", fontsize=11)
    ax.set_xlim(0, bits * box + 0.2)
    ax.set_ylim(0, height)
    ax.axis("off")
    return fig


def draw_float_spacing() -> Figure:
    """Relative spacing ulp/|x| against |x| for fp32, fp16, bf16 (notebook 01).

    Flat across the normal range, rising through the subnormals.
    """
    x = torch.logspace(-46, 39, 20_000, dtype=torch.float64)
    fig, ax = plt.subplots(figsize=(7, 5))
    for name in ("fp32", "bf16", "fp16"):
        fmt = FORMATS[name]
        ax.plot(
            x.numpy(),
            relative_spacing(x, fmt.dtype).numpy(),
            color=COLORS[name],
            lw=1.2,
            label=f"{name}: eps {torch.finfo(fmt.dtype).eps:.2g}, max {torch.finfo(fmt.dtype).max:.5g}",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set(xlim=(1e-46, 1e39), ylim=(1e-8, 2), xlabel="magnitude |x|", ylabel="relative spacing  ulp(x) / |x|")
    ax.set_title("Range against precision: where each format\ncan store a number, and how finely")
    ax.set_xticks(10.0 ** np.arange(-40, 40, 20))
    ax.annotate("subnormals: precision\nfalls off towards 0", (1e-37, 0.3), ha="left", va="top")
    ax.annotate(
        "fp16 overflows\nabove 65504",
        (65504, 1e-3),
        xytext=(1e10, 3e-5),
        arrowprops=dict(arrowstyle="->", color=COLORS["fp16"]),
    )
    ax.annotate(
        "bf16 keeps fp32's range\nwith 2^16 x coarser steps",
        (1e25, 2.0**-8),
        xytext=(1e-18, 4e-6),
        ha="center",
        arrowprops=dict(arrowstyle="->", color=COLORS["bf16"]),
    )
    # Below the plot: inside, the legend would cover the lines it names.
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16))
    fig.tight_layout()
    return fig
