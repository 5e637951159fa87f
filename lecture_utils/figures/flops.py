"""Figures of FLOPs: the three matmuls of a linear layer (notebook 05); throughput, rooflines, tokens (notebook 04)."""

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from lecture_utils.checks import PositiveFloat
from lecture_utils.figures.style import COLORS
from lecture_utils.matmul_benchmark import MatmulResult
from lecture_utils.peaks import Peak
from lecture_utils.roofline import MeasuredKernel


def draw_linear_layer_matmuls(
    batch: PositiveFloat = 2.0, d_in: PositiveFloat = 3.0, d_out: PositiveFloat = 1.5
) -> Figure:
    """The three matmuls of one linear layer y = x W: one forward, two backward, each 2 B D K FLOPs (notebook 05).

    The sizes are box sizes in drawing units, not tensor sizes.
    """
    colors = {"activation": COLORS["fp32"], "weight": COLORS["bf16"], "grad": COLORS["fp16"]}
    rows = [
        (
            "forward:  y = x W",
            [
                ("x", "B x D", batch, d_in, "activation"),
                ("W", "D x K", d_in, d_out, "weight"),
                ("y", "B x K", batch, d_out, "activation"),
            ],
        ),
        (
            "backward:  W.grad = x$^T$ y.grad",
            [
                ("x$^T$", "D x B", d_in, batch, "activation"),
                ("y.grad", "B x K", batch, d_out, "grad"),
                ("W.grad", "D x K", d_in, d_out, "grad"),
            ],
        ),
        (
            "backward:  x.grad = y.grad W$^T$",
            [
                ("y.grad", "B x K", batch, d_out, "grad"),
                ("W$^T$", "K x D", d_out, d_in, "weight"),
                ("x.grad", "B x D", batch, d_in, "grad"),
            ],
        ),
    ]
    row_height = max(batch, d_in, d_out) + 1.6
    fig, ax = plt.subplots(figsize=(7.0, 6.5))
    lowest = 0.0
    for i, (title, mats) in enumerate(rows):
        top = -i * row_height
        ax.text(0, top + 0.45, title, fontsize=12, fontweight="bold", va="bottom")
        x = 0.0
        for j, (name, shape, height, width, kind) in enumerate(mats):
            style = {"facecolor": colors[kind], "edgecolor": colors[kind], "alpha": 0.35, "linewidth": 1.5}
            ax.add_patch(Rectangle((x, top - height), width, height, **style))
            lowest = min(lowest, top - height)
            ax.text(x + width / 2, top - height / 2, f"{name}\n({shape})", ha="center", va="center", fontsize=12)
            x += width
            if j < 2:
                ax.text(x + 0.35, top - 0.8, "@" if j == 0 else "=", ha="center", va="center", fontsize=14)
                x += 0.7
        note = "2 B D K FLOPs" + ("\n(skipped when x is the data)" if i == 2 else "")
        ax.text(x + 0.6, top - 0.8, note, va="center", fontsize=11, color=COLORS["peak"])
    for kind, color in colors.items():
        ax.add_patch(Rectangle((0, 0), 0, 0, facecolor=color, alpha=0.35, edgecolor=color, label=kind))
    ax.legend(loc="upper left", ncols=3, bbox_to_anchor=(0.0, 0.0))
    ax.set_xlim(-0.2, 2 * d_in + d_out + batch + 5.0)
    ax.set_ylim(lowest - 0.2, 1.2)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("One linear layer: 2BDK forward + 4BDK backward = 6BDK", loc="left")
    return fig


_MARKERS = {"matmul": "o", "add": "s", "matvec": "^", "token matmul": "D"}


def _precision_color(precision: str) -> str:
    """The plot colour of a datasheet row; TF32 has none in COLORS, so it gets its own."""
    return COLORS.get(precision, "#9467bd")


def plot_throughput(results: Sequence[MatmulResult], title: str) -> Figure:
    """Achieved FLOP/s against matrix size, one line per datasheet row, its peak dashed (notebook 04)."""
    fig, ax = plt.subplots()
    for precision in dict.fromkeys(r.precision for r in results):
        rows = sorted((r for r in results if r.precision == precision), key=lambda r: r.n)
        color = _precision_color(precision)
        ax.plot([r.n for r in rows], [r.flops_per_s for r in rows], "o-", color=color, label=f"{precision} achieved")
        peak = rows[-1].peak_flops_per_s
        if peak is not None:
            kind = "estimated peak" if rows[-1].peak_estimate else "datasheet dense peak"
            ax.axhline(peak, color=color, linestyle="--", linewidth=1, label=f"{precision} {kind}")
    ax.set_xscale("log", base=2)
    ax.set(yscale="log", xlabel="matrix size n  (n x n @ n x n)", ylabel="FLOP/s", title=title)
    ax.legend(fontsize=11)
    return fig


