"""lecture_utils.napkin and the training-days figure against hand-computed values."""

import matplotlib.pyplot as plt
import pytest
from jaxtyping import TypeCheckError

from lecture_utils.figures.napkin import draw_training_days
from lecture_utils.napkin import (
    SECONDS_PER_DAY,
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


def test_full_utilization_is_allowed():
    assert training_days(86_400e15, 1, 1e15, 1.0) == pytest.approx(1.0)  # one day of one 1 PFLOP/s GPU


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


@pytest.mark.parametrize("kwargs", [{"mfus": (0.5, 1.5)}, {"gpu_counts": (8, 16.5)}, {"params": -1}])
def test_training_days_figure_rejects_bad_input_before_opening_a_figure(kwargs):
    figures = plt.get_fignums()
    with pytest.raises(TypeCheckError):
        draw_training_days(**kwargs)
    assert plt.get_fignums() == figures
