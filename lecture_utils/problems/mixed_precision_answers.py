"""Notebook 08's practice: each problem's numbers and its worked answer (questions: problems.mixed_precision).

Each problem's numbers are set once, here, and both its question and its worked answer are built from
them; the notebook checks each answer another way (GradScaler itself, a torch AdamW step, a
measurement, a cast).
"""

import math

import torch

from lecture_utils.accounting import RECIPES
from lecture_utils.dtypes import float_range, ulp
from lecture_utils.fp8 import fp8_scale
from lecture_utils.hardware import ACCELERATORS
from lecture_utils.memory import tensor_bytes
from lecture_utils.napkin import largest_model_params, training_days, training_flops
from lecture_utils.practice import Worked

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


def normal_tail(threshold: float, std: float) -> float:
    """P(|x| >= threshold) for x normal with mean 0, both tails (notebook 08)."""
    return math.erfc(threshold / (std * math.sqrt(2)))


def scale_after_spike() -> Worked:
    """Worked answer 1: the GradScaler scale at which the spike first fits fp16 (notebook 08)."""
    fp16_max = float_range(FP16).max
    overflow = fp16_max + ulp(torch.tensor(fp16_max), FP16).item() / 2  # from here up, values round to inf
    steps, scale = [f"fp16 rounds to inf from {overflow:g} up (its max {fp16_max:g} + half a gap)"], START_SCALE
    while SPIKE_GRAD * scale >= overflow:
        steps.append(f"scale {scale:>6g}: {SPIKE_GRAD:g} x {scale:g} = {SPIKE_GRAD * scale:g} -> inf: skip, halve")
        scale /= 2
    steps.append(f"scale {scale:>6g}: {SPIKE_GRAD:g} x {scale:g} = {SPIKE_GRAD * scale:g} fits: the step is taken")
    return Worked(tuple(steps), scale, f"{scale:g}")


def frozen_threshold(gap_fraction: float, *, binade: bool = True) -> float:
    """Where LR drops below `gap_fraction` of bf16's gap: that binade's start, or the point (notebook 08)."""
    point = LR / (gap_fraction * float_range(BF16).eps)
    return 2.0 ** math.ceil(math.log2(point)) if binade else point


def frozen_percent() -> Worked:
    """Worked answer 2: the share of a pure-bf16 matrix one AdamW step leaves unchanged (notebook 08)."""
    eps = float_range(BF16).eps
    start = frozen_threshold(1 / 2)
    share = normal_tail(start, WEIGHT_STD)
    steps = (
        f"in bf16 the gap above 2^e is eps x 2^e, eps = {eps:g};",
        "  w + lr rounds back to w when lr < half of it",
        f"  that is when 2^e > lr / (eps / 2) = {LR:g} / {eps / 2:g} = {LR / (eps / 2):.4g}",
        f"it holds from 2^{math.log2(start):.0f} = {start:g} on (a binade's start): those weights keep their values",
        f"P(|w| >= {start:g}) for std {WEIGHT_STD:g} = erfc({start:g} / ({WEIGHT_STD:g} x sqrt 2)) = {share:.4f}",
    )
    return Worked(steps, 100 * share, f"{100 * share:.1f}%")


def main_grad_largest() -> Worked:
    """Worked answer 3: the largest model one H100 NVL trains with fp32 gradient buffers (notebook 08)."""
    largest = largest_model_params(NVL.memory_bytes, MAIN_GRAD.total)
    steps = (
        f"recipe '{MAIN_GRAD.name}', bytes per parameter:",
        f"  {MAIN_GRAD.formula()}",
        f"largest = {NVL.memory_bytes:.3g} B / {MAIN_GRAD.total} B = {largest:.4g} parameters",
    )
    return Worked(steps, largest / 1e9, f"{largest / 1e9:.2f}B parameters")


def autocast_saved() -> Worked:
    """Worked answer 4: the MiB autograd keeps for an MLP block under bf16 autocast (notebook 08)."""

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


def run_days(precision: str, *, sparse: bool = False) -> float:
    """Days of problem 5's run at the A100's dense (or sparse) peak for `precision` (notebook 08)."""
    peak = A100.peak(precision, sparse=sparse)
    return training_days(training_flops(RUN_PARAMS, RUN_TOKENS), RUN_GPUS, peak, RUN_MFU)


def days_saved() -> Worked:
    """Worked answer 5: the days bf16 matmuls save over fp32 on problem 5's run (notebook 08)."""
    flops = training_flops(RUN_PARAMS, RUN_TOKENS)
    days = {precision: run_days(precision) for precision in ("fp32", "bf16")}
    saved = days["fp32"] - days["bf16"]
    rate = {p: f"{A100.peak(p) / 1e12:g} TFLOP/s dense x {RUN_GPUS} GPUs x MFU {RUN_MFU}" for p in days}
    steps = (
        f"training FLOPs = 6ND = 6 x {RUN_PARAMS / 1e9:g}e9 x {RUN_TOKENS / 1e12:g}e12 = {flops:.4g}",
        *(f"{p}: {rate[p]} -> {d:.1f} days" for p, d in days.items()),
        f"saved = {days['fp32']:.1f} - {days['bf16']:.1f} = {saved:.1f} days",
    )
    return Worked(steps, saved, f"{saved:.1f} days")


def clip_ceiling() -> float:
    """e4m3's max plus half its step there: past it, rounding to nearest would leave the range (notebook 08)."""
    fmax = torch.finfo(E4M3).max
    return fmax + ulp(torch.tensor(fmax), E4M3).item() / 2


def clipped_share(ceiling: float) -> float:
    """Problem 6's share of values whose scaled magnitude is past `ceiling`, in percent (notebook 08)."""
    return 100 * normal_tail(fp8_scale(torch.tensor(HISTORY_AMAX)).item() * ceiling, JUMP_STD)


def clipped_percent() -> Worked:
    """Worked answer 6: the share of values a stale fp8 scale clips (notebook 08)."""
    fmax, ceiling = torch.finfo(E4M3).max, clip_ceiling()
    scale = fp8_scale(torch.tensor(HISTORY_AMAX)).item()
    limit = scale * ceiling
    share = clipped_share(ceiling)
    steps = (
        f"scale = amax / max = {HISTORY_AMAX:g} / {fmax:g} = {scale:.4g}",
        f"e4m3's step at its max is {2 * (ceiling - fmax):g}: up to {fmax:g} + {ceiling - fmax:g} = {ceiling:g} a",
        "  scaled value rounds to the max anyway; past it, only the clip keeps it there",
        f"a value clips where |x| / scale > {ceiling:g}, that is |x| > {ceiling:g} x {scale:.4g} = {limit:.4g}",
        f"P(|x| > {limit:.4g}) for std {JUMP_STD:g} = erfc({limit:.4g} / ({JUMP_STD:g} x sqrt 2)) = {share / 100:.4f}",
    )
    return Worked(steps, share, f"{share:.1f}%")
