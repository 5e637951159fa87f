"""Notebook 04's practice: each problem's numbers and its worked answer (the questions: lecture_utils.problems.flops).

Each problem's numbers are set once, here, and both its question and its worked answer are built
from them, so the two cannot disagree. The worked answers use the package's formulas and the
datasheet table (dense peaks only); the notebook checks each another way: FlopCounterMode and the
bytes of meta tensors (shapes without memory), a scan over T, the roofline explorer, the calendar.
"""

import torch

from lecture_utils.flops import arithmetic_intensity, linear_flops, matmul_bytes, matmul_flops, mfu, tokens_to_ridge
from lecture_utils.hardware import ACCELERATORS, Accelerator
from lecture_utils.napkin import SECONDS_PER_DAY, cluster_flops_per_day, training_flops
from lecture_utils.op_intensity import ACTIVATION_FLOPS, mfu_ceiling
from lecture_utils.practice import Worked

BF16 = torch.bfloat16
H100, H200 = ACCELERATORS["h100-sxm"], ACCELERATORS["h200-sxm"]
A100, B200 = ACCELERATORS["a100-sxm-80gb"], ACCELERATORS["b200"]

# 1: attention's projections (a fused q, k, v layer and an output layer) on a batch of sequences
BATCH, SEQ, WIDTH = 16, 1_024, 2_048
# 2: a 6.7B model trained in bf16 on eight A100s, tokens per second of the whole cluster
RUN_PARAMS, RUN_GPUS, RUN_TOKENS_PER_S = 6.7e9, 8, 25_000
# 3: a wide MLP weight on an H200: how many tokens must share it?
RIDGE_D, RIDGE_F = 8_192, 28_672
# 4: one layer's weight matrices, (rows, columns), read once per generated token on an H100
DECODE_D, DECODE_KV, DECODE_F = 8_192, 1_024, 28_672
DECODE_WEIGHTS = {
    "q": (DECODE_D, DECODE_D),
    "k": (DECODE_D, DECODE_KV),
    "v": (DECODE_D, DECODE_KV),
    "o": (DECODE_D, DECODE_D),
    "gate": (DECODE_D, DECODE_F),
    "up": (DECODE_D, DECODE_F),
    "down": (DECODE_F, DECODE_D),
}
# 5: what a B200 cluster computes in ten days
CLUSTER_GPUS, CLUSTER_DAYS, CLUSTER_MFU = 16, 10, 0.40
# 6: GELU on one MLP activation of a wide model, on an H200
GELU_ROWS, GELU_COLS = 4_096, 28_672


def projection_flops() -> Worked:
    """Worked answer 1: the forward FLOPs of attention's q, k, v and output layers (notebook 04)."""
    tokens = BATCH * SEQ
    qkv, out = linear_flops(tokens, WIDTH, 3 * WIDTH), linear_flops(tokens, WIDTH, WIDTH)
    total = qkv + out
    steps = (
        f"tokens = {BATCH} sequences x {SEQ:,} = {tokens:,} rows",
        f"q, k, v layer: 2 x {tokens:,} x {WIDTH:,} x {3 * WIDTH:,} = {qkv:,} FLOPs",
        f"output layer:  2 x {tokens:,} x {WIDTH:,} x {WIDTH:,} = {out:,} FLOPs",
        f"total = {total:,} FLOPs = {total / 1e9:,.1f} GFLOP",
    )
    return Worked(steps, total / 1e9, f"{total / 1e9:,.1f} GFLOP")


def run_percent(per_token: float, peak: float, gpus: int = RUN_GPUS) -> float:
    """MFU in percent of a run at RUN_TOKENS_PER_S, `per_token` FLOPs each, on `gpus` cards of `peak` (notebook 04)."""
    return 100 * mfu(RUN_TOKENS_PER_S * per_token, 1.0, gpus * peak)


def run_mfu() -> Worked:
    """Worked answer 2: the MFU of a 6.7B model's run on eight A100s (notebook 04)."""
    peak, per_token = A100.peak("bf16"), training_flops(RUN_PARAMS, 1)
    achieved = RUN_TOKENS_PER_S * per_token
    percent = run_percent(per_token, peak)
    steps = (
        f"FLOPs per token = 6N = 6 x {RUN_PARAMS:.3g} = {per_token:.4g}",
        f"achieved = {RUN_TOKENS_PER_S:,} tokens/s x {per_token:.4g} = {achieved:.4g} FLOP/s",
        f"peak = {RUN_GPUS} GPUs x {peak:.4g} FLOP/s (dense bf16) = {RUN_GPUS * peak:.4g} FLOP/s",
        f"MFU = {achieved:.4g} / {RUN_GPUS * peak:.4g} = {percent:.1f}%",
    )
    return Worked(steps, percent, f"{percent:.1f}%")


def card_ridge(card: Accelerator, sparse: bool = False) -> float:
    """A card's bf16 ridge, its peak (dense unless `sparse`) over its bandwidth, in FLOP/byte (notebook 04)."""
    return card.peak("bf16", sparse=sparse) / card.bandwidth_bytes_per_s


def ridge_tokens(ridge: float) -> int:
    """Fewest tokens that put problem 3's weight at or past `ridge` (notebook 04)."""
    return tokens_to_ridge(RIDGE_D, RIDGE_F, ridge, BF16)


