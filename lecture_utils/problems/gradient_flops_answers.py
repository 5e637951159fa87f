"""Notebook 05's practice numbers and worked answers (the questions live in lecture_utils.problems.gradient_flops).

Each problem's numbers are set once, here, and both its question and its worked answer are built
from them, so the two cannot disagree. The worked answers use the package's FLOP formulas and the
checkpoint schedules' napkin; the notebook checks the FLOPs against FlopCounterMode, run on meta
tensors (shapes without memory), and the checkpoint memory against a real stack's saved tensors.
"""

from lecture_utils.checkpoint_schedule import stored_tensors
from lecture_utils.flops import forward_flops_per_token, matmul_flops, mfu, training_flops_per_token
from lecture_utils.hardware import ACCELERATORS
from lecture_utils.practice import Worked
from lecture_utils.transformer import TransformerConfig, block_matmul_params, matmul_params

H100 = ACCELERATORS["h100-sxm"]

# 1: an MLP up-projection in the middle of a network
TOKENS, D_IN, D_OUT = 16_384, 4_096, 16_384
# 2: the context length where attention's term equals the weights' (a TinyLM of this shape)
CROSSOVER = TransformerConfig(vocab_size=32_768, max_seq_len=8_192, d_model=1_024, n_layers=16, n_heads=16, d_ff=4_096)
# 3 and 4: a TinyLM of about 1.3B matmul weights on one H100, without and with checkpointing
RUN = TransformerConfig(vocab_size=50_304, max_seq_len=2_048, d_model=2_048, n_layers=24, n_heads=16, d_ff=8_192)
RUN_TOKENS_PER_S, CHECKPOINTED_TOKENS_PER_S = 40_000, 33_000
# 5: a deep network of the 2026 lecture's kind (relu(x @ W) blocks; the lecture's own is B = 64, D = 1,024,
# L = 16) at a larger size, in bf16, checkpointed in segments
CKPT_LAYERS, CKPT_EVERY, CKPT_BATCH, CKPT_DIM = 64, 8, 16_384, 2_048
MIB = 2**20

ARCHITECTURE = (
    "a decoder built like the notebook's TinyLM: per block, q, k, v and output projections (d x d each) "
    "and a two-matmul MLP (d x d_ff and d_ff x d), no biases, then an unembedding (d x V)"
)


def config_shape(config: TransformerConfig) -> str:
    """A config's sizes as the questions state them (notebook 05)."""
    c = config
    heads = f"H = {c.n_heads} heads of Q = {c.head_dim}"
    return f"d = {c.d_model:,}, d_ff = {c.d_ff:,}, L = {c.n_layers}, {heads}, V = {c.vocab_size:,}"


def layer_backward() -> Worked:
    """Problem 1's worked answer: the two backward matmuls of one linear layer (notebook 05)."""
    weight_grad = matmul_flops((D_IN, TOKENS), (TOKENS, D_OUT))  # W.grad = x^T y.grad
    input_grad = matmul_flops((TOKENS, D_OUT), (D_OUT, D_IN))  # x.grad = y.grad W^T
    total = weight_grad + input_grad
    steps = (
        f"weight gradient x^T y.grad: ({D_IN:,} x {TOKENS:,}) @ ({TOKENS:,} x {D_OUT:,}) = {weight_grad:,} FLOPs",
        f"input gradient y.grad W^T:  ({TOKENS:,} x {D_OUT:,}) @ ({D_OUT:,} x {D_IN:,}) = {input_grad:,} FLOPs",
        f"backward = {total:,} FLOPs = {total / 1e12:.2f} TFLOP (twice the forward)",
    )
    return Worked(steps, total / 1e12, f"{total / 1e12:.2f} TFLOP")


def crossover_tokens(n_params: int, config: TransformerConfig) -> float:
    """T where 12 L H Q T equals 6 N (notebook 05)."""
    return 6 * n_params / (12 * config.n_layers * config.n_heads * config.head_dim)


def crossover() -> Worked:
    """Problem 2's worked answer: the context length where 12LHQT equals 6N (notebook 05)."""
    c = CROSSOVER
    n = matmul_params(c)
    seq = crossover_tokens(n, c)
    steps = (
        f"N = L (4d^2 + 2 d d_ff) + d V = {c.n_layers} x {block_matmul_params(c.d_model, c.d_ff):,}"
        f" + {c.d_model * c.vocab_size:,} = {n:,}",
        f"12 L H Q T = 6N  ->  T = 6N / (12 L H Q) = {6 * n:,} / {12 * c.n_layers * c.n_heads * c.head_dim:,}",
        f"T = {seq:,.0f} tokens",
    )
    return Worked(steps, seq, f"{seq:,.0f} tokens")


def model_flops(config: TransformerConfig) -> int:
    """6N + 12LHQT per token at T = max_seq_len, N the matmul weights (notebook 05)."""
    c = config
    return training_flops_per_token(matmul_params(c), c.n_layers, c.n_heads, c.head_dim, c.max_seq_len)


