"""Practice for notebook 05: a layer's backward, when attention catches up, MFU, HFU, and checkpoint memory.

Each problem's numbers are set once, below, and both its question and its worked answer are built
from them, so the two cannot disagree. The worked answers use the package's FLOP formulas and the
checkpoint schedules' napkin; the notebook checks the FLOPs against FlopCounterMode, run on meta
tensors (shapes without memory), and the checkpoint memory against a real stack's saved tensors.
"""

from lecture_utils.checkpoint_schedule import stored_tensors
from lecture_utils.flops import forward_flops_per_token, matmul_flops, mfu, training_flops_per_token
from lecture_utils.hardware import ACCELERATORS
from lecture_utils.practice import Mistake, Problem, Worked
from lecture_utils.problems import itemsize_slip, percent_as_fraction, unit_mixup
from lecture_utils.transformer import TransformerConfig, block_matmul_params, matmul_params

H100 = ACCELERATORS["h100-sxm"]

# 1: an MLP up-projection in the middle of a network
TOKENS, D_IN, D_OUT = 16_384, 4_096, 16_384
# 2: the context length where attention's term equals the weights' (a TinyLM of this shape)
CROSSOVER = TransformerConfig(vocab_size=32_768, max_seq_len=8_192, d_model=1_024, n_layers=16, n_heads=16, d_ff=4_096)
# 3 and 4: a TinyLM of about 1.3B matmul weights on one H100, without and with checkpointing
RUN = TransformerConfig(vocab_size=50_304, max_seq_len=2_048, d_model=2_048, n_layers=24, n_heads=16, d_ff=8_192)
RUN_TOKENS_PER_S, CHECKPOINTED_TOKENS_PER_S = 40_000, 33_000
# 5: the 2026 lecture's deep network (relu(x @ W) blocks) in bf16, checkpointed in segments
CKPT_LAYERS, CKPT_EVERY, CKPT_BATCH, CKPT_DIM = 64, 8, 16_384, 2_048
MIB = 2**20

_ARCHITECTURE = (
    "a decoder built like the notebook's TinyLM: per block, q, k, v and output projections (d x d each) "
    "and a two-matmul MLP (d x d_ff and d_ff x d), no biases, then an unembedding (d x V)"
)


def _shape(config: TransformerConfig) -> str:
    c = config
    heads = f"H = {c.n_heads} heads of Q = {c.head_dim}"
    return f"d = {c.d_model:,}, d_ff = {c.d_ff:,}, L = {c.n_layers}, {heads}, V = {c.vocab_size:,}"


def _layer_backward() -> Worked:
    weight_grad = matmul_flops((D_IN, TOKENS), (TOKENS, D_OUT))  # W.grad = x^T y.grad
    input_grad = matmul_flops((TOKENS, D_OUT), (D_OUT, D_IN))  # x.grad = y.grad W^T
    total = weight_grad + input_grad
    steps = (
        f"weight gradient x^T y.grad: ({D_IN:,} x {TOKENS:,}) @ ({TOKENS:,} x {D_OUT:,}) = {weight_grad:,} FLOPs",
        f"input gradient y.grad W^T:  ({TOKENS:,} x {D_OUT:,}) @ ({D_OUT:,} x {D_IN:,}) = {input_grad:,} FLOPs",
        f"backward = {total:,} FLOPs = {total / 1e12:.2f} TFLOP (twice the forward)",
    )
    return Worked(steps, total / 1e12, f"{total / 1e12:.2f} TFLOP")


def _crossover_tokens(n_params: int, config: TransformerConfig) -> float:
    """T where 12 L H Q T equals 6 N."""
    return 6 * n_params / (12 * config.n_layers * config.n_heads * config.head_dim)


def _crossover() -> Worked:
    c = CROSSOVER
    n = matmul_params(c)
    seq = _crossover_tokens(n, c)
    steps = (
        f"N = L (4d^2 + 2 d d_ff) + d V = {c.n_layers} x {block_matmul_params(c.d_model, c.d_ff):,}"
        f" + {c.d_model * c.vocab_size:,} = {n:,}",
        f"12 L H Q T = 6N  ->  T = 6N / (12 L H Q) = {6 * n:,} / {12 * c.n_layers * c.n_heads * c.head_dim:,}",
        f"T = {seq:,.0f} tokens",
    )
    return Worked(steps, seq, f"{seq:,.0f} tokens")


