"""The lecture's deep linear model (the Cruncher), built from the assignment's Linear, and its sizes (notebook 06).

The layer is lecture_utils.nn_basics.Linear: weight (d_out, d_in), y = x W^T, N(0, sigma^2) with
sigma^2 = 2 / (d_in + d_out), cut at 3 sigma. For the Cruncher's square D x D layers sigma is 1/sqrt(D),
the lecture's 1/sqrt(fan_in), and the cut lowers the weights' std to 0.9866 sigma (the lecture's own
layers draw uncut).
"""

import math

import torch
from jaxtyping import Float
from torch import nn

from lecture_utils.checks import NonNegativeInt, PositiveFloat, PositiveInt
from lecture_utils.nn_basics import Linear, truncated_normal_


def truncated_normal_std(cut: PositiveFloat) -> float:
    """Std of N(0, 1) kept to |z| <= cut: sqrt(1 - 2 c phi(c) / (2 Phi(c) - 1)), 0.9866 for c = 3 (notebook 06)."""
    phi = math.exp(-cut * cut / 2) / math.sqrt(2 * math.pi)
    return math.sqrt(1 - 2 * cut * phi / math.erf(cut / math.sqrt(2)))


class Cruncher(nn.Module):
    """num_layers D x D linear layers, then a D -> 1 head: a deep linear model that is all matmuls (notebook 06).

    The layers draw their weights from torch's global stream, as the assignment's Linear does. With
    a `generator`, every weight is drawn from it instead (same distribution), and no global stream,
    on the CPU or any GPU, is read or moved.
    """

    def __init__(
        self, dim: PositiveInt, num_layers: NonNegativeInt, *, generator: torch.Generator | None = None
    ) -> None:
        super().__init__()
        # With a generator: build on the CPU with its global stream forked, so the layers' own init
        # draws are undone (no GPU stream is involved), then overwrite each weight from the generator.
        with torch.random.fork_rng(devices=[], enabled=generator is not None):
            on = "cpu" if generator is not None else None
            self.layers = nn.ModuleList(Linear(dim, dim, device=on) for _ in range(num_layers))
            self.head = Linear(dim, 1, device=on)
        if generator is not None:
            for layer in (*self.layers, self.head):  # Linear's std, from the generator
                std = math.sqrt(2 / (layer.in_features + layer.out_features))
                truncated_normal_(layer.weight, std, generator=generator)

    def forward(self, x: Float[torch.Tensor, "batch dim"]) -> Float[torch.Tensor, " batch"]:
        for layer in self.layers:
            x = layer(x)  # (batch, dim): each one is an activation autograd keeps for backward
        return self.head(x).squeeze(-1)


def cruncher_num_parameters(dim: PositiveInt, num_layers: NonNegativeInt) -> int:
    """D^2 per hidden layer plus D for the head: D^2 L + D (notebook 06)."""
    return dim * dim * num_layers + dim


def cruncher_activation_numel(dim: PositiveInt, num_layers: NonNegativeInt, batch_size: PositiveInt) -> int:
    """Elements saved for backward besides the input batch: one (B, D) output per hidden layer, B D L (notebook 06)."""
    return batch_size * dim * num_layers


class ReluBlock(nn.Module):
    """The 2026 lecture's block: relu(x @ W), W of shape (D, D) drawn as randn / sqrt(D) (notebooks 05, 06).

    The weight is stored (d_in, d_out) and applied as x @ W, as the lecture writes it. randn / sqrt(D)
    keeps x @ W at the input's scale; the relu then zeroes half of it, so each block halves the mean
    square (He et al. 2015 scale by sqrt(2 / D) to undo that; the lecture does not).
    """

    def __init__(self, dim: PositiveInt, *, generator: torch.Generator | None = None) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim, dim, generator=generator) / math.sqrt(dim))

    def forward(self, x: Float[torch.Tensor, "... dim"]) -> Float[torch.Tensor, "... dim"]:
        return torch.relu(x @ self.weight)


class DeepNetwork(nn.Module):
    """The 2026 lecture's deep network: num_layers ReluBlocks and no head, D^2 L parameters (notebooks 05, 06).

    With a `generator`, every weight is drawn from it; without one, from torch's global stream.
    """

    def __init__(
        self, dim: PositiveInt, num_layers: NonNegativeInt, *, generator: torch.Generator | None = None
    ) -> None:
        super().__init__()
        self.layers = nn.ModuleList(ReluBlock(dim, generator=generator) for _ in range(num_layers))

    def forward(self, x: Float[torch.Tensor, "batch dim"]) -> Float[torch.Tensor, "batch dim"]:
        for layer in self.layers:
            x = layer(x)  # (batch, dim): the relu's output, saved for backward by it and the next matmul
        return x
