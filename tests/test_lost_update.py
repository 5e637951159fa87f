"""lecture_utils.lost_update (and its figure) against closed-form gradient descent and the recipes' known outcomes."""

import matplotlib.pyplot as plt
import pytest
import torch

from lecture_utils.accounting import RECIPES
from lecture_utils.figures.lost_update import plot_training_runs
from lecture_utils.figures.style import MAX_WIDTH_IN, STYLE, too_small_texts
from lecture_utils.lost_update import TRAINING_RECIPES, regression_data, train_regression


def test_regression_data_is_seeded_and_shaped():
    x, y = regression_data(samples=10, dim=3, seed=7)
    x2, y2 = regression_data(samples=10, dim=3, seed=7)
    assert x.shape == (10, 3) and y.shape == (10, 1)
    assert torch.equal(x, x2) and torch.equal(y, y2)
    assert not torch.equal(x, regression_data(samples=10, dim=3, seed=8)[0])


def test_fp32_training_matches_closed_form_gradient_descent():
    x, y = regression_data(samples=64, dim=4)
    run = train_regression(x, y, "fp32", steps=20, lr=0.05)
    xd, yd = x.double(), y.double()
    w = torch.zeros(4, 1, dtype=torch.float64)
    expected = []
    for _ in range(20):
        w -= 0.05 * 2 * xd.T @ (xd @ w - yd) / len(xd)  # d/dw of mean (xw - y)^2
        expected.append(((xd @ w - yd) ** 2).mean().item())
    torch.testing.assert_close(torch.tensor(run.losses), torch.tensor(expected), rtol=1e-4, atol=0)
    torch.testing.assert_close(run.weight.double(), w.T, rtol=1e-4, atol=1e-6)


def test_pure_bf16_stalls_where_master_weights_keep_learning():
    x, y = regression_data()
    threads = torch.get_num_threads()
    runs = {recipe: train_regression(x, y, recipe, steps=200) for recipe in TRAINING_RECIPES}
    assert torch.get_num_threads() == threads
    assert runs["pure bf16"].losses[-1] > 5 * runs["bf16 + fp32 master"].losses[-1]
    assert runs["pure bf16"].lost_fraction[-1] == 1.0
    assert abs(runs["autocast bf16"].losses[-1] / runs["fp32"].losses[-1] - 1) < 0.02
    fig = plot_training_runs(runs)
    assert len(fig.axes) == 2
    plt.close(fig)


def test_master_weight_run_scores_the_bf16_model_it_ships():
    x, y = regression_data(samples=64, dim=8)
    run = train_regression(x, y, "bf16 + fp32 master", steps=30)
    assert torch.equal(run.weight, run.weight.bfloat16().float())  # the model's bf16 weights, not the master
    assert run.losses[-1] == torch.nn.functional.mse_loss(x @ run.weight.T, y).item()


def test_training_runs_figure_reads_on_a_projector():
    x, y = regression_data(samples=32, dim=4)
    runs = {recipe: train_regression(x, y, recipe, steps=5) for recipe in TRAINING_RECIPES}
    with plt.rc_context(STYLE):
        fig = plot_training_runs(runs)
    assert fig.get_figwidth() <= MAX_WIDTH_IN
    assert fig.get_figheight() * STYLE["figure.dpi"] <= 600  # a slide's height at 150% zoom on a 1080p screen
    assert not too_small_texts(fig)
    columns = {round(ax.get_position().x0, 3) for ax in fig.axes}
    assert len(columns) <= 2, "more than two panels side by side: text too small to project"
    for ax in fig.axes:
        assert ax.get_xlabel() and ax.get_ylabel(), ax.get_title()
    plt.close(fig)


def test_plot_training_runs_needs_every_recipe():
    with pytest.raises(ValueError, match="missing runs"):
        plot_training_runs({})


def test_the_trained_recipes_are_priced_recipes():
    assert set(TRAINING_RECIPES) <= set(RECIPES)
