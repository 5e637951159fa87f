"""Sharded data parallel training on a napkin: per-GPU bytes of DDP and ZeRO stages 1-3, and traffic (notebook 09).

The ZeRO paper (Rajbhandari et al. 2019, Fig. 1) splits each parameter's training state into
parameters (p bytes), gradients (g bytes) and everything the optimizer keeps (K bytes): a
lecture_utils.accounting.Recipe's `zero_split()`. Stage 0 (plain data parallelism, DDP) copies all
of it to every GPU; stage 1 shards the optimizer's part over the N GPUs, stage 2 the gradients too,
stage 3 the parameters too. The exact per-rank predictions for the engines PyTorch ships
(whole-parameter shards for ZeroRedundancyOptimizer, dim-0 chunks for FSDP2) sit beside the
formulas, in the accounting's component names, so `sharding_measure` can be checked against them
byte for byte. FSDP2 runs three ways here (FSDP2_SETTINGS): ZeRO-3, the default; ZeRO-2, keeping
each layer's gathered parameters from its forward to its backward; ZeRO-3 gathering in bf16.
"""

import itertools
import math
from typing import Literal

import torch
from jaxtyping import Float
from torch import nn

from lecture_utils.accounting import RECIPES, Recipe
from lecture_utils.checks import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, PositiveInts

Stage = Literal[0, 1, 2, 3]  # 0 is plain data parallelism
Approach = Literal["ddp", "zero1", "zero2", "fsdp2", "fsdp2_bf16"]
Collective = Literal["all_reduce", "all_gather_single", "reduce_scatter_single", "broadcast"]
STAGES = {0: "DDP", 1: "ZeRO-1", 2: "ZeRO-2", 3: "ZeRO-3"}
# PyTorch engine -> the ZeRO stage it implements. zero2 is FSDP2 with reshard_after_forward=False,
# fsdp2_bf16 FSDP2 with a MixedPrecisionPolicy: bf16 parameters for compute, fp32 gradient reduction.
APPROACHES = {"ddp": 0, "zero1": 1, "zero2": 2, "fsdp2": 3, "fsdp2_bf16": 3}
# The FSDP2 approaches: (reshard_after_forward, dtype the parameters are gathered and computed in).
FSDP2_SETTINGS = {"zero2": (False, torch.float32), "fsdp2": (True, torch.float32), "fsdp2_bf16": (True, torch.bfloat16)}
# The first stage that shards each component; everything else the optimizer keeps is sharded from stage 1.
SHARDED_FROM = {"parameters": 3, "gradients": 2}


def per_gpu_bytes(
    params: PositiveFloat, num_gpus: PositiveInt, stage: Stage, recipe: Recipe = RECIPES["fp32"]
) -> float:
    """Bytes of params, grads and optimizer state one GPU holds at a ZeRO stage, activations excluded (notebook 09)."""
    p, g, k = recipe.zero_split()
    sharded = (0, k, g + k, p + g + k)[stage]  # the bytes per parameter that are split N ways
    return (p + g + k - sharded) * params + sharded * params / num_gpus


def largest_params(
    memory_bytes: PositiveFloat, num_gpus: PositiveInt, stage: Stage, recipe: Recipe = RECIPES["fp32"]
) -> float:
    """Parameters whose training state fits in `memory_bytes` per GPU, an upper bound: no activations (notebook 09)."""
    return memory_bytes / per_gpu_bytes(1.0, num_gpus, stage, recipe)


def ring_bytes_sent(collective: Collective, tensor_bytes: NonNegativeFloat, world_size: PositiveInt) -> float:
    """Bytes one rank sends for a collective on a tensor of `tensor_bytes`, with the ring algorithm (notebook 09).

    All-reduce = reduce-scatter then all-gather: each is N - 1 steps of a 1/N chunk, so a rank sends
    2 (N - 1) / N of the tensor. Broadcast is counted pipelined, (N - 1) / N on average per rank.
    """
    share = {"all_reduce": 2, "all_gather_single": 1, "reduce_scatter_single": 1, "broadcast": 1}
    return share[collective] * (world_size - 1) / world_size * tensor_bytes


