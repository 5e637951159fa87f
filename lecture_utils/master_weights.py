"""fp32 master weights for a low-precision model (notebook 08).

An update smaller than half an ulp of a bf16 weight rounds away. Master weights keep an fp32
copy of every parameter: the optimizer updates the copy, which keeps the small updates, and the
model receives the copy rounded to its own dtype after each step.
"""

import torch
from torch import nn


class MasterWeights:
    """fp32 copies of a low-precision model's parameters: the optimizer updates them, the model gets them rounded.

    Build the optimizer over `MasterWeights.params`, then call `step(optimizer)` where a plain loop
    calls `optimizer.step()` (notebook 08).
    """

    def __init__(self, model: nn.Module, dtype: torch.dtype = torch.float32) -> None:
        if not dtype.is_floating_point:
            raise TypeError(f"master copies keep the bits that rounding drops: give a floating dtype, got {dtype}")
        self.model = model
        self.params = [p.detach().to(dtype, copy=True) for p in model.parameters()]

    @torch.no_grad()
    def step(self, optimizer: torch.optim.Optimizer) -> None:
        """Hand the model's gradients to the master copies, step the optimizer on them, copy the result back."""
        optimized = {id(p) for group in optimizer.param_groups for p in group["params"]}
        if optimized != {id(p) for p in self.params}:
            raise ValueError("the optimizer must update the master copies: build it over MasterWeights.params")
        for master, p in zip(self.params, self.model.parameters(), strict=True):
            master.grad = None if p.grad is None else p.grad.to(master.dtype)
        optimizer.step()
        for master, p in zip(self.params, self.model.parameters(), strict=True):
            p.copy_(master)  # rounds to the model's dtype; the master keeps the bits the rounding drops
            master.grad = None  # an fp32 gradient exists only during the step
