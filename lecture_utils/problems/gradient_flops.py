"""Practice for notebook 05: a layer's backward, when attention catches up, MFU, HFU, and checkpoint memory.

The questions, hints and known mistakes; each problem's numbers and worked answer live in
lecture_utils.problems.gradient_flops_answers, so the question and the answer are built from the same numbers.
"""

from lecture_utils.checkpoint_schedule import stored_tensors
from lecture_utils.practice import Mistake, Problem
from lecture_utils.problems import itemsize_slip, percent_as_fraction, unit_mixup
from lecture_utils.problems.gradient_flops_answers import (
    ARCHITECTURE,
    CHECKPOINTED_TOKENS_PER_S,
    CKPT_BATCH,
    CKPT_DIM,
    CKPT_EVERY,
    CKPT_LAYERS,
    CROSSOVER,
    D_IN,
    D_OUT,
    MIB,
    RUN,
    RUN_TOKENS_PER_S,
    TOKENS,
    checkpoint_memory,
    config_shape,
    crossover,
    crossover_tokens,
    hfu_with_checkpointing,
    layer_backward,
    layer_output_bytes,
    mfu_from_throughput,
    mfu_with_params,
    model_flops,
    percent_of_peak,
)
from lecture_utils.transformer import matmul_params

_PERCENT = {"%": 1.0, "percent": 1.0}
_MIB_UNITS = {"MB": 1e6 / MIB, "GiB": 1024, "GB": 1e9 / MIB, "KiB": 1 / 1024, "B": 1 / MIB, "bytes": 1 / MIB}
_SPARSE = "that is what the 2:4-sparse datasheet figure gives: a dense model gets half of it."
_N_RUN = matmul_params(RUN)
# Every parameter of RUN's TinyLM: the matmul weights, the token and position tables, the 2L + 1 norm scales.
_N_RUN_ALL = _N_RUN + (RUN.vocab_size + RUN.max_seq_len) * RUN.d_model + (2 * RUN.n_layers + 1) * RUN.d_model
_LHQT_RUN = RUN.n_layers * RUN.n_heads * RUN.head_dim * RUN.max_seq_len

