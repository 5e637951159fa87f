"""The lost-update experiment of notebook 08: one small regression trained under four recipes.

A bias-free linear model learns y = x w* + noise with full-batch SGD from zero weights. In pure
bf16 every update below half an ulp of its weight rounds away; fp32 master weights keep them;
autocast's fp32 parameters are master weights already. Each run records the loss of the weights
the model itself holds and the share of weights whose update was lost in each step.
"""

from dataclasses import dataclass
from typing import Literal, get_args

import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor, nn

from lecture_utils.checks import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt
from lecture_utils.device import torch_threads
from lecture_utils.master_weights import MasterWeights

# Four of accounting.RECIPES, by the same names: what each costs per parameter is priced there.
TrainingRecipe = Literal["fp32", "autocast bf16", "bf16 + fp32 master", "pure bf16"]
TRAINING_RECIPES: tuple[str, ...] = get_args(TrainingRecipe)


@dataclass(frozen=True)
class RegressionRun:
    """One run: the fp32 loss of the model's own weights after each step and the share of updates lost (notebook 08)."""

    recipe: TrainingRecipe
    losses: list[float]
    lost_fraction: list[float]
    weight: Float[Tensor, "1 dim"]


def regression_data(
    samples: PositiveInt = 512, dim: PositiveInt = 32, noise: NonNegativeFloat = 0.1, seed: NonNegativeInt = 0
) -> tuple[Float[Tensor, "samples dim"], Float[Tensor, "samples 1"]]:
    """Inputs and targets of y = x w* + noise, drawn on the CPU from a seeded generator (notebook 08)."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, dim, generator=generator)
    w_true = torch.randn(dim, 1, generator=generator)
    return x, x @ w_true + noise * torch.randn(samples, 1, generator=generator)


def train_regression(
    x: Float[Tensor, "samples dim"],
    y: Float[Tensor, "samples 1"],
    recipe: TrainingRecipe,
    *,
    steps: PositiveInt = 300,
    lr: PositiveFloat = 0.02,
) -> RegressionRun:
    """Full-batch SGD on a bias-free linear model from zero weights, under one of TRAINING_RECIPES (notebook 08)."""
    # The ops here are tiny: on a CPU, OpenMP's fork and barrier per op cost more than the arithmetic
    # (a 512 x 32 bf16 matmul takes milliseconds on two busy cores, microseconds on one).
    with torch_threads(1 if x.device.type == "cpu" else None):
        return _train(x, y, recipe, steps, lr)


def _train(
    x: Float[Tensor, "samples dim"], y: Float[Tensor, "samples 1"], recipe: TrainingRecipe, steps: int, lr: float
) -> RegressionRun:
    model = nn.Linear(x.shape[1], 1, bias=False, device=x.device)
    nn.init.zeros_(model.weight)
    master = None
    if recipe in ("pure bf16", "bf16 + fp32 master"):
        model.to(torch.bfloat16)
    if recipe == "bf16 + fp32 master":
        master = MasterWeights(model)
        optimizer = torch.optim.SGD(master.params, lr=lr)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    held = master.params[0] if master else model.weight  # the weights the optimizer updates
    compute = model.weight.dtype
    losses, lost = [], []
    for _ in range(steps):
        model.zero_grad(set_to_none=True)
        with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=recipe == "autocast bf16"):
            loss = F.mse_loss(model(x.to(compute)), y.to(compute))
        loss.backward()
        wanted = model.weight.grad != 0
        before = held.detach().clone()
        if master:
            master.step(optimizer)
        else:
            optimizer.step()
        unchanged = (held.detach() == before) & wanted
        lost.append(unchanged.sum().item() / max(wanted.sum().item(), 1))
        # The loss of the model itself (with master weights: their bf16 rounding), so the recipes
        # compare the weights each one would ship, all scored in fp32.
        with torch.no_grad():
            losses.append(F.mse_loss(x @ model.weight.float().T, y).item())
    return RegressionRun(recipe, losses, lost, model.weight.detach().float().clone())
