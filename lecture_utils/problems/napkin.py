"""Practice for notebook 00: the lecture's two napkin questions, asked again with other models and clusters.

Each problem's numbers are set once, below, and both its question and its worked answer are built
from them, so the two cannot disagree.
"""

import math

from lecture_utils.accounting import RECIPES
from lecture_utils.fp4 import bits_per_value
from lecture_utils.hardware import ACCELERATORS
from lecture_utils.napkin import SECONDS_PER_DAY, cluster_flops_per_day, training_flops
from lecture_utils.practice import Mistake, Problem, Worked
from lecture_utils.problems import unit_mixup
from lecture_utils.sharding import STAGES, Stage, largest_params, per_gpu_bytes

H100, H200, B200 = ACCELERATORS["h100-sxm"], ACCELERATORS["h200-sxm"], ACCELERATORS["b200"]
MIXED = RECIPES["bf16 + fp32 master"]

# 1: a 405B model on a large H100 cluster
BIG_PARAMS, BIG_TOKENS, BIG_GPUS, BIG_MFU = 405e9, 15e12, 16_384, 0.40
# 2: the tokens a month buys
MONTH_PARAMS, MONTH_GPUS, MONTH_DAYS, MONTH_MFU = 70e9, 2_048, 30, 0.45
# 3: the GPUs a deadline needs (question 1 of the notebook: 70B on 15T tokens)
B200_PARAMS, B200_TOKENS, B200_DAYS, B200_MFU = 70e9, 15e12, 30, 0.40
# 4: ZeRO-2 on eight H200s with the mixed-precision recipe
ZERO_GPUS, ZERO_STAGE = 8, 2
# 5: plain data parallelism holds everything on every GPU
DDP_PARAMS, DDP_GPUS = 7e9, 64
# 6: a model's weights stored in NVFP4 (notebook 01): 4-bit values, one 8-bit scale per 16 of them
FP4_PARAMS, FP4_BLOCK, FP4_SCALE_BITS = 120e9, 16, 8


def _days_405b() -> Worked:
    flops = training_flops(BIG_PARAMS, BIG_TOKENS)
    peak = H100.peak("bf16")
    per_day = cluster_flops_per_day(BIG_GPUS, peak, BIG_MFU)
    days = flops / per_day
    steps = (
        f"training FLOPs = 6ND = 6 x {BIG_PARAMS / 1e9:g}e9 x {BIG_TOKENS / 1e12:g}e12 = {flops:.4g}",
        f"one day = {BIG_GPUS:,} GPUs x {peak:.4g} FLOP/s (dense bf16) x MFU {BIG_MFU}",
        f"          x {SECONDS_PER_DAY:,} s = {per_day:.4g} FLOPs",
        f"days = {flops:.4g} / {per_day:.4g} = {days:.1f}",
    )
    return Worked(steps, days, f"{days:.1f} days")


def _tokens_in_a_month() -> Worked:
    budget = MONTH_DAYS * cluster_flops_per_day(MONTH_GPUS, H100.peak("bf16"), MONTH_MFU)
    per_token = training_flops(MONTH_PARAMS, 1)
    tokens = budget / per_token
    steps = (
        f"budget = {MONTH_DAYS} days x {MONTH_GPUS:,} GPUs x {H100.peak('bf16'):.4g} FLOP/s x MFU {MONTH_MFU}"
        f" x {SECONDS_PER_DAY:,} s = {budget:.4g} FLOPs",
        f"one token costs 6N = 6 x {MONTH_PARAMS / 1e9:g}e9 = {per_token:.3g} FLOPs",
        f"tokens = {budget:.4g} / {per_token:.3g} = {tokens:.4g}",
    )
    return Worked(steps, tokens / 1e12, f"{tokens / 1e12:.2f} trillion tokens")


def _b200s_needed(peak: float) -> tuple[float, int]:
    """(GPUs the run needs, unrounded; the whole number that meets the deadline) at a given peak."""
    gpus = training_flops(B200_PARAMS, B200_TOKENS) / (B200_DAYS * cluster_flops_per_day(1, peak, B200_MFU))
    return gpus, math.ceil(gpus)


def _b200s() -> Worked:
    flops, peak = training_flops(B200_PARAMS, B200_TOKENS), B200.peak("bf16")
    per_gpu = B200_DAYS * cluster_flops_per_day(1, peak, B200_MFU)
    exact, whole = _b200s_needed(peak)
    steps = (
        f"training FLOPs = 6ND = 6 x {B200_PARAMS / 1e9:g}e9 x {B200_TOKENS / 1e12:g}e12 = {flops:.4g}",
        f"one B200 in {B200_DAYS} days = {peak:.4g} FLOP/s (dense bf16) x MFU {B200_MFU} x {B200_DAYS}"
        f" x {SECONDS_PER_DAY:,} s = {per_gpu:.4g} FLOPs",
        f"GPUs = {flops:.4g} / {per_gpu:.4g} = {exact:.1f}, rounded up: {whole:,}",
    )
    return Worked(steps, whole, f"{whole:,} GPUs")