def _model_flops(config: TransformerConfig) -> int:
    """6N + 12LHQT per token at T = max_seq_len, N the matmul weights."""
    c = config
    return training_flops_per_token(matmul_params(c), c.n_layers, c.n_heads, c.head_dim, c.max_seq_len)


def _rerun_flops(config: TransformerConfig) -> int:
    """Per token, one more forward of every block (2 N_blocks + 4LHQT): what full checkpointing reruns."""
    c = config
    n_blocks = c.n_layers * block_matmul_params(c.d_model, c.d_ff)
    return forward_flops_per_token(n_blocks, c.n_layers, c.n_heads, c.head_dim, c.max_seq_len)


def _model_flops_with(n_params: int) -> float:
    """Problem 3's MFU in percent with another parameter count N in 6N + 12LHQT."""
    c = RUN
    per_token = training_flops_per_token(n_params, c.n_layers, c.n_heads, c.head_dim, c.max_seq_len)
    return _percent_of_peak(RUN_TOKENS_PER_S, per_token)


def _percent_of_peak(tokens_per_s: float, flops_per_token: float) -> float:
    """Achieved FLOP/s as a percentage of the H100's dense bf16 peak."""
    return 100 * mfu(tokens_per_s * flops_per_token, 1.0, H100.peak("bf16"))


def _mfu() -> Worked:
    c, peak = RUN, H100.peak("bf16")
    per_token = _model_flops(c)
    n = matmul_params(c)
    attention = per_token - 6 * n
    utilization = _percent_of_peak(RUN_TOKENS_PER_S, per_token) / 100
    steps = (
        f"N = {c.n_layers} x {block_matmul_params(c.d_model, c.d_ff):,} + {c.d_model * c.vocab_size:,} = {n:,}",
        f"per token 6N + 12LHQT = {6 * n:,} + {attention:,} = {per_token:,} FLOPs",
        f"model FLOP/s = {RUN_TOKENS_PER_S:,} tokens/s x {per_token:.4g} = {RUN_TOKENS_PER_S * per_token:.4g}",
        f"MFU = {RUN_TOKENS_PER_S * per_token:.4g} / {peak:.4g} (dense bf16) = {utilization:.2%}",
    )
    return Worked(steps, 100 * utilization, f"{utilization:.1%}")


def _hfu() -> Worked:
    c, peak = RUN, H100.peak("bf16")
    model = _model_flops(c)
    rerun = _rerun_flops(c)
    hardware = model + rerun
    utilization = _percent_of_peak(CHECKPOINTED_TOKENS_PER_S, hardware) / 100
    as_mfu = _percent_of_peak(CHECKPOINTED_TOKENS_PER_S, model) / 100
    steps = (
        f"model FLOPs per token 6N + 12LHQT = {model:,}",
        f"rerun of every block's forward: 2 N_blocks + 4LHQT = {rerun:,}",
        f"hardware FLOPs per token = {hardware:,} ({hardware / model:.3f} x the model's)",
        f"HFU = {CHECKPOINTED_TOKENS_PER_S:,} x {hardware:.4g} / {peak:.4g} = {utilization:.2%}"
        f" (MFU of the same run: {as_mfu:.2%})",
    )
    return Worked(steps, 100 * utilization, f"{utilization:.1%}")


def _layer_output_bytes() -> int:
    """One (B, D) layer output in bf16."""
    return CKPT_BATCH * CKPT_DIM * 2


