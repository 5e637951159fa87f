"""A small GPT-style transformer, and the FLOP formulas that price training it: 6N per token plus attention.

Shapes are named with jaxtyping and checked at call time by beartype, so a wrong shape fails
at the function boundary with the names of the axes that disagree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, NamedTuple

import torch
import torch.nn.functional as F
from beartype import beartype
from einops import einsum, rearrange
from jaxtyping import Float, Int, jaxtyped
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from lecture_utils.checks import check_dims
from lecture_utils.flops import matmul_flops


Attention = Literal["einsum", "sdpa"]


# --- the two-layer linear net: x (B x D) -> w1 (D x D) -> h1 -> w2 (D x K) -> h2 -------------


class TwoLayerGrads(NamedTuple):
    """Gradients of the two-layer net; `x` is None when the input's gradient was not asked for."""

    w1: Tensor
    w2: Tensor
    x: Tensor | None


@jaxtyped(typechecker=beartype)
def two_layer_forward(
    x: Float[Tensor, "batch d"], w1: Float[Tensor, "d d"], w2: Float[Tensor, "d k"]
) -> tuple[Float[Tensor, "batch d"], Float[Tensor, "batch k"]]:
    """The forward pass h1 = x w1, h2 = h1 w2; returns (h1, h2) because backward needs h1."""
    h1 = x @ w1
    return h1, h1 @ w2


@jaxtyped(typechecker=beartype)
def two_layer_backward(
    x: Float[Tensor, "batch d"],
    w1: Float[Tensor, "d d"],
    w2: Float[Tensor, "d k"],
    h1: Float[Tensor, "batch d"],
    grad_h2: Float[Tensor, "batch k"],
    *,
    input_grad: bool = False,
) -> TwoLayerGrads:
    """The backward pass by hand: two matmuls per weight matrix, plus one more if x needs a gradient."""
    grad_w2 = h1.T @ grad_h2
    grad_h1 = grad_h2 @ w2.T
    grad_w1 = x.T @ grad_h1
    return TwoLayerGrads(w1=grad_w1, w2=grad_w2, x=grad_h1 @ w1.T if input_grad else None)


def two_layer_forward_flops(batch: int, d: int, k: int) -> int:
    """Forward FLOPs of the two-layer net: 2BDD + 2BDK."""
    check_dims(batch=batch, d=d, k=k)
    return matmul_flops((batch, d), (d, d)) + matmul_flops((batch, d), (d, k))


def two_layer_backward_flops(batch: int, d: int, k: int, *, input_grad: bool = False) -> int:
    """Backward FLOPs of the two-layer net: 2BDD + 4BDK, or 4BDD + 4BDK (2 x forward) when x needs a gradient."""
    check_dims(batch=batch, d=d, k=k)
    flops = (
        matmul_flops((d, batch), (batch, k))  # w2.grad = h1^T h2.grad
        + matmul_flops((batch, k), (k, d))  # h1.grad = h2.grad w2^T
        + matmul_flops((d, batch), (batch, d))  # w1.grad = x^T h1.grad
    )
    if input_grad:
        flops += matmul_flops((batch, d), (d, d))  # x.grad = h1.grad w1^T
    return flops


# --- attention with named axes ----------------------------------------------------------------


@jaxtyped(typechecker=beartype)
def split_heads(x: Float[Tensor, "*batch seq d_model"], n_heads: int) -> Float[Tensor, "*batch heads seq head_dim"]:
    """Cut the model dimension into heads: (..., seq, heads x head_dim) -> (..., heads, seq, head_dim)."""
    check_dims(n_heads=n_heads)
    if x.shape[-1] % n_heads:
        raise ValueError(f"d_model={x.shape[-1]} does not split into n_heads={n_heads} equal heads")
    return rearrange(x, "... seq (heads head_dim) -> ... heads seq head_dim", heads=n_heads)


@jaxtyped(typechecker=beartype)
def merge_heads(x: Float[Tensor, "*batch heads seq head_dim"]) -> Float[Tensor, "*batch seq heads*head_dim"]:
    """Put the heads back side by side: the inverse of split_heads."""
    return rearrange(x, "... heads seq head_dim -> ... seq (heads head_dim)")


@jaxtyped(typechecker=beartype)
def causal_attention(
    q: Float[Tensor, "*batch heads seq head_dim"],
    k: Float[Tensor, "*batch heads seq head_dim"],
    v: Float[Tensor, "*batch heads seq head_dim"],
) -> Float[Tensor, "*batch heads seq head_dim"]:
    """softmax(q k^T / sqrt(head_dim)) v under a causal mask, as two einsums that FlopCounterMode sees on any device.

    The softmax runs in at least fp32 whatever the input dtype (notebook 08 measures why: a softmax
    summed in bf16 goes wrong as rows grow); its weights are rounded back to the input dtype for the
    second matmul.
    """
    seq, head_dim = q.shape[-2:]
    scores = einsum(q, k, "... heads seq_q head_dim, ... heads seq_k head_dim -> ... heads seq_q seq_k")
    future = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
    wide = torch.promote_types(scores.dtype, torch.float32)  # bf16/fp16 -> fp32; fp64 stays fp64
    scaled = (scores.to(wide) / math.sqrt(head_dim)).masked_fill(future, float("-inf"))
    weights = scaled.softmax(dim=-1).to(q.dtype)
    return einsum(weights, v, "... heads seq_q seq_k, ... heads seq_k head_dim -> ... heads seq_q head_dim")


