"""Practice for notebook 01: bytes of a tensor, bf16 rounding, fp16 underflow, fp8's values, the copy to a GPU.

Each problem's numbers are set once, below, and both its question and its worked answer are built
from them, so the two cannot disagree. The worked answers compute with torch itself (casts, bit
patterns, meta tensors), not with formulas typed beside them.
"""

import math

import torch

from lecture_utils.dtypes import float_range, ulp
from lecture_utils.fp4 import E2M1_MAX, quantize_nvfp4, round_e2m1
from lecture_utils.hardware import PCIE_GEN5_X16_BYTES_PER_S
from lecture_utils.memory import dtype_bytes, tensor_bytes
from lecture_utils.practice import Mistake, Problem, Worked
from lecture_utils.problems import itemsize_slip, unit_mixup

MIB = 2**20
# 1: an embedding table of a large vocabulary
VOCAB, D_MODEL = 128_256, 8_192
# 2: small updates added to a bf16 weight
START, UPDATE, UPDATES = 1.0, 0.005, 1_000
# 3: a tiny gradient in fp16
GRADIENT = 1e-9
# 5: a model's bf16 weights copied from host memory to the GPU
COPY_PARAMS = 30e9  # 60 GB in bf16: it fits on one 80 GB H100
# 6: one weight of an NVFP4 tensor: the tensor's largest magnitude, its block's, the weight
TENSOR_AMAX, BLOCK_AMAX, WEIGHT = 3.0, 0.9, 0.4


def _embedding_mib() -> Worked:
    table = torch.empty(VOCAB, D_MODEL, dtype=torch.bfloat16, device="meta")  # a shape, no memory
    size = tensor_bytes(table)
    steps = (
        f"{VOCAB:,} x {D_MODEL:,} = {table.numel():,} elements x {dtype_bytes(table.dtype)} B = {size:,} B",
        f"{size:,} B / {MIB:,} B per MiB = {size / MIB:,.1f} MiB",
    )
    return Worked(steps, size / MIB, f"{size / MIB:,.1f} MiB")


def _bf16_updates() -> Worked:
    weight, moves = torch.tensor(START, dtype=torch.bfloat16), 0
    for _ in range(UPDATES):
        before = weight.item()
        weight += UPDATE
        moves += weight.item() != before
    stuck = weight.float()
    gap, gap_at_start = ulp(stuck, torch.bfloat16).item(), ulp(torch.tensor(START), torch.bfloat16).item()
    steps = (
        f"near {START:g} bf16 numbers are {gap_at_start:g} apart; {UPDATE:g} is more than half of that,",
        f"  so each sum rounds up to the next bf16 number: the weight moved on {moves} of {UPDATES:,} updates",
        f"at {stuck.item():g} the gap is {gap:g}; {UPDATE:g} is less than half of it, so every sum rounds back",
        f"after {UPDATES:,} updates the weight is {weight.item():g} (fp32 would hold {START + UPDATES * UPDATE:g})",
    )
    return Worked(steps, weight.item(), f"{weight.item():g}")


