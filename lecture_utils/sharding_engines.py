"""PyTorch's sharding engines set up on one model: DDP, ZeroRedundancyOptimizer, FSDP2's settings (notebook 09).

`wrap` puts a model under one approach of lecture_utils.sharding.APPROACHES and builds its AdamW;
`watch_gathered` records, during a forward, how many bytes of full parameters FSDP2 holds besides
its shards: what ZeRO-2 keeps from the forward to the backward and ZeRO-3 frees layer by layer.
`ddp_gradient_buckets` reads where DDP keeps the gradients it all-reduces. `track_rank_step` follows
one rank's live bytes by component through a step (lecture_utils.step_memory.track_step).
"""

import warnings
from collections.abc import Callable

import torch
import torch._dynamo  # fully_shard imports it; importing it once here spares each forked rank
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor
from torch.nn.parallel import DistributedDataParallel

with warnings.catch_warnings():
    # torch.distributed.optim uses torch.jit.script and torch.jit.interface, which torch 2.13
    # deprecates with a warning at import: torch's business, not this module's.
    warnings.filterwarnings("ignore", message=r"`torch\.jit\.\w+` is deprecated", category=DeprecationWarning)
    from torch.distributed.optim import ZeroRedundancyOptimizer

from lecture_utils.checks import NonNegativeInt, PositiveInt
from lecture_utils.memory import tensor_bytes
from lecture_utils.sharding import FSDP2_SETTINGS, Approach, make_batch, make_model, rank_batch, sharded_layers
from lecture_utils.step_memory import StepTimeline, track_step

LR = 1e-2


def wrap(model: nn.Module, approach: Approach, device: torch.device) -> tuple[nn.Module, torch.optim.Optimizer]:
    """Put `model` under `approach` in the current process group, and build its AdamW (notebook 09).

    Returns the module to call and the optimizer to step; for ZeRO-1 and FSDP2 the optimizer keeps
    state only for this rank's shard.
    """
    if approach in FSDP2_SETTINGS:
        reshard, dtype = FSDP2_SETTINGS[approach]
        # Compute in `dtype`; reduce and return in fp32 (no-ops for fp32).
        f32 = torch.float32
        policy = MixedPrecisionPolicy(
            param_dtype=dtype,
            reduce_dtype=f32,
            output_dtype=f32,
        )
        mesh = DeviceMesh.from_group(dist.group.WORLD, device.type)  # all ranks shard
        settings = dict(mesh=mesh, reshard_after_forward=reshard, mp_policy=policy)
        for layer in sharded_layers(model):
            fully_shard(layer, **settings)
        fully_shard(model, **settings)
        return model, torch.optim.AdamW(model.parameters(), lr=LR)
    ids = [device.index] if device.type == "cuda" else None
    # Gradients as views into DDP's communication buckets: no second copy of them.
    ddp = DistributedDataParallel(model, device_ids=ids, gradient_as_bucket_view=True)
    # DDP's built-in all-reduce runs in C++, out of sight of `record_collectives`; its
    # documented Python twin does the same (average each gradient bucket) through
    # torch.distributed, where it is counted.
    ddp.register_comm_hook(None, allreduce_hook)
    if approach == "zero1":
        return ddp, ZeroRedundancyOptimizer(
            ddp.parameters(),
            optimizer_class=torch.optim.AdamW,
            lr=LR,
        )
    return ddp, torch.optim.AdamW(ddp.parameters(), lr=LR)


def local_optimizer(optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
    """The optimizer of this rank's own parameters; ZeroRedundancyOptimizer keeps it in `.optim` (notebook 09)."""
    return optimizer.optim if isinstance(optimizer, ZeroRedundancyOptimizer) else optimizer


def gathered_bytes(model: nn.Module) -> int:
    """Bytes of full parameters FSDP2 holds for `model` right now, besides its shards (notebook 09).

    FSDP2 registers each sharded parameter as a DTensor and swaps in the full (gathered) tensor while
    a layer needs it; freeing it empties the storage. So: the storages of the parameters that are
    not DTensors, each counted once.
    """
    storages = {}
    for p in model.parameters():
        if not isinstance(p, DTensor):
            storage = p.untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()  # an emptied storage counts 0
    return sum(storages.values())


def watch_gathered(
    model: nn.Module, log: list[int], buffers: list[int] | None = None, live_buffers: Callable[[], int] | None = None
) -> None:
    """Log `gathered_bytes(model)` as each sharded layer's forward starts and as the forward ends (notebook 09).

    With `buffers` and `live_buffers`, also log `live_buffers()` at the same moments: the caller's
    count of the all-gather outputs still alive (FSDP2's flat buffers, which it keeps a while after
    copying the full parameters out of them). Hooks added after fully_shard's run after it: FSDP2
    has gathered the layer's parameters by then.
    """

    def record(*_hook_args: object) -> None:
        log.append(gathered_bytes(model))
        if buffers is not None and live_buffers is not None:
            buffers.append(live_buffers())

    for layer in sharded_layers(model):
        layer.register_forward_pre_hook(record)
    model.register_forward_hook(record)


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


def track_rank_step(
    rank: NonNegativeInt, world_size: PositiveInt, approach: Approach, warmup_steps: NonNegativeInt = 1
) -> StepTimeline:
    """One training step of this rank under `approach`, its live bytes by component at every stage (notebook 09).

    The model, seed and slice of the batch are sharding_measure.train_rank's. `warmup_steps`
    untracked steps come first, so Adam's state is there from the tracked step's start, as on every
    step but the first. The tensor count (step_memory.track_step) sees FSDP2's shards, not the full
    weights it gathers for the layer computing, nor DDP's gradient buckets beyond the .grad views.
    """
    torch.manual_seed(0)
    x, y = rank_batch(rank, world_size)
    wrapped, optimizer = wrap(make_model(), approach, torch.device("cpu"))

    def loss_fn() -> torch.Tensor:
        return nn.functional.mse_loss(wrapped(x), y)

    for _ in range(warmup_steps):
        loss_fn().backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return track_step(wrapped, optimizer, loss_fn, data=[x, y], state_of=local_optimizer(optimizer))