# --- the model ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TransformerConfig:
    """Sizes of a GPT-style decoder: vocabulary, context, width, depth, heads, MLP width."""

    vocab_size: int
    max_seq_len: int
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int

    def __post_init__(self) -> None:
        check_dims(**vars(self))
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be a multiple of n_heads={self.n_heads}")

    @property
    def head_dim(self) -> int:
        """Width of one attention head: d_model / n_heads."""
        return self.d_model // self.n_heads


class TransformerBlock(nn.Module):
    """Pre-norm block: x + attention(norm(x)), then x + MLP(norm(x)); no biases, so every weight is in a matmul."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, *, attention: Attention = "einsum") -> None:
        super().__init__()
        check_dims(d_model=d_model, n_heads=n_heads, d_ff=d_ff)
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} must be a multiple of n_heads={n_heads}")
        if attention not in ("einsum", "sdpa"):
            raise ValueError(f"attention must be 'einsum' or 'sdpa', got {attention!r}")
        self.n_heads, self.attention = n_heads, attention
        self.norm1 = nn.LayerNorm(d_model, bias=False)
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)
        self.norm2 = nn.LayerNorm(d_model, bias=False)
        self.up = nn.Linear(d_model, d_ff, bias=False)
        self.down = nn.Linear(d_ff, d_model, bias=False)

    @jaxtyped(typechecker=beartype)
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
    """Token + position embeddings, a stack of TransformerBlocks, a final norm and an untied unembedding."""

    def __init__(self, config: TransformerConfig, *, attention: Attention = "einsum", checkpoint_blocks: bool = False):
        super().__init__()
        if not isinstance(config, TransformerConfig):
            raise TypeError(f"config must be a TransformerConfig, got {type(config).__name__}")
        self.config, self.checkpoint_blocks = config, checkpoint_blocks
        c = config
        self.token_embedding = nn.Embedding(c.vocab_size, c.d_model)
        self.position_embedding = nn.Embedding(c.max_seq_len, c.d_model)
        self.blocks = nn.ModuleList(
            TransformerBlock(c.d_model, c.n_heads, c.d_ff, attention=attention) for _ in range(c.n_layers)
        )
        self.norm = nn.LayerNorm(c.d_model, bias=False)
        self.unembedding = nn.Linear(c.d_model, c.vocab_size, bias=False)

    @jaxtyped(typechecker=beartype)
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


def parameter_groups(model: nn.Module) -> dict[str, int]:
    """Parameters by what they do: 'matmul' (Linear), 'embedding' (lookup only), 'norm', 'other'."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"expected an nn.Module, got {type(model).__name__}")
    groups = {"matmul": 0, "embedding": 0, "norm": 0, "other": 0}
    kinds = ((nn.Linear, "matmul"), (nn.Embedding, "embedding"), (nn.LayerNorm, "norm"))
    for module in model.modules():
        group = next((name for kind, name in kinds if isinstance(module, kind)), "other")
        groups[group] += sum(p.numel() for p in module.parameters(recurse=False))
    return groups


def block_matmul_params(d_model: int, d_ff: int) -> int:
    """Weights one block uses in matmuls: 4 d^2 for q, k, v, out plus 2 d d_ff for the MLP."""
    check_dims(d_model=d_model, d_ff=d_ff)
    return 4 * d_model**2 + 2 * d_model * d_ff


def matmul_params(config: TransformerConfig) -> int:
    """Weights of TinyLM that take part in a matmul: every block, plus the d_model x vocab unembedding."""
    if not isinstance(config, TransformerConfig):
        raise TypeError(f"config must be a TransformerConfig, got {type(config).__name__}")
    return config.n_layers * block_matmul_params(config.d_model, config.d_ff) + config.d_model * config.vocab_size


# --- FLOP formulas ------------------------------------------------------------------------------


def attention_forward_flops(batch: int, n_heads: int, seq_len: int, head_dim: int) -> int:
    """Forward FLOPs of one layer's q k^T and weights @ v over full T x T scores: 4 B H T^2 Q."""
    check_dims(batch=batch, n_heads=n_heads, seq_len=seq_len, head_dim=head_dim)
    scores = matmul_flops((batch, n_heads, seq_len, head_dim), (batch, n_heads, head_dim, seq_len))
    mix = matmul_flops((batch, n_heads, seq_len, seq_len), (batch, n_heads, seq_len, head_dim))
    return scores + mix


def forward_flops_per_token(n_params: int, n_layers: int, n_heads: int, head_dim: int, seq_len: int) -> int:
    """Forward FLOPs per token: 2N for the weights plus 4 L H Q T for attention."""
    check_dims(n_params=n_params, n_layers=n_layers, n_heads=n_heads, head_dim=head_dim, seq_len=seq_len)
    return 2 * n_params + 4 * n_layers * n_heads * head_dim * seq_len


def training_flops_per_token(n_params: int, n_layers: int, n_heads: int, head_dim: int, seq_len: int) -> int:
    """Training FLOPs per token, PaLM (Chowdhery et al. 2022, appendix B): 6N + 12 L H Q T (backward = 2 x forward)."""
    return 3 * forward_flops_per_token(n_params, n_layers, n_heads, head_dim, seq_len)


# --- figure -------------------------------------------------------------------------------------
