"""Linear, softmax, cross_entropy and scaled_dot_product_attention as CS336 assignment 1 defines them.

A reference, not a submission: assignment 1 grades these functions. Students taking CS336 write
their own under the course's policy and hand in only their own; use this file to check yours
against (the same random inputs through both, compared with torch.testing.assert_close, as
notebook 03 shows for softmax), never to copy or hand in.

Self-contained: this file imports only math, torch, einops and jaxtyping, and no other
lecture_utils module, so it reads, and runs, on its own. It uses tensor operations, nn.Module and
nn.Parameter only (no torch.nn.functional, no nn layers), as the handout asks. In lecture_utils
the package's import hook enforces the annotations (types, dtypes, shapes with named axes); alone
they document them, and torch's own errors catch a bad call. Used in notebooks 03 (attention),
06 (Linear, truncated_normal_) and 07 (cross_entropy).
"""

import math

import torch
from einops import einsum
from jaxtyping import Bool, Float, Integer
from torch import Tensor, nn


class Linear(nn.Module):
    """y = x W^T without a bias; W has shape (out_features, in_features), as in the handout and nn.Linear.

    W starts as N(0, sigma^2) with sigma^2 = 2 / (in_features + out_features), cut at +-3 sigma, drawn
    by this file's `truncated_normal_` (redraws outside the cut; notebook 06 teaches it). The handout
    says to use torch.nn.init.trunc_normal_(std=sigma, a=-3 sigma, b=3 sigma): the same distribution,
    but drawn another way (an inverse CDF of uniform draws), so the same seed gives other weights.
    The assignment's tests load their own weights into the layer, so they do not see it; to compare
    two layers, copy one's weight into the other. The assignment's layer (notebook 06).
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        weight = torch.empty(out_features, in_features, device=device, dtype=dtype)
        self.weight = nn.Parameter(truncated_normal_(weight, std=math.sqrt(2 / (in_features + out_features))))

    def forward(self, x: Float[Tensor, "... d_in"]) -> Float[Tensor, "... d_out"]:
        """Apply the layer to the last axis of x."""
        if x.shape[-1] != self.in_features:  # the weight is not an argument, so no annotation ties the two
            raise ValueError(f"expected inputs with last dimension {self.in_features}, got shape {tuple(x.shape)}")
        return einsum(x, self.weight, "... d_in, d_out d_in -> ... d_out")

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias=False"


@torch.no_grad()
def truncated_normal_(
    tensor: Tensor, std: float, cut: float = 3.0, *, generator: torch.Generator | None = None
) -> Tensor:
    """Fill `tensor` in place with N(0, std^2) kept to [-cut std, cut std] by redrawing the values outside.

    Rejection keeps the shape of the normal inside the cut; about 0.27% of draws fall outside
    +-3 std, so the loop ends after two or three passes (notebook 06). Every draw comes from
    `generator` when one is given, else from torch's global stream.
    """
    if not (std > 0 and cut > 0):  # with either at 0 or below, no draw would ever be kept: the loop would not end
        raise ValueError(f"std and cut must be positive, got std={std}, cut={cut}")
    tensor.normal_(0.0, std, generator=generator)
    outside = tensor.abs() > cut * std
    while outside.any():
        tensor[outside] = torch.empty_like(tensor[outside]).normal_(0.0, std, generator=generator)
        outside = tensor.abs() > cut * std
    return tensor


def softmax(x: Float[Tensor, "..."], dim: int) -> Float[Tensor, "..."]:
    """exp(x) / sum(exp(x)) along dim, less the max so no exp overflows (in attention, notebook 03)."""
    shifted = x - x.amax(dim=dim, keepdim=True)  # the largest entry becomes exp(0) = 1
    exps = shifted.exp()
    return exps / exps.sum(dim=dim, keepdim=True)


def cross_entropy(logits: Float[Tensor, "*batch vocab"], targets: Integer[Tensor, "*batch"]) -> Float[Tensor, ""]:
    """Mean over every position of -log softmax(logits)[target], as logsumexp(logits) - logits[target] (notebook 07).

    bf16/fp16 logits are promoted to fp32 first: the loss is a sum of many small terms, and
    16-bit floats would round them away. Targets are not range-checked here: that would make a
    GPU wait for the CPU on every step; an out-of-range target fails inside `gather`.
    """
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()
    biggest = logits.amax(dim=-1, keepdim=True)
    log_sum_exp = (logits - biggest).exp().sum(dim=-1).log() + biggest.squeeze(-1)  # (...)
    target_logit = logits.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1)  # (...)
    return (log_sum_exp - target_logit).mean()


def scaled_dot_product_attention(
    Q: Float[Tensor, "*#batch queries d_k"],
    K: Float[Tensor, "*#batch keys d_k"],
    V: Float[Tensor, "*#batch keys d_v"],
    mask: Bool[Tensor, "*#batch #queries #keys"] | None = None,
) -> Float[Tensor, "*#batch queries d_v"]:
    """softmax(Q K^T / sqrt(d_k)) V; where the boolean mask is False a query may not attend to that key (notebook 03).

    `#` marks axes that broadcast: the leading (batch, head) axes of Q, K, V and the mask, and the
    mask's own axes, so a causal (queries, keys) mask serves every batch and head. The scores are
    formed from Q and K taken to fp32 (at least), even when they are bf16: a score rounded to bf16
    is off by up to about |score| 2^-8 (half a step of bf16's 8-bit significand), and exp turns that
    into a relative error of its weight that grows with the logits (notebook 08 measures it). The
    softmax then runs on fp32 scores, and the result is in the dtype of V. A query whose mask row is
    all False has no keys to average over: NaN.
    """
    if not Q.dtype == K.dtype == V.dtype:  # a rule between arguments: Float alone allows any float per argument
        raise TypeError(f"Q, K and V must share one floating-point dtype, got {Q.dtype}, {K.dtype}, {V.dtype}")
    d_k = Q.shape[-1]
    wide = torch.promote_types(Q.dtype, torch.float32)  # bf16/fp16 -> fp32; fp64 stays fp64
    # bf16 -> fp32 is exact and a product of two bf16 values fits in fp32: only the sum rounds, in fp32.
    scores = einsum(Q.to(wide), K.to(wide), "... queries d_k, ... keys d_k -> ... queries keys") / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1).to(V.dtype)  # (..., queries, keys)
    return einsum(weights, V, "... queries keys, ... keys d_v -> ... queries d_v")
