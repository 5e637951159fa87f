"""Memory over one training step: live bytes of each component at every stage, read off the tensors (notebook 06).

`track_step` runs one real step (forward, loss, backward, optimizer.step, zero_grad) and records,
at each event, the bytes of parameters, gradients and optimizer state (lecture_utils.accounting's
measure_state) and of the activations: the storages autograd has saved for backward and not yet
released. A saved-tensor hook wraps each saved storage in a small holder that only autograd keeps;
the holder dies when the backward node that saved it has run (or the graph is dropped), and a
finalizer on it takes the storage off the count. Parameters and the input data are saved too, but
they exist anyway: their storages are never counted. Events come from forward hooks on every leaf
module, from each parameter's post-accumulate-grad hook (a module's backward event is the moment
its last gradient lands: a full backward hook would fire too early on a first layer, whose input
needs no gradient) and from the loop itself. On a GPU each event also reads the allocator
(torch.cuda.memory_allocated), which sees the same curve plus the temporaries and workspaces no
saved tensor holds (the gradients flowing between layers, the optimizer's scratch).

Per rank (notebook 09): call `track_step` inside the rank's function, on the wrapped model (DDP) or
the fully_shard-ed one (FSDP2; a DTensor counts its local shard), with ZeRO-1's local optimizer as
`state_of`. Two things each rank holds are not tensors of the model or optimizer and show only on
the allocator: DDP's gradient buckets and the weights FSDP2 gathers for the layer it is computing."""

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

from lecture_utils.accounting import COMPONENTS, MemoryBudget, measure_state

Phase = Literal["start", "forward", "loss", "backward", "step", "zero_grad"]


@dataclass(frozen=True)
class StepEvent:
    """Live bytes of every accounting component at one moment of a training step (notebook 06).

    `allocated` is torch.cuda.memory_allocated at that moment on a GPU, None on the CPU.
    """

    phase: Phase
    name: str  # the module for forward and backward events, else the phase again
    components: dict[str, int]  # bytes per name of accounting.COMPONENTS, every one present
    allocated: int | None = None

    @property
    def total(self) -> int:
        """Bytes of all components together."""
        return sum(self.components.values())

    @property
    def label(self) -> str:
        """'forward layers.0', 'backward head', 'loss', ...: what happened just before the reading."""
        return self.phase if self.name == self.phase else f"{self.phase} {self.name}"


@dataclass(frozen=True)
class StepTimeline:
    """The events of one step in order, and the parameters in the order their gradients landed (notebook 06)."""

    events: tuple[StepEvent, ...]
    grad_order: tuple[str, ...]
    loss: float

    def series(self, component: str) -> list[int]:
        """Bytes of one component (a name from accounting.COMPONENTS) at every event."""
        if component not in COMPONENTS:
            raise ValueError(f"unknown component {component!r}; expected one of {COMPONENTS}")
        return [event.components[component] for event in self.events]

    @property
    def totals(self) -> list[int]:
        """Bytes of all components at every event."""
        return [event.total for event in self.events]

    @property
    def peak_index(self) -> int:
        """Index of the most live bytes: the last event before the total first falls from its maximum."""
        totals = self.totals
        i = totals.index(max(totals))
        while i + 1 < len(totals) and totals[i + 1] == totals[i]:
            i += 1
        return i

    @property
    def peak(self) -> StepEvent:
        """The event with the most live bytes."""
        return self.events[self.peak_index]

    def index(self, label: str) -> int:
        """Index of the first event with this label, e.g. 'loss' or 'backward head'."""
        labels = [event.label for event in self.events]
        if label not in labels:
            raise ValueError(f"no event {label!r} in this step; events: {labels}")
        return labels.index(label)


class _Saved:
    """What autograd keeps instead of a saved tensor: only autograd holds it, so it dies when autograd lets go."""

    __slots__ = ("__weakref__", "tensor")

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor


def _address(t: torch.Tensor) -> int:
    """Where a tensor's storage starts; of a DTensor (FSDP2's sharded parameters), the local shard's."""
    return (t.to_local() if hasattr(t, "to_local") else t).untyped_storage().data_ptr()


