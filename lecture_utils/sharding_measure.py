"""What one rank holds and sends while it trains under DDP, ZeRO-1 or FSDP2: measured, not modelled (notebook 09).

`train_rank` runs inside a process group (forked by `sharding_launch.run_ranks`, or under torchrun).
It trains `sharding.make_model()` a few AdamW steps on this rank's slice of one fixed batch, then
reads the bytes of the tensors this rank holds with lecture_utils.accounting.measure_state
(parameters, gradients, Adam's m and v; DTensor local shards for FSDP2) and the sizes of the
tensors it passed to each collective in the last step.
"""

import contextlib
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import torch
import torch._dynamo  # fully_shard imports it; importing it once here spares each forked rank
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import fully_shard
from torch.multiprocessing.reductions import StorageWeakRef  # a weak reference to a storage
from torch.nn.parallel import DistributedDataParallel

with warnings.catch_warnings():
    # torch.distributed.optim uses torch.jit.script and torch.jit.interface, which torch 2.13
    # deprecates with a warning at import: torch's business, not this module's.
    warnings.filterwarnings("ignore", message=r"`torch\.jit\.\w+` is deprecated", category=DeprecationWarning)
    from torch.distributed.optim import ZeroRedundancyOptimizer

from lecture_utils.accounting import measure_state, step_counter_bytes
from lecture_utils.checks import NonNegativeInt, PositiveInt
from lecture_utils.memory import tensor_bytes
from lecture_utils.sharding import (
    Approach,
    make_batch,
    make_model,
    predicted_rank_bytes,
    predicted_step_counter_bytes,
    predicted_traffic,
    ring_bytes_sent,
)
from lecture_utils.transformer import LINEAR_LAYERS

# The collectives the three engines call through the torch.distributed namespace.
PATCHED = ("all_reduce", "broadcast", "all_gather_single", "reduce_scatter_single")
LR = 1e-2


@dataclass
class RankReport:
    """One rank's bytes (state after the last step, before zero_grad) and traffic of that step (notebook 09)."""

    rank: int
    world_size: int
    approach: Approach
    held: dict[str, int] = field(default_factory=dict)  # bytes per accounting component, empty ones left out
    step_counters: int = 0  # Adam's per-tensor `step` scalars: bookkeeping the accounting leaves out
    comm: list[tuple[str, int]] = field(default_factory=list)  # (collective, bytes of the tensor passed)
    kept: list[bool] = field(default_factory=list)  # per comm entry: is its memory still held after the step?
    losses: list[float] = field(default_factory=list)
    weights: np.ndarray | None = None  # the full trained weights, flattened, as this rank sees them

    @property
    def ring_sent(self) -> float:
        """Bytes this rank sends in the last step if every collective it called ran as a ring."""
        return sum(ring_bytes_sent(name, size, self.world_size) for name, size in self.comm)

    @property
    def kept_bytes(self) -> int:
        """Bytes of the tensors passed to collectives in the last step that something still holds after it."""
        return sum(size for (_, size), alive in zip(self.comm, self.kept, strict=True) if alive)


@contextlib.contextmanager
def record_collectives(log: list[tuple[str, int]], refs: list | None = None) -> Iterator[None]:
    """Log (name, bytes) of every collective called via torch.distributed while active (notebook 09).

    For all-gather the full (output) tensor is logged and for reduce-scatter the full (input) one, so
    every entry is the size of the whole tensor the collective works on, whatever the algorithm sends.
    `refs`, if given, gets a weak reference to each such tensor's storage: it tells later whether the
    memory was freed (a tensor object can die while its storage lives on in a view).
    """
    originals = {name: getattr(dist, name) for name in PATCHED}

    def wrap(name: str, fn: Callable[..., object]) -> Callable[..., object]:  # a thin pass-through
        def counted(*args: object, **kwargs: object) -> object:
            tensor = args[0] if args else kwargs.get("tensor", kwargs.get("output_tensor"))
            if name == "reduce_scatter_single":
                tensor = kwargs.get("input", args[1] if len(args) > 1 else None)
            log.append((name, tensor_bytes(tensor)))
            if refs is not None:
                refs.append(StorageWeakRef(tensor.untyped_storage()))
            return fn(*args, **kwargs)

        return counted

    try:
        for name, fn in originals.items():
            setattr(dist, name, wrap(name, fn))
        yield
    finally:
        for name, fn in originals.items():
            setattr(dist, name, fn)


def _wrap(model: nn.Module, approach: Approach, device: torch.device) -> tuple[nn.Module, torch.optim.Optimizer]:
    """Put `model` under `approach` and build its AdamW (sharded for ZeRO-1 and FSDP2)."""
    if approach == "fsdp2":
        mesh = DeviceMesh.from_group(dist.group.WORLD, device.type)  # one axis: all ranks shard
        for layer in model:
            if isinstance(layer, LINEAR_LAYERS):
                fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
        return model, torch.optim.AdamW(model.parameters(), lr=LR)
    ids = [device.index] if device.type == "cuda" else None
    # Gradients as views into DDP's communication buckets: no second copy of the gradients.
    ddp = DistributedDataParallel(model, device_ids=ids, gradient_as_bucket_view=True)
    # DDP's built-in all-reduce runs in C++, out of sight of `record_collectives`; its documented Python
    # twin does the same (average each gradient bucket) through torch.distributed, where it is counted.
    ddp.register_comm_hook(None, allreduce_hook)
    if approach == "zero1":
        return ddp, ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.AdamW, lr=LR)
    return ddp, torch.optim.AdamW(ddp.parameters(), lr=LR)