def predicted_traffic(approach: Approach, param_bytes: NonNegativeInt) -> dict[str, int]:
    """Bytes of the tensors one rank passes to each collective in one training step (notebook 09).

    `param_bytes` are the fp32 parameters' (as many as their fp32 gradients'). DDP all-reduces every
    gradient once. ZeroRedundancyOptimizer keeps DDP's all-reduce, then each rank broadcasts the
    parameters it updated. FSDP2 all-gathers each layer's parameters before the forward and, if it
    freed them after the forward (ZeRO-3), again before the backward; it gathers them in its compute
    dtype (bf16: half the bytes) and reduce-scatters the gradients in fp32.
    """
    if approach in FSDP2_SETTINGS:
        reshard, dtype = FSDP2_SETTINGS[approach]
        gathered = (2 if reshard else 1) * param_bytes * dtype.itemsize // torch.float32.itemsize
        return {"all_gather_single": gathered, "reduce_scatter_single": param_bytes}
    if approach == "zero1":
        return {"all_reduce": param_bytes, "broadcast": param_bytes}
    return {"all_reduce": param_bytes}


def predicted_gathered_bytes(model: nn.Module, approach: Approach) -> list[int]:
    """Bytes of gathered (full) parameters alive as each layer's forward starts, then as the forward ends (notebook 09).

    Only FSDP2 gathers; `model` is a sequence of layers, each sharded on its own. ZeRO-3 frees each
    layer's full parameters when its forward ends, so one layer's are alive at a time and none
    after the forward; ZeRO-2 keeps them all until the backward.
    """
    if approach not in FSDP2_SETTINGS:
        return []
    reshard, dtype = FSDP2_SETTINGS[approach]
    layers = [sum(p.numel() for p in layer.parameters()) * dtype.itemsize for layer in sharded_layers(model)]
    if reshard:
        return [*layers, 0]
    alive = list(itertools.accumulate(layers))
    return [*alive, alive[-1]]


def predicted_buffer_bytes(model: nn.Module, approach: Approach) -> list[int]:
    """Bytes of FSDP2's flat all-gather buffers alive at the moments predicted_gathered_bytes counts (notebook 09).

    A layer's all-gather fills one flat buffer with its full parameters in the compute dtype, which
    are then copied out into the parameters. In the forward, FSDP2 (torch 2.13's
    `_fsdp_param_group.py`) keeps that buffer until the next layer's all-gather is done (freed in
    wait_for_unshard, just before that layer's copy-out), so a layer computes with two copies of
    its full weights alive; the root frees the last one as the forward ends. The same for ZeRO-2
    and ZeRO-3: it is not the resharding that keeps it.
    """
    if approach not in FSDP2_SETTINGS:
        return []
    dtype = FSDP2_SETTINGS[approach][1]
    return [*(sum(p.numel() for p in layer.parameters()) * dtype.itemsize for layer in sharded_layers(model)), 0]


def sharded_layers(model: nn.Module) -> list[nn.Module]:
    """The layers that hold parameters: FSDP2 shards each on its own, so it gathers one at a time (notebook 09)."""
    return [layer for layer in model.children() if any(True for _ in layer.parameters())]


def make_model() -> nn.Sequential:
    """The small model every rank trains: three linear layers, 7,312 parameters, dims divisible by 8 (notebook 09)."""
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 16))


def gpt2_small(device: str = "meta") -> nn.ModuleList:
    """GPT-2 small's parameter tensors, 124M, its unembedding tied to the token embedding (notebook 09).

    On the meta device the tensors have shapes and no memory: enough to count and partition them.
    Linear layers stand in for GPT-2's Conv1D ones, which hold the same weights transposed.
    """
    d, vocab, context, layers = 768, 50257, 1024, 12

    def block() -> list[nn.Module]:  # norm, attention's qkv and output, norm, the MLP's up and down
        attention = [nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)]
        return [*attention, nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)]

    with torch.device(device):
        body = [module for _ in range(layers) for module in block()]
        return nn.ModuleList([nn.Embedding(vocab, d), nn.Embedding(context, d), *body, nn.LayerNorm(d)])


def make_batch(rows: PositiveInt = 16) -> tuple[Float[torch.Tensor, "rows 32"], Float[torch.Tensor, "rows 16"]]:
    """One fixed global batch, drawn on the CPU from its own generator so every rank draws the same (notebook 09)."""
    gen = torch.Generator().manual_seed(1)
    return torch.randn(rows, 32, generator=gen), torch.randn(rows, 16, generator=gen)


