"""The lost-update figure of notebook 08: a regression trained in fp32, autocast bf16, bf16 + fp32 master, pure bf16."""

from collections.abc import Mapping

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from lecture_utils.figures.style import COLORS
from lecture_utils.lost_update import TRAINING_RECIPES, RegressionRun

_RUN_STYLE = {
    "fp32": {"color": COLORS["fp32"], "lw": 2.5},
    "autocast bf16": {"color": COLORS["bf16"], "lw": 1.5, "ls": "--"},
    "bf16 + fp32 master": {"color": COLORS["fp16"], "lw": 2, "ls": ":"},
    "pure bf16": {"color": COLORS["fp8"], "lw": 2},
}
# Sized for a slide: 7 x 3.8 inches is 700 x 380 CSS pixels, which leaves room for a heading, a paragraph and
# the cell's code within the ~600 pixels a 1080p screen shows at 150% zoom.
_SIZE_IN = (7.0, 3.8)


def plot_training_runs(runs: Mapping[str, RegressionRun]) -> Figure:
    """Two panels side by side: the four recipes' losses, then the share of updates each step lost (notebook 08)."""
    needed = set(TRAINING_RECIPES) - set(runs)
    if needed:
        raise ValueError(f"missing runs for {sorted(needed)}; train every recipe in TRAINING_RECIPES")
    fig, (loss_ax, lost_ax) = plt.subplots(1, 2, figsize=_SIZE_IN, sharex=True)
    for name in TRAINING_RECIPES:
        run, style = runs[name], _RUN_STYLE[name]
        steps = range(1, len(run.losses) + 1)
        loss_ax.plot(steps, run.losses, label=name, **style)
        lost_ax.plot(steps, run.lost_fraction, **style)
    loss_ax.set(title="training loss", xlabel="step", ylabel="MSE, in fp32", yscale="log")
    lost_ax.set(title="updates rounded away", xlabel="step", ylabel="share of weights", ylim=(-0.03, 1.03))
    # One row above both panels: inside the loss panel it would cover the curves it names.
    fig.legend(loc="upper center", ncols=4, handlelength=1.2, columnspacing=1.0, bbox_to_anchor=(0.5, 1.0))
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    return fig
