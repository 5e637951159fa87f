"""The optimizer-path figure: fits a slide, legible, axes that span the runs, its paths where the runs went."""

import math

import matplotlib.pyplot as plt
import pytest
import torch

from lecture_utils.figures.optimizer_paths import draw_trajectories
from lecture_utils.figures.style import too_small_texts, use_style
from lecture_utils.trajectories import trajectories

ANGLE = math.radians(30)
BASIS = torch.tensor([[math.cos(ANGLE), -math.sin(ANGLE)], [math.sin(ANGLE), math.cos(ANGLE)]], dtype=torch.float64)
H = BASIS @ torch.diag(torch.tensor([1.0, 100.0], dtype=torch.float64)) @ BASIS.T


def valley(p: torch.Tensor) -> torch.Tensor:
    return 0.5 * ((p @ H) * p).sum(-1)


def _runs() -> dict[str, dict]:
    start = (BASIS @ torch.tensor([-4.0, 0.5], dtype=torch.float64)).tolist()
    return {
        name: {"path": trajectories(name, valley, start, steps=40, lrs=[lr])[0], "lr": lr}
        for name, lr in (("sgd", 0.01), ("momentum", 0.005))
    }


def test_the_figure_fits_a_slide_and_spans_the_runs():
    use_style()
    runs = _runs()
    fig = draw_trajectories(runs, valley, BASIS)
    try:
        paths, curves = fig.axes
        assert fig.get_size_inches()[1] <= 4.5 and not too_small_texts(fig)
        ratios = torch.cat([valley(r["path"]) / valley(r["path"][0]) for r in runs.values()])
        low, high = curves.get_ylim()
        assert low < ratios.min().item() < 10 * low and high / 10 < ratios.max().item() < high
        # The first path drawn is SGD's, in the valley's axes: it starts 4 along and 0.5 across.
        along, across = paths.lines[0].get_data()
        assert along[0] == pytest.approx(-4.0) and across[0] == pytest.approx(0.5)
    finally:
        plt.close(fig)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="empty"):
        draw_trajectories({}, valley, BASIS)
    with pytest.raises(ValueError, match="orthonormal"):
        draw_trajectories(_runs(), valley, 2 * BASIS)
