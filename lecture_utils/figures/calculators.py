"""The calculators' figures (notebooks 00, 04, 09), redrawn whenever a control moves, and how a widget shows them.

Training days against GPU count (notebook 00), training-state bytes per parameter against GPU count
with measured runs marked (notebook 09), one matmul on a card's roofline (notebook 04). Each is a
`styled_figure`, which pyplot does not track, so a redraw leaves no figure behind; `figure_output`
turns one into the display output a widget's Output holds.
"""

import base64
import contextlib
import functools
import io
import math
import struct
from collections.abc import Iterator, Mapping

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import ticker
from matplotlib.figure import Figure

from lecture_utils.accounting import RECIPES
from lecture_utils.checks import Fraction, PositiveFloat, PositiveInt
from lecture_utils.figures.style import COLORS, DISPLAY_DPI, STORED_DPI, STYLE, count_label
from lecture_utils.flops import attainable_flops
from lecture_utils.napkin import training_days, training_flops
from lecture_utils.sharding import APPROACHES, STAGES, Stage, per_gpu_bytes

# (approach, ranks) -> bytes one rank held, averaged over the ranks (see draw_memory)
Measured = Mapping[tuple[str, int], float]


@contextlib.contextmanager
def styled_figure(width_in: float = 7.0, height_in: float = 3.6) -> Iterator[Figure]:
    """A figure drawn in the notes' style, laid out on exit; pyplot does not track it (notebooks 00, 04, 09).

    A figure pyplot tracks would also appear by itself at the end of the cell that drew it.
    """
    with plt.rc_context(STYLE):
        fig = Figure(figsize=(width_in, height_in))
        yield fig
        fig.tight_layout()


def _png_size(png: bytes) -> tuple[int, int]:
    """Width and height in pixels, from a PNG's IHDR chunk."""
    return struct.unpack(">II", png[16:24])


