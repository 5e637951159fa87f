"""Linear, softmax, cross_entropy and scaled_dot_product_attention as CS336 assignment 1 defines them.

Copyable: this file imports only math, torch, einops and jaxtyping, and no other lecture_utils
module, so it can be dropped into an assignment as it is. It uses tensor operations,
nn.Module and nn.Parameter only (no torch.nn.functional, no nn layers), as the course asks.
The jaxtyping annotations document shapes; the explicit checks raise the errors.
"""

from __future__ import annotations

import math

import torch
from einops import einsum
from jaxtyping import Bool, Float, Int
from torch import Tensor, nn


def _check_features(name: str, value: object) -> None:
    """Reject a layer size that is not a positive int."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be positive, got {value}")


class Linear(nn.Module):
    """y = x W^T without a bias; W has shape (out_features, in_features), as in the handout and nn.Linear.

    W starts as N(0, sigma^2) with sigma^2 = 2 / (in_features + out_features), cut at +-3 sigma.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        _check_features("in_features", in_features)
        _check_features("out_features", out_features)
        self.in_features, self.out_features = in_features, out_features
        weight = torch.empty(out_features, in_features, device=device, dtype=dtype)
        self.weight = nn.Parameter(truncated_normal_(weight, std=math.sqrt(2 / (in_features + out_features))))

    def forward(self, x: Float[Tensor, "... d_in"]) -> Float[Tensor, "... d_out"]:
        """Apply the layer to the last axis of x."""
        if x.shape[-1] != self.in_features:
            raise ValueError(f"expected inputs with last dimension {self.in_features}, got shape {tuple(x.shape)}")
        return einsum(x, self.weight, "... d_in, d_out d_in -> ... d_out")

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias=False"


@torch.no_grad()
def truncated_normal_(tensor: Tensor, std: float, cut: float = 3.0) -> Tensor:
    """Fill `tensor` in place with N(0, std^2) kept to [-cut std, cut std] by redrawing the values outside.

    Rejection keeps the shape of the normal inside the cut; about 0.27% of draws fall outside
    +-3 std, so the loop ends after two or three passes.
    """
    if not (std > 0 and cut > 0):
        raise ValueError(f"std and cut must be positive, got std={std}, cut={cut}")
    tensor.normal_(0.0, std)
    outside = tensor.abs() > cut * std
    while outside.any():
        tensor[outside] = torch.empty_like(tensor[outside]).normal_(0.0, std)
        outside = tensor.abs() > cut * std
    return tensor


def softmax(x: Float[Tensor, "..."], dim: int) -> Float[Tensor, "..."]:
    """exp(x) / sum(exp(x)) along dim, after subtracting the max so that no exp overflows."""
    shifted = x - x.amax(dim=dim, keepdim=True)  # the largest entry becomes exp(0) = 1
    exps = shifted.exp()
    return exps / exps.sum(dim=dim, keepdim=True)


def cross_entropy(logits: Float[Tensor, "... vocab"], targets: Int[Tensor, "..."]) -> Float[Tensor, ""]:
    """Mean over every position of -log softmax(logits)[target], computed as logsumexp(logits) - logits[target].

    bf16/fp16 logits are promoted to fp32 first: the loss is a sum of many small terms, and
    16-bit floats would round them away. Targets are not range-checked here: that would make a
    GPU wait for the CPU on every step; an out-of-range target fails inside `gather`.
    """
    if not logits.is_floating_point():
        raise TypeError(f"logits must be a floating-point tensor, got {logits.dtype}")
    if targets.dtype.is_floating_point or targets.dtype.is_complex or targets.dtype == torch.bool:
        raise TypeError(f"targets must hold integer class ids, got {targets.dtype}")
    if logits.ndim < 1 or targets.shape != logits.shape[:-1]:
        raise ValueError(
            f"targets must have the shape of logits without its last (vocab) axis, "
            f"{tuple(logits.shape[:-1])}; got logits {tuple(logits.shape)} and targets {tuple(targets.shape)}"
        )
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()
    biggest = logits.amax(dim=-1, keepdim=True)
    log_sum_exp = (logits - biggest).exp().sum(dim=-1).log() + biggest.squeeze(-1)  # (...)
    target_logit = logits.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1)  # (...)
    return (log_sum_exp - target_logit).mean()


def scaled_dot_product_attention(
    Q: Float[Tensor, "... queries d_k"],
    K: Float[Tensor, "... keys d_k"],
    V: Float[Tensor, "... keys d_v"],
    mask: Bool[Tensor, "... queries keys"] | None = None,
) -> Float[Tensor, "... queries d_v"]:
    """softmax(Q K^T / sqrt(d_k)) V; where the boolean mask is False a query may not attend to that key.

    The mask broadcasts against (..., queries, keys): a causal (queries, keys) mask serves every
    batch and head. Scores are taken to fp32 for the softmax even when Q, K, V are bf16 (in bf16
    each exponential and their sum would keep only 8 significant bits), and the result is in the
    dtype of V. A query whose mask
    row is all False has no keys to average over and gets NaN.
    """
    if not (Q.dtype == K.dtype == V.dtype) or not Q.is_floating_point():
        raise TypeError(f"Q, K and V must share one floating-point dtype, got {Q.dtype}, {K.dtype}, {V.dtype}")
    if Q.ndim < 2 or K.ndim < 2 or V.ndim < 2:
        shapes = f"{tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}"
        raise ValueError(f"Q, K and V need at least 2 axes (rows, features), got shapes {shapes}")
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"Q and K must share d_k (last axis), got Q {tuple(Q.shape)} and K {tuple(K.shape)}")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K and V must have one row per key (axis -2), got K {tuple(K.shape)} and V {tuple(V.shape)}")
    try:
        batch = torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"leading axes of Q, K, V do not broadcast: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}"
        ) from None
    d_k = Q.shape[-1]
    scores = einsum(Q, K, "... queries d_k, ... keys d_k -> ... queries keys").float() / math.sqrt(d_k)
    if mask is not None:
        if mask.dtype != torch.bool:
            raise TypeError(f"mask must be a bool tensor (True = may attend), got {mask.dtype}")
        full = (*batch, Q.shape[-2], K.shape[-2])
        try:
            fits = torch.broadcast_shapes(mask.shape, full) == full
        except RuntimeError:
            fits = False
        if not fits:
            raise ValueError(f"mask of shape {tuple(mask.shape)} does not broadcast to the scores' shape {full}")
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1).to(V.dtype)  # (..., queries, keys)
    return einsum(weights, V, "... queries keys, ... keys d_v -> ... queries d_v")