def _checkpoint_memory() -> Worked:
    layers, every = CKPT_LAYERS, CKPT_EVERY
    segments = layers // every
    stored = stored_tensors("every", layers, every)
    one = _layer_output_bytes()
    steps = (
        f"{segments} segments of {every} layers; one layer output B x D x 2 B = {CKPT_BATCH:,} x {CKPT_DIM:,} x 2"
        f" = {one / MIB:g} MiB",
        f"kept to the end of the forward: the inputs of segments 2 to {segments - 1} ({segments - 2}; the first"
        f" segment's input is the batch), and the last segment in full, its input and its {every} outputs"
        f" ({every + 1})",
        "the backward holds less: by the time a segment is recomputed the last one is freed",
        f"peak = ({segments - 2} + {every + 1}) x {one / MIB:g} MiB = {stored} x {one / MIB:g}"
        f" = {stored * one / MIB:g} MiB",
    )
    return Worked(steps, stored * one / MIB, f"{stored * one / MIB:g} MiB")


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
        _layer_backward,
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
        f"Take {_ARCHITECTURE}, with {_shape(CROSSOVER)}. Counting N as the weights that sit in matmuls, at "
        "what context length T does attention's term 12LHQT equal the weights' 6N? Answer in tokens.",
        "tokens",
        _crossover,
        "Count N from the shapes (every weight matrix that multiplies activations), then solve 12LHQT = 6N for T.",
        units={"k": 1e3},
        mistakes=(
            Mistake(
                lambda _: _crossover_tokens(
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
        f"The same kind of model with {_shape(RUN)} trains at T = {RUN.max_seq_len:,} on one H100 SXM in bf16, "
        f"at {RUN_TOKENS_PER_S:,} tokens per second. What is its MFU, with 6N + 12LHQT as the model's FLOPs per "
        "token and N counted as in problem 2 (the weights that sit in matmuls)? Answer in percent.",
        "percent",
        _mfu,
        "Model FLOPs per token times tokens per second is the achieved FLOP/s; divide by the dense bf16 peak.",
        units=_PERCENT,
        mistakes=(
            Mistake(
                lambda _: _percent_of_peak(RUN_TOKENS_PER_S, 6 * _N_RUN),
                "the attention term is model FLOPs too: the math of the step needs it.",
            ),
            Mistake(
                lambda _: _model_flops_with(_N_RUN_ALL),
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
        _hfu,
        "Add what the rerun costs per token to the model's FLOPs: the blocks' weights and their attention, "
        "forward only.",
        units=_PERCENT,
        mistakes=(
            Mistake(
                lambda _: _percent_of_peak(CHECKPOINTED_TOKENS_PER_S, _model_flops(RUN)),
                "that is the MFU: HFU counts the recomputed forward as work too.",
            ),
            percent_as_fraction(),
            Mistake(
                lambda _: _percent_of_peak(CHECKPOINTED_TOKENS_PER_S, 8 * _N_RUN + 16 * _LHQT_RUN),
                "8N is a napkin: the rerun covers the blocks, not the unembedding.",
            ),
            Mistake(lambda p: p / 2, _SPARSE),
        ),
    ),
    5: Problem(
        5,
        "checkpoint memory for a given depth",
        f"The 2026 lecture's deep network: L = {CKPT_LAYERS} blocks, each relu(x @ W) with W of {CKPT_DIM:,} x "
        f"{CKPT_DIM:,}, trains in bf16 on a batch of B = {CKPT_BATCH:,} rows. It runs as "
        f"`checkpoint_sequential(blocks, {CKPT_LAYERS // CKPT_EVERY}, x)`: {CKPT_LAYERS // CKPT_EVERY} segments of "
        f"{CKPT_EVERY} blocks, each keeping only its input, except the last segment, which is stored in full. A "
        "block saves its input and its output for the backward; a tensor passed between two blocks is stored once. "
        "Counting only the B x D layer outputs (not the input batch, not the weights), what is the most memory "
        "the saved activations take at once during the forward and backward? Answer in MiB (2^20 bytes).",
        "MiB",
        _checkpoint_memory,
        "List what is stored when the forward ends, segment by segment; then ask whether recomputing a segment "
        "in the backward ever holds more.",
        rel_tol=0.001,
        units=_MIB_UNITS,
        mistakes=(
            Mistake(
                lambda _: stored_tensors("all", CKPT_LAYERS) * _layer_output_bytes() / MIB,
                "that is every block's output: a checkpointed segment keeps only its input.",
            ),
            Mistake(
                lambda mib: mib + _layer_output_bytes() / MIB,
                "the first segment's input is the batch itself: data, not an activation.",
            ),
            Mistake(
                lambda mib: mib - _layer_output_bytes() / MIB,
                "the last segment is never dropped: its input and all its outputs are there when the forward ends.",
            ),
            itemsize_slip("bf16", 4, 2, per="number"),
            unit_mixup("MB", "MiB"),
        ),
    ),
}
