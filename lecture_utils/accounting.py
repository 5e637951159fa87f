"""Training-memory accounting: predict parameters, gradients, optimizer state and activations, then measure them.

The prediction is napkin math (element counts x bytes per element). The measurement runs one
real training step and reads the bytes off the tensors: the parameters, their .grad, the
optimizer's state, and what autograd saved for backward (lecture_utils.memory.saved_tensor_bytes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields

import torch
from torch import nn

from lecture_utils.checks import check_int
from lecture_utils.memory import dtype_bytes, format_bytes, saved_tensor_bytes, tensor_bytes
from lecture_utils.optim import STATE_TENSORS_PER_PARAM

COMPONENTS = ("parameters", "gradients", "optimizer_state", "activations")


@dataclass(frozen=True)
class MemoryBudget:
    """Bytes of each component of training memory, split by dtype ({} for a component that is empty)."""

    parameters: dict[torch.dtype, int]
    gradients: dict[torch.dtype, int]
    optimizer_state: dict[torch.dtype, int]
    activations: dict[torch.dtype, int]

    def component_bytes(self) -> dict[str, int]:
        """Bytes per component, all dtypes together."""
        return {name: sum(getattr(self, name).values()) for name in COMPONENTS}

    @property
    def total(self) -> int:
        """Bytes of all components together."""
        return sum(self.component_bytes().values())

    def entries(self) -> dict[tuple[str, torch.dtype], int]:
        """Bytes per (component, dtype) pair."""
        return {(f.name, dtype): n for f in fields(self) for dtype, n in getattr(self, f.name).items()}


def _check_optimizer(optimizer: str) -> None:
    """Reject an optimizer name the state table does not know."""
    if optimizer not in STATE_TENSORS_PER_PARAM:
        raise ValueError(f"unknown optimizer {optimizer!r}; expected one of {sorted(STATE_TENSORS_PER_PARAM)}")


def bytes_per_parameter(optimizer: str, dtype: torch.dtype = torch.float32) -> int:
    """Bytes each parameter costs with its gradient and optimizer state: (2 + state tensors) x element size."""
    _check_optimizer(optimizer)
    return (2 + STATE_TENSORS_PER_PARAM[optimizer]) * dtype_bytes(dtype)


def predict_memory(
    num_params: int, activation_numel: int, optimizer: str, *, dtype: torch.dtype = torch.float32
) -> MemoryBudget:
    """Napkin prediction: gradients = parameters, state = 0/1/2 x parameters, activations as counted, all in `dtype`."""
    check_int("num_params", num_params, 0)
    check_int("activation_numel", activation_numel, 0)
    _check_optimizer(optimizer)
    size = dtype_bytes(dtype)

    def entry(numel: int) -> dict[torch.dtype, int]:
        return {dtype: numel * size} if numel else {}

    return MemoryBudget(
        parameters=entry(num_params),
        gradients=entry(num_params),
        optimizer_state=entry(STATE_TENSORS_PER_PARAM[optimizer] * num_params),
        activations=entry(activation_numel),
    )


def _by_dtype(tensors: Iterable[torch.Tensor]) -> dict[torch.dtype, int]:
    """Bytes of the tensors, summed per dtype."""
    totals: dict[torch.dtype, int] = {}
    for t in tensors:
        totals[t.dtype] = totals.get(t.dtype, 0) + tensor_bytes(t)
    return totals


def measure_memory(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn: Callable[[], torch.Tensor],
    *,
    data: Sequence[torch.Tensor] = (),
) -> MemoryBudget:
    """Run one step (forward, backward, optimizer step) and read each component's bytes off the real tensors.

    Activations are the storages autograd saves during `loss_fn()` minus the parameters and the
    `data` tensors (the input batch and targets exist whether or not we train). They are charged
    to the model's dtype, so the model must have one floating dtype.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
    params = list(model.parameters())
    dtypes = {p.dtype for p in params}
    if len(dtypes) != 1:
        raise ValueError(f"the model's parameters must share one dtype to charge activations to it, got {dtypes}")
    optimizer.zero_grad(set_to_none=True)
    losses: list[torch.Tensor] = []
    saved = saved_tensor_bytes(lambda: losses.append(loss_fn()), exclude=[*params, *data])
    loss = losses[0]
    if not (isinstance(loss, torch.Tensor) and loss.numel() == 1 and loss.requires_grad):
        raise ValueError("loss_fn must return a scalar tensor that depends on the model's parameters")
    loss.backward()
    optimizer.step()
    state = [v for s in optimizer.state.values() for v in s.values() if isinstance(v, torch.Tensor)]
    return MemoryBudget(
        parameters=_by_dtype(params),
        gradients=_by_dtype(p.grad for p in params if p.grad is not None),
        optimizer_state=_by_dtype(state),
        activations={dtypes.pop(): saved} if saved else {},
    )


def _relative_error(predicted: int, measured: int) -> float:
    """|measured - predicted| / predicted; 0 when both are 0, inf when only the prediction is."""
    if predicted:
        return abs(measured - predicted) / predicted
    return 0.0 if measured == 0 else float("inf")


def relative_errors(predicted: MemoryBudget, measured: MemoryBudget) -> dict[tuple[str, torch.dtype], float]:
    """|measured - predicted| / predicted for every (component, dtype) either one has (inf if only predicted is 0)."""
    if not (isinstance(predicted, MemoryBudget) and isinstance(measured, MemoryBudget)):
        raise TypeError("relative_errors compares two MemoryBudget objects")
    p, m = predicted.entries(), measured.entries()
    return {key: _relative_error(p.get(key, 0), m.get(key, 0))
            for key in sorted(p.keys() | m.keys(), key=lambda k: (COMPONENTS.index(k[0]), str(k[1])))}


def compare_table(predicted: MemoryBudget, measured: MemoryBudget) -> str:
    """A text table: each (component, dtype) with predicted bytes, measured bytes and relative error, then totals."""
    errors = relative_errors(predicted, measured)
    p, m = predicted.entries(), measured.entries()
    rows = [f"{'component':16s} {'dtype':9s} {'predicted':>12s} {'measured':>12s} {'error':>7s}"]
    for (name, dtype), err in errors.items():
        dtype_name = str(dtype).removeprefix("torch.")
        rows.append(f"{name:16s} {dtype_name:9s} {p.get((name, dtype), 0):>12,d} {m.get((name, dtype), 0):>12,d} {err:>7.2%}")
    total_err = _relative_error(predicted.total, measured.total)
    rows.append(f"{'total':26s} {predicted.total:>12,d} {measured.total:>12,d} {total_err:>7.2%}"
                f"   ({format_bytes(measured.total)})")
    return "\n".join(rows)