PROBLEMS: dict[int, Problem] = {
    1: Problem(
        1,
        "a layer's backward",
        f"A bias-free linear layer maps d_in = {D_IN:,} to d_out = {D_OUT:,} (an MLP's up-projection) in the "
        f"middle of a network, on a batch of {TOKENS:,} tokens. How many FLOPs does its backward pass cost? "
        "Answer in TFLOP (1 TFLOP = 1e12 FLOPs).",
        "TFLOP",
        layer_backward,
        "List the matmuls the chain rule needs for this layer, with their shapes, and price each at 2mnp.",
        units={"FLOPs": 1e-12, "GFLOP": 1e-3, "PFLOP": 1e3},
        mistakes=(
            Mistake(
                lambda t: t / 2,
                "that is one backward matmul. A layer in the middle also passes the gradient on to its input.",
            ),
            Mistake(lambda t: t * 1.5, "that is forward plus backward: the question asks for the backward only."),
        ),
    ),
    2: Problem(
        2,
        "when attention catches up",
        f"Take {ARCHITECTURE}, with {config_shape(CROSSOVER)}. Counting N as the weights that sit in matmuls, at "
        "what context length T does attention's term 12LHQT equal the weights' 6N? Answer in tokens.",
        "tokens",
        crossover,
        "Count N from the shapes (every weight matrix that multiplies activations), then solve 12LHQT = 6N for T.",
        units={"k": 1e3},
        mistakes=(
            Mistake(
                lambda _: crossover_tokens(
                    matmul_params(CROSSOVER) - CROSSOVER.d_model * CROSSOVER.vocab_size, CROSSOVER
                ),
                "the unembedding (d x V) is a matmul too: its weights belong in N.",
            ),
            Mistake(lambda t: 2 * t, "mind the factors: 12 on attention's side, 6 on the weights'."),
        ),
    ),
    3: Problem(
        3,
        "MFU from a throughput",
        f"The same kind of model with {config_shape(RUN)} trains at T = {RUN.max_seq_len:,} on one H100 SXM in bf16, "
        f"at {RUN_TOKENS_PER_S:,} tokens per second. What is its MFU, with 6N + 12LHQT as the model's FLOPs per "
        "token and N counted as in problem 2 (the weights that sit in matmuls)? Answer in percent.",
        "percent",
        mfu_from_throughput,
        "Model FLOPs per token times tokens per second is the achieved FLOP/s; divide by the dense bf16 peak.",
        units=_PERCENT,
        mistakes=(
            Mistake(
                lambda _: percent_of_peak(RUN_TOKENS_PER_S, 6 * _N_RUN),
                "the attention term is model FLOPs too: the math of the step needs it.",
            ),
            Mistake(
                lambda _: mfu_with_params(_N_RUN_ALL),
                "N here is the weights that sit in matmuls: the embedding tables are lookups and the norm "
                "scales are element-wise, so neither does 6 FLOPs per token.",
            ),
            percent_as_fraction(),
            Mistake(lambda p: p / 2, _SPARSE),
            Mistake(lambda p: p / 3, "a training step runs the backward too, twice the forward's FLOPs."),
        ),
    ),
    4: Problem(
        4,
        "HFU with activation checkpointing",
        f"The run of problem 3 turns on activation checkpointing for every block (each block's whole forward is "
        f"rerun during the backward) and now trains at {CHECKPOINTED_TOKENS_PER_S:,} tokens per second. What "
        "HFU does it reach? Answer in percent.",
        "percent",
        hfu_with_checkpointing,
        "Add what the rerun costs per token to the model's FLOPs: the blocks' weights and their attention, "
        "forward only.",
        units=_PERCENT,
        mistakes=(
            Mistake(
                lambda _: percent_of_peak(CHECKPOINTED_TOKENS_PER_S, model_flops(RUN)),
                "that is the MFU: HFU counts the recomputed forward as work too.",
            ),
            percent_as_fraction(),
            Mistake(
                lambda _: percent_of_peak(CHECKPOINTED_TOKENS_PER_S, 8 * _N_RUN + 16 * _LHQT_RUN),
                "8N is a napkin: the rerun covers the blocks, not the unembedding.",
            ),
            Mistake(lambda p: p / 2, _SPARSE),
        ),
    ),
    5: Problem(
        5,
        "checkpoint memory for a given depth",
        f"A deep network of the 2026 lecture's kind (relu(x @ W) blocks), with L = {CKPT_LAYERS} blocks and W of "
        f"{CKPT_DIM:,} x {CKPT_DIM:,}, trains in bf16 on a batch of B = {CKPT_BATCH:,} rows. It runs as "
        f"`checkpoint_sequential(blocks, {CKPT_LAYERS // CKPT_EVERY}, x, use_reentrant=False)`: "
        f"{CKPT_LAYERS // CKPT_EVERY} segments of "
        f"{CKPT_EVERY} blocks, each keeping only its input, except the last segment, which is stored in full. A "
        "block saves its input and its output for the backward; a tensor passed between two blocks is stored once. "
        "Counting only the B x D layer outputs (not the input batch, not the weights), what is the most memory "
        "the saved activations take at once during the forward and backward? Answer in MiB (2^20 bytes).",
        "MiB",
        checkpoint_memory,
        "List what is stored when the forward ends, segment by segment; then ask whether recomputing a segment "
        "in the backward ever holds more.",
        rel_tol=0.001,
        units=_MIB_UNITS,
        mistakes=(
            Mistake(
                lambda _: stored_tensors("all", CKPT_LAYERS) * layer_output_bytes() / MIB,
                "that is every block's output: a checkpointed segment keeps only its input.",
            ),
            Mistake(
                lambda mib: mib + layer_output_bytes() / MIB,
                "the first segment's input is the batch itself: data, not an activation.",
            ),
            Mistake(
                lambda mib: mib - layer_output_bytes() / MIB,
                "the last segment is never dropped: its input and all its outputs are there when the forward ends.",
            ),
            itemsize_slip("bf16", 4, 2, per="number"),
            unit_mixup("MB", "MiB"),
        ),
    ),
}
