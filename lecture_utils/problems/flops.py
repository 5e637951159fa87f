"""Practice for notebook 04: a layer's FLOPs, MFU, tokens to a ridge, batch-1 decoding, a cluster's FLOPs.

Each problem's numbers are set once, below, and both its question and its worked answer are built
from them, so the two cannot disagree. The worked answers use the package's formulas and the
datasheet table (dense peaks only); the notebook checks each another way: FlopCounterMode and the
bytes of meta tensors (shapes without memory), a scan over T, the roofline explorer, the calendar.
"""

import torch

from lecture_utils.flops import arithmetic_intensity, linear_flops, matmul_bytes, matmul_flops, mfu, tokens_to_ridge
from lecture_utils.hardware import ACCELERATORS
from lecture_utils.napkin import SECONDS_PER_DAY, cluster_flops_per_day, training_flops
from lecture_utils.practice import Mistake, Problem, Worked

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


def _projection_flops() -> Worked:
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


def _run_percent(per_token: float, peak: float, gpus: int = RUN_GPUS) -> float:
    """MFU in percent of a run at RUN_TOKENS_PER_S, `per_token` FLOPs each, on `gpus` cards of `peak`."""
    return 100 * mfu(RUN_TOKENS_PER_S * per_token, 1.0, gpus * peak)


def _run_mfu() -> Worked:
    peak, per_token = A100.peak("bf16"), training_flops(RUN_PARAMS, 1)
    achieved = RUN_TOKENS_PER_S * per_token
    percent = _run_percent(per_token, peak)
    steps = (
        f"FLOPs per token = 6N = 6 x {RUN_PARAMS:.3g} = {per_token:.4g}",
        f"achieved = {RUN_TOKENS_PER_S:,} tokens/s x {per_token:.4g} = {achieved:.4g} FLOP/s",
        f"peak = {RUN_GPUS} GPUs x {peak:.4g} FLOP/s (dense bf16) = {RUN_GPUS * peak:.4g} FLOP/s",
        f"MFU = {achieved:.4g} / {RUN_GPUS * peak:.4g} = {percent:.1f}%",
    )
    return Worked(steps, percent, f"{percent:.1f}%")


def _ridge_tokens(ridge: float) -> int:
    return tokens_to_ridge(RIDGE_D, RIDGE_F, ridge, BF16)


def _intensity(tokens: int) -> float:
    shapes = (tokens, RIDGE_D), (RIDGE_D, RIDGE_F)
    return arithmetic_intensity(matmul_flops(*shapes), matmul_bytes(*shapes, BF16))


def _h200_tokens() -> Worked:
    peak, bandwidth = H200.peak("bf16"), H200.bandwidth_bytes_per_s
    ridge = peak / bandwidth
    t = _ridge_tokens(ridge)
    steps = (
        f"ridge = {peak:.4g} FLOP/s (dense bf16) / {bandwidth:.3g} B/s = {ridge:.2f} FLOP/byte",
        f"intensity 2Tdf / (2(Td + df + Tf)) = ridge, solved for T: T = {t}",
        f"T = {t - 1}: {_intensity(t - 1):.2f} FLOP/byte, below; T = {t}: {_intensity(t):.2f}, at or past it",
    )
    return Worked(steps, t, f"{t} tokens")


def _decode_seconds(bandwidth: float, weights: dict[str, tuple[int, int]], dtype: torch.dtype = BF16) -> float:
    """Seconds to move every (1 x rows) @ (rows x columns) product's bytes at `bandwidth`."""
    return sum(matmul_bytes((1, rows), (rows, cols), dtype) for rows, cols in weights.values()) / bandwidth


def _decode_time() -> Worked:
    bandwidth = H100.bandwidth_bytes_per_s
    moved = {name: matmul_bytes((1, r), (r, c), BF16) for name, (r, c) in DECODE_WEIGHTS.items()}
    flops = sum(matmul_flops((1, r), (r, c)) for r, c in DECODE_WEIGHTS.values())
    seconds = _decode_seconds(bandwidth, DECODE_WEIGHTS)
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


def _cluster_flops(peak: float, utilization: float = CLUSTER_MFU) -> float:
    return cluster_flops_per_day(CLUSTER_GPUS, peak, utilization) * CLUSTER_DAYS


def _cluster() -> Worked:
    peak = B200.peak("bf16")
    total = _cluster_flops(peak)
    steps = (
        f"{CLUSTER_GPUS} GPUs x {peak:.4g} FLOP/s (dense bf16) x MFU {CLUSTER_MFU} "
        f"= {CLUSTER_GPUS * peak * CLUSTER_MFU:.4g} FLOP/s",
        f"{CLUSTER_DAYS} days x {SECONDS_PER_DAY:,} s = {CLUSTER_DAYS * SECONDS_PER_DAY:,} s",
        f"total = {total:.4g} FLOPs",
    )
    return Worked(steps, total, f"{total:.3g} FLOPs")


_SPARSE = "that uses the 2:4-sparse datasheet figure: a dense model gets half of it."
_PERCENT = {"%": 1.0}
_US = {"us": 1.0, "µs": 1.0, "ms": 1e3, "s": 1e6}

