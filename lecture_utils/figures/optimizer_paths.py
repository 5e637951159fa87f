"""Optimizers on an ill-conditioned quadratic valley (notebook 06): their paths, and their loss over the steps.

Drawn for a slide: two panels side by side, under 4 inches tall. The paths are drawn in the
valley's own axes (along its shallow direction, across its steep one), where the zigzag across
the valley and the crawl along it both show; the loss axis spans what the runs reach.
"""

import torch
from jaxtyping import Float
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

_ALONG = (-4.5, 1.0)  # the runs start 4 along the shallow direction and end near 0


def draw_trajectories(
    runs: dict[str, dict],
    loss,
    basis: Float[torch.Tensor, "2 2"],
) -> Figure:
    """Left: each run's path in the valley's axes over the loss contours; right: its loss over the steps (notebook 06).

    `runs` maps a name to {"path": (steps, 2) points, "lr": float}; `loss` maps (..., 2) points to
    values; the columns of `basis` are the valley's shallow and steep directions (unit vectors).
    """
    if not runs:
        raise ValueError("runs is empty: give at least one optimizer's path to draw")
    if not torch.allclose(basis.T @ basis, torch.eye(2, dtype=basis.dtype)):
        raise ValueError("basis must hold two orthonormal columns, the valley's directions")
    fig, (paths, curves) = plt.subplots(1, 2, figsize=(7, 3.9))
    valley_paths = [run["path"] @ basis for run in runs.values()]  # (steps, 2): along, across
    reach = 1.2 * max(q[:, 1].abs().max().item() for q in valley_paths)
    along = torch.linspace(*_ALONG, 221, dtype=basis.dtype)
    across = torch.linspace(-reach, reach, 161, dtype=basis.dtype)
    uu, vv = torch.meshgrid(along, across, indexing="xy")
    levels = torch.logspace(-2, 2.5, 10, dtype=basis.dtype)
    paths.contour(uu, vv, loss(torch.stack([uu, vv], dim=-1) @ basis.T), levels=levels, colors="#bbbbbb",
                  linewidths=0.8)  # fmt: skip
    ratios = []
    for i, (name, run) in enumerate(runs.items()):
        q, color = valley_paths[i], f"C{i}"
        paths.plot(q[:, 0], q[:, 1], marker=".", markersize=3, linewidth=1, color=color)
        ratios.append(loss(run["path"]) / loss(run["path"][0]))
        curves.plot(ratios[-1], color=color, label=name)
    paths.plot(0, 0, marker="*", color="black", markersize=10)
    paths.set(title="paths", xlabel="along (shallow)", ylabel="across (steep)")
    low, high = min(r.min().item() for r in ratios), max(r.max().item() for r in ratios)
    curves.set(yscale="log", ylim=(low / 3, 3 * high), xlabel="step", ylabel="f / f(start)", title="loss")
    fig.legend(loc="lower center", ncol=len(runs), handlelength=1.2, columnspacing=1.0)
    fig.tight_layout(rect=(0, 0.08, 1, 1))  # the legend's row below both panels
    return fig
