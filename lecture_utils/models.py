"""Weight initialization, a bias-free Linear layer, and the lecture's deep linear model (the Cruncher)."""

from __future__ import annotations

import math

import torch
from jaxtyping import Float
from torch import nn

from lecture_utils.checks import check_dims, check_int, check_positive


def scaled_init(
    d_in: int, d_out: int, *, truncate: float | None = 3.0, generator: torch.Generator | None = None
) -> Float[torch.Tensor, "d_in d_out"]:
    """Weights for x @ w with std 1/sqrt(d_in), cut at +-`truncate` standard deviations (None: no cut).

    torch.nn.init.trunc_normal_'s bounds a, b are absolute values, not multiples of std, so the
    cut is applied to a standard normal before scaling; cutting N(0, 1/d_in) at +-3 would cut nothing.
    """
    check_dims(d_in=d_in, d_out=d_out)
    w = torch.empty(d_in, d_out)
    if truncate is None:
        w.normal_(generator=generator)
    else:
        check_positive(truncate=truncate)
        nn.init.trunc_normal_(w, std=1.0, a=-truncate, b=truncate, generator=generator)
    return w / math.sqrt(d_in)


def truncated_normal_std(cut: float) -> float:
    """Std of N(0, 1) kept to |z| <= cut: sqrt(1 - 2 c phi(c) / (2 Phi(c) - 1)), 0.9866 for c = 3."""
    check_positive(cut=cut)
    phi = math.exp(-cut * cut / 2) / math.sqrt(2 * math.pi)
    return math.sqrt(1 - 2 * cut * phi / math.erf(cut / math.sqrt(2)))


class Linear(nn.Module):
    """y = x @ w with w of shape (d_in, d_out), no bias; w from scaled_init so y keeps x's scale."""

    def __init__(self, d_in: int, d_out: int, *, generator: torch.Generator | None = None) -> None:
        super().__init__()
        self.weight = nn.Parameter(scaled_init(d_in, d_out, generator=generator))

    def forward(self, x: Float[torch.Tensor, "... d_in"]) -> Float[torch.Tensor, "... d_out"]:
        if x.shape[-1] != self.weight.shape[0]:
            raise ValueError(f"expected inputs with last dimension {self.weight.shape[0]}, got shape {tuple(x.shape)}")
        return x @ self.weight


class Cruncher(nn.Module):
    """num_layers D x D linear layers, then a D -> 1 head: a deep linear model that is all matmuls."""

    def __init__(self, dim: int, num_layers: int, *, generator: torch.Generator | None = None) -> None:
        super().__init__()
        check_int("dim", dim)
        check_int("num_layers", num_layers, minimum=0)
        self.layers = nn.ModuleList(Linear(dim, dim, generator=generator) for _ in range(num_layers))
        self.head = Linear(dim, 1, generator=generator)

    def forward(self, x: Float[torch.Tensor, "batch dim"]) -> Float[torch.Tensor, " batch"]:
        for layer in self.layers:
            x = layer(x)  # (batch, dim): each one is an activation autograd keeps for backward
        return self.head(x).squeeze(-1)


def cruncher_num_parameters(dim: int, num_layers: int) -> int:
    """D^2 per hidden layer plus D for the head: D^2 L + D."""
    check_int("dim", dim)
    check_int("num_layers", num_layers, minimum=0)
    return dim * dim * num_layers + dim


def cruncher_activation_numel(dim: int, num_layers: int, batch_size: int) -> int:
    """Elements saved for backward besides the input batch: one (B, D) output per hidden layer, B D L."""
    check_int("dim", dim)
    check_int("num_layers", num_layers, minimum=0)
    check_int("batch_size", batch_size)
    return batch_size * dim * num_layers