PROBLEMS: dict[int, Problem] = {
    1: Problem(
        1,
        "attention's projections",
        f"An attention layer with d = {WIDTH:,} computes q, k and v with one bias-free `Linear({WIDTH}, "
        f"{3 * WIDTH})` and its output with a bias-free `Linear({WIDTH}, {WIDTH})`. How many FLOPs do "
        f"these two layers cost in the forward pass on a batch of {BATCH} sequences of {SEQ:,} tokens? "
        "Answer in GFLOP (1 GFLOP = 1e9 FLOPs).",
        "GFLOP",
        _projection_flops,
        "Each layer is one matmul of (tokens x d_in) by (d_in x d_out); count every token of every sequence.",
        units={"FLOPs": 1e-9, "TFLOP": 1e3, "MFLOP": 1e-3},
        mistakes=(
            Mistake(lambda g: g / 2, "a multiply and an add are two FLOPs: a matmul costs 2mnp."),
            Mistake(lambda g: g * 3 / 4, "the output projection is a matmul too."),
            Mistake(lambda g: g / BATCH, "every sequence of the batch goes through both layers."),
        ),
    ),
    2: Problem(
        2,
        "MFU of a cluster",
        f"A {RUN_PARAMS / 1e9:g}B-parameter dense transformer trains in bf16 on {RUN_GPUS} {A100.name} GPUs, "
        f"which together process {RUN_TOKENS_PER_S:,} tokens per second. With 6N FLOPs per token, what is "
        "its MFU? Answer in percent.",
        "percent",
        _run_mfu,
        "Model FLOPs per token times tokens per second is the achieved FLOP/s; divide by the cluster's dense "
        "bf16 peak.",
        units=_PERCENT,
        mistakes=(
            Mistake(lambda p: p / 2, _SPARSE),
            Mistake(lambda p: p * RUN_GPUS, "the tokens per second are the whole cluster's: so is the peak."),
            Mistake(lambda p: p / 3, "training runs the backward too: 6 FLOPs per parameter per token, not 2."),
            Mistake(lambda p: p / 100, "that is a fraction of one: the question asks for percent."),
        ),
    ),
    3: Problem(
        3,
        "tokens to the ridge of an H200",
        f"An MLP weight of {RIDGE_D:,} x {RIDGE_F:,} multiplies the activations of T tokens, a (T x "
        f"{RIDGE_D:,}) matrix, in bf16 on an {H200.name}. Counting the bytes of both inputs and the output, "
        "from how many tokens T is the matmul compute-bound (intensity at or past the card's ridge, from "
        "its dense peak and its bandwidth)? Answer in tokens.",
        "tokens",
        _h200_tokens,
        "Find the card's ridge in FLOP/byte, then the smallest T whose intensity 2Tdf / (bytes moved) reaches it.",
        rel_tol=0.0,  # a whole number of tokens: one fewer is still below the ridge
        close_tol=0.02,
        units={"T": 1.0},
        mistakes=(
            Mistake(
                lambda _: _ridge_tokens(H100.peak("bf16") / H100.bandwidth_bytes_per_s),
                "that is the H100's ridge: the H200 has the same peak but more bandwidth.",
            ),
            Mistake(lambda _: _ridge_tokens(H200.peak("bf16", sparse=True) / H200.bandwidth_bytes_per_s), _SPARSE),
            Mistake(
                lambda _: H200.peak("bf16") / H200.bandwidth_bytes_per_s,
                "T FLOPs per byte is the napkin for T far below d and f; count the activations' bytes too.",
            ),
        ),
    ),
    4: Problem(
        4,
        "one layer of batch-1 decoding",
        f"Generating one token at a time (batch 1), a layer with d = {DECODE_D:,} multiplies one row by each "
        f"of its bf16 weights: q and o ({DECODE_D:,} x {DECODE_D:,}), k and v ({DECODE_D:,} x "
        f"{DECODE_KV:,}), and an MLP of three matrices ({DECODE_D:,} x {DECODE_F:,} twice, {DECODE_F:,} x "
        f"{DECODE_D:,}). On an {H100.name} at its datasheet bandwidth, how long does the layer take at best? "
        "Answer in microseconds (us).",
        "microseconds",
        _decode_time,
        "At T = 1 the intensity is far below the ridge: the time is the bytes moved over the bandwidth.",
        units=_US,
        mistakes=(
            Mistake(lambda us: us * 2, "bf16 takes 2 bytes per element, not 4."),
            Mistake(
                lambda _: (
                    sum(matmul_flops((1, r), (r, c)) for r, c in DECODE_WEIGHTS.values()) / H100.peak("bf16") * 1e6
                ),
                "that is the FLOPs' time at the peak: with one row, moving the weights takes far longer.",
            ),
            Mistake(
                lambda _: (
                    _decode_seconds(
                        H100.bandwidth_bytes_per_s,
                        {**DECODE_WEIGHTS, "k": (DECODE_D, DECODE_D), "v": (DECODE_D, DECODE_D)},
                    )
                    * 1e6
                ),
                "k and v are narrower than q here: read their shapes again.",
            ),
        ),
    ),
    5: Problem(
        5,
        "what a B200 cluster computes",
        f"{CLUSTER_GPUS} {B200.name} GPUs train a dense model in bf16 for {CLUSTER_DAYS} days at MFU "
        f"{CLUSTER_MFU}. How many useful FLOPs do they deliver? Answer in FLOPs (e.g. 3e21).",
        "FLOPs",
        _cluster,
        "GPUs times the dense bf16 peak times MFU gives FLOP/s; multiply by the seconds in the run.",
        units={"ZFLOP": 1e21, "EFLOP": 1e18},
        mistakes=(
            Mistake(lambda f: f * 2, "that is twice the dense bf16 peak: the 2:4-sparse figure, or fp8's."),
            Mistake(lambda f: f / CLUSTER_MFU, "the GPUs deliver only the MFU's share of their peak."),
            Mistake(lambda f: f / CLUSTER_GPUS, "every GPU of the cluster computes."),
        ),
    ),
}
