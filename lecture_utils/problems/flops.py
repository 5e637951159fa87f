"""Practice for notebook 04: a layer's FLOPs, MFU, tokens to a ridge, batch-1 decoding, a cluster, GELU's ceiling.

The questions, hints and known mistakes; each problem's numbers and worked answer live in
lecture_utils.problems.flops_answers, so the question and the answer are built from the same numbers.
"""

import math

from lecture_utils.op_intensity import ACTIVATION_FLOPS
from lecture_utils.practice import Mistake, Problem
from lecture_utils.problems import itemsize_slip, percent_as_fraction
from lecture_utils.problems.flops_answers import (
    A100,
    B200,
    BATCH,
    CLUSTER_DAYS,
    CLUSTER_GPUS,
    CLUSTER_MFU,
    DECODE_D,
    DECODE_F,
    DECODE_KV,
    DECODE_WEIGHTS,
    GELU_COLS,
    GELU_ROWS,
    H100,
    H200,
    RIDGE_D,
    RIDGE_F,
    RUN_GPUS,
    RUN_PARAMS,
    RUN_TOKENS_PER_S,
    SEQ,
    WIDTH,
    card_ridge,
    cluster,
    decode_flops,
    decode_seconds,
    decode_time,
    gelu_ceiling,
    gelu_percent,
    h200_tokens,
    projection_flops,
    ridge_tokens,
    run_mfu,
)

_KV_AS_Q = {**DECODE_WEIGHTS, "k": (DECODE_D, DECODE_D), "v": (DECODE_D, DECODE_D)}  # a slip: k, v as wide as q

_SPARSE = "that uses the 2:4-sparse datasheet figure: a dense model gets half of it."
_H100_RIDGE = "that is the H100's ridge: the H200 has the same peak but more bandwidth."
_NAPKIN_T = "T FLOPs per byte is the napkin for T far below d and f; count the activations' bytes too."
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
        projection_flops,
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
        run_mfu,
        "Model FLOPs per token times tokens per second is the achieved FLOP/s; divide by the cluster's dense "
        "bf16 peak.",
        units=_PERCENT,
        mistakes=(
            Mistake(lambda p: p / 2, _SPARSE),
            Mistake(lambda p: p * RUN_GPUS, "the tokens per second are the whole cluster's: so is the peak."),
            Mistake(lambda p: p / 3, "training runs the backward too: 6 FLOPs per parameter per token, not 2."),
            percent_as_fraction(),
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
        h200_tokens,
        "Find the card's ridge in FLOP/byte, then the smallest T whose intensity 2Tdf / (bytes moved) reaches it.",
        rel_tol=0.0,  # a whole number of tokens: one fewer is still below the ridge
        close_tol=0.02,
        units={"T": 1.0},
        mistakes=(
            Mistake(lambda _: ridge_tokens(card_ridge(H100)), _H100_RIDGE),
            Mistake(lambda _: ridge_tokens(card_ridge(H200, sparse=True)), _SPARSE),
            # the napkin's T = ridge, rounded either way: a whole number the check can receive
            Mistake(lambda _: math.floor(card_ridge(H200)), _NAPKIN_T),
            Mistake(lambda _: math.ceil(card_ridge(H200)), _NAPKIN_T),
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
        decode_time,
        "At T = 1 the intensity is far below the ridge: the time is the bytes moved over the bandwidth.",
        units=_US,
        mistakes=(
            itemsize_slip("bf16", 4, 2),
            Mistake(
                lambda _: decode_flops() / H100.peak("bf16") * 1e6,
                "that is the FLOPs' time at the peak: with one row, moving the weights takes far longer.",
            ),
            Mistake(
                lambda _: decode_seconds(H100.bandwidth_bytes_per_s, _KV_AS_Q) * 1e6,
                "k and v are narrower than q here: read their shapes again.",
            ),
        ),
    ),
    5: Problem(
        5,
        "what a B200 cluster computes",
        f"{CLUSTER_GPUS} {B200.name} GPUs of HGX B200 systems (the table's {B200.name} row: dense bf16 "
        f"{B200.peak('bf16') / 1e12:,.0f} TFLOP/s each; a GB200's B200 is rated higher) train a dense model in "
        f"bf16 for {CLUSTER_DAYS} days at MFU {CLUSTER_MFU}. How many useful FLOPs do they deliver? Answer in "
        "FLOPs (e.g. 3e21).",
        "FLOPs",
        cluster,
        "GPUs times the dense bf16 peak times MFU gives FLOP/s; multiply by the seconds in the run.",
        units={"ZFLOP": 1e21, "EFLOP": 1e18},
        mistakes=(
            Mistake(lambda f: f * 2, "that is twice the dense bf16 peak: the 2:4-sparse figure, or fp8's."),
            Mistake(lambda f: f / CLUSTER_MFU, "the GPUs deliver only the MFU's share of their peak."),
            Mistake(lambda f: f / CLUSTER_GPUS, "every GPU of the cluster computes."),
        ),
    ),
    6: Problem(
        6,
        "GELU against the ridge of an H200",
        f"GELU runs on one MLP activation of {GELU_ROWS:,} x {GELU_COLS:,} bf16 values on an {H200.name}, "
        f"counted as the 2026 lecture counts it: {ACTIVATION_FLOPS['gelu']} FLOPs per value, each value read "
        "once and its result written once. What is the highest MFU the roofline allows it (min(1, intensity "
        "/ the card's ridge, from its dense peak and its bandwidth))? Answer in percent.",
        "percent",
        gelu_ceiling,
        "Intensity is FLOPs over the bytes read and written; the ridge is the dense peak over the bandwidth.",
        units=_PERCENT,
        mistakes=(
            Mistake(lambda _: gelu_percent(H200, bytes_per_value=4), "bf16 is 2 bytes a value, not 4."),
            Mistake(lambda p: p * 2, "the result is written back to memory too: count its bytes."),
            Mistake(lambda _: gelu_percent(H100), _H100_RIDGE),
            percent_as_fraction(),
        ),
    ),
}
