"""The sharding figure of notebook 09: training-state bytes per GPU against GPU count, for DDP and ZeRO stages 1-3."""

import math

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from lecture_utils.accounting import RECIPES, Recipe
from lecture_utils.checks import PositiveFloat, PositiveInt
from lecture_utils.sharding import STAGES, per_gpu_bytes


def plot_bytes_per_gpu(
    params: PositiveFloat, memory_bytes: PositiveFloat, recipe: Recipe = RECIPES["fp32"], max_gpus: PositiveInt = 1024
) -> Figure:
    """Log-log lines of per-GPU training-state GB against GPU count, one per stage, and a memory line (notebook 09)."""
    gpus = [2**i for i in range(int(math.log2(max_gpus)) + 1)]
    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    p, g, k = recipe.zero_split()
    unsharded = (p + g + k, p + g, p, 0)  # bytes per parameter kept whole on every GPU, by stage
    for stage, name in STAGES.items():
        gb = [per_gpu_bytes(params, n, stage, recipe) / 1e9 for n in gpus]
        (line,) = ax.plot(gpus, gb, marker="o", ms=4, label=f"{name}: {_sharded_terms(stage)}")
        floor = unsharded[stage] * params / 1e9  # the GB a stage never shards: its line's level
        if floor > 0:  # labelled: on a log axis the level is hard to read off
            ax.annotate(
                f"{floor:.0f} GB",
                (gpus[-1], gb[-1]),
                xytext=(0, 4),
                textcoords="offset points",
                ha="right",
                va="bottom",
                color=line.get_color(),
                fontsize=11,
            )
    ax.axhline(memory_bytes / 1e9, color="#444444", ls="--", label=f"{memory_bytes / 1e9:.0f} GB per GPU")
    split = " + ".join(map(str, recipe.zero_split()))
    ax.set_title(f"{params / 1e9:.0f}B params, {recipe.total} B/param ({split})")
    ax.set_xlabel("GPUs (data-parallel ranks)")
    ax.set_ylabel("GB per GPU (log)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ticks = sorted({*gpus[::2], 8})  # 8: one node of eight GPUs, the notes' running example
    ax.set_xticks(ticks, [str(n) for n in ticks], minor=False)
    ax.xaxis.set_minor_locator(NullLocator())
    ax.legend(fontsize=11, loc="lower left")
    return fig


def _sharded_terms(stage: int) -> str:
    """What a stage splits over the GPUs, for a legend."""
    return ("nothing sharded", "optimizer state sharded", "+ gradients", "+ parameters")[stage]
