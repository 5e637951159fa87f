"""Sharded data parallel training on a napkin: per-GPU bytes of DDP and ZeRO stages 1-3, and traffic.

The ZeRO paper (Rajbhandari et al. 2019, Fig. 1) splits each parameter's training state into
parameters (p bytes), gradients (g bytes) and optimizer state (K bytes). Stage 0 (plain data
parallelism, DDP) copies all of it to every GPU; stage 1 shards the optimizer state over the N GPUs,
stage 2 the gradients too, stage 3 the parameters too. The exact per-rank predictions for the
engines PyTorch ships (whole-parameter shards for ZeroRedundancyOptimizer, dim-0 chunks for FSDP2)
sit beside the formulas, so `sharding_measure` can be checked against them byte for byte.
"""

from __future__ import annotations

import math

import torch
from jaxtyping import Float
from torch import nn

from lecture_utils.checks import check_int, check_positive
from lecture_utils.precision import RECIPES, Recipe

STAGES = {0: "DDP", 1: "ZeRO-1", 2: "ZeRO-2", 3: "ZeRO-3"}
APPROACHES = {"ddp": 0, "zero1": 1, "fsdp2": 3}  # PyTorch engine -> the ZeRO stage it implements
FP32_ADAMW = (4, 4, 8)  # the lecture's recipe: fp32 params, fp32 grads, fp32 Adam m and v


def recipe_split(recipe: Recipe) -> tuple[int, int, int]:
    """(p, g, K): bytes per parameter of params, grads and everything the optimizer keeps."""
    sizes = {c: torch.empty((), dtype=d).element_size() for c, d in recipe.dtypes.items()}
    return sizes.pop("params", 0), sizes.pop("grads", 0), sum(sizes.values())


MIXED_ADAMW = recipe_split(RECIPES["bf16 + fp32 master"])  # (2, 2, 12) as in the paper


def check_stage(stage: object) -> None:
    """Raise unless `stage` is a ZeRO stage 0-3 (0 = plain data parallelism)."""
    if isinstance(stage, bool) or not isinstance(stage, int):
        raise TypeError(f"stage must be an int in 0-3, got {type(stage).__name__}")
    if stage not in STAGES:
        raise ValueError(f"stage must be 0 (DDP), 1, 2 or 3 (ZeRO), got {stage}")


def check_approach(approach: object) -> None:
    """Raise unless `approach` names one of the measured engines."""
    if approach not in APPROACHES:
        raise ValueError(f"unknown approach {approach!r}; expected one of {sorted(APPROACHES)}")


def per_gpu_bytes(params: float, num_gpus: int, stage: int, recipe: tuple[int, int, int] = FP32_ADAMW) -> float:
    """Bytes of params, grads and optimizer state one GPU holds at a ZeRO stage (activations excluded)."""
    check_positive(params=params)
    check_int("num_gpus", num_gpus)
    check_stage(stage)
    p, g, k = recipe
    sharded = (0, k, g + k, p + g + k)[stage]  # the bytes per parameter that are split N ways
    return (p + g + k - sharded) * params + sharded * params / num_gpus


def largest_params(memory_bytes: float, num_gpus: int, stage: int, recipe: tuple[int, int, int] = FP32_ADAMW) -> float:
    """Parameters whose training state fits in `memory_bytes` per GPU (an upper bound: no activations)."""
    check_positive(memory_bytes=memory_bytes)
    return memory_bytes / per_gpu_bytes(1.0, num_gpus, stage, recipe)


def ring_bytes_sent(collective: str, tensor_bytes: int, world_size: int) -> float:
    """Bytes one rank sends for a collective on a tensor of `tensor_bytes`, with the ring algorithm.

    All-reduce = reduce-scatter then all-gather: each is N - 1 steps of a 1/N chunk, so a rank sends
    2 (N - 1) / N of the tensor. Broadcast is counted pipelined, (N - 1) / N on average per rank.
    """
    check_int("world_size", world_size)
    share = {"all_reduce": 2, "all_gather_single": 1, "reduce_scatter_single": 1, "broadcast": 1}
    if collective not in share:
        raise ValueError(f"unknown collective {collective!r}; expected one of {sorted(share)}")
    return share[collective] * (world_size - 1) / world_size * tensor_bytes


