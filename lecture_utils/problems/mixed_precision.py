"""Practice for notebook 08: a loss scale after a spike, updates bf16 drops, a recipe's bytes, autocast's
saved tensors, the days bf16 matmuls save, what a stale fp8 scale clips. Each problem's numbers and
worked answer live in problems.mixed_precision_answers, so question and answer cannot disagree.
"""

import math

import torch

from lecture_utils.dtypes import float_range
from lecture_utils.memory import dtype_bytes
from lecture_utils.practice import Mistake, Problem
from lecture_utils.problems import percent_as_fraction, unit_mixup
from lecture_utils.problems.mixed_precision_answers import (
    A100,
    BF16,
    BLOCK_TOKENS,
    E4M3,
    FP16,
    HISTORY_AMAX,
    JUMP_STD,
    LR,
    MIB,
    NVL,
    RUN_GPUS,
    RUN_MFU,
    RUN_PARAMS,
    RUN_TOKENS,
    SPIKE_GRAD,
    START_SCALE,
    WEIGHT_STD,
    WIDTH,
    autocast_saved,
    clip_ceiling,
    clipped_percent,
    clipped_share,
    days_saved,
    frozen_percent,
    frozen_threshold,
    main_grad_largest,
    normal_tail,
    run_days,
    scale_after_spike,
)

# One hint for a scale one halving off either way: it must not say which way.
_STOPPED = "check where you stopped: the scaled gradient must fit fp16 at the scale used, and not at the one before."
_POWER_OF_TWO = "GradScaler only halves its starting power of two, so every scale it tries is a power of two."
# fp16's max / the spike is 5458.67, the scale that just fits: asked for a whole number, a student writes it so.
_WHOLE_NUMBER_SPELLINGS = (math.floor, math.ceil, lambda v: round(v, 2))
_BINADE = "the gap is the same across a binade (one power of two to the next): freezing starts where one does."
_SPARSE = "that divides by the 2:4-sparse datasheet figure: a dense model gets half of it."
_BILLIONS = {"B": 1.0, "billion": 1.0, "M": 1e-3, "million": 1e-3, "params": 1e-9, "parameters": 1e-9}
_MIB_UNITS = {"KiB": 1 / 1024, "GiB": 1024, "MB": 1e6 / MIB, "B": 1 / MIB, "bytes": 1 / MIB}
_COPY_MIB = dtype_bytes(BF16) * WIDTH * 4 * WIDTH / MIB  # a bf16 copy of either weight
_FP32_MIB = dtype_bytes(torch.float32) * BLOCK_TOKENS * (WIDTH + 4 * WIDTH + 4 * WIDTH) / MIB  # no copies


def _frozen_at(threshold: float) -> float:
    return 100 * normal_tail(threshold, WEIGHT_STD)


