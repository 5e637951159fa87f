"""lecture_utils.napkin and the training-days figure against hand-computed values."""

import matplotlib.pyplot as plt
import pytest

from lecture_utils.figures.napkin import draw_training_days
from lecture_utils.napkin import (
    SECONDS_PER_DAY,
    check_mfu,
    cluster_flops_per_day,
    largest_model_params,
    training_days,
    training_flops,
)

H100_BF16_DENSE = 989.5e12  # H100 SXM datasheet, without 2:4 sparsity


def test_seventy_b_on_fifteen_t_tokens():
    flops = training_flops(70e9, 15e12)
    assert flops == pytest.approx(6.3e24)
    per_day = cluster_flops_per_day(1024, H100_BF16_DENSE, 0.5)
    assert per_day == pytest.approx(4.377e22, rel=1e-3)
    assert training_days(flops, 1024, H100_BF16_DENSE, 0.5) == pytest.approx(143.9, abs=0.05)


def test_days_scale_inversely_with_mfu_and_gpus():
    base = training_days(1e24, 100, 1e15, 0.5)
    assert training_days(1e24, 100, 1e15, 0.25) == pytest.approx(2 * base)
    assert training_days(1e24, 200, 1e15, 0.5) == pytest.approx(base / 2)


def test_two_weeks_of_eight_h100s_uses_fourteen_days():
    assert cluster_flops_per_day(8, H100_BF16_DENSE, 1.0) * 14 == pytest.approx(9.58e21, rel=1e-3)
    assert SECONDS_PER_DAY * 14 == 1_209_600


def test_largest_model_with_adamw():
    assert largest_model_params(8 * 80e9, 16) == pytest.approx(4.0e10)
    assert largest_model_params(8 * 80 * 2**30, 16) == pytest.approx(42.95e9, rel=1e-3)
    assert largest_model_params(8 * 80e9, 12) == pytest.approx(53.3e9, rel=1e-3)


@pytest.mark.parametrize("mfu", [0, -0.1, 1.01, 5, float("nan")])
def test_mfu_must_be_a_fraction(mfu):
    with pytest.raises(ValueError, match="mfu"):
        training_days(1e24, 8, 1e15, mfu)
    with pytest.raises(ValueError, match="mfu"):
        check_mfu(mfu)


def test_full_utilization_is_allowed():
    check_mfu(1.0)
    assert training_days(86_400e15, 1, 1e15, 1.0) == pytest.approx(1.0)  # one day of one 1 PFLOP/s GPU


@pytest.mark.parametrize(
    "call",
    [
        lambda: training_flops(0, 1e12),
        lambda: training_flops(1e9, -5),
        lambda: cluster_flops_per_day(0, 1e15, 0.5),
        lambda: training_days(-1, 8, 1e15, 0.5),
        lambda: largest_model_params(80e9, 0),
    ],
)
def test_non_positive_inputs_are_rejected(call):
    with pytest.raises(ValueError, match="must be positive"):
        call()


def test_non_numbers_are_rejected():
    with pytest.raises(TypeError, match="must be a number"):
        training_flops("70B", 15e12)


def test_training_days_figure_plots_the_napkin_answer():
    fig = draw_training_days(70e9, 15e12, gpu_counts=(512, 1024), mfus=(0.3, 0.5), peak_flops_per_gpu=H100_BF16_DENSE)
    by_mfu, by_gpus = fig.axes
    mfu_line = by_mfu.lines[1]  # 1024 GPUs
    hand = 6 * 70e9 * 15e12 / (1024 * H100_BF16_DENSE * 86_400)  # days at MFU 1
    assert mfu_line.get_xdata()[-1] == pytest.approx(0.5)
    assert mfu_line.get_ydata()[-1] == pytest.approx(hand / 0.5)
    assert mfu_line.get_ydata()[0] == pytest.approx(hand / 0.3)
    assert by_gpus.lines[0].get_ydata()[0] == pytest.approx(2 * hand / 0.3)  # 512 GPUs at MFU 0.3
    plt.close(fig)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"gpu_counts": ()}, ValueError, "at least one GPU count"),
        ({"mfus": []}, ValueError, "at least one GPU count and one MFU"),
        ({"gpu_counts": (0, 8)}, ValueError, "GPU count must be positive"),
        ({"gpu_counts": (8.5,)}, TypeError, "GPU count must be an int"),
        ({"mfus": (0.5, 1.5)}, ValueError, "mfu is a fraction of peak"),
        ({"params": -1}, ValueError, "params must be positive"),
        ({"peak_flops_per_gpu": 0}, ValueError, "peak_flops_per_gpu must be positive"),
    ],
)
def test_training_days_figure_rejects_bad_input(kwargs, error, match):
    figures = plt.get_fignums()
    with pytest.raises(error, match=match):
        draw_training_days(**kwargs)
    assert plt.get_fignums() == figures  # rejected before a figure is opened
