"""Figures of training runs and their memory: the lost update (notebook 08), bytes per GPU under ZeRO (notebook 09)."""

import math
from collections.abc import Mapping

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from lecture_utils.checks import check_int, check_positive
from lecture_utils.figures.style import COLORS
from lecture_utils.precision import TRAINING_RECIPES, RegressionRun
from lecture_utils.sharding import FP32_ADAMW, STAGES, per_gpu_bytes


_RUN_STYLE = {
    "fp32": {"color": COLORS["fp32"], "lw": 2.5},
    "autocast bf16": {"color": COLORS["bf16"], "lw": 1.5, "ls": "--"},
    "bf16 + fp32 master": {"color": COLORS["bf16"], "lw": 2},
    "pure bf16": {"color": COLORS["fp8"], "lw": 2},
}


def plot_training_runs(runs: Mapping[str, RegressionRun]) -> Figure:
    """Three stacked panels: pure bf16 vs fp32 master (loss, updates lost per step), then fp32 vs autocast bf16."""
    needed = set(TRAINING_RECIPES) - set(runs)
    if needed:
        raise ValueError(f"missing runs for {sorted(needed)}; train every recipe in TRAINING_RECIPES")
    # Stacked, not side by side: at 7 inches wide, three panels in a row leave text too small to project.
    fig, axes = plt.subplots(3, 1, figsize=(7.0, 9.0), sharex=True)
    for ax, recipes, values, title in (
        (axes[0], ("bf16 + fp32 master", "pure bf16"), "losses", "bf16 compute: with and without fp32 master"),
        (axes[1], ("bf16 + fp32 master", "pure bf16"), "lost_fraction", "updates rounded away in the step"),
        (axes[2], ("fp32", "autocast bf16"), "losses", "fp32 vs autocast bf16"),
    ):
        for name in recipes:
            series = getattr(runs[name], values)
            ax.plot(range(1, len(series) + 1), series, label=name, **_RUN_STYLE[name])
        ax.set(title=title, xlabel="training step")
        ax.xaxis.set_tick_params(labelbottom=True)
        ax.legend()
    for ax in (axes[0], axes[2]):
        ax.set(yscale="log", ylabel="training loss (MSE, fp32)")
    axes[1].set(ylabel="share of weights\nleft unchanged", ylim=(-0.03, 1.03))
    fig.tight_layout()
    return fig


def plot_bytes_per_gpu(params: float, memory_bytes: float, recipe: tuple[int, int, int] = FP32_ADAMW,
                       max_gpus: int = 1024) -> Figure:
    """Log-log lines of per-GPU training-state GB against GPU count, one per stage, and the memory line."""
    check_positive(params=params, memory_bytes=memory_bytes)
    check_int("max_gpus", max_gpus, minimum=2)
    gpus = [2**i for i in range(int(math.log2(max_gpus)) + 1)]
    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    for stage, name in STAGES.items():
        ax.plot(gpus, [per_gpu_bytes(params, n, stage, recipe) / 1e9 for n in gpus], marker="o", ms=4,
                label=f"{name}: {_sharded_terms(stage)}")
    ax.axhline(memory_bytes / 1e9, color="#444444", ls="--", label=f"{memory_bytes / 1e9:.0f} GB per GPU")
    ax.set(xscale="log", yscale="log", xlabel="GPUs (data-parallel ranks)", ylabel="GB per GPU (log)",
           title=f"{params / 1e9:.0f}B params, {sum(recipe)} B/param ({' + '.join(map(str, recipe))})")
    ticks = sorted({*gpus[::2], 8})  # 8: one node of eight GPUs, the notes' running example
    ax.set_xticks(ticks, [str(n) for n in ticks], minor=False)
    ax.xaxis.set_minor_locator(NullLocator())
    ax.legend(fontsize=11, loc="lower left")
    return fig


def _sharded_terms(stage: int) -> str:
    """What a stage splits over the GPUs, for a legend."""
    return ("nothing sharded", "optimizer state sharded", "+ gradients", "+ parameters")[stage]
