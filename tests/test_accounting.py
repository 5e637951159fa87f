"""One memory vocabulary: a recipe's prediction against the bytes of real tensors, component by component."""

import pytest
import torch
from torch import nn

from lecture_utils.accounting import (
    COMPONENTS,
    RECIPES,
    MemoryBudget,
    Recipe,
    measure_memory,
    measure_state,
    plain_recipe,
    step_counter_bytes,
)
from lecture_utils.accounting_compare import compare_table, relative_errors
from lecture_utils.models import Cruncher, cruncher_activation_numel, cruncher_num_parameters
from lecture_utils.optim import OPTIMIZERS, AdaGrad, AdamW


def cruncher_step(dim, layers, batch, optimizer, dtype=torch.float32):
    model = Cruncher(dim, layers, generator=torch.Generator().manual_seed(0)).to(dtype)
    x = torch.randn(batch, dim, generator=torch.Generator().manual_seed(1)).to(dtype)
    opt = OPTIMIZERS[optimizer](model.parameters(), lr=0.01)
    return model, opt, measure_memory(model, opt, lambda: model(x).sum(), data=[x])


@pytest.mark.parametrize(
    ("name", "total", "split"),
    [
        ("fp32", 16, (4, 4, 8)),
        ("autocast bf16", 16, (4, 4, 8)),
        ("bf16 + fp32 master", 16, (2, 2, 12)),
        ("bf16 + fp32 grads", 18, (2, 4, 12)),
        ("bf16 + fp32 grad accumulation", 20, (2, 2, 16)),
        ("bf16 + fp32 Adam state", 12, (2, 2, 8)),
        ("pure bf16", 8, (2, 2, 4)),
    ],
)
def test_recipe_totals_and_zero_split(name, total, split):
    recipe = RECIPES[name]
    assert recipe.total == sum(recipe.bytes_per_param().values()) == sum(recipe.zero_split()) == total
    assert recipe.zero_split() == split
    assert set(recipe.bytes_per_param()) <= set(COMPONENTS) - {"activations"}
    assert recipe.formula().endswith(f"= {total}")


def test_the_standard_recipe_component_by_component():
    assert RECIPES["bf16 + fp32 master"].bytes_per_param() == {
        "parameters": 2,
        "gradients": 2,
        "master_weights": 4,
        "optimizer_state": 8,
    }


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_a_recipe_takes_the_state_count_from_the_optimizer_class(name):
    cls = OPTIMIZERS[name]
    assert plain_recipe(cls).total == (2 + cls.state_tensors) * 4
    assert plain_recipe(cls, torch.bfloat16).total == (2 + cls.state_tensors) * 2


def test_a_recipe_reads_the_count_each_class_states():
    assert plain_recipe(AdamW).state_tensors == 2 and plain_recipe(AdaGrad).state_tensors == 1


def test_a_recipe_needs_an_optimizer_that_states_its_count():
    with pytest.raises(TypeError, match="state tensors it keeps per parameter"):
        Recipe("torch sgd", torch.float32, torch.float32, torch.optim.SGD)


def test_the_lectures_tiny_example_is_496_bytes():
    budget = plain_recipe(AdaGrad).predict(cruncher_num_parameters(4, 2), cruncher_activation_numel(4, 2, 2))
    assert budget.component_bytes() == {"parameters": 144, "gradients": 144, "optimizer_state": 144, "activations": 64}
    assert budget.total == 4 * (36 + 16 + 36 + 36) == 496


@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
def test_prediction_equals_measurement(optimizer):
    dim, layers, batch = 48, 3, 10
    model, _, measured = cruncher_step(dim, layers, batch, optimizer)
    recipe = plain_recipe(OPTIMIZERS[optimizer])
    predicted = recipe.predict(cruncher_num_parameters(dim, layers), cruncher_activation_numel(dim, layers, batch))
    assert measured == predicted
    assert all(err == 0 for err in relative_errors(predicted, measured).values())
    # The measurement reads the tensors it claims to: cross-check two components by hand.
    assert measured.component_bytes()["parameters"] == 4 * sum(p.numel() for p in model.parameters())
    assert measured.component_bytes()["gradients"] == 4 * sum(p.grad.numel() for p in model.parameters())


def test_bf16_model_is_accounted_in_bf16():
    _, _, measured = cruncher_step(16, 2, 4, "adamw", torch.bfloat16)
    assert set(measured.parameters) == set(measured.optimizer_state) == set(measured.activations) == {torch.bfloat16}
    n, acts = cruncher_num_parameters(16, 2), cruncher_activation_numel(16, 2, 4)
    assert measured == plain_recipe(AdamW, torch.bfloat16).predict(n, acts)


