"""Training memory in one vocabulary: predict it from a recipe, measure it off real tensors (notebooks 00, 06, 08, 09).

Training memory has six components (COMPONENTS): five kinds of tensor held per parameter, plus
the activations a step saves for backward. A `Recipe` names the dtype of each per-parameter component and the
optimizer, whose class says how many state tensors it keeps per parameter; that is the napkin
prediction. `measure_state` reads the same components off a real (model, optimizer) pair, and
`measure_memory` adds the activations of one real step. Both give a `MemoryBudget`, so a
prediction and a measurement compare entry by entry (lecture_utils.accounting_compare).
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields, replace

import torch
from torch import nn

from lecture_utils.checks import NonNegativeInt
from lecture_utils.memory import saved_tensor_bytes, tensor_bytes
from lecture_utils.optim import AdamW

COMPONENTS = (
    "parameters",  # the weights the model computes with
    "gradients",  # their .grad (or whatever buffer the backward pass writes them into)
    "master_weights",  # higher-precision copies that the optimizer updates instead of the model's weights
    "gradient_accumulator",  # a buffer summing gradients over micro-batches
    "optimizer_state",  # the optimizer's per-parameter tensors (Adam's m and v)
    "activations",  # what autograd saves during the forward pass for the backward pass
)


@dataclass(frozen=True)
class MemoryBudget:
    """Bytes of each component of training memory, split by dtype ({} for a component that is empty) (notebook 06)."""

    parameters: dict[torch.dtype, int] = field(default_factory=dict)
    gradients: dict[torch.dtype, int] = field(default_factory=dict)
    master_weights: dict[torch.dtype, int] = field(default_factory=dict)
    gradient_accumulator: dict[torch.dtype, int] = field(default_factory=dict)
    optimizer_state: dict[torch.dtype, int] = field(default_factory=dict)
    activations: dict[torch.dtype, int] = field(default_factory=dict)

    def component_bytes(self) -> dict[str, int]:
        """Bytes per non-empty component, all dtypes together, in COMPONENTS order."""
        totals = {f.name: sum(getattr(self, f.name).values()) for f in fields(self)}
        return {name: n for name, n in totals.items() if n}

    @property
    def total(self) -> int:
        """Bytes of all components together."""
        return sum(self.component_bytes().values())

    def entries(self) -> dict[tuple[str, torch.dtype], int]:
        """Bytes per (component, dtype) pair."""
        return {(f.name, dtype): n for f in fields(self) for dtype, n in getattr(self, f.name).items()}


@dataclass(frozen=True)
class Recipe:
    """A training recipe's memory per parameter: each component's dtype (None: not kept) and the optimizer.

    The optimizer class says how many state tensors it keeps per parameter (`state_tensors`, see
    lecture_utils.optim); they are kept in `optimizer_state`, by default the dtype of the weights the
    optimizer updates (the master copy if there is one, as torch.optim does) (notebooks 00, 08, 09).
    """

    name: str
    parameters: torch.dtype
    gradients: torch.dtype | None
    optimizer: type[torch.optim.Optimizer]
    optimizer_state: torch.dtype | None = None
    master_weights: torch.dtype | None = None
    gradient_accumulator: torch.dtype | None = None
    why: str = ""

    def __post_init__(self) -> None:
        if not isinstance(getattr(self.optimizer, "state_tensors", None), int):
            raise TypeError(
                f"{self.optimizer.__name__} does not say how many state tensors it keeps per parameter: "
                "use an optimizer from lecture_utils.optim (or lecture_utils.adamw), whose `state_tensors` does"
            )

    @property
    def state_tensors(self) -> int:
        """How many tensors shaped like the parameter the optimizer keeps (0 SGD, 1 momentum, 2 Adam)."""
        return self.optimizer.state_tensors

    @property
    def state_dtype(self) -> torch.dtype:
        """The dtype of the optimizer's state tensors."""
        return self.optimizer_state or self.master_weights or self.parameters

    def dtypes(self) -> dict[str, torch.dtype]:
        """The dtype of every per-parameter component this recipe keeps, in COMPONENTS order."""
        kept = {
            "parameters": self.parameters,
            "gradients": self.gradients,
            "master_weights": self.master_weights,
            "gradient_accumulator": self.gradient_accumulator,
            "optimizer_state": self.state_dtype if self.state_tensors else None,
        }
        return {name: dtype for name, dtype in kept.items() if dtype is not None}

    def bytes_per_param(self) -> dict[str, int]:
        """Bytes per parameter of each component kept: element size (times the state tensors for the state)."""
        counts = {"optimizer_state": self.state_tensors}
        return {name: counts.get(name, 1) * dtype.itemsize for name, dtype in self.dtypes().items()}

    @property
    def total(self) -> int:
        """Bytes per parameter of all components together."""
        return sum(self.bytes_per_param().values())

    def formula(self) -> str:
        """The sum written out, e.g. 'parameters 2 + gradients 2 + master_weights 4 + optimizer_state 2 x 4 = 16'."""
        terms = [f"{name} {dtype.itemsize}" for name, dtype in self.dtypes().items()]
        if self.state_tensors > 1:
            terms[-1] = f"optimizer_state {self.state_tensors} x {self.state_dtype.itemsize}"
        return f"{' + '.join(terms)} = {self.total}"

    def zero_split(self) -> tuple[int, int, int]:
        """(p, g, K) of the ZeRO paper: bytes per parameter of weights, gradients, and all the optimizer keeps."""
        sizes = self.bytes_per_param()
        p, g = sizes.pop("parameters"), sizes.pop("gradients", 0)
        return p, g, sum(sizes.values())

    def predict(self, num_params: NonNegativeInt, activation_numel: NonNegativeInt = 0) -> MemoryBudget:
        """Napkin prediction: each component's elements x bytes; activations counted in the parameters' dtype."""
        dtypes = self.dtypes()
        per_param = self.bytes_per_param() if num_params else {}  # no parameters: no per-parameter entries
        held = {name: {dtypes[name]: num_params * size} for name, size in per_param.items()}
        if activation_numel:
            held["activations"] = {self.parameters: activation_numel * self.parameters.itemsize}
        return MemoryBudget(**held)


