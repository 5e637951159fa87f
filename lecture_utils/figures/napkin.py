"""The napkin figure of notebook 00: days to train a model against MFU and against GPU count."""

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import ticker
from matplotlib.figure import Figure

from lecture_utils.checks import Fractions, PositiveFloat, PositiveInts
from lecture_utils.figures.style import COLORS
from lecture_utils.hardware import ACCELERATORS
from lecture_utils.napkin import training_days, training_flops

_H100_BF16_DENSE = ACCELERATORS["h100-sxm"].peak("bf16")  # FLOP/s, without 2:4 sparsity


def draw_training_days(
    params: PositiveFloat = 70e9,
    tokens: PositiveFloat = 15e12,
    gpu_counts: PositiveInts = (512, 1024, 2048, 4096),
    mfus: Fractions = (0.3, 0.4, 0.5, 0.6),
    peak_flops_per_gpu: PositiveFloat = _H100_BF16_DENSE,
) -> Figure:
    """Days to train `params` on `tokens`, against MFU for several cluster sizes and against GPU count (notebook 00)."""
    flops = training_flops(params, tokens)
    mfu_grid = np.linspace(min(mfus), max(mfus), 61)
    # Whole GPUs only: the napkin functions take a GPU count as an int.
    gpu_grid = sorted({round(g) for g in np.geomspace(min(gpu_counts), max(gpu_counts), 61)})
    # Every number first, so bad input is rejected (by the napkin functions) before a figure opens.
    by_count = {count: [training_days(flops, count, peak_flops_per_gpu, m) for m in mfu_grid] for count in gpu_counts}
    by_mfu_value = {m: [training_days(flops, g, peak_flops_per_gpu, m) for g in gpu_grid] for m in mfus}
    baseline = training_days(flops, 1024, peak_flops_per_gpu, 0.5)
    # Stacked, not side by side: each panel keeps the full width of a notebook on a projector; 5.8
    # inches tall, so both fit one projector screen at 150% zoom (about 600 CSS px).
    fig, (by_mfu, by_gpus) = plt.subplots(2, 1, figsize=(7, 5.8))
    for count, days in by_count.items():
        (line,) = by_mfu.plot(mfu_grid, days)
        by_mfu.annotate(
            f"{count} GPUs",
            (mfu_grid[-1], days[-1]),
            textcoords="offset points",
            xytext=(4, 0),
            va="center",
            color=line.get_color(),
        )
    by_mfu.set(
        xlabel="MFU (fraction of peak FLOP/s)",
        ylabel="training time (days)",
        yscale="log",
        title="Days against MFU",
        xlim=(min(mfus), max(mfus) + 0.09),
    )
    for m, days in by_mfu_value.items():
        by_gpus.plot(gpu_grid, days, label=f"MFU {m:.1f}")
    by_gpus.set(
        xlabel="number of GPUs",
        ylabel="training time (days)",
        xscale="log",
        yscale="log",
        title="Days against GPU count",
    )
    by_gpus.set_xticks(list(gpu_counts), [str(c) for c in gpu_counts])
    by_gpus.legend()
    for ax, x in ((by_mfu, 0.5), (by_gpus, 1024)):
        ax.plot([x], [baseline], "o", color=COLORS["peak"])
        # Below and left of the point the plot is empty in both panels, so the label hides no line.
        ax.annotate(
            f"{baseline:.0f} days", (x, baseline), textcoords="offset points", xytext=(-8, -8), ha="right", va="top"
        )
        ax.yaxis.set_major_locator(ticker.LogLocator(base=2))
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda y, _: f"{y:g}"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    fig.suptitle(
        f"{params / 1e9:.0f}B parameters, {tokens / 1e12:.0f}T tokens, "
        f"{peak_flops_per_gpu / 1e12:.1f} TFLOP/s dense per GPU"
    )
    fig.tight_layout()
    return fig