def figure_output(fig: Figure) -> dict:
    """A figure as a notebook display output: PNG at STORED_DPI, shown at DISPLAY_DPI (notebooks 00, 04, 09)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=STORED_DPI, metadata={"Software": None})
    png = buffer.getvalue()
    width, height = (side * DISPLAY_DPI // STORED_DPI for side in _png_size(png))
    return {
        "output_type": "display_data",
        "data": {"image/png": base64.b64encode(png).decode("ascii"), "text/plain": "<Figure>"},
        "metadata": {"image/png": {"width": width, "height": height}},
    }


def draw_training_time(
    params: PositiveFloat,
    tokens: PositiveFloat,
    gpus: PositiveInt,
    peak_flops_per_gpu: PositiveFloat,
    mfu: Fraction,
    max_gpus: PositiveInt = 2**16,
) -> Figure:
    """Days against GPU count at this MFU (and at MFU 1, the floor), this cluster marked (notebook 00).

    The x axis runs over powers of two, five either side of `gpus`, from 1 to at most `max_gpus`.
    """
    flops = training_flops(params, tokens)
    here = int(math.log2(gpus))
    counts = [2**k for k in range(max(0, here - 5), min(int(math.log2(max_gpus)), here + 5) + 1)]
    with styled_figure(7.0, 3.3) as fig:
        ax = fig.subplots()
        lines = [(mfu, "-", COLORS["bf16"], f"MFU {mfu:.2f}")]
        if mfu < 1:
            lines.append((1.0, "--", COLORS["peak"], "MFU 1 (every FLOP at peak)"))
        for m, style, color, label in lines:
            days = [training_days(flops, n, peak_flops_per_gpu, m) for n in counts]
            ax.plot(counts, days, style, color=color, label=label)
        days_here = training_days(flops, gpus, peak_flops_per_gpu, mfu)
        ax.plot([gpus], [days_here], "o", color=COLORS["fp8"], ms=9)
        ax.annotate(f"{days_here:,.1f} days", (gpus, days_here), xytext=(8, 8), textcoords="offset points")
        ax.set(xscale="log", yscale="log", xlabel="GPUs", ylabel="training time (days)")
        ticks = [n for n in counts if (n.bit_length() - gpus.bit_length()) % 2 == 0]  # this cluster labelled
        ax.set_xticks(ticks, [f"{n:,}" for n in ticks])
        ax.xaxis.set_minor_locator(ticker.NullLocator())
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda y, _: f"{y:g}"))
        peak_label = f"peak {peak_flops_per_gpu / 1e12:,.4g} TFLOP/s per GPU"
        ax.set_title(f"{count_label(params)} params x {count_label(tokens)} tokens, {peak_label}")
        ax.legend(loc="upper right")
    return fig


def _fits(memory_bytes: float, values: np.ndarray) -> np.ndarray:
    """memory / values: bytes per parameter to parameters that fit, and back (its own inverse)."""
    with np.errstate(divide="ignore"):  # matplotlib also transforms the axis' ends, 0 among them
        return memory_bytes / np.asarray(values, dtype=float)


def draw_memory(
    params: PositiveFloat,
    recipe_name: str,
    stage: Stage,
    gpus: PositiveInt,
    card_memory_bytes: PositiveFloat,
    measured: Measured | None = None,
    measured_params: PositiveInt = 1,
    max_gpus: PositiveInt = 2**12,
) -> Figure:
    """Bytes per parameter on one GPU against GPU count, per stage; the choice and measurements marked (notebook 09).

    `measured` maps (approach of lecture_utils.sharding.APPROACHES, ranks) to the bytes a rank held
    for a model of `measured_params` parameters: each is a cross at bytes / measured_params, in its
    stage's colour. The right axis reads the same line as the largest model that fits in the card.
    """
    recipe = RECIPES[recipe_name]
    measured = measured or {}
    counts = [2**k for k in range(int(math.log2(max_gpus)) + 1)]
    with styled_figure(7.0, 3.6) as fig:
        ax = fig.subplots()
        colors = {}
        for s, name in STAGES.items():
            (line,) = ax.plot(counts, [per_gpu_bytes(1.0, n, s, recipe) for n in counts], label=name)
            colors[s] = line.get_color()
        for (approach, ranks), held in measured.items():
            ax.plot([ranks], [held / measured_params], "x", color=colors[APPROACHES[approach]], ms=11, mew=2.5)
        if measured:
            ax.plot([], [], "x", color="black", ms=11, mew=2.5, label="measured (notebook 09)")
        budget = card_memory_bytes / params  # a stage fits where its line is below this
        ax.axhline(budget, color=COLORS["peak"], ls="--", label=f"{count_label(params)} params fit below")
        here = per_gpu_bytes(1.0, gpus, stage, recipe)
        ax.plot([gpus], [here], "o", color=colors[stage], ms=12, mfc="none", mew=2.5)
        ax.set(xscale="log", yscale="log", xlabel="GPUs", ylabel="bytes per parameter, one GPU")
        ax.set_xticks(counts[::2], [f"{n:,}" for n in counts[::2]])
        ax.xaxis.set_minor_locator(ticker.NullLocator())
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda y, _: f"{y:g}"))
        right = ax.secondary_yaxis("right", functions=(functools.partial(_fits, card_memory_bytes),) * 2)
        right.set_ylabel(f"largest model in {card_memory_bytes / 1e9:g} GB")
        right.yaxis.set_major_formatter(ticker.FuncFormatter(lambda p, _: count_label(p)))
        ax.set_title(f"{recipe_name}: {recipe.total} B per parameter before sharding")
        ax.legend(loc="lower left", ncols=2)
    return fig


def draw_roofline_point(
    intensity: PositiveFloat, peak_flops: PositiveFloat, bandwidth_bytes_per_s: PositiveFloat, label: str
) -> Figure:
    """A card's roof for one dtype, log-log, with one kernel of this intensity on it and the ridge dotted (notebook 04).

    The kernel sits at attainable_flops(intensity, peak, bandwidth): memory-bound left of the ridge
    (peak / bandwidth), compute-bound from it on.
    """
    ridge = peak_flops / bandwidth_bytes_per_s
    attainable = attainable_flops(intensity, peak_flops, bandwidth_bytes_per_s)
    xs = np.geomspace(min(intensity, ridge) / 30, max(intensity, ridge) * 30, 200)
    roof = [attainable_flops(float(x), peak_flops, bandwidth_bytes_per_s) for x in xs]
    with styled_figure(7.0, 3.3) as fig:
        ax = fig.subplots()
        ax.plot(xs, roof, color=COLORS["peak"])
        ax.axvline(ridge, color=COLORS["peak"], ls=":")
        # Labels, not a legend: below the roof and right of the ridge the plot is always empty.
        ax.annotate(f"ridge {ridge:,.0f} FLOP/B", (ridge, peak_flops / 30), xytext=(6, 0),
                    textcoords="offset points", va="center")  # fmt: skip
        bound = "compute" if intensity >= ridge else "memory"
        color = COLORS["fp8"] if bound == "memory" else COLORS["bf16"]
        ax.plot([intensity], [attainable], "o", color=color, ms=10)
        ax.annotate(f"{bound}-bound", (intensity, attainable), xytext=(10, -14),
                    textcoords="offset points", va="top", color=color)  # fmt: skip
        ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOPs per byte)")
        ax.set_ylabel("attainable FLOP/s")
        ax.set_ylim(bottom=min(roof[0], peak_flops / 100))  # room for the ridge's label
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        ax.set_title(label)
    return fig
