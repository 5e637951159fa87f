"""Paths of an optimizer on a small loss surface, one per learning rate, in one run (notebook 06)."""

from collections.abc import Callable, Sequence
from typing import Any, Literal

import torch
from jaxtyping import Float

from lecture_utils.checks import NonNegativeInt
from lecture_utils.optim import OPTIMIZERS


def trajectories(
    optimizer: Literal["sgd", "momentum", "adagrad", "rmsprop", "adam", "adamw"] | type[torch.optim.Optimizer],
    loss_fn: Callable[[Float[torch.Tensor, "... dim"]], Float[torch.Tensor, "..."]],
    start: Sequence[float],
    *,
    steps: NonNegativeInt,
    lrs: Sequence[float],
    **hyperparameters: Any,
) -> Float[torch.Tensor, "lr steps_plus_1 dim"]:
    """The points an optimizer visits minimizing `loss_fn` from `start`, once per learning rate (notebook 06).

    Each learning rate gets its own copy of the point in its own parameter group, so one
    optimizer runs the whole sweep. Row [i, t] is the point after t steps with lrs[i].
    """
    cls = OPTIMIZERS[optimizer] if isinstance(optimizer, str) else optimizer
    if len(lrs) == 0:
        raise ValueError("lrs must hold at least one learning rate: the sweep draws one path per rate")
    points = [torch.nn.Parameter(torch.tensor(start, dtype=torch.float64)) for _ in lrs]
    opt = cls([{"params": [p], "lr": lr} for p, lr in zip(points, lrs, strict=True)], lr=lrs[0], **hyperparameters)
    path = [torch.stack(points).detach()]
    for _ in range(steps):
        opt.zero_grad()
        loss_fn(torch.stack(points)).sum().backward()
        opt.step()
        path.append(torch.stack(points).detach())
    return torch.stack(path, dim=1)
