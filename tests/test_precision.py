"""lecture_utils.precision against hand-computed values, torch.optim, and rounding to nearest."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest
import torch
from torch import nn

from lecture_utils.dtypes import ulp
from lecture_utils.figures.style import MAX_WIDTH_IN, STYLE, too_small_texts
from lecture_utils.figures.lost_update import plot_training_runs
from lecture_utils.precision import (
    RECIPES,
    TRAINING_RECIPES,
    autocast_dtypes,
    dequantize_fp8,
    fp8_matmul_available,
    MasterWeights,
    quantize_fp8,
    Recipe,
    regression_data,
    scaled_fp8_matmul,
    train_regression,
    training_state_bytes,
)

# --- autocast -------------------------------------------------------------------------------


def test_autocast_dtypes_on_cpu():
    dtypes = autocast_dtypes("cpu")
    assert dtypes["h = x @ w"] == torch.bfloat16
    assert dtypes["cross_entropy(h, target)"] == torch.float32
    assert dtypes["softmax(h, dtype=float32)"] == torch.float32
    assert dtypes["h + x"] == torch.float32


def test_autocast_dtypes_follow_the_requested_low_precision():
    assert autocast_dtypes("cpu", torch.float16)["h = x @ w"] == torch.float16


def test_autocast_dtypes_rejects_bad_input():
    with pytest.raises(ValueError, match="'cpu' and 'cuda'"):
        autocast_dtypes("meta")
    with pytest.raises(ValueError, match="bfloat16 or torch.float16"):
        autocast_dtypes("cpu", torch.float32)


# --- recipes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [("fp32", 4 + 4 + 4 + 4), ("autocast bf16", 16), ("bf16 + fp32 master", 2 + 2 + 4 + 4 + 4),
     ("bf16 + fp32 Adam state", 2 + 2 + 4 + 4), ("pure bf16", 2 + 2 + 2 + 2),
     ("bf16 + fp32 grads", 2 + 4 + 4 + 4 + 4), ("bf16 + fp32 grad accumulation", 2 + 2 + 4 + 4 + 4 + 4)],
)
def test_recipe_bytes_per_param(name, expected):
    assert RECIPES[name].bytes_per_param == expected


def test_recipe_formula_writes_out_the_sum():
    assert RECIPES["bf16 + fp32 master"].formula() == "params 2 + grads 2 + master 4 + adam_m 4 + adam_v 4 = 16"


def test_recipe_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown component 'momentum'"):
        Recipe("x", {"momentum": torch.float32}, "")
    with pytest.raises(TypeError, match="floating torch.dtype"):
        Recipe("x", {"params": "float32"}, "")
    with pytest.raises(TypeError, match="floating torch.dtype"):
        Recipe("x", {"params": torch.int8}, "")
    with pytest.raises(ValueError, match="keeps no tensors"):
        Recipe("x", {}, "")


# --- measured training state ----------------------------------------------------------------


def _linear(dtype: torch.dtype = torch.float32) -> nn.Linear:
    torch.manual_seed(0)
    return nn.Linear(4, 3).to(dtype)  # 12 weights + 3 biases = 15 parameters


def _backward(model: nn.Module) -> None:
    x = torch.randn(2, 4, generator=torch.Generator().manual_seed(1)).to(next(model.parameters()).dtype)
    model(x).float().square().sum().backward()


def test_training_state_bytes_fp32_adamw():
    model = _linear()
    optimizer = torch.optim.AdamW(model.parameters())
    assert training_state_bytes(model, optimizer) == {"params": 60, "grads": 0}
    _backward(model)
    optimizer.step()
    assert training_state_bytes(model, optimizer) == {"params": 60, "grads": 60, "adam_m": 60, "adam_v": 60}


def test_training_state_bytes_keeps_other_state_under_its_own_name():
    model = _linear()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    _backward(model)
    optimizer.step()
    assert training_state_bytes(model, optimizer)["momentum_buffer"] == 60


def test_training_state_bytes_counts_master_copies():
    model = _linear(torch.bfloat16)
    master = MasterWeights(model)
    optimizer = torch.optim.AdamW(master.params)
    _backward(model)
    master.step(optimizer)
    assert training_state_bytes(model, optimizer) == {
        "params": 30, "grads": 30, "master": 60, "adam_m": 60, "adam_v": 60,
    }


def test_training_state_bytes_rejects_bad_input():
    model = _linear()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(TypeError, match="torch.nn.Module"):
        training_state_bytes("model", optimizer)
    with pytest.raises(TypeError, match="torch.optim.Optimizer"):
        training_state_bytes(model, "adam")
    with pytest.raises(ValueError, match="no parameters"):
        training_state_bytes(nn.ReLU(), optimizer)


# --- master weights -------------------------------------------------------------------------


def test_master_weights_step_matches_fp32_sgd_on_the_same_gradient():
    model = _linear(torch.bfloat16)
    reference = [nn.Parameter(p.detach().float()) for p in model.parameters()]
    master = MasterWeights(model)
    optimizer = torch.optim.SGD(master.params, lr=0.1, momentum=0.9)
    reference_optimizer = torch.optim.SGD(reference, lr=0.1, momentum=0.9)
    for _ in range(3):
        model.zero_grad()
        _backward(model)
        for r, p in zip(reference, model.parameters()):
            r.grad = p.grad.float()
        master.step(optimizer)
        reference_optimizer.step()
    for p, m, r in zip(model.parameters(), master.params, reference):
        torch.testing.assert_close(m, r.detach(), rtol=0, atol=0)
        assert p.dtype == torch.bfloat16 and torch.equal(p.detach(), r.detach().bfloat16())
        assert m.grad is None


def test_master_weights_keep_updates_that_bf16_rounds_away():
    # At w = 1 half a bf16 ulp is 2^-8 ~ 0.0039: a 1e-3 step is lost in bf16, kept in the fp32 master.
    pure = nn.Parameter(torch.ones(1, dtype=torch.bfloat16))
    model = nn.Linear(1, 1, bias=False).to(torch.bfloat16)
    with torch.no_grad():
        model.weight.fill_(1.0)
    master = MasterWeights(model)
    master_opt, pure_opt = torch.optim.SGD(master.params, lr=1e-3), torch.optim.SGD([pure], lr=1e-3)
    for _ in range(5):
        model.weight.grad = torch.full_like(model.weight, -1.0)
        pure.grad = torch.full_like(pure, -1.0)
        master.step(master_opt)
        pure_opt.step()
    assert pure.item() == 1.0
    torch.testing.assert_close(master.params[0].item(), 1.005, rtol=0, atol=1e-6)
    assert model.weight.item() == 1 + 2**-7  # 1.005 rounds to the next bf16 number above 1


def test_master_weights_rejects_bad_input():
    model = _linear(torch.bfloat16)
    master = MasterWeights(model)
    with pytest.raises(ValueError, match="build it over MasterWeights.params"):
        master.step(torch.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(TypeError, match="torch.nn.Module"):
        MasterWeights([torch.ones(2)])
    with pytest.raises(TypeError, match="floating torch.dtype"):
        MasterWeights(model, torch.int32)
    with pytest.raises(ValueError, match="no parameters"):
        MasterWeights(nn.ReLU())


# --- the regression experiment --------------------------------------------------------------


def test_regression_data_is_seeded_and_shaped():
    x, y = regression_data(samples=10, dim=3, seed=7)
    x2, y2 = regression_data(samples=10, dim=3, seed=7)
    assert x.shape == (10, 3) and y.shape == (10, 1)
    assert torch.equal(x, x2) and torch.equal(y, y2)
    assert not torch.equal(x, regression_data(samples=10, dim=3, seed=8)[0])


def test_regression_data_rejects_bad_input():
    with pytest.raises(ValueError, match="samples must be positive"):
        regression_data(samples=0)
    with pytest.raises(TypeError, match="dim must be an int"):
        regression_data(dim=2.5)
    with pytest.raises(ValueError, match="noise must be >= 0"):
        regression_data(noise=-1.0)
    with pytest.raises(TypeError, match="noise must be a number"):
        regression_data(noise="0.1")


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
    assert len(fig.axes) == 3
    plt.close(fig)


def test_training_runs_figure_reads_on_a_projector():
    x, y = regression_data(samples=32, dim=4)
    runs = {recipe: train_regression(x, y, recipe, steps=5) for recipe in TRAINING_RECIPES}
    with plt.rc_context(STYLE):
        fig = plot_training_runs(runs)
    assert fig.get_figwidth() <= MAX_WIDTH_IN
    assert not too_small_texts(fig)
    columns = {round(ax.get_position().x0, 3) for ax in fig.axes}
    assert len(columns) == 1, "panels side by side: stack them"
    for ax in fig.axes:
        assert ax.get_xlabel() and ax.get_ylabel(), ax.get_title()
    plt.close(fig)


def test_master_weight_run_scores_the_bf16_model_it_ships():
    x, y = regression_data(samples=64, dim=8)
    run = train_regression(x, y, "bf16 + fp32 master", steps=30)
    assert torch.equal(run.weight, run.weight.bfloat16().float())  # the model's bf16 weights, not the master
    assert run.losses[-1] == torch.nn.functional.mse_loss(x @ run.weight.T, y).item()


def test_train_regression_rejects_bad_input():
    x, y = regression_data(samples=8, dim=2)
    with pytest.raises(ValueError, match="unknown recipe 'fp8'"):
        train_regression(x, y, "fp8")
    with pytest.raises(ValueError, match="shape"):
        train_regression(x, y[:4], "fp32")
    with pytest.raises(ValueError, match="steps must be positive"):
        train_regression(x, y, "fp32", steps=0)
    with pytest.raises(TypeError, match="steps must be an int"):
        train_regression(x, y, "fp32", steps=10.0)
    with pytest.raises(ValueError, match="lr must be positive"):
        train_regression(x, y, "fp32", lr=-0.1)


def test_plot_training_runs_needs_every_recipe():
    with pytest.raises(ValueError, match="missing runs"):
        plot_training_runs({})


# --- fp8 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_quantize_fp8_maps_amax_to_max_and_rounds_to_nearest(dtype):
    x = 1e-4 * torch.randn(1000, generator=torch.Generator().manual_seed(0))
    q, scale = quantize_fp8(x, dtype)
    fmax = torch.finfo(dtype).max
    assert q.dtype == dtype and scale.dtype == torch.float32
    torch.testing.assert_close(scale, x.abs().max() / fmax)
    assert q.float().abs().max().item() == fmax
    # Round to nearest: no value is further from its scaled original than half an ulp there.
    scaled = x / scale
    assert ((q.float() - scaled).abs() <= ulp(scaled, dtype) / 2 + 1e-12).all()
    torch.testing.assert_close(dequantize_fp8(q, scale), q.float() * scale)


def test_quantize_fp8_of_zeros_uses_unit_scale():
    q, scale = quantize_fp8(torch.zeros(3))
    assert scale.item() == 1.0 and (q.float() == 0).all()


def test_fp8_helpers_reject_bad_input():
    with pytest.raises(TypeError, match="floating-point tensor"):
        quantize_fp8(torch.arange(3))
    with pytest.raises(ValueError, match="fp8 dtype"):
        quantize_fp8(torch.ones(3), torch.bfloat16)
    with pytest.raises(ValueError, match="finite"):
        quantize_fp8(torch.tensor([1.0, float("inf")]))
    with pytest.raises(ValueError, match="non-empty"):
        quantize_fp8(torch.empty(0))
    with pytest.raises(TypeError, match="fp8 tensor"):
        dequantize_fp8(torch.ones(3), torch.tensor(1.0))


def test_fp8_matmul_is_not_available_on_cpu():
    assert fp8_matmul_available("cpu") is False


def test_scaled_fp8_matmul_equals_the_dequantized_product():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(32, 64, generator=g), torch.randn(64, 16, generator=g)
    reference = dequantize_fp8(*quantize_fp8(a)) @ dequantize_fp8(*quantize_fp8(b))
    try:
        out = scaled_fp8_matmul(a, b, out_dtype=torch.float32)
    except (RuntimeError, NotImplementedError) as err:  # builds without a CPU kernel for it
        pytest.skip(f"torch._scaled_mm is not available on this CPU build: {err}")
    torch.testing.assert_close(out, reference, rtol=1e-5, atol=1e-4)


def test_scaled_fp8_matmul_accepts_a_transposed_operand():
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(64, 32, generator=g).t(), torch.randn(64, 16, generator=g)  # a is column-major
    reference = dequantize_fp8(*quantize_fp8(a)) @ dequantize_fp8(*quantize_fp8(b))
    try:
        out = scaled_fp8_matmul(a, b, out_dtype=torch.float32)
    except (RuntimeError, NotImplementedError) as err:
        pytest.skip(f"torch._scaled_mm is not available on this CPU build: {err}")
    torch.testing.assert_close(out, reference, rtol=1e-5, atol=1e-4)


def test_scaled_fp8_matmul_rejects_bad_shapes():
    with pytest.raises(ValueError, match="multiple of 16"):
        scaled_fp8_matmul(torch.ones(16, 24), torch.ones(24, 16))
    with pytest.raises(ValueError, match=r"expected \(m, k\) @ \(k, n\)"):
        scaled_fp8_matmul(torch.ones(16, 32), torch.ones(16, 16))
    with pytest.raises(TypeError, match="expected two tensors"):
        scaled_fp8_matmul([[1.0] * 16] * 16, torch.ones(16, 16))
