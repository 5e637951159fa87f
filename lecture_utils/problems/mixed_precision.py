"""Practice for notebook 08: a loss scale after a spike, updates bf16 drops, a recipe's bytes, autocast's
saved tensors, the days bf16 matmuls save, what a stale fp8 scale clips. Each problem's numbers are set
once, below, and build both its question and its worked answer; the notebook checks each answer another
way (GradScaler itself, a torch AdamW step, a measurement, a cast).
"""

import math

import torch

from lecture_utils.accounting import RECIPES
from lecture_utils.dtypes import float_range, ulp
from lecture_utils.fp8 import fp8_scale
from lecture_utils.hardware import ACCELERATORS
from lecture_utils.memory import dtype_bytes, tensor_bytes
from lecture_utils.napkin import largest_model_params, training_days, training_flops
from lecture_utils.practice import Mistake, Problem, Worked
from lecture_utils.problems import percent_as_fraction

MIB = 2**20
FP16, BF16, E4M3 = torch.float16, torch.bfloat16, torch.float8_e4m3fn

# 1: a gradient spike under fp16 autocast, with GradScaler's default starting scale
SPIKE_GRAD, START_SCALE = 12.0, 2.0**16
# 2: a pure-bf16 weight matrix of nanoGPT's initial spread, one AdamW step of size lr
WEIGHT_STD, LR = 0.02, 2e-5
# 3: Megatron-LM's fp32 gradient buffer on one H100 NVL
MAIN_GRAD, NVL = RECIPES["bf16 + fp32 grads"], ACCELERATORS["h100-nvl"]
# 4: an MLP block, Linear(WIDTH, 4 WIDTH), GELU, Linear(4 WIDTH, WIDTH), under bf16 autocast
BLOCK_TOKENS, WIDTH = 2_048, 256
# 5: a 7B model on A100s, matmuls in bf16 or in fp32
A100 = ACCELERATORS["a100-sxm-80gb"]
RUN_PARAMS, RUN_TOKENS, RUN_GPUS, RUN_MFU = 7e9, 2e12, 512, 0.40
# 6: a delayed fp8 scale meets a tensor that has jumped
HISTORY_AMAX, JUMP_STD = 4.0, 2.5


def _normal_tail(threshold: float, std: float) -> float:
    """P(|x| >= threshold) for x normal with mean 0: both tails."""
    return math.erfc(threshold / (std * math.sqrt(2)))


def _scale_after_spike() -> Worked:
    fp16_max = float_range(FP16).max
    overflow = fp16_max + ulp(torch.tensor(fp16_max), FP16).item() / 2  # from here up, values round to inf
    steps, scale = [f"fp16 rounds to inf from {overflow:g} up (its max {fp16_max:g} + half a gap)"], START_SCALE
    while SPIKE_GRAD * scale >= overflow:
        steps.append(f"scale {scale:>6g}: {SPIKE_GRAD:g} x {scale:g} = {SPIKE_GRAD * scale:g} -> inf: skip, halve")
        scale /= 2
    steps.append(f"scale {scale:>6g}: {SPIKE_GRAD:g} x {scale:g} = {SPIKE_GRAD * scale:g} fits: the step is taken")
    return Worked(tuple(steps), scale, f"{scale:g}")


def _frozen_threshold(gap_fraction: float, *, binade: bool = True) -> float:
    """Where LR drops below `gap_fraction` of bf16's gap: the first binade from there (or the exact point)."""
    point = LR / (gap_fraction * float_range(BF16).eps)
    return 2.0 ** math.ceil(math.log2(point)) if binade else point


def _frozen_percent() -> Worked:
    eps = float_range(BF16).eps
    start = _frozen_threshold(1 / 2)
    share = _normal_tail(start, WEIGHT_STD)
    steps = (
        f"in bf16 the gap above 2^e is eps x 2^e, eps = {eps:g};",
        "  w + lr rounds back to w when lr < half of it",
        f"  that is when 2^e > lr / (eps / 2) = {LR:g} / {eps / 2:g} = {LR / (eps / 2):.4g}",
        f"it holds from 2^{math.log2(start):.0f} = {start:g} on (a binade's start): those weights keep their values",
        f"P(|w| >= {start:g}) for std {WEIGHT_STD:g} = erfc({start:g} / ({WEIGHT_STD:g} x sqrt 2)) = {share:.4f}",
    )
    return Worked(steps, 100 * share, f"{100 * share:.1f}% of the weights")


def _main_grad_largest() -> Worked:
    largest = largest_model_params(NVL.memory_bytes, MAIN_GRAD.total)
    steps = (
        f"recipe '{MAIN_GRAD.name}', bytes per parameter:",
        f"  {MAIN_GRAD.formula()}",
        f"largest = {NVL.memory_bytes:.3g} B / {MAIN_GRAD.total} B = {largest:.4g} parameters",
    )
    return Worked(steps, largest / 1e9, f"{largest / 1e9:.2f}B parameters")


def _autocast_saved() -> Worked:
    def kept(*shape: int) -> int:
        return tensor_bytes(torch.empty(shape, dtype=BF16, device="meta"))  # a shape, no memory

    t, d = BLOCK_TOKENS, WIDTH
    saved = {
        f"the 1st linear's input in bf16 ({t} x {d}), for its weight's gradient": kept(t, d),
        f"GELU's input ({t} x {4 * d}), bf16 as the 1st matmul returns it": kept(t, 4 * d),
        f"the 2nd linear's input, GELU's bf16 output ({t} x {4 * d})": kept(t, 4 * d),
        f"the 2nd weight's bf16 copy ({d} x {4 * d}), for its input's gradient": kept(d, 4 * d),
    }
    total = sum(saved.values())
    steps = (
        *(f"{size:>10,} B  {what}" for what, size in saved.items()),
        "(no copy of the 1st weight: the block's input needs no gradient)",
        f"{total:,} B / {MIB:,} B per MiB = {total / MIB:g} MiB",
    )
    return Worked(steps, total / MIB, f"{total / MIB:g} MiB")