def plain_recipe(optimizer: type[torch.optim.Optimizer], dtype: torch.dtype = torch.float32) -> Recipe:
    """Every tensor in one dtype and no master copy: PyTorch's default, in fp32 (notebook 06)."""
    name = f"{str(dtype).removeprefix('torch.')} {optimizer.__name__}"
    return Recipe(name, dtype, dtype, optimizer, why=f"model.to({dtype}) trained with {optimizer.__name__}")


_FP32, _BF16 = torch.float32, torch.bfloat16

RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        Recipe("fp32", _FP32, _FP32, AdamW, why="PyTorch's default: every tensor fp32"),
        Recipe(
            "autocast bf16", _FP32, _FP32, AdamW,
            why="torch.autocast: the fp32 params are the master weights; bf16 copies exist only while the "
            "forward and backward run, so they count as activations",
        ),
        Recipe(
            "bf16 + fp32 master", _BF16, _BF16, AdamW, master_weights=_FP32,
            why="the standard recipe: a bf16 model, an fp32 copy that the optimizer updates (the ZeRO paper's "
            "2 + 2 + 12, Rajbhandari et al., 2019, with fp16 on V100s: the same bytes)",
        ),
        Recipe(
            "bf16 + fp32 grads", _BF16, _FP32, AdamW, master_weights=_FP32,
            why="each weight gradient goes straight into an fp32 buffer and no bf16 copy is kept "
            "(Megatron-LM's main_grad; built with a post-accumulate-grad hook in notebook 08)",
        ),
        Recipe(
            "bf16 + fp32 grad accumulation", _BF16, _BF16, AdamW, master_weights=_FP32, gradient_accumulator=_FP32,
            why="bf16 gradients kept while an fp32 buffer sums them over micro-batches",
        ),
        Recipe(
            "bf16 + fp32 Adam state", _BF16, _BF16, AdamW, optimizer_state=_FP32,
            why="no master copy: every update is rounded into bf16 weights",
        ),
        Recipe(
            "pure bf16", _BF16, _BF16, AdamW,
            why="model.bfloat16() and train: updates below half a bf16 ulp of the weight vanish",
        ),
    )
}  # fmt: skip


