"""The memory budget's prediction against the bytes of real tensors after a real training step."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from lecture_utils.accounting import (
    MemoryBudget,
    bytes_per_parameter,
    compare_table,
    measure_memory,
    predict_memory,
    relative_errors,
)
from lecture_utils.models import Cruncher, cruncher_activation_numel, cruncher_num_parameters
from lecture_utils.optim import OPTIMIZERS


def cruncher_step(dim, layers, batch, optimizer, dtype=torch.float32):
    model = Cruncher(dim, layers, generator=torch.Generator().manual_seed(0)).to(dtype)
    x = torch.randn(batch, dim, generator=torch.Generator().manual_seed(1)).to(dtype)
    opt = OPTIMIZERS[optimizer](model.parameters(), lr=0.01)
    return model, opt, measure_memory(model, opt, lambda: model(x).sum(), data=[x])


@pytest.mark.parametrize(("optimizer", "expected"), [("sgd", 8), ("momentum", 12), ("adagrad", 12), ("adam", 16), ("adamw", 16)])
def test_bytes_per_parameter_fp32(optimizer, expected):
    assert bytes_per_parameter(optimizer) == expected


def test_bytes_per_parameter_follows_the_dtype():
    assert bytes_per_parameter("adamw", torch.bfloat16) == 8


def test_the_lectures_tiny_example_is_496_bytes():
    budget = predict_memory(cruncher_num_parameters(4, 2), cruncher_activation_numel(4, 2, 2), "adagrad")
    assert budget.component_bytes() == {"parameters": 144, "gradients": 144, "optimizer_state": 144, "activations": 64}
    assert budget.total == 4 * (36 + 16 + 36 + 36) == 496


@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
def test_prediction_equals_measurement(optimizer):
    dim, layers, batch = 48, 3, 10
    model, opt, measured = cruncher_step(dim, layers, batch, optimizer)
    predicted = predict_memory(cruncher_num_parameters(dim, layers), cruncher_activation_numel(dim, layers, batch), optimizer)
    assert measured == predicted
    assert all(err == 0 for err in relative_errors(predicted, measured).values())
    # The measurement reads the tensors it claims to: cross-check two components by hand.
    assert measured.component_bytes()["parameters"] == 4 * sum(p.numel() for p in model.parameters())
    assert measured.component_bytes()["gradients"] == 4 * sum(p.grad.numel() for p in model.parameters())


def test_bf16_model_is_accounted_in_bf16():
    _, _, measured = cruncher_step(16, 2, 4, "adamw", torch.bfloat16)
    assert set(measured.parameters) == set(measured.optimizer_state) == set(measured.activations) == {torch.bfloat16}
    assert measured == predict_memory(cruncher_num_parameters(16, 2), cruncher_activation_numel(16, 2, 4), "adamw",
                                      dtype=torch.bfloat16)


def test_torch_adam_step_counters_show_up_as_extra_state():
    model = Cruncher(8, 2)
    x = torch.randn(3, 8)
    measured = measure_memory(model, torch.optim.Adam(model.parameters(), lr=0.01), lambda: model(x).sum(), data=[x])
    params = measured.component_bytes()["parameters"]
    assert measured.component_bytes()["optimizer_state"] == 2 * params + 4 * len(list(model.parameters()))


def test_a_loss_that_saves_the_output_adds_it_to_the_activations():
    model = Cruncher(8, 2)
    x, y = torch.randn(5, 8), torch.randn(5)
    opt = OPTIMIZERS["sgd"](model.parameters(), lr=0.01)
    measured = measure_memory(model, opt, lambda: nn.functional.mse_loss(model(x), y), data=[x, y])
    assert measured.component_bytes()["activations"] == 4 * (cruncher_activation_numel(8, 2, 5) + 5)


def test_relative_errors_and_table():
    predicted = predict_memory(100, 10, "sgd")
    measured = MemoryBudget({torch.float32: 404}, {torch.float32: 400}, {torch.float32: 8}, {torch.float32: 40})
    errors = relative_errors(predicted, measured)
    assert errors[("parameters", torch.float32)] == pytest.approx(0.01)
    assert errors[("gradients", torch.float32)] == 0
    assert errors[("optimizer_state", torch.float32)] == float("inf")
    # A component that is empty in both (a 0-byte tensor, say) is no error at all.
    empty = MemoryBudget({torch.float32: 400}, {}, {}, {torch.float32: 0})
    assert relative_errors(predict_memory(100, 0, "sgd"), empty)[("activations", torch.float32)] == 0
    table = compare_table(predicted, measured)
    assert "1.00%" in table and table.splitlines()[-1].startswith("total")


@pytest.mark.parametrize(
    ("fn", "args", "kwargs", "error", "match"),
    [
        (bytes_per_parameter, ("lion",), {}, ValueError, "unknown optimizer 'lion'"),
        (predict_memory, (-1, 0, "sgd"), {}, ValueError, "num_params cannot be negative"),
        (predict_memory, (10, 2.5, "sgd"), {}, TypeError, "activation_numel must be an int"),
        (predict_memory, (10, 2, "SGD"), {}, ValueError, "unknown optimizer"),
        (relative_errors, ({}, {}), {}, TypeError, "two MemoryBudget"),
    ],
)
def test_bad_input_is_rejected(fn, args, kwargs, error, match):
    with pytest.raises(error, match=match):
        fn(*args, **kwargs)


def test_measure_rejects_bad_models_and_losses():
    model = Cruncher(4, 1)
    opt = OPTIMIZERS["sgd"](model.parameters(), lr=0.1)
    x = torch.randn(2, 4)
    with pytest.raises(TypeError, match="nn.Module"):
        measure_memory(lambda t: t, opt, lambda: model(x).sum())
    with pytest.raises(TypeError, match="torch.optim.Optimizer"):
        measure_memory(model, "adam", lambda: model(x).sum())
    with pytest.raises(ValueError, match="scalar tensor"):
        measure_memory(model, opt, lambda: model(x), data=[x])
    model.head.to(torch.float64)
    with pytest.raises(ValueError, match="share one dtype"):
        measure_memory(model, opt, lambda: model(x).sum(), data=[x])
