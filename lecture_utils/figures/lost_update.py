"""The lost-update figure of notebook 08: a regression trained in fp32, autocast bf16, bf16 + fp32 master, pure bf16."""

from collections.abc import Mapping

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from lecture_utils.figures.style import COLORS
from lecture_utils.lost_update import TRAINING_RECIPES, RegressionRun

_RUN_STYLE = {
    "fp32": {"color": COLORS["fp32"], "lw": 2.5},
    "autocast bf16": {"color": COLORS["bf16"], "lw": 1.5, "ls": "--"},
    "bf16 + fp32 master": {"color": COLORS["bf16"], "lw": 2},
    "pure bf16": {"color": COLORS["fp8"], "lw": 2},
}


def plot_training_runs(runs: Mapping[str, RegressionRun]) -> Figure:
    """Three stacked panels: pure bf16 vs fp32 master (loss, updates lost), then fp32 vs autocast bf16 (notebook 08)."""
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
