"""Initialization and the Cruncher against hand-computed values and independent references."""

from __future__ import annotations

import math

import pytest
import torch

from lecture_utils.memory import saved_tensor_bytes
from lecture_utils.models import (
    Cruncher,
    Linear,
    cruncher_activation_numel,
    cruncher_num_parameters,
    scaled_init,
    truncated_normal_std,
)


def test_truncated_normal_std_matches_numerical_integration():
    for cut in (0.5, 2.0, 3.0):
        z = torch.linspace(-cut, cut, 200_001, dtype=torch.float64)
        density = torch.exp(-z * z / 2)
        variance = torch.trapezoid(z * z * density, z) / torch.trapezoid(density, z)
        assert truncated_normal_std(cut) == pytest.approx(variance.sqrt().item(), rel=1e-9)
    with pytest.raises(ValueError, match="cut must be positive"):
        truncated_normal_std(0.0)


def test_scaled_init_has_std_one_over_sqrt_fan_in():
    w = scaled_init(1024, 512, truncate=None, generator=torch.Generator().manual_seed(0))
    assert w.shape == (1024, 512)
    assert abs(w.std().item() * math.sqrt(1024) - 1) < 0.01
    assert (w.abs() * math.sqrt(1024)).max() > 4  # 512k untruncated draws: outliers beyond 4 std exist


def test_truncation_cuts_in_units_of_std_and_matches_the_closed_form():
    w = scaled_init(1024, 512, truncate=2.0, generator=torch.Generator().manual_seed(0))
    z = w * math.sqrt(1024)
    assert z.abs().max() <= 2.0
    assert abs(z.std().item() - truncated_normal_std(2.0)) < 0.005  # 0.7737, clearly below 1


def test_scaled_init_is_reproducible_from_a_generator():
    a = scaled_init(8, 3, generator=torch.Generator().manual_seed(5))
    b = scaled_init(8, 3, generator=torch.Generator().manual_seed(5))
    assert torch.equal(a, b)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(d_in=0, d_out=3), ValueError, "d_in must be positive"),
        (dict(d_in=4, d_out=2.0), TypeError, "d_out must be an int"),
        (dict(d_in=4, d_out=2, truncate=-3.0), ValueError, "truncate must be positive"),
        (dict(d_in=4, d_out=2, truncate="3"), TypeError, "truncate must be a number"),
    ],
)
def test_scaled_init_rejects_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        scaled_init(**kwargs)


def test_linear_is_x_at_w_and_checks_the_width():
    layer = Linear(5, 3, generator=torch.Generator().manual_seed(0))
    x = torch.randn(2, 7, 5)
    torch.testing.assert_close(layer(x), torch.einsum("b t i, i o -> b t o", x, layer.weight))
    with pytest.raises(ValueError, match="last dimension 5"):
        layer(torch.randn(2, 4))


@pytest.mark.parametrize(("dim", "layers", "expected"), [(64, 2, 8256), (4, 2, 36), (10, 0, 10)])
def test_cruncher_parameter_count(dim, layers, expected):
    model = Cruncher(dim, layers)
    assert sum(p.numel() for p in model.parameters()) == cruncher_num_parameters(dim, layers) == expected


def test_cruncher_forward_is_a_chain_of_matmuls():
    model = Cruncher(6, 3, generator=torch.Generator().manual_seed(0))
    x = torch.randn(4, 6)
    by_hand = x
    for w in [layer.weight for layer in model.layers] + [model.head.weight]:
        by_hand = by_hand @ w
    out = model(x)
    assert out.shape == (4,)
    torch.testing.assert_close(out, by_hand[:, 0])


@pytest.mark.parametrize(("dim", "layers", "batch"), [(4, 2, 2), (32, 3, 5), (16, 0, 4)])
def test_activation_count_equals_what_autograd_saves(dim, layers, batch):
    model = Cruncher(dim, layers)
    x = torch.randn(batch, dim)
    saved = saved_tensor_bytes(lambda: model(x).sum(), exclude=[*model.parameters(), x])
    assert saved == 4 * cruncher_activation_numel(dim, layers, batch)


@pytest.mark.parametrize(
    ("fn", "args", "error"),
    [
        (Cruncher, (0, 2), ValueError),
        (Cruncher, (4, -1), ValueError),
        (cruncher_num_parameters, (4, 1.5), TypeError),
        (cruncher_activation_numel, (4, 2, 0), ValueError),
        (cruncher_activation_numel, (4, True, 2), TypeError),
    ],
)
def test_cruncher_helpers_reject_bad_sizes(fn, args, error):
    with pytest.raises(error):
        fn(*args)