def plot_roofline(
    points: Sequence[MeasuredKernel],
    roofs: Mapping[str, Peak],
    bandwidth_bytes_per_s: PositiveFloat,
    bandwidth_label: str,
    title: str,
    *,
    size_labels: Mapping[str, str] | None = None,
) -> Figure:
    """Roofline min(peak, intensity x bandwidth): a memory slope, a flat roof per peak, kernels (notebook 04).

    Colour says the precision, the marker the kernel. Each flat roof starts at its ridge (peak /
    bandwidth), where a kernel stops being memory-bound. `size_labels` maps a kernel to a prefix
    written beside each of its points with the point's size, e.g. {"token matmul": "T="}.
    """
    fig, ax = plt.subplots(figsize=(7.0, 5.0))  # taller than the default: room for the legend
    intensities = [p.intensity for p in points]
    low, high = min(intensities) / 4, max(intensities) * 4
    ridges = {precision: peak.flops_per_s / bandwidth_bytes_per_s for precision, peak in roofs.items()}
    top_ridge = min(max(ridges.values(), default=high), high)
    slope = [low * bandwidth_bytes_per_s, top_ridge * bandwidth_bytes_per_s]
    ax.plot([low, top_ridge], slope, color="0.45", linewidth=1.5, label=f"memory: {bandwidth_label}")
    for precision, peak in roofs.items():
        kind = "estimate" if peak.estimate else "datasheet"
        label = f"{precision} peak ({kind}), ridge {ridges[precision]:.0f} FLOP/B"
        color = _precision_color(precision)
        ax.plot([max(ridges[precision], low), high], [peak.flops_per_s] * 2, color=color, linewidth=1.5, label=label)
    for kernel, precision in dict.fromkeys((p.kernel, p.precision) for p in points):
        group = [p for p in points if (p.kernel, p.precision) == (kernel, precision)]
        xy = [p.intensity for p in group], [p.flops_per_s for p in group]
        marker = _MARKERS.get(kernel, "D")
        ax.scatter(*xy, color=_precision_color(precision), marker=marker, zorder=3, label=f"{precision} {kernel}")
        if size_labels and kernel in size_labels:
            for p in group:
                ax.annotate(f"{size_labels[kernel]}{p.size}", (p.intensity, p.flops_per_s), xytext=(1, -8),
                            textcoords="offset points", va="top", fontsize=11)  # fmt: skip
    ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOPs per byte moved)", ylabel="FLOP/s")
    ax.set_title(title)
    ax.set_ylim(top=100 * max(p.flops_per_s for p in points))  # headroom, so the legend covers no point
    ax.legend(loc="upper left", ncols=2)
    return fig


def plot_token_intensity(
    tokens: Sequence[int],
    intensities: Sequence[float],
    ridge: PositiveFloat,
    ridge_label: str,
    marks: Mapping[str, int],
    title: str,
) -> Figure:
    """Intensity of a (T x d)(d x f) matmul against the tokens T, a card's ridge across it (notebook 04).

    The token counts left of the first one at or past the ridge are shaded memory-bound, the rest
    compute-bound. `marks` names token counts to point at (they must be among `tokens`).
    """
    if len(tokens) != len(intensities) or not tokens:
        raise ValueError(f"one intensity per token count: got {len(tokens)} counts, {len(intensities)} intensities")
    missing = [name for name, t in marks.items() if t not in tokens]
    if missing:
        raise ValueError(f"marks {missing} are not among the token counts plotted")
    crossing = next((t for t, i in zip(tokens, intensities, strict=True) if i >= ridge), tokens[-1])
    low, high = tokens[0] / 1.6, tokens[-1] * 1.6  # margins: a marked end point is not cut in half
    fig, ax = plt.subplots(figsize=(7.0, 4.5))
    ax.axvspan(low, crossing, color=COLORS["fp8"], alpha=0.1, label="memory-bound")
    ax.axvspan(crossing, high, color=COLORS["bf16"], alpha=0.12, label="compute-bound")
    ax.plot(tokens, intensities, color=COLORS["bf16"], linewidth=2, label="intensity of the matmul")
    ax.axhline(ridge, color=COLORS["peak"], linestyle="--", linewidth=1.5, label=ridge_label)
    for name, t in marks.items():
        y = intensities[list(tokens).index(t)]
        ax.plot([t], [y], "o", color=COLORS["fp32"], ms=8, zorder=3)
        # Labels stay off the curve: above it left of the crossing, below it at the crossing
        # (the curve climbs on), above and to the left where it has flattened.
        if t < crossing:
            where = {"xytext": (8, 8), "va": "bottom"}
        elif t == crossing:
            where = {"xytext": (10, -4), "va": "top"}
        else:
            where = {"xytext": (-8, 4), "ha": "right", "va": "bottom"}
        ax.annotate(name, (t, y), textcoords="offset points", fontsize=11, **where)
    ax.set(xscale="log", yscale="log", xlim=(low, high), xlabel="tokens T sharing one read of the weight")
    ax.set_ylim(bottom=min(intensities) / 3)  # room for a label under the lowest point
    ax.set_ylabel("FLOPs per byte moved")
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=11)  # under the curve, right of the decoding label
    return fig