def rank_batch(
    rank: NonNegativeInt, world_size: PositiveInt
) -> tuple[Float[torch.Tensor, "rows 32"], Float[torch.Tensor, "rows 16"]]:
    """This rank's rows of make_batch(): the ranks split one global batch evenly (notebook 09)."""
    x, y = make_batch()
    rows, left = divmod(x.shape[0], world_size)
    if left:
        raise ValueError(f"the batch of {x.shape[0]} rows does not split over {world_size} ranks")
    return x[rank * rows : (rank + 1) * rows], y[rank * rows : (rank + 1) * rows]


def trainable_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The trainable parameters of `model`, which must have some to shard (notebook 09)."""
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameters: there is nothing to shard")
    return params


def zero1_owned_tensors(model: nn.Module, world_size: PositiveInt) -> list[list[int]]:
    """Sizes (elements) of the parameter tensors each rank owns under ZeroRedundancyOptimizer (notebook 09).

    It hands out whole tensors, largest first, each to the rank owning the fewest elements so far
    (the first such rank on a tie), so shards are as even as whole tensors allow, and no more.
    """
    params = trainable_parameters(model)
    owned: list[list[int]] = [[] for _ in range(world_size)]
    for numel in sorted((p.numel() for p in params), reverse=True):
        totals = [sum(sizes) for sizes in owned]
        owned[totals.index(min(totals))].append(numel)
    return owned


def zero1_partition(model: nn.Module, world_size: PositiveInt) -> list[int]:
    """Parameters (elements) whose optimizer state each rank owns under ZeroRedundancyOptimizer (notebook 09)."""
    return [sum(sizes) for sizes in zero1_owned_tensors(model, world_size)]


def _check_rank(world_size: int, rank: int) -> None:
    """Raise unless `rank` is one of the `world_size` ranks (a rank past the last holds nothing and sends nothing)."""
    if rank >= world_size:
        raise ValueError(f"rank must be below world_size {world_size}, got {rank}")


def _rank_parameters(model: nn.Module, world_size: int, rank: int) -> list[nn.Parameter]:
    """The model's trainable parameters, once `rank` is one of the `world_size` ranks."""
    _check_rank(world_size, rank)
    return trainable_parameters(model)


def predicted_step_counter_bytes(
    model: nn.Module,
    approach: Approach,
    world_size: PositiveInt,
    rank: NonNegativeInt,
    counter_bytes: PositiveInt = 4,
) -> int:
    """Bytes of Adam's per-tensor `step` scalars on `rank`: one per tensor this rank updates (notebook 09).

    DDP and FSDP2 ranks (any setting) update (a shard of) every tensor; a ZeroRedundancyOptimizer
    rank only the whole tensors it owns, so with more ranks than tensors some ranks keep no counter.
    """
    params = _rank_parameters(model, world_size, rank)
    if approach == "zero1":
        return counter_bytes * len(zero1_owned_tensors(model, world_size)[rank])
    return counter_bytes * len(params)


def fsdp2_local_numel(shape: PositiveInts, world_size: PositiveInt, rank: NonNegativeInt) -> int:
    """Elements of one parameter on `rank` under FSDP2: torch.chunk's share of dim 0, rest whole (notebook 09)."""
    _check_rank(world_size, rank)
    rows = math.ceil(shape[0] / world_size)  # torch.chunk: equal chunks, the last ones short or empty
    return max(0, min(shape[0], (rank + 1) * rows) - rank * rows) * math.prod(shape[1:])


def predicted_rank_bytes(
    model: nn.Module,
    approach: Approach,
    world_size: PositiveInt,
    rank: NonNegativeInt,
    recipe: Recipe = RECIPES["fp32"],
) -> dict[str, int]:
    """Exact bytes of each component `rank` holds under one of PyTorch's engines; empty ones left out (notebook 09).

    The keys are lecture_utils.accounting's COMPONENTS, as `measure_state(...).component_bytes()` gives them.
    Read between steps, when every FSDP2 approach holds only shards (ZeRO-2's full parameters live
    from a forward to its backward: predicted_gathered_bytes).
    """
    params = _rank_parameters(model, world_size, rank)
    total = sum(t.numel() for t in params)
    if approach == "zero1":
        shard = zero1_partition(model, world_size)[rank]
    else:
        shard = sum(fsdp2_local_numel(t.shape, world_size, rank) for t in params)
    stage = 3 if approach in FSDP2_SETTINGS else APPROACHES[approach]
    held = {
        name: size * (shard if stage >= SHARDED_FROM.get(name, 1) else total)
        for name, size in recipe.bytes_per_param().items()
    }
    return {name: n for name, n in held.items() if n}
