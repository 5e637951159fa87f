import pytest

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


@pytest.mark.parametrize("mfu", [0, -0.1, 1.01, 5])
def test_mfu_must_be_a_fraction(mfu):
    with pytest.raises(ValueError, match="mfu"):
        training_days(1e24, 8, 1e15, mfu)


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