def _loss_scale() -> Worked:
    gradient, scale = torch.tensor([GRADIENT]), 1
    while (gradient * scale).half().item() == 0:
        scale *= 2
    tiniest = float_range(torch.float16).smallest_subnormal
    below, at = ((gradient * s).half().item() for s in (scale // 2, scale))
    steps = (
        f"fp16's smallest positive number (a subnormal) is {tiniest:.4g}; half of it rounds to 0",
        f"{GRADIENT:.0e} x {scale // 2} = {GRADIENT * scale / 2:.3g} -> {below:g} in fp16",
        f"{GRADIENT:.0e} x {scale} = {GRADIENT * scale:.3g} -> {at:.4g} in fp16",
    )
    return Worked(steps, scale, f"{scale}")


def _e4m3_values() -> Worked:
    patterns = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    values = patterns.view(torch.float8_e4m3fn).float()
    positive = values[(values > 0) & values.isfinite()]
    not_counted = values[(patterns < 128) & ~((values > 0) & values.isfinite())].tolist()
    steps = (
        "all 256 bit patterns, read as float8_e4m3fn:",
        f"  {int((patterns < 128).sum())} have the sign bit 0; of those, {not_counted} are not finite positive",
        f"  {positive.numel()} finite positive values, from {positive.min().item():.4g} to {positive.max().item():g}",
    )
    return Worked(steps, positive.numel(), f"{positive.numel()} values")


def _copy_seconds() -> Worked:
    weights = torch.empty(int(COPY_PARAMS), dtype=torch.bfloat16, device="meta")
    size, rate = tensor_bytes(weights), PCIE_GEN5_X16_BYTES_PER_S
    steps = (
        f"{COPY_PARAMS:.3g} parameters x {dtype_bytes(weights.dtype)} B = {size:.4g} B",
        f"{size:.4g} B / {rate:.3g} B/s (PCIe Gen5 x16, one direction) = {size / rate:.3g} s",
    )
    return Worked(steps, size / rate, f"{size / rate:.2f} s")


def nvfp4_example() -> torch.Tensor:
    """Problem 6's tensor: a block holding the tensor's largest magnitude, then the weight's (notebook 01)."""
    x = torch.zeros(1, 32)
    x[0, 0], x[0, 16], x[0, 17] = TENSOR_AMAX, BLOCK_AMAX, WEIGHT
    return x


def _nvfp4_weight() -> Worked:
    e4m3_max = torch.finfo(torch.float8_e4m3fn).max
    tensor_scale = TENSOR_AMAX / (E2M1_MAX * e4m3_max)
    ideal = BLOCK_AMAX / E2M1_MAX / tensor_scale
    stored = torch.tensor(ideal).to(torch.float8_e4m3fn).item()
    scale = stored * tensor_scale
    scaled = WEIGHT / scale
    value = quantize_nvfp4(nvfp4_example()).values[0, 17].item()
    steps = (
        f"tensor scale = {TENSOR_AMAX:g} / ({E2M1_MAX:g} x {e4m3_max:g}) = {tensor_scale:.4g} (fp32)",
        f"block scale: {BLOCK_AMAX:g} / {E2M1_MAX:g} / {tensor_scale:.4g} = {ideal:.4g}, stored in e4m3 as {stored:g};",
        f"  times the tensor scale: {stored:g} x {tensor_scale:.4g} = {scale:.4g}",
        f"{WEIGHT:g} / {scale:.4g} = {scaled:.4g} -> nearest e2m1 value {round_e2m1(torch.tensor(scaled)).item():g}",
        f"back: {round_e2m1(torch.tensor(scaled)).item():g} x {scale:.4g} = {value:.4g}",
    )
    return Worked(steps, value, f"{value:.4g}")


def _e4m3_subnormals() -> int:
    """How many positive e4m3fn values lie below its smallest normal number (all 256 patterns, read)."""
    values = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e4m3fn).float()
    return int(((values > 0) & (values < torch.finfo(torch.float8_e4m3fn).tiny)).sum())


# One hint for every miscount of the special patterns, whichever way it is off: it must not say which.
_SPECIAL_PATTERNS = "check the special bit patterns: which sign-0 ones are zero, NaN or subnormal, and which count?"


def _unrounded_scale_value(_: float) -> float:
    scale = BLOCK_AMAX / E2M1_MAX
    return round_e2m1(torch.tensor(WEIGHT / scale)).item() * scale


PROBLEMS: dict[int, Problem] = {
    1: Problem(
        1,
        "an embedding table",
        f"An embedding table holds one vector of d_model = {D_MODEL:,} numbers for each of {VOCAB:,} tokens, "
        "in bf16. How much memory does it take? Answer in MiB (1 MiB = 2^20 bytes).",
        "MiB",
        _embedding_mib,
        "Elements times bytes per element, then divide by the bytes in a MiB.",
        units={"GiB": 1024, "KiB": 1 / 1024, "MB": 1e6 / MIB, "GB": 1e9 / MIB, "B": 1 / MIB, "bytes": 1 / MIB},
        mistakes=(
            itemsize_slip("bf16", 4, 2),
            unit_mixup("MB", "MiB"),
        ),
    ),
    2: Problem(
        2,
        "updates that round away",
        f"A weight stored in bf16 starts at {START:g} and receives {UPDATES:,} updates of +{UPDATE:g}, each added "
        f"in bf16 (no fp32 copy). In fp32 it would end at {START + UPDATES * UPDATE:g}. What value does the bf16 "
        "weight end at? Answer with the number.",
        "",
        _bf16_updates,
        "Each sum rounds to the nearest bf16 number. Where does half the gap between neighbours exceed the update?",
        rel_tol=0.001,
        mistakes=(
            Mistake(lambda _: START + UPDATES * UPDATE, "that is fp32's answer: in bf16 every sum is rounded."),
            Mistake(
                lambda _: START,
                "near the start the update is more than half the gap between bf16 numbers: it does move the weight.",
            ),
        ),
    ),
    3: Problem(
        3,
        "a loss scale for fp16",
        f"A gradient of {GRADIENT:.0e} becomes 0 when cast to fp16. Multiplying the loss by a scale multiplies "
        "every gradient by it. What is the smallest power of two (1, 2, 4, ...) that keeps this gradient "
        "nonzero in fp16? Answer with the scale, e.g. 1024.",
        "",
        _loss_scale,
        "Find fp16's smallest positive number, and remember that casting rounds to the nearest.",
        rel_tol=0.0,
        close_tol=0.0,
        mistakes=(
            Mistake(
                lambda s: s * 2,
                "a cast rounds to the nearest fp16 number: find the smallest value that does not round to 0.",
            ),
            Mistake(
                lambda _: 2.0 ** math.ceil(math.log2(torch.finfo(torch.float16).tiny / GRADIENT)),
                "fp16 also stores numbers below its smallest normal one, as subnormals.",
            ),
        ),
    ),
    4: Problem(
        4,
        "fp8's positive numbers",
        "How many distinct finite positive numbers can fp8 e4m3fn (`torch.float8_e4m3fn`) represent, "
        "subnormals included? Answer with the count.",
        "",
        _e4m3_values,
        "Count the bit patterns with the sign bit 0, then take out those that are not finite positive numbers.",
        rel_tol=0.0,
        close_tol=0.02,
        units={"values": 1.0},
        mistakes=(
            Mistake(lambda n: n + 2, _SPECIAL_PATTERNS),
            Mistake(lambda n: n + 1, _SPECIAL_PATTERNS),
            Mistake(lambda n: n - 1, _SPECIAL_PATTERNS),
            Mistake(lambda n: n - _e4m3_subnormals(), _SPECIAL_PATTERNS),
        ),
    ),
    5: Problem(
        5,
        "weights over PCIe",
        f"The bf16 weights of a {COPY_PARAMS / 1e9:.0f}B-parameter model are copied from host memory to one GPU "
        f"over PCIe Gen5 x16, at the spec's peak of {PCIE_GEN5_X16_BYTES_PER_S / 1e9:.0f} GB/s (1 GB = 1e9 bytes) "
        "in each direction. How long does the copy take at best? Answer in seconds.",
        "seconds",
        _copy_seconds,
        "Bytes of the weights, divided by the link's rate in one direction.",
        units={"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6},
        mistakes=(
            itemsize_slip("bf16", 4, 2, per="parameter"),
            Mistake(lambda s: s / 2, "the spec's rate is already that of one direction, the one the copy uses."),
        ),
    ),
    6: Problem(
        6,
        "one weight in NVFP4",
        f"An NVFP4 tensor's largest magnitude is {TENSOR_AMAX:g}, so its fp32 tensor scale is {TENSOR_AMAX:g} / "
        f"(6 x 448). One of its 16-value blocks has largest magnitude {BLOCK_AMAX:g} and holds a weight of "
        f"{WEIGHT:g}. Quantized (block scale rounded to e4m3, the weight to e2m1) and multiplied back out, what "
        "value does that weight come back as? Answer with the number.",
        "",
        _nvfp4_weight,
        "Work in units of the tensor scale: the block's scale is its largest magnitude over 6, stored in e4m3.",
        mistakes=(
            Mistake(
                _unrounded_scale_value,
                "that uses the block's scale as computed: it is stored in e4m3 (in units of the tensor scale) first.",
            ),
            Mistake(
                lambda _: round_e2m1(torch.tensor(WEIGHT)).item(),
                "that rounds the weight itself to e2m1: divide by its block's scale first, then multiply back.",
            ),
            Mistake(lambda _: WEIGHT, "e2m1 holds only 15 values: the weight comes back as a scaled one of them."),
        ),
    ),
}