def _by_dtype(tensors: Iterable[torch.Tensor]) -> dict[torch.dtype, int]:
    """Bytes of the tensors, summed per dtype; of a DTensor, only the shard this process stores (notebook 09)."""
    totals: dict[torch.dtype, int] = {}
    for t in tensors:
        local = t.to_local() if hasattr(t, "to_local") else t
        totals[t.dtype] = totals.get(t.dtype, 0) + tensor_bytes(local)
    return totals


def measure_state(
    model: nn.Module, optimizer: torch.optim.Optimizer, *, gradient_accumulator: Sequence[torch.Tensor] = ()
) -> MemoryBudget:
    """The per-parameter components training holds now, read off the tensors (notebooks 06 and 08).

    A tensor the optimizer updates that the model does not hold is a master copy. Optimizer state
    counts the tensors shaped like their parameter (step_counter_bytes counts the rest).
    `gradient_accumulator`: buffers the caller sums gradients into, unknown to model and optimizer.
    """
    params = list(model.parameters())
    if not params:
        raise ValueError("the model has no parameters to account for")
    model_ids = {id(p) for p in params}
    optimized = [p for group in optimizer.param_groups for p in group["params"]]
    return MemoryBudget(
        parameters=_by_dtype(params),
        gradients=_by_dtype(p.grad for p in params if p.grad is not None),
        master_weights=_by_dtype(p for p in optimized if id(p) not in model_ids),
        gradient_accumulator=_by_dtype(gradient_accumulator),
        optimizer_state=_by_dtype(value for p, value in _state_tensors(optimizer) if value.shape == p.shape),
    )


def _state_tensors(optimizer: torch.optim.Optimizer) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(parameter, tensor) for every tensor the optimizer keeps in the state of a parameter it updates."""
    held = ((p, optimizer.state.get(p, {})) for group in optimizer.param_groups for p in group["params"])
    return [(p, value) for p, state in held for value in state.values() if isinstance(value, torch.Tensor)]


def step_counter_bytes(optimizer: torch.optim.Optimizer) -> int:
    """Bytes of state tensors not shaped like their parameter, torch.optim's 0-d `step`s (notebooks 06, 09).

    measure_state leaves these out: one per tensor, not memory per parameter. lecture_utils.optim's are ints: 0.
    """
    return sum(_by_dtype(value for p, value in _state_tensors(optimizer) if value.shape != p.shape).values())


def measure_memory(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn: Callable[[], torch.Tensor],
    *,
    data: Sequence[torch.Tensor] = (),
) -> MemoryBudget:
    """Run one step (forward, backward, optimizer step) and read every component off the real tensors (notebook 06).

    Activations are the storages autograd saves during `loss_fn()` minus the parameters and the
    `data` tensors (the input batch and targets exist whether or not we train). They are charged
    to the model's dtype, so the model must have one floating dtype.
    """
    params = list(model.parameters())
    dtypes = {p.dtype for p in params}
    if len(dtypes) != 1:
        raise ValueError(f"the model's parameters must share one dtype to charge activations to it, got {dtypes}")
    optimizer.zero_grad(set_to_none=True)
    losses: list[torch.Tensor] = []
    saved = saved_tensor_bytes(lambda: losses.append(loss_fn()), exclude=[*params, *data])
    loss = losses[0]
    if not (loss.numel() == 1 and loss.requires_grad):
        raise ValueError("loss_fn must return a scalar tensor that depends on the model's parameters")
    loss.backward()
    optimizer.step()
    return replace(measure_state(model, optimizer), activations={dtypes.pop(): saved} if saved else {})
