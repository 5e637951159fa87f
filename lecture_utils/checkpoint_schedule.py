"""How often to checkpoint: store every layer's activations, none of them, or every k-th layer's (notebook 05).

The 2026 lecture's three schedules for a stack of L layers, each run as one forward and backward of
loss = stack(x).sum(), and what each one costs, measured:

- store every layer: the plain step; memory O(L), nothing recomputed;
- store none: the forward keeps nothing, and the backward of each layer recomputes that layer's
  input from x, running the whole prefix again: memory O(1), L (L + 1) / 2 layer forwards rerun;
- store every k-th: torch.utils.checkpoint.checkpoint_sequential in L / k segments keeps each
  segment's input and reruns one segment at a time; its last segment is stored, not checkpointed
  (its backward comes first). With k = sqrt(L): memory O(sqrt L), L - k layer forwards rerun.

`measure_schedule` runs one of them under a saved-tensor counter (lecture_utils.step_memory's
ActivationCounter: the most bytes autograd holds for backward at once, recomputation included) and
FlopCounterMode. The stored-tensor counts below are the napkin for a stack whose layers pass one
tensor each (the 2026 lecture's relu(x @ W): a layer's output is saved by its relu and by the next
matmul, one storage); the measurement needs no such assumption.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint_sequential
from torch.utils.flop_counter import FlopCounterMode

from lecture_utils.checks import NonNegativeInt, PositiveInt
from lecture_utils.step_memory import ActivationCounter

Schedule = Literal["all", "every", "none"]
Layers = nn.ModuleList | Sequence[nn.Module]  # a ModuleList is indexable and sized but not a Sequence


def backward_storing_all(layers: Layers, x: torch.Tensor) -> torch.Tensor:
    """The plain step: every layer's activations kept for the backward. Returns the loss (notebook 05)."""
    h = x
    for layer in layers:
        h = layer(h)
    loss = h.sum()
    loss.backward()
    return loss.detach()


def backward_storing_every(layers: Layers, x: torch.Tensor, every: PositiveInt) -> torch.Tensor:
    """checkpoint_sequential in len(layers) / every segments, each keeping its input. Returns the loss (notebook 05).

    The reentrant variant: its recomputation runs as an ordinary forward inside the backward, so a
    saved-tensor hook sees what it stores (the non-reentrant one stores it behind its own hook).
    It needs an input that requires grad, as the lecture's x does.
    """
    if len(layers) % every:
        raise ValueError(f"every = {every} must divide the {len(layers)} layers into whole segments")
    if not x.requires_grad:
        raise ValueError("x must require grad: reentrant checkpointing gives no gradients otherwise")
    out = checkpoint_sequential(list(layers), len(layers) // every, x, use_reentrant=True)
    loss = out.sum()
    loss.backward()
    return loss.detach()


def backward_storing_none(layers: Layers, x: torch.Tensor) -> torch.Tensor:
    """Keep nothing: per layer, last first, rerun the prefix from x, then it with grad. Returns the loss (notebook 05).

    Only one layer's activations exist at a time. Gradients land in the parameters and, if x
    requires grad, in x.grad, as loss.backward() would put them.
    """
    with torch.no_grad():
        h = x
        for layer in layers:
            h = layer(h)
        loss = h.sum()
    grad = torch.ones_like(h)  # d loss / d output of the last layer
    for i in reversed(range(len(layers))):
        with torch.no_grad():  # the input of layer i, rebuilt from x: i layer forwards
            h = x.detach()
            for layer in layers[:i]:
                h = layer(h)
        h.requires_grad_()
        layers[i](h).backward(grad)  # layer i once more, with grad, then its backward
        grad = h.grad
    if x.requires_grad:
        x.grad = grad if x.grad is None else x.grad + grad
    return loss


@dataclass(frozen=True)
class ScheduleCost:
    """What a forward and backward under a schedule cost: the most saved bytes at once, the FLOPs (notebook 05)."""

    peak_saved_bytes: int
    flops: int


def measure_schedule(model: nn.Module, x: torch.Tensor, run: Callable[[], object]) -> ScheduleCost:
    """Run `run()`, a forward and backward of `model` on `x`, under a saved-bytes counter and FlopCounterMode.

    Saved tensors are counted while autograd holds them, recomputation included (notebook 05); the model's
    parameters and x are saved too but exist anyway, so they are not counted.
    """
    counter = ActivationCounter(model, [x])
    with (
        FlopCounterMode(display=False) as flops,
        torch.autograd.graph.saved_tensors_hooks(counter.pack, counter.unpack),
    ):
        run()
    return ScheduleCost(counter.peak, flops.get_total_flops())


def stored_tensors(schedule: Schedule, num_layers: PositiveInt, every: PositiveInt = 1) -> int:
    """Napkin: the most layer outputs stored at once, the input x not counted (notebook 05).

    all: L. none: 2 (one layer's input and output). every k, in s = L / k segments: s - 2 segment
    inputs (the first is x) plus the last segment's input and its k outputs, s + k - 1; the
    backward holds fewer, since by then the last segment is gone.
    """
    if schedule == "all":
        return num_layers
    if schedule == "none":
        return 2
    if num_layers % every:
        raise ValueError(f"every = {every} must divide the {num_layers} layers into whole segments")
    return num_layers // every + every - 1


def recomputed_layers(schedule: Schedule, num_layers: NonNegativeInt, every: PositiveInt = 1) -> int:
    """Napkin: layer forwards rerun during the backward (notebook 05).

    all: 0. none: layer i reruns its i - 1 predecessors and itself, 1 + 2 + ... + L = L (L + 1) / 2.
    every k: each segment but the last once, L - k.
    """
    if schedule == "all":
        return 0
    if schedule == "none":
        return num_layers * (num_layers + 1) // 2
    if num_layers % every:
        raise ValueError(f"every = {every} must divide the {num_layers} layers into whole segments")
    return num_layers - every