def _run_days(precision: str, *, sparse: bool = False) -> float:
    peak = A100.peak(precision, sparse=sparse)
    return training_days(training_flops(RUN_PARAMS, RUN_TOKENS), RUN_GPUS, peak, RUN_MFU)


def _days_saved() -> Worked:
    flops = training_flops(RUN_PARAMS, RUN_TOKENS)
    days = {precision: _run_days(precision) for precision in ("fp32", "bf16")}
    saved = days["fp32"] - days["bf16"]
    rate = {p: f"{A100.peak(p) / 1e12:g} TFLOP/s dense x {RUN_GPUS} GPUs x MFU {RUN_MFU}" for p in days}
    steps = (
        f"training FLOPs = 6ND = 6 x {RUN_PARAMS / 1e9:g}e9 x {RUN_TOKENS / 1e12:g}e12 = {flops:.4g}",
        *(f"{p}: {rate[p]} -> {d:.1f} days" for p, d in days.items()),
        f"saved = {days['fp32']:.1f} - {days['bf16']:.1f} = {saved:.1f} days",
    )
    return Worked(steps, saved, f"{saved:.1f} days")


def _clipped_percent() -> Worked:
    fmax = torch.finfo(E4M3).max
    scale = fp8_scale(torch.tensor(HISTORY_AMAX)).item()
    limit = scale * fmax
    share = _normal_tail(limit, JUMP_STD)
    steps = (
        f"scale = amax / max = {HISTORY_AMAX:g} / {fmax:g} = {scale:.4g}",
        f"a value clips where |x| / scale > {fmax:g}, that is |x| > {fmax:g} x {scale:.4g} = {limit:g}",
        f"P(|x| > {limit:g}) for std {JUMP_STD:g} = erfc({limit:g} / ({JUMP_STD:g} x sqrt 2)) = {share:.4f}",
    )
    return Worked(steps, 100 * share, f"{100 * share:.1f}% of the values")


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
    return 100 * _normal_tail(threshold, WEIGHT_STD)


PROBLEMS: dict[int, Problem] = {
    1: Problem(
        1,
        "the loss scale after a spike",
        f"Under fp16 autocast, a loss spike makes one weight's gradient {SPIKE_GRAD:g} (before scaling). "
        f"`torch.amp.GradScaler` starts at a scale of 2^{math.log2(START_SCALE):.0f}; whenever a scaled "
        "gradient overflows fp16 it skips the step and halves the scale. At what scale is the first step "
        "taken? Answer with the scale, e.g. 1024.",
        "",
        _scale_after_spike,
        "Find the largest value fp16 holds, and halve the scale until the scaled gradient stays below it.",
        rel_tol=0.0,
        mistakes=(
            Mistake(lambda s: s * 2, "at that scale the scaled gradient is still past fp16's largest value."),
            Mistake(lambda s: s / 2, "one halving too many: the first scale that fits is the one used."),
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
        _frozen_percent,
        "Find the smallest |w| where lr is under half of bf16's gap, then the normal share beyond it, both sides.",
        units={"%": 1.0},
        mistakes=(
            Mistake(lambda _: _frozen_at(_frozen_threshold(1)), "rounding to nearest keeps any sum past half a gap."),
            Mistake(lambda _: _frozen_at(_frozen_threshold(1 / 2, binade=False)), _BINADE),
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
        _main_grad_largest,
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
        "weights, not the parameters themselves. Answer in MiB.",
        "MiB",
        _autocast_saved,
        "List what each op keeps for its backward (a matmul: its input; its weight if its input needs a gradient).",
        units=_MIB_UNITS,
        mistakes=(
            Mistake(lambda _: _FP32_MIB, "that is fp32's count: under autocast the matmuls' inputs are bf16."),
            Mistake(lambda m: m - _COPY_MIB, "autocast keeps a bf16 copy of a weight whose input needs a gradient."),
            Mistake(lambda m: m + _COPY_MIB, "the block's input needs no gradient: no copy of the 1st weight is kept."),
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
        _days_saved,
        "Work out the run's days at each peak, then subtract.",
        units={"d": 1.0, "weeks": 7.0, "years": 365.0},
        mistakes=(
            Mistake(lambda _: _run_days("bf16"), "that is the bf16 run's length (and its saving over TF32)."),
            Mistake(lambda _: _run_days("fp32"), "that is the fp32 run's length: subtract the bf16 run's."),
            Mistake(lambda _: _run_days("fp32") - _run_days("bf16", sparse=True), _SPARSE),
        ),
    ),
    6: Problem(
        6,
        "a stale fp8 scale",
        f"Delayed scaling set this step's e4m3 scale from an amax history whose largest entry is {HISTORY_AMAX:g}: "
        f"scale = {HISTORY_AMAX:g} / {torch.finfo(E4M3).max:g}. This step the tensor has jumped: its values are "
        f"spread normally around 0 with standard deviation {JUMP_STD:g}. What percentage of them does the cast "
        "clip, because their scaled magnitude is past e4m3's max? Answer in percent.",
        "percent",
        _clipped_percent,
        "Turn the format's max into the tensor's units with the scale; then the normal share beyond it, both sides.",
        units={"%": 1.0},
        mistakes=(
            Mistake(lambda p: p / 2, "values far below zero clip too: count both tails."),
            percent_as_fraction(),
        ),
    ),
}