def rerun_flops(config: TransformerConfig) -> int:
    """Per token, one more forward of every block (2 N_blocks + 4LHQT): what full checkpointing reruns (notebook 05)."""
    c = config
    n_blocks = c.n_layers * block_matmul_params(c.d_model, c.d_ff)
    return forward_flops_per_token(n_blocks, c.n_layers, c.n_heads, c.head_dim, c.max_seq_len)


def mfu_with_params(n_params: int) -> float:
    """Problem 3's MFU in percent with another parameter count N in 6N + 12LHQT (notebook 05)."""
    c = RUN
    per_token = training_flops_per_token(n_params, c.n_layers, c.n_heads, c.head_dim, c.max_seq_len)
    return percent_of_peak(RUN_TOKENS_PER_S, per_token)


def percent_of_peak(tokens_per_s: float, flops_per_token: float) -> float:
    """Achieved FLOP/s as a percentage of the H100's dense bf16 peak (notebook 05)."""
    return 100 * mfu(tokens_per_s * flops_per_token, 1.0, H100.peak("bf16"))


def mfu_from_throughput() -> Worked:
    """Problem 3's worked answer: MFU from tokens per second (notebook 05)."""
    c, peak = RUN, H100.peak("bf16")
    per_token = model_flops(c)
    n = matmul_params(c)
    attention = per_token - 6 * n
    utilization = percent_of_peak(RUN_TOKENS_PER_S, per_token) / 100
    steps = (
        f"N = {c.n_layers} x {block_matmul_params(c.d_model, c.d_ff):,} + {c.d_model * c.vocab_size:,} = {n:,}",
        f"per token 6N + 12LHQT = {6 * n:,} + {attention:,} = {per_token:,} FLOPs",
        f"model FLOP/s = {RUN_TOKENS_PER_S:,} tokens/s x {per_token:.4g} = {RUN_TOKENS_PER_S * per_token:.4g}",
        f"MFU = {RUN_TOKENS_PER_S * per_token:.4g} / {peak:.4g} (dense bf16) = {utilization:.2%}",
    )
    return Worked(steps, 100 * utilization, f"{utilization:.1%}")


def hfu_with_checkpointing() -> Worked:
    """Problem 4's worked answer: HFU with every block's forward rerun (notebook 05)."""
    c, peak = RUN, H100.peak("bf16")
    model = model_flops(c)
    rerun = rerun_flops(c)
    hardware = model + rerun
    utilization = percent_of_peak(CHECKPOINTED_TOKENS_PER_S, hardware) / 100
    as_mfu = percent_of_peak(CHECKPOINTED_TOKENS_PER_S, model) / 100
    steps = (
        f"model FLOPs per token 6N + 12LHQT = {model:,}",
        f"rerun of every block's forward: 2 N_blocks + 4LHQT = {rerun:,}",
        f"hardware FLOPs per token = {hardware:,} ({hardware / model:.3f} x the model's)",
        f"HFU = {CHECKPOINTED_TOKENS_PER_S:,} x {hardware:.4g} / {peak:.4g} = {utilization:.2%}"
        f" (MFU of the same run: {as_mfu:.2%})",
    )
    return Worked(steps, 100 * utilization, f"{utilization:.1%}")


def layer_output_bytes() -> int:
    """One (B, D) layer output in bf16 (notebook 05)."""
    return CKPT_BATCH * CKPT_DIM * 2


def checkpoint_memory() -> Worked:
    """Problem 5's worked answer: the most saved activation bytes of checkpoint_sequential (notebook 05)."""
    layers, every = CKPT_LAYERS, CKPT_EVERY
    segments = layers // every
    stored = stored_tensors("every", layers, every)
    one = layer_output_bytes()
    steps = (
        f"{segments} segments of {every} layers; one layer output B x D x 2 B = {CKPT_BATCH:,} x {CKPT_DIM:,} x 2"
        f" = {one / MIB:g} MiB",
        f"kept to the end of the forward: the inputs of segments 2 to {segments - 1} ({segments - 2}; the first"
        f" segment's input is the batch), and the last segment in full, its input and its {every} outputs"
        f" ({every + 1})",
        "the backward holds less: by the time a segment is recomputed the last one is freed",
        "use_reentrant=False, as asked, keeps the same tensors as the reentrant variant the notebook measures"
        " with: checkpoint_sequential keeps each checkpointed segment's input and runs the last segment"
        " unchecked either way; only how the rerun is recorded differs",
        f"peak = ({segments - 2} + {every + 1}) x {one / MIB:g} MiB = {stored} x {one / MIB:g}"
        f" = {stored * one / MIB:g} MiB",
    )
    return Worked(steps, stored * one / MIB, f"{stored * one / MIB:g} MiB")