PROBLEMS: dict[int, Problem] = {
    1: Problem(
        1,
        "the loss scale after a spike",
        f"Under fp16 autocast, a loss spike makes one weight's gradient {SPIKE_GRAD:g} (before scaling). "
        f"`torch.amp.GradScaler` starts at a scale of 2^{math.log2(START_SCALE):.0f}; whenever a scaled "
        "gradient overflows fp16 it skips the step and halves the scale. At what scale is the first step "
        "taken? Answer with the scale, e.g. 1024.",
        "",
        scale_after_spike,
        "Find the largest value fp16 holds, and halve the scale until the scaled gradient stays below it.",
        rel_tol=0.0,
        mistakes=(
            Mistake(lambda s: s * 2, _STOPPED),
            Mistake(lambda s: s / 2, _STOPPED),
            *(
                Mistake(lambda _, spell=spell: spell(float_range(FP16).max / SPIKE_GRAD), _POWER_OF_TWO)
                for spell in _WHOLE_NUMBER_SPELLINGS
            ),
        ),
    ),
    2: Problem(
        2,
        "updates a bf16 matrix drops",
        f"A weight matrix trained in pure bf16 (no fp32 master copy) holds values spread normally around 0 with "
        f"standard deviation {WEIGHT_STD:g}. An AdamW step without weight decay moves each weight up or down "
        f"by lr = {LR:g} (on Adam's first step, bias-corrected m / (sqrt(v) + eps) = g / (|g| + eps): +1 or "
        "-1 unless |g| is near eps), and the sum is rounded to bf16. What percentage of the weights does "
        "the step leave unchanged? Answer in percent.",
        "percent",
        frozen_percent,
        "Find the smallest |w| where lr is under half of bf16's gap, then the normal share beyond it, both sides.",
        units={"%": 1.0},
        mistakes=(
            Mistake(lambda _: _frozen_at(frozen_threshold(1)), "rounding to nearest keeps any sum past half a gap."),
            Mistake(lambda _: _frozen_at(frozen_threshold(1 / 2, binade=False)), _BINADE),
            Mistake(lambda p: p / 2, "negative weights freeze too: count both tails."),
            percent_as_fraction(),
        ),
    ),
    3: Problem(
        3,
        "Megatron's fp32 gradients on one GPU",
        "Megatron-LM can write each weight gradient straight into an fp32 buffer and keep no bf16 gradient, "
        "beside bf16 weights, an fp32 master copy and fp32 AdamW state. Leaving activations and temporary "
        f"buffers out, what is the largest model one {NVL.name} ({NVL.memory_bytes / 1e9:.0f} GB, counting 1 GB as "
        '1e9 bytes) trains this way, with no sharding? Answer in billions of parameters (40 or "40B").',
        "billions of parameters",
        main_grad_largest,
        "Add up the bytes each parameter costs in this recipe, then divide the card's memory by them.",
        units=_BILLIONS,
        mistakes=(
            Mistake(lambda _: NVL.memory_bytes / 16 / 1e9, "that counts bf16 gradients: here they are fp32."),
            Mistake(lambda _: NVL.memory_bytes / 20 / 1e9, "that keeps a bf16 gradient too: here only fp32's."),
            Mistake(lambda _: NVL.memory_bytes / 14 / 1e9, "the fp32 master copy counts too."),
            Mistake(lambda b: b * 2**30 / 1e9, "the question counts a GB as 1e9 bytes, not as a GiB (2^30)."),
        ),
    ),
    4: Problem(
        4,
        "what autocast saves for backward",
        f"An MLP block, `Linear({WIDTH}, {4 * WIDTH})`, GELU, `Linear({4 * WIDTH}, {WIDTH})`, with fp32 "
        f"parameters, runs forward on {BLOCK_TOKENS:,} tokens under bf16 autocast; its fp32 input needs no "
        "gradient. How many MiB does autograd keep for the backward pass? Count autocast's bf16 copies of "
        "weights, not the parameters themselves. Answer in MiB (1 MiB = 2^20 bytes).",
        "MiB",
        autocast_saved,
        "List what each op keeps for its backward (a matmul: its input; its weight if its input needs a gradient).",
        units=_MIB_UNITS,
        mistakes=(
            Mistake(lambda _: _FP32_MIB, "that is fp32's count: under autocast the matmuls' inputs are bf16."),
            Mistake(lambda m: m - _COPY_MIB, "autocast keeps a bf16 copy of a weight whose input needs a gradient."),
            Mistake(lambda m: m + _COPY_MIB, "the block's input needs no gradient: no copy of the 1st weight is kept."),
            unit_mixup("MB", "MiB"),
        ),
    ),
    5: Problem(
        5,
        "what bf16 saves in days",
        f"A dense {RUN_PARAMS / 1e9:.0f}B model trains on {RUN_TOKENS / 1e12:.0f}T tokens on {RUN_GPUS} "
        f"{A100.name} GPUs at MFU {RUN_MFU:.2f}. How many days do bf16 matmuls save "
        "over fp32 matmuls (TF32 off)? Take both dense peaks from `lecture_utils.hardware` (the datasheet's) "
        "and the same MFU for both. Answer in days.",
        "days",
        days_saved,
        "Work out the run's days at each peak, then subtract.",
        units={"d": 1.0, "weeks": 7.0, "years": 365.0},
        mistakes=(
            Mistake(lambda _: run_days("bf16"), "that is the bf16 run's length (and its saving over TF32)."),
            Mistake(lambda _: run_days("fp32"), "that is the fp32 run's length: subtract the bf16 run's."),
            Mistake(lambda _: run_days("fp32") - run_days("bf16", sparse=True), _SPARSE),
        ),
    ),
    6: Problem(
        6,
        "a stale fp8 scale",
        f"Delayed scaling set this step's e4m3 scale from an amax history whose largest entry is {HISTORY_AMAX:g}: "
        f"scale = {HISTORY_AMAX:g} / {torch.finfo(E4M3).max:g}. This step the tensor has jumped: its values are "
        f"spread normally around 0 with standard deviation {JUMP_STD:g}. The cast clips a value when rounding "
        f"alone would take it past e4m3's max: when its scaled magnitude is past {torch.finfo(E4M3).max:g} + half "
        f"of e4m3's step there ({clip_ceiling():g}), as the delayed-scaling experiment counts. What percentage "
        "of the values does it clip? Answer in percent.",
        "percent",
        clipped_percent,
        "Turn that limit into the tensor's units with the scale; then the normal share beyond it, both sides.",
        units={"%": 1.0},
        mistakes=(
            Mistake(lambda p: p / 2, "values far below zero clip too: count both tails."),
            Mistake(
                lambda _: clipped_share(torch.finfo(E4M3).max),
                "that counts from the max itself: up to half a step past it, a value rounds to the max anyway.",
            ),
            percent_as_fraction(),
        ),
    ),
}