def _zero2_on_h200s() -> Worked:
    p, g, k = MIXED.zero_split()
    per_param = per_gpu_bytes(1.0, ZERO_GPUS, ZERO_STAGE, MIXED)
    largest = largest_params(H200.memory_bytes, ZERO_GPUS, ZERO_STAGE, MIXED)
    steps = (
        f"recipe '{MIXED.name}':",
        f"  {MIXED.formula()} B per parameter",
        f"{STAGES[ZERO_STAGE]} keeps the {p} B of weights whole and shards the other {g} + {k} B:",
        f"  per GPU {p} + ({g} + {k}) / {ZERO_GPUS} = {per_param:g} B per parameter",
        f"largest = {H200.memory_bytes:.4g} B / {per_param:g} B = {largest:.4g} parameters",
    )
    return Worked(steps, largest / 1e9, f"{largest / 1e9:.1f}B parameters")


def _largest_at(stage: Stage) -> float:
    return largest_params(H200.memory_bytes, ZERO_GPUS, stage, MIXED) / 1e9


def _ddp_per_gpu() -> Worked:
    recipe = RECIPES["fp32"]
    held = per_gpu_bytes(DDP_PARAMS, DDP_GPUS, 0, recipe)
    steps = (
        f"recipe '{recipe.name}': {recipe.formula()} B per parameter",
        f"plain data parallelism copies all of it to each of the {DDP_GPUS} GPUs:",
        f"  {DDP_PARAMS / 1e9:g}e9 x {recipe.total} B = {held:.4g} B on every GPU",
    )
    return Worked(steps, held / 1e9, f"{held / 1e9:.0f} GB")


def _nvfp4_weights() -> Worked:
    bits = bits_per_value(FP4_BLOCK, FP4_SCALE_BITS)
    size = FP4_PARAMS * bits / 8
    steps = (
        f"each value: 4 bits of e2m1, plus its share of the block's scale, {FP4_SCALE_BITS} bits / {FP4_BLOCK}"
        f" = {bits:g} bits",
        f"{FP4_PARAMS / 1e9:g}e9 values x {bits:g} bits / 8 bits per byte = {size:.4g} B",
        f"(in bf16 the same weights take {FP4_PARAMS * 2:.4g} B: {16 / bits:.2f}x as much)",
    )
    return Worked(steps, size / 1e9, f"{size / 1e9:g} GB")


_GB_UNITS = {"GiB": 2**30 / 1e9, "TB": 1e3, "MB": 1e-3, "B": 1e-9, "bytes": 1e-9}
_BILLIONS = {"B": 1.0, "billion": 1.0, "M": 1e-3, "million": 1e-3, "params": 1e-9, "parameters": 1e-9}
_SPARSE = "that uses twice the dense bf16 peak (the 2:4-sparse figure, or fp8's): this run is dense bf16."