def _local_optimizer(optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
    """The optimizer of this rank's own parameters: ZeroRedundancyOptimizer keeps its shard's in `.optim`."""
    return optimizer.optim if isinstance(optimizer, ZeroRedundancyOptimizer) else optimizer


def train_rank(
    rank: NonNegativeInt,
    world_size: PositiveInt,
    approach: Approach,
    steps: PositiveInt = 3,
    device: torch.device | None = None,
) -> RankReport:
    """Train under `approach` in the current process group and report what this rank holds and sends (notebook 09)."""
    device = device or torch.device("cpu")
    torch.manual_seed(0)
    model = make_model().to(device)
    x, y = (t.to(device) for t in make_batch())
    rows = x.shape[0] // world_size  # each rank trains on its own slice of the same global batch
    x, y = x[rank * rows : (rank + 1) * rows], y[rank * rows : (rank + 1) * rows]
    log: list[tuple[str, int]] = []
    refs: list[StorageWeakRef] = []
    wrapped, optimizer = _wrap(model, approach, device)
    report = RankReport(rank, world_size, approach)
    for _ in range(steps):
        log.clear()
        refs.clear()
        with record_collectives(log, refs):
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(wrapped(x), y)
            loss.backward()
            optimizer.step()
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss)  # outside the recording: only for printing the global loss
        report.losses.append(mean_loss.item() / world_size)
    report.comm = list(log)
    report.kept = [not ref.expired() for ref in refs]
    local = _local_optimizer(optimizer)
    report.held = measure_state(model, local).component_bytes()
    report.step_counters = step_counter_bytes(local)
    params = list(model.parameters())
    full = [(p.full_tensor() if hasattr(p, "full_tensor") else p).detach() for p in params]
    report.weights = torch.cat([t.reshape(-1) for t in full]).cpu().numpy()
    return report


def ddp_gradient_buckets(rank: NonNegativeInt, world_size: PositiveInt, as_view: bool) -> tuple[int, int, int]:
    """Bytes of DDP's gradient buckets, of the .grad tensors, and of the .grads inside the buckets (notebook 09).

    Read on the second step, after DDP has rebuilt its buckets in the order the gradients arrived.
    """
    torch.manual_seed(0)
    model = make_model()
    ddp = DistributedDataParallel(model, gradient_as_bucket_view=as_view)
    buckets: list[torch.Tensor] = []

    # No return annotation: DDP wants exactly Future[Tensor], which the runtime type check cannot match.
    def recording_allreduce(state: object, bucket: dist.GradBucket):
        buckets.append(bucket.buffer())
        return allreduce_hook(state, bucket)

    ddp.register_comm_hook(None, recording_allreduce)
    x, y = make_batch()
    for _ in range(2):
        buckets.clear()
        nn.functional.mse_loss(ddp(x), y).backward()
    spans = [(b.untyped_storage().data_ptr(), b.untyped_storage().nbytes()) for b in buckets]
    grads = [p.grad for p in model.parameters()]
    inside = [g for g in grads if any(start <= g.data_ptr() < start + size for start, size in spans)]
    return sum(size for _, size in spans), sum(map(tensor_bytes, grads)), sum(map(tensor_bytes, inside))


def reference_weights(steps: PositiveInt = 3) -> np.ndarray:
    """The same training in one process on the whole batch: what every rank's weights must equal (notebook 09)."""
    torch.manual_seed(0)
    model = make_model()
    x, y = make_batch()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR)
    for _ in range(steps):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy()


def check_reports(reports: list[RankReport], steps: PositiveInt = 3) -> None:
    """Raise AssertionError unless each rank's bytes and traffic are as predicted and weights agree (notebook 09)."""
    model = make_model()
    param_bytes = sum(tensor_bytes(p) for p in model.parameters())
    reference = torch.from_numpy(reference_weights(steps))
    for r in reports:
        predicted = predicted_rank_bytes(model, r.approach, r.world_size, r.rank)
        assert r.held == predicted, f"{r.approach} rank {r.rank}: measured {r.held}, predicted {predicted}"
        counters = predicted_step_counter_bytes(model, r.approach, r.world_size, r.rank)
        assert r.step_counters == counters, f"{r.approach} rank {r.rank}: counters {r.step_counters} B != {counters}"
        traffic: dict[str, int] = {}
        for name, size in r.comm:
            traffic[name] = traffic.get(name, 0) + size
        expected = predicted_traffic(r.approach, param_bytes)
        assert traffic == expected, f"{r.approach} rank {r.rank}: traffic {traffic}, predicted {expected}"
        # Summing the batch mean in another order (and, on GPUs, other kernels) moves the last bits.
        torch.testing.assert_close(torch.from_numpy(r.weights), reference, rtol=1e-5, atol=1e-5)
        assert np.array_equal(r.weights, reports[0].weights), f"rank {r.rank}'s weights differ from rank 0's"


def format_reports(reports: list[RankReport]) -> str:
    """A table, one row a rank: bytes held; bytes of the tensors passed to collectives in the last step and
    the bytes a ring would send for them; the final loss (notebook 09)."""
    lines = [
        f"{'approach':8} {'ranks':>5} {'rank':>4} {'params B':>9} {'grads B':>8} {'Adam m,v B':>10} "
        f"{'passed B':>9} {'sent B':>7} {'loss':>6}"
    ]
    for r in reports:
        params, grads, state = (r.held.get(name, 0) for name in ("parameters", "gradients", "optimizer_state"))
        passed = sum(size for _, size in r.comm)
        lines.append(
            f"{r.approach:8} {r.world_size:>5} {r.rank:>4} {params:>9,} {grads:>8,} {state:>10,} "
            f"{passed:>9,} {r.ring_sent:>7,.0f} {r.losses[-1]:>6.3f}"
        )
    return "\n".join(lines)