class ActivationCounter:
    """Live bytes of the storages autograd saved for backward, each storage counted once while any holder lives.

    Use its `pack` and `unpack` as torch.autograd.graph.saved_tensors_hooks (notebooks 05, 06). `live`
    is the bytes held now, `peak` the most held at once since the counter was made. The model's
    parameters and the `data` tensors are saved too, but exist anyway: they are never counted.
    """

    def __init__(self, model: nn.Module, data: Sequence[torch.Tensor]) -> None:
        self.model, self.data = model, data
        self.excluded = self._there_anyway()
        self.holders: dict[int, int] = {}  # storage address -> holders alive
        self.live = 0
        self.peak = 0

    def _there_anyway(self) -> set[int]:
        """Addresses of the parameters and the data: saved for backward too, but not activations."""
        return {_address(t) for t in (*self.model.parameters(), *self.data)}

    def pack(self, tensor: torch.Tensor) -> object:
        storage = tensor.untyped_storage()
        key = storage.data_ptr()
        if key not in self.excluded and key not in self.holders:
            # FSDP2 swaps in gathered parameters for a layer's forward: read the parameters again.
            self.excluded |= self._there_anyway()
        if key in self.excluded:
            return tensor
        if not self.holders.get(key):
            self.live += storage.nbytes()
            self.peak = max(self.peak, self.live)
        self.holders[key] = self.holders.get(key, 0) + 1
        holder = _Saved(tensor)
        weakref.finalize(holder, self._release, key, storage.nbytes())
        return holder

    def _release(self, key: int, nbytes: int) -> None:
        self.holders[key] -= 1
        if not self.holders[key]:
            self.live -= nbytes

    @staticmethod
    def unpack(packed: object) -> torch.Tensor:
        return packed.tensor if isinstance(packed, _Saved) else packed


def track_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn: Callable[[], torch.Tensor],
    *,
    data: Sequence[torch.Tensor] = (),
    state_of: torch.optim.Optimizer | None = None,
) -> StepTimeline:
    """Run one training step and read the live bytes of every component at each stage of it (notebook 06).

    The step is loss_fn(), loss.backward(), optimizer.step(), optimizer.zero_grad(set_to_none=True).
    `data`: the batch and targets, which exist whether or not we train (not activations). On a fresh
    optimizer the state appears at the step (lazy init); from the second step on it is there throughout.
    `state_of`: the optimizer whose state to count, where it is not `optimizer` itself (ZeRO-1's
    ZeroRedundancyOptimizer keeps this rank's share in its `.optim`).
    """
    params = dict(model.named_parameters())
    if not params:
        raise ValueError("the model has no parameters to account for")
    device = next(iter(params.values())).device
    counter = ActivationCounter(model, data)
    events: list[StepEvent] = []
    grad_order: list[str] = []

    def record(phase: Phase, name: str = "") -> None:
        held = measure_state(model, state_of or optimizer).component_bytes()
        components = {c: held.get(c, 0) for c in COMPONENTS} | {"activations": counter.live}
        allocated = torch.cuda.memory_allocated(device) if device.type == "cuda" else None
        events.append(StepEvent(phase, name or phase, components, allocated))

    leaves = {name: m for name, m in model.named_modules() if not list(m.children())}
    owners = {name: [p for p in m.parameters(recurse=False)] for name, m in leaves.items()}
    landed: set[int] = set()

    def grad_landed(param_name: str) -> Callable[[torch.Tensor], None]:
        def hook(p: torch.Tensor) -> None:
            if id(p) in landed:
                return  # a shared weight's second gradient adds in place: no new bytes
            landed.add(id(p))
            grad_order.append(param_name)
            for name, owned in owners.items():  # a module's backward is done when its last gradient lands
                if any(q is p for q in owned) and all(id(q) in landed for q in owned):
                    record("backward", name)

        return hook

    handles = [m.register_forward_hook(lambda m, i, o, n=n: record("forward", n)) for n, m in leaves.items()]
    handles += [p.register_post_accumulate_grad_hook(grad_landed(n)) for n, p in params.items()]
    try:
        record("start")
        with torch.autograd.graph.saved_tensors_hooks(counter.pack, counter.unpack):
            loss = loss_fn()
        if not (loss.numel() == 1 and loss.requires_grad):
            raise ValueError("loss_fn must return a scalar tensor that depends on the model's parameters")
        record("loss")
        loss.backward()
        loss_value = loss.item()
        del loss  # the graph, and anything it still holds, goes with it
        record("backward", "end")
        optimizer.step()
        record("step")
        optimizer.zero_grad(set_to_none=True)
        record("zero_grad")
    finally:
        for handle in handles:
            handle.remove()
    return StepTimeline(tuple(events), tuple(grad_order), loss_value)


def napkin_peak(budget: MemoryBudget, *, first_step: bool = False) -> int:
    """The napkin's peak of one step: what is always held, plus the larger of activations and gradients (notebook 06).

    Activations are all alive at the start of the backward, before any gradient; the gradients are
    all there at its end, once every activation is freed. From the second step on the optimizer
    state is held throughout; on a fresh optimizer it appears only at the step, beside the gradients.
    `budget` is a prediction (accounting.Recipe.predict) with every component of the step.
    """
    held = budget.component_bytes()
    activations, gradients = held.pop("activations", 0), held.pop("gradients", 0)
    state = held.pop("optimizer_state", 0) if first_step else 0
    always = sum(held.values())
    return always + max(activations, gradients + state)