def predicted_traffic(approach: str, param_bytes: int) -> dict[str, int]:
    """Bytes of the tensors one rank passes to each collective in one training step.

    DDP all-reduces every gradient once. ZeroRedundancyOptimizer keeps DDP's all-reduce, then each
    rank broadcasts the parameters it updated. FSDP2 all-gathers each layer's parameters before the
    forward and again before the backward (they were freed after the forward), and reduce-scatters
    the gradients.
    """
    check_approach(approach)
    return {
        "ddp": {"all_reduce": param_bytes},
        "zero1": {"all_reduce": param_bytes, "broadcast": param_bytes},
        "fsdp2": {"all_gather_single": 2 * param_bytes, "reduce_scatter_single": param_bytes},
    }[approach]


def make_model() -> nn.Sequential:
    """The small model every rank trains: three linear layers, 7,312 parameters, dims divisible by 8."""
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 16))


def make_batch(rows: int = 16) -> tuple[Float[torch.Tensor, "rows 32"], Float[torch.Tensor, "rows 16"]]:
    """One fixed global batch, drawn on the CPU from its own generator so every rank draws the same."""
    gen = torch.Generator().manual_seed(1)
    return torch.randn(rows, 32, generator=gen), torch.randn(rows, 16, generator=gen)


def check_model(model: nn.Module) -> list[nn.Parameter]:
    """The trainable parameters of `model`; raise if it is not a module or has none."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameters: there is nothing to shard")
    return params


def zero1_owned_tensors(model: nn.Module, world_size: int) -> list[list[int]]:
    """Sizes (elements) of the parameter tensors each rank owns under ZeroRedundancyOptimizer.

    It hands out whole tensors, largest first, each to the rank owning the fewest elements so far
    (the first such rank on a tie), so shards are as even as whole tensors allow, and no more.
    """
    params = check_model(model)
    check_int("world_size", world_size)
    owned: list[list[int]] = [[] for _ in range(world_size)]
    for numel in sorted((p.numel() for p in params), reverse=True):
        totals = [sum(sizes) for sizes in owned]
        owned[totals.index(min(totals))].append(numel)
    return owned


def zero1_partition(model: nn.Module, world_size: int) -> list[int]:
    """Parameters (elements) whose optimizer state each rank owns under ZeroRedundancyOptimizer."""
    return [sum(sizes) for sizes in zero1_owned_tensors(model, world_size)]


def _check_rank_question(model: nn.Module, approach: str, world_size: int, rank: int) -> list[nn.Parameter]:
    """The model's parameters, once model, approach, world_size and rank make a valid question."""
    params = check_model(model)
    check_approach(approach)
    check_int("world_size", world_size)
    check_int("rank", rank, minimum=0)
    if rank >= world_size:
        raise ValueError(f"rank must be below world_size {world_size}, got {rank}")
    return params


def predicted_step_counter_bytes(model: nn.Module, approach: str, world_size: int, rank: int,
                                 counter_bytes: int = 4) -> int:
    """Bytes of Adam's per-tensor `step` scalars on `rank`: one per tensor this rank updates.

    DDP and FSDP2 ranks update (a shard of) every tensor; a ZeroRedundancyOptimizer rank only the
    whole tensors it owns, so with more ranks than tensors some ranks keep no counter at all.
    """
    params = _check_rank_question(model, approach, world_size, rank)
    if approach == "zero1":
        return counter_bytes * len(zero1_owned_tensors(model, world_size)[rank])
    return counter_bytes * len(params)


def fsdp2_local_numel(shape: torch.Size, world_size: int, rank: int) -> int:
    """Elements of one parameter on `rank` under FSDP2: torch.chunk's share of dim 0, rest whole."""
    check_int("world_size", world_size)
    rows = math.ceil(shape[0] / world_size)  # torch.chunk: equal chunks, the last ones short or empty
    return max(0, min(shape[0], (rank + 1) * rows) - rank * rows) * math.prod(shape[1:])


def predicted_rank_bytes(model: nn.Module, approach: str, world_size: int, rank: int,
                         recipe: tuple[int, int, int] = FP32_ADAMW) -> dict[str, int]:
    """Exact bytes of params, grads and optimizer state `rank` holds under one of PyTorch's engines."""
    params = _check_rank_question(model, approach, world_size, rank)
    p, g, k = recipe
    total = sum(t.numel() for t in params)
    if approach == "ddp":
        return {"params": p * total, "grads": g * total, "optim": k * total}
    if approach == "zero1":
        return {"params": p * total, "grads": g * total, "optim": k * zero1_partition(model, world_size)[rank]}
    local = sum(fsdp2_local_numel(t.shape, world_size, rank) for t in params)
    return {"params": p * local, "grads": g * local, "optim": k * local}
