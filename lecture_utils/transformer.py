"""A small GPT-style transformer: attention with named axes, the model, its init, its parameter groups (notebook 05).

Notebook 03 builds the attention, notebook 05 prices the model's training step (the formulas are
in lecture_utils.flops), and notebook 07 trains it.
"""

import contextlib
import math
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from einops import einsum, rearrange
from jaxtyping import Float, Int
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from lecture_utils import nn_basics
from lecture_utils.checks import PositiveFloat, PositiveInt

Attention = Literal["einsum", "sdpa"]

# Every layer whose weight enters a matmul: torch's, and the assignment's (lecture_utils.nn_basics).
LINEAR_LAYERS = (nn.Linear, nn_basics.Linear)


def _check_heads(d_model: int, n_heads: int) -> None:
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model} does not split into n_heads={n_heads} equal heads")


# --- attention with named axes ----------------------------------------------------------------


def split_heads(
    x: Float[Tensor, "*batch seq d_model"], n_heads: PositiveInt
) -> Float[Tensor, "*batch heads seq head_dim"]:
    """Cut the model dimension into heads: (..., seq, heads x head_dim) -> (..., heads, seq, head_dim) (notebook 03)."""
    _check_heads(x.shape[-1], n_heads)
    return rearrange(x, "... seq (heads head_dim) -> ... heads seq head_dim", heads=n_heads)


def merge_heads(x: Float[Tensor, "*batch heads seq head_dim"]) -> Float[Tensor, "*batch seq heads*head_dim"]:
    """Put the heads back side by side: the inverse of split_heads (notebook 03)."""
    return rearrange(x, "... heads seq head_dim -> ... seq (heads head_dim)")


def causal_attention(
    q: Float[Tensor, "*batch heads seq head_dim"],
    k: Float[Tensor, "*batch heads seq head_dim"],
    v: Float[Tensor, "*batch heads seq head_dim"],
) -> Float[Tensor, "*batch heads seq head_dim"]:
    """softmax(q k^T / sqrt(head_dim)) v under a causal mask, as two einsums FlopCounterMode sees (notebook 03).

    The scores are formed and soft-maxed in at least fp32 whatever the input dtype, as flash kernels
    keep them: a score rounded to bf16 is off by up to about |z| 2^-8 (half a step of bf16's 8-bit
    significand), which exp turns into a relative error of its weight that grows with the logits
    (notebook 08 measures it). Autocast would lower
    this matmul to bf16 even for fp32 inputs, so it is switched off for it. The weights are rounded
    back to the input dtype for the second matmul. lecture_utils.nn_basics.scaled_dot_product_attention
    is the assignment's version of the same idea: copyable on its own, with any mask and its own softmax.
    """
    seq, head_dim = q.shape[-2:]
    wide = torch.promote_types(q.dtype, torch.float32)  # bf16/fp16 -> fp32; fp64 stays fp64
    # bf16 -> fp32 is exact and a product of two bf16 values fits in fp32: only the sum rounds, in fp32.
    with _autocast_off(q.device):
        scores = einsum(
            q.to(wide), k.to(wide), "... heads seq_q head_dim, ... heads seq_k head_dim -> ... heads seq_q seq_k"
        )
    future = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
    scaled = (scores / math.sqrt(head_dim)).masked_fill(future, float("-inf"))
    weights = scaled.softmax(dim=-1).to(q.dtype)
    return einsum(weights, v, "... heads seq_q seq_k, ... heads seq_k head_dim -> ... heads seq_q head_dim")


def _autocast_off(device: torch.device) -> contextlib.AbstractContextManager:
    """A block where autocast is off on `device`: a no-op where it is not on (and on devices it does not know)."""
    if device.type in ("cpu", "cuda", "mps", "xpu") and torch.is_autocast_enabled(device.type):
        return torch.autocast(device.type, enabled=False)
    return contextlib.nullcontext()


# --- the model ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TransformerConfig:
    """Sizes of a GPT-style decoder: vocabulary, context, width, depth, heads, MLP width (notebook 05)."""

    vocab_size: PositiveInt
    max_seq_len: PositiveInt
    d_model: PositiveInt
    n_layers: PositiveInt
    n_heads: PositiveInt
    d_ff: PositiveInt

    def __post_init__(self) -> None:
        _check_heads(self.d_model, self.n_heads)

    @property
    def head_dim(self) -> int:
        """Width of one attention head: d_model / n_heads."""
        return self.d_model // self.n_heads