def weight_intensity(tokens: int) -> float:
    """FLOP/byte of problem 3's (tokens x d) @ (d x f) matmul in bf16 (notebook 04)."""
    shapes = (tokens, RIDGE_D), (RIDGE_D, RIDGE_F)
    return arithmetic_intensity(matmul_flops(*shapes), matmul_bytes(*shapes, BF16))


def h200_tokens() -> Worked:
    """Worked answer 3: tokens to the H200's bf16 ridge (notebook 04)."""
    peak, bandwidth, ridge = H200.peak("bf16"), H200.bandwidth_bytes_per_s, card_ridge(H200)
    t = ridge_tokens(ridge)
    steps = (
        f"ridge = {peak:.4g} FLOP/s (dense bf16) / {bandwidth:.3g} B/s = {ridge:.2f} FLOP/byte",
        f"intensity 2Tdf / (2(Td + df + Tf)) = ridge, solved for T: T = {t}",
        f"T = {t - 1}: {weight_intensity(t - 1):.2f} FLOP/byte, below; "
        f"T = {t}: {weight_intensity(t):.2f}, at or past it",
    )
    return Worked(steps, t, f"{t} tokens")


def decode_seconds(bandwidth: float, weights: dict[str, tuple[int, int]], dtype: torch.dtype = BF16) -> float:
    """Seconds to move every (1 x rows) @ (rows x columns) product's bytes at `bandwidth` (notebook 04)."""
    return sum(matmul_bytes((1, rows), (rows, cols), dtype) for rows, cols in weights.values()) / bandwidth


def decode_flops() -> int:
    """FLOPs of problem 4's layer for one token (notebook 04)."""
    return sum(matmul_flops((1, r), (r, c)) for r, c in DECODE_WEIGHTS.values())


def decode_time() -> Worked:
    """Worked answer 4: one layer of batch-1 decoding on an H100, at best (notebook 04)."""
    bandwidth = H100.bandwidth_bytes_per_s
    moved = {name: matmul_bytes((1, r), (r, c), BF16) for name, (r, c) in DECODE_WEIGHTS.items()}
    flops = decode_flops()
    seconds = decode_seconds(bandwidth, DECODE_WEIGHTS)
    steps = (
        *(
            f"{name:>4}: {r:,} x {c:,} weight, with its row in and out: {moved[name]:,} B"
            for name, (r, c) in DECODE_WEIGHTS.items()
        ),
        f"bytes moved = {sum(moved.values()):,} B (the weights, in bf16, and one row in and out of each)",
        f"at {bandwidth:.3g} B/s: {seconds * 1e6:,.1f} us",
        f"the {flops:,} FLOPs at the dense bf16 peak would take {flops / H100.peak('bf16') * 1e6:.2f} us:",
        "  the bytes set the pace",
    )
    return Worked(steps, seconds * 1e6, f"{seconds * 1e6:,.0f} us")


def cluster_flops(peak: float, utilization: float = CLUSTER_MFU) -> float:
    """Useful FLOPs of problem 5's cluster at `peak` per GPU (notebook 04)."""
    return cluster_flops_per_day(CLUSTER_GPUS, peak, utilization) * CLUSTER_DAYS


def cluster() -> Worked:
    """Worked answer 5: what sixteen B200s compute in ten days (notebook 04)."""
    peak = B200.peak("bf16")
    total = cluster_flops(peak)
    steps = (
        f"{CLUSTER_GPUS} GPUs x {peak:.4g} FLOP/s (dense bf16) x MFU {CLUSTER_MFU} "
        f"= {CLUSTER_GPUS * peak * CLUSTER_MFU:.4g} FLOP/s",
        f"{CLUSTER_DAYS} days x {SECONDS_PER_DAY:,} s = {CLUSTER_DAYS * SECONDS_PER_DAY:,} s",
        f"total = {total:.4g} FLOPs",
    )
    return Worked(steps, total, f"{total:.3g} FLOPs")


def gelu_percent(card: Accelerator, bytes_per_value: int = BF16.itemsize) -> float:
    """GELU's MFU ceiling on `card` in percent, the lecture's count, each value read and written once (notebook 04)."""
    return 100 * mfu_ceiling(ACTIVATION_FLOPS["gelu"] / (2 * bytes_per_value), card_ridge(card))


def gelu_ceiling() -> Worked:
    """Worked answer 6: the highest MFU the roofline allows GELU on an H200 (notebook 04)."""
    n, per_value, ridge = GELU_ROWS * GELU_COLS, ACTIVATION_FLOPS["gelu"], card_ridge(H200)
    percent = gelu_percent(H200)
    steps = (
        f"FLOPs = {per_value} x {GELU_ROWS:,} x {GELU_COLS:,} values = {per_value * n:,}",
        f"bytes = {n:,} values x ({BF16.itemsize} B read + {BF16.itemsize} B written) = {2 * BF16.itemsize * n:,} B",
        f"intensity = {per_value * n / (2 * BF16.itemsize * n):g} FLOP/byte; ridge = {H200.peak('bf16'):.4g} FLOP/s "
        f"(dense bf16) / {H200.bandwidth_bytes_per_s:.3g} B/s = {ridge:.2f} FLOP/byte",
        f"MFU at most = min(1, intensity / ridge) = {percent:.2f}%",
    )
    return Worked(steps, percent, f"{percent:.2f}%")
