"""What one rank holds and sends while it trains under DDP, ZeRO-1 or one of FSDP2's settings: measured (notebook 09).

`train_rank` runs inside a process group (forked by `rank_pool.RankPool`, or under torchrun).
It trains `sharding.make_model()` a few AdamW steps on this rank's slice of one fixed batch, set up
by `sharding_engines.wrap`, then reads the bytes of the tensors this rank holds with
lecture_utils.accounting.measure_state (parameters, gradients, Adam's m and v; DTensor local shards
for FSDP2), the sizes of the tensors it passed to each collective in the last step, and, under
FSDP2, the bytes of full parameters and of all-gather buffers alive during that step's forward.
"""

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.multiprocessing.reductions import StorageWeakRef  # a weak reference to a storage

from lecture_utils.accounting import measure_state, step_counter_bytes
from lecture_utils.checks import NonNegativeInt, PositiveInt
from lecture_utils.memory import tensor_bytes
from lecture_utils.sharding import (
    FSDP2_SETTINGS,
    Approach,
    make_batch,
    make_model,
    predicted_buffer_bytes,
    predicted_gathered_bytes,
    predicted_rank_bytes,
    predicted_step_counter_bytes,
    predicted_traffic,
    rank_batch,
    ring_bytes_sent,
)
from lecture_utils.sharding_engines import LR, local_optimizer, watch_gathered, wrap

# The collectives the engines call through the torch.distributed namespace.
PATCHED = ("all_reduce", "broadcast", "all_gather_single", "reduce_scatter_single")


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
    # FSDP2: bytes of full parameters alive as each layer's forward starts, then as the forward ends
    gathered: list[int] = field(default_factory=list)
    # FSDP2, at the same moments: bytes of this step's flat all-gather buffers whose memory is still held
    # (FSDP2 keeps the layer's own; gloo's worker thread may hold a finished one a moment longer)
    buffers: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    weights: np.ndarray | None = None  # the full trained weights, flattened, as this rank sees them

    @property
    def ring_sent(self) -> float:
        """Bytes this rank sends in the last step if every collective it called ran as a ring."""
        return sum(ring_bytes_sent(name, size, self.world_size) for name, size in self.comm)

    @property
    def zero_bytes(self) -> int:
        """The bytes the ZeRO accounting counts: the state held, its parameters as held through forward and backward.

        That is the shard between steps, except under ZeRO-2, which keeps the full parameters from the
        forward to the backward (FSDP2 keeps their shard too, which the accounting has no place for).
        """
        params = self.held.get("parameters", 0)
        through_step = max(params, self.gathered[-1] if self.gathered else 0)
        return sum(self.held.values()) - params + through_step

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
    x, y = (t.to(device) for t in rank_batch(rank, world_size))
    log: list[tuple[str, int]] = []
    refs: list[StorageWeakRef] = []
    wrapped, optimizer = wrap(model, approach, device)
    report = RankReport(rank, world_size, approach)
    if approach in FSDP2_SETTINGS:

        def live_gather_buffers() -> int:
            """Bytes of this step's all-gather outputs whose memory is still held."""
            pairs = zip(log, refs, strict=True)
            return sum(size for (name, size), ref in pairs if name == "all_gather_single" and not ref.expired())

        watch_gathered(model, report.gathered, report.buffers, live_gather_buffers)
    for _ in range(steps):
        log.clear()
        refs.clear()
        report.gathered.clear()
        report.buffers.clear()
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
    local = local_optimizer(optimizer)
    report.held = measure_state(model, local).component_bytes()
    report.step_counters = step_counter_bytes(local)
    params = list(model.parameters())
    full = [(p.full_tensor() if hasattr(p, "full_tensor") else p).detach() for p in params]
    report.weights = torch.cat([t.reshape(-1) for t in full]).cpu().numpy()
    return report


def reference_weights(steps: PositiveInt = 3) -> np.ndarray:
    """The same training in one process on the whole batch: what every rank's weights must equal (notebook 09)."""
    return _reference(steps)[0]


def _reference(steps: int) -> tuple[np.ndarray, list[float]]:
    """One process trains on the whole batch in fp32: its final weights, flattened, and its loss at each step."""
    torch.manual_seed(0)
    model = make_model()
    x, y = make_batch()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy(), losses


def check_reports(reports: list[RankReport], steps: PositiveInt = 3) -> None:
    """Raise AssertionError unless each rank's bytes and traffic are as predicted and weights agree (notebook 09).

    A run that computes in bf16 cannot end on fp32's weights: its losses must stay within 1% of fp32's.
    """
    model = make_model()
    param_bytes = sum(tensor_bytes(p) for p in model.parameters())
    reference, reference_losses = _reference(steps)
    for r in reports:
        where = f"{r.approach} rank {r.rank}"
        predicted = predicted_rank_bytes(model, r.approach, r.world_size, r.rank)
        assert r.held == predicted, f"{where}: measured {r.held}, predicted {predicted}"
        counters = predicted_step_counter_bytes(model, r.approach, r.world_size, r.rank)
        assert r.step_counters == counters, f"{where}: counters {r.step_counters} B != {counters}"
        traffic: dict[str, int] = {}
        for name, size in r.comm:
            traffic[name] = traffic.get(name, 0) + size
        expected = predicted_traffic(r.approach, param_bytes)
        assert traffic == expected, f"{where}: traffic {traffic}, predicted {expected}"
        gathered = predicted_gathered_bytes(model, r.approach)
        assert r.gathered == gathered, f"{where}: gathered {r.gathered} B, predicted {gathered}"
        # At least FSDP2's own buffer: gloo's worker thread may still hold an earlier one for a moment.
        buffers = predicted_buffer_bytes(model, r.approach)
        assert len(r.buffers) == len(buffers) and all(b >= p for b, p in zip(r.buffers, buffers, strict=True)), (
            f"{where}: all-gather buffers {r.buffers} B, predicted at least {buffers}"
        )
        compute_dtype = FSDP2_SETTINGS[r.approach][1] if r.approach in FSDP2_SETTINGS else torch.float32
        if compute_dtype == torch.float32:
            # Summing the batch mean in another order (and, on GPUs, other kernels) moves the last bits.
            torch.testing.assert_close(torch.from_numpy(r.weights), torch.from_numpy(reference), rtol=1e-5, atol=1e-5)
        else:
            assert np.allclose(r.losses, reference_losses, rtol=1e-2), f"{where}: losses {r.losses}"
        assert np.array_equal(r.weights, reports[0].weights), f"rank {r.rank}'s weights differ from rank 0's"


def format_reports(reports: list[RankReport]) -> str:
    """A table, one row a rank: bytes held; bytes of the tensors passed to collectives in the last step and
    the bytes a ring would send for them; the final loss (notebook 09)."""
    lines = [
        f"{'approach':10} {'ranks':>5} {'rank':>4} {'params B':>9} {'grads B':>8} {'Adam m,v B':>10} "
        f"{'passed B':>9} {'sent B':>7} {'loss':>6}"
    ]
    for r in reports:
        params, grads, state = (r.held.get(name, 0) for name in ("parameters", "gradients", "optimizer_state"))
        passed = sum(size for _, size in r.comm)
        lines.append(
            f"{r.approach:10} {r.world_size:>5} {r.rank:>4} {params:>9,} {grads:>8,} {state:>10,} "
            f"{passed:>9,} {r.ring_sent:>7,.0f} {r.losses[-1]:>6.3f}"
        )
    return "\n".join(lines)