class TransformerBlock(nn.Module):
    """Pre-norm block: x + attention(norm(x)), then x + MLP(norm(x)); no biases (notebook 05)."""

    def __init__(
        self, d_model: PositiveInt, n_heads: PositiveInt, d_ff: PositiveInt, *, attention: Attention = "einsum"
    ) -> None:
        super().__init__()
        _check_heads(d_model, n_heads)
        self.n_heads, self.attention = n_heads, attention
        self.norm1 = nn.LayerNorm(d_model, bias=False)
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)
        self.norm2 = nn.LayerNorm(d_model, bias=False)
        self.up = nn.Linear(d_model, d_ff, bias=False)
        self.down = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        """One block: causal self-attention, then the MLP, each added to the residual stream."""
        q, k, v = (split_heads(t, self.n_heads) for t in self.qkv(self.norm1(x)).chunk(3, dim=-1))
        if self.attention == "sdpa":
            mixed = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            mixed = causal_attention(q, k, v)
        x = x + self.out(merge_heads(mixed))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class TinyLM(nn.Module):
    """Token + position embeddings, TransformerBlocks, a final norm and an untied unembedding (notebook 05)."""

    def __init__(
        self, config: TransformerConfig, *, attention: Attention = "einsum", checkpoint_blocks: bool = False
    ) -> None:
        super().__init__()
        self.config, self.checkpoint_blocks = config, checkpoint_blocks
        c = config
        self.token_embedding = nn.Embedding(c.vocab_size, c.d_model)
        self.position_embedding = nn.Embedding(c.max_seq_len, c.d_model)
        self.blocks = nn.ModuleList(
            TransformerBlock(c.d_model, c.n_heads, c.d_ff, attention=attention) for _ in range(c.n_layers)
        )
        self.norm = nn.LayerNorm(c.d_model, bias=False)
        self.unembedding = nn.Linear(c.d_model, c.vocab_size, bias=False)

    def forward(self, tokens: Int[Tensor, "batch seq"]) -> Float[Tensor, "batch seq vocab"]:
        """Next-token logits for every position of every sequence."""
        seq = tokens.shape[1]
        if seq > self.config.max_seq_len:
            raise ValueError(f"sequence of {seq} tokens is longer than max_seq_len={self.config.max_seq_len}")
        x = self.token_embedding(tokens) + self.position_embedding(torch.arange(seq, device=tokens.device))
        for block in self.blocks:
            # Checkpointing keeps only each block's input and recomputes its inside during backward.
            x = checkpoint(block, x, use_reentrant=False) if self.checkpoint_blocks else block(x)
        return self.unembedding(self.norm(x))


def init_weights_(model: nn.Module, generator: torch.Generator, *, std: PositiveFloat = 0.02) -> nn.Module:
    """Redraw every Linear and Embedding weight from `generator` as N(0, std^2) cut at 3 std; zero biases (notebook 07).

    An explicit generator makes the init reproducible, or variable, on its own, whatever the data
    order and the global stream do. Small weights make the first predictions nearly uniform, so
    a language model's loss starts at about log(vocab_size).
    """
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (*LINEAR_LAYERS, nn.Embedding)):
                # Draw where the generator lives and copy: a CPU generator then gives the same
                # weights whether the model sits on the CPU or on a GPU.
                weight = torch.empty(module.weight.shape, device=generator.device)
                nn.init.trunc_normal_(weight, std=std, a=-3 * std, b=3 * std, generator=generator)
                module.weight.copy_(weight)
            if isinstance(module, LINEAR_LAYERS) and getattr(module, "bias", None) is not None:  # nn_basics: none
                module.bias.zero_()
    return model


def parameter_groups(model: nn.Module) -> dict[str, int]:
    """Parameters by what they do: 'matmul' (LINEAR_LAYERS), 'embedding' (a lookup), 'norm', 'other' (notebook 05)."""
    groups = {"matmul": 0, "embedding": 0, "norm": 0, "other": 0}
    kinds = ((LINEAR_LAYERS, "matmul"), (nn.Embedding, "embedding"), (nn.LayerNorm, "norm"))
    for module in model.modules():
        group = next((name for kind, name in kinds if isinstance(module, kind)), "other")
        groups[group] += sum(p.numel() for p in module.parameters(recurse=False))
    return groups


def block_matmul_params(d_model: PositiveInt, d_ff: PositiveInt) -> int:
    """Weights one block uses in matmuls: 4 d^2 for q, k, v, out plus 2 d d_ff for the MLP (notebook 05)."""
    return 4 * d_model**2 + 2 * d_model * d_ff


def matmul_params(config: TransformerConfig) -> int:
    """Weights of TinyLM that take part in a matmul, the N of 6N: every block, plus the unembedding (notebook 05)."""
    return config.n_layers * block_matmul_params(config.d_model, config.d_ff) + config.d_model * config.vocab_size