PROBLEMS: dict[int, Problem] = {
    1: Problem(
        1,
        "a 405B model",
        f"A dense model of {BIG_PARAMS / 1e9:.0f}B parameters trains in bf16 on {BIG_TOKENS / 1e12:.0f}T tokens, on "
        f"{BIG_GPUS:,} H100 SXM GPUs at MFU {BIG_MFU:.2f} (of the dense bf16 peak). How many days does the run "
        "take? Answer in days.",
        "days",
        _days_405b,
        "6ND FLOPs, divided by what the cluster does in one day: GPUs x dense bf16 peak x MFU x seconds.",
        mistakes=(
            Mistake(lambda days: days / 2, _SPARSE),
            Mistake(lambda days: days / 3, "that counts the forward pass only (2ND): training runs the backward too."),
            Mistake(lambda days: days * BIG_MFU, "that runs every GPU at its peak: multiply the peak by the MFU."),
        ),
    ),
    2: Problem(
        2,
        "the tokens a month buys",
        f"You have {MONTH_GPUS:,} H100 SXM GPUs for {MONTH_DAYS} days and expect MFU {MONTH_MFU} (of the dense bf16 "
        f"peak). On how many tokens can a dense {MONTH_PARAMS / 1e9:.0f}B model train in bf16? Answer in trillions "
        'of tokens (2 or "2T" for 2e12).',
        "trillions of tokens",
        _tokens_in_a_month,
        "Turn the cluster's month into FLOPs first, then divide by what one token costs in training.",
        units={"T": 1.0, "trillion": 1.0, "B": 1e-3, "billion": 1e-3, "tokens": 1e-12},
        mistakes=(
            Mistake(lambda t: t * 2, _SPARSE),
            Mistake(lambda t: t * 3, "one token costs 2N FLOPs forward only: training costs 6N."),
        ),
    ),
    3: Problem(
        3,
        "B200s for a deadline",
        f"How many B200 GPUs train the notebook's first run, a dense {B200_PARAMS / 1e9:.0f}B model on "
        f"{B200_TOKENS / 1e12:.0f}T tokens in bf16, in {B200_DAYS} days at MFU {B200_MFU:.2f}? A B200's dense bf16 "
        f"peak is {B200.peak('bf16') / 1e12:,.0f} TFLOP/s ({B200.peak('bf16', sparse=True) / 1e12:,.0f} with 2:4 "
        "sparsity). Answer with a whole number of GPUs.",
        "GPUs",
        _b200s,
        "Write the days formula, solve it for the GPUs, and round the way that still meets the deadline.",
        rel_tol=0.0,
        close_tol=0.02,
        mistakes=(Mistake(lambda _: _b200s_needed(B200.peak("bf16", sparse=True))[1], _SPARSE),),
    ),
    4: Problem(
        4,
        "ZeRO-2 on eight H200s",
        f"A model trains on {ZERO_GPUS} H200 GPUs ({H200.memory_bytes / 1e9:.0f} GB each) with bf16 weights and "
        "gradients, an fp32 master copy and fp32 Adam state "
        f"({' + '.join(map(str, MIXED.zero_split()))} bytes per parameter), sharded with "
        f"{STAGES[ZERO_STAGE]}. Leaving activations out, what is the largest model that fits? Count 1 GB as "
        '1e9 bytes, and answer in billions of parameters (1.5 or "1.5B" for 1.5e9).',
        "billions of parameters",
        _zero2_on_h200s,
        "Per GPU, count the bytes of a parameter this stage keeps whole, plus those it splits over the GPUs.",
        units=_BILLIONS,
        mistakes=(
            Mistake(lambda _: _largest_at(3), "that shards the weights too (ZeRO-3): ZeRO-2 keeps them whole."),
            Mistake(lambda _: _largest_at(1), "that keeps the gradients whole (ZeRO-1): ZeRO-2 shards them too."),
            Mistake(lambda _: _largest_at(0), "that copies everything to every GPU, as plain data parallelism does."),
            Mistake(
                lambda b: b * 2**30 / 1e9,
                f"that reads {H200.memory_bytes / 1e9:.0f} GB as GiB: the question counts 1 GB as 1e9 bytes.",
            ),
        ),
    ),
    5: Problem(
        5,
        "a 7B model under plain data parallelism",
        f"A {DDP_PARAMS / 1e9:.0f}B model trains with plain data parallelism (DDP) on {DDP_GPUS} GPUs, every "
        "tensor in fp32, with AdamW. How many GB of parameters, gradients and Adam state does each GPU hold? "
        "Answer in GB (1 GB = 1e9 bytes).",
        "GB",
        _ddp_per_gpu,
        "Count the bytes one parameter costs in training, then ask which of them DDP splits across GPUs.",
        units=_GB_UNITS,
        mistakes=(
            Mistake(lambda gb: gb / DDP_GPUS, "that shards the state: plain data parallelism copies it to every GPU."),
            Mistake(lambda gb: gb / 2, "Adam keeps two tensors the size of the model, m and v."),
            unit_mixup("GiB", "GB"),
        ),
    ),
    6: Problem(
        6,
        "a model in NVFP4",
        f"A {FP4_PARAMS / 1e9:.0f}B-parameter model's weights are stored in NVFP4 (notebook 01): each weight is a "
        f"4-bit e2m1 value, and each block of {FP4_BLOCK} weights shares one {FP4_SCALE_BITS}-bit e4m3 scale. "
        "Leave out the one fp32 scale per weight matrix (a few hundred of them). How many GB do the weights take? "
        "Count 1 GB as 1e9 bytes.",
        "GB",
        _nvfp4_weights,
        "Count the bits each weight costs, its own and its share of its block's scale, then turn bits into bytes.",
        units=_GB_UNITS,
        mistakes=(
            Mistake(lambda gb: gb * 4 / bits_per_value(FP4_BLOCK, FP4_SCALE_BITS), "that leaves the block scales out."),
            Mistake(
                lambda gb: gb * (4 + FP4_SCALE_BITS) / bits_per_value(FP4_BLOCK, FP4_SCALE_BITS),
                "that gives every weight a scale of its own: one scale serves a whole block.",
            ),
            Mistake(lambda gb: gb * 8, "that is in bits: a byte holds 8 of them."),
            Mistake(lambda _: FP4_PARAMS * 2 / 1e9, "that is the weights in bf16, 16 bits each."),
            unit_mixup("GiB", "GB"),
        ),
    ),
}