def one_adamw_step(recipe: Recipe) -> tuple[nn.Module, torch.optim.Optimizer, list[torch.Tensor]]:
    """One torch.optim.AdamW step of a small model kept the way `recipe` says: master copies, accumulators."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4)).to(recipe.parameters)
    masters = [p.detach().to(recipe.master_weights).requires_grad_() for p in model.parameters()]
    optimizer = torch.optim.AdamW(masters if recipe.master_weights else model.parameters(), lr=1e-3)
    model(torch.randn(5, 8).to(recipe.parameters)).float().square().mean().backward()
    dtype = recipe.gradient_accumulator
    accumulators = [p.grad.to(dtype) for p in model.parameters()] if dtype else []
    if recipe.master_weights:
        for master, p in zip(masters, model.parameters(), strict=True):
            master.grad = p.grad.to(master.dtype)
    optimizer.step()
    for master in masters if recipe.master_weights else []:
        master.grad = None  # the fp32 gradient exists only during the step
    return model, optimizer, accumulators


@pytest.mark.parametrize("name", ["fp32", "bf16 + fp32 master", "bf16 + fp32 grad accumulation", "pure bf16"])
def test_measure_state_reads_what_the_recipe_predicts(name):
    model, optimizer, accumulators = one_adamw_step(RECIPES[name])
    measured = measure_state(model, optimizer, gradient_accumulator=accumulators)
    n = sum(p.numel() for p in model.parameters())
    assert measured == RECIPES[name].predict(n)
    assert measured.component_bytes() == {c: b * n for c, b in RECIPES[name].bytes_per_param().items()}


def test_torch_step_counters_are_bookkeeping_not_state_per_parameter():
    model = Cruncher(8, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    model(torch.randn(3, 8)).sum().backward()
    optimizer.step()
    measured = measure_state(model, optimizer).component_bytes()
    assert measured["optimizer_state"] == 2 * measured["parameters"]
    tensors = len(list(model.parameters()))
    assert step_counter_bytes(optimizer) == 4 * tensors  # one fp32 0-d step each


def test_a_loss_that_saves_the_output_adds_it_to_the_activations():
    model = Cruncher(8, 2)
    x, y = torch.randn(5, 8), torch.randn(5)
    opt = OPTIMIZERS["sgd"](model.parameters(), lr=0.01)
    measured = measure_memory(model, opt, lambda: nn.functional.mse_loss(model(x), y), data=[x, y])
    assert measured.component_bytes()["activations"] == 4 * (cruncher_activation_numel(8, 2, 5) + 5)


def test_relative_errors_and_table():
    predicted = plain_recipe(OPTIMIZERS["sgd"]).predict(100, 10)
    f32 = torch.float32
    measured = MemoryBudget(
        parameters={f32: 404}, gradients={f32: 400}, optimizer_state={f32: 8}, activations={f32: 40}
    )
    errors = relative_errors(predicted, measured)
    assert errors[("parameters", f32)] == pytest.approx(0.01)
    assert errors[("gradients", f32)] == 0
    assert errors[("optimizer_state", f32)] == float("inf")
    # A component that is empty in both (a 0-byte tensor, say) is no error at all.
    empty = MemoryBudget(parameters={f32: 400}, activations={f32: 0})
    assert relative_errors(plain_recipe(OPTIMIZERS["sgd"]).predict(100), empty)[("activations", f32)] == 0
    assert len(compare_table(predicted, measured).splitlines()) == 1 + len(errors) + 1  # header, entries, total


def test_measure_rejects_what_it_cannot_account_for():
    model = Cruncher(4, 1)
    opt = OPTIMIZERS["sgd"](model.parameters(), lr=0.1)
    x = torch.randn(2, 4)
    with pytest.raises(ValueError, match="scalar tensor"):
        measure_memory(model, opt, lambda: model(x), data=[x])
    with pytest.raises(ValueError, match="no parameters"):
        measure_state(nn.ReLU(), opt)
    model.head.to(torch.float64)
    with pytest.raises(ValueError, match="share one dtype"):
        measure_memory(model, opt, lambda: model(x).sum(), data=[x])


def test_any_state_shaped_like_its_parameter_is_optimizer_state():
    model = nn.Linear(4, 3)  # 15 parameters, 60 bytes
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    assert measure_state(model, optimizer).component_bytes() == {"parameters": 60}  # no step yet: no grads, no state
    model(torch.ones(2, 4)).sum().backward()
    optimizer.step()
    assert measure_state(model, optimizer).component_bytes() == {
        "parameters": 60,
        "gradients": 60,
        "optimizer_state": 60,
    }
