"""Notebook 05's two-layer linear net, x (B x D) -> w1 (D x D) -> h1 -> w2 (D x K) -> h2, with its backward by hand.

Its FLOPs are priced by lecture_utils.flops.two_layer_forward_flops and two_layer_backward_flops.
"""

from typing import NamedTuple

from jaxtyping import Float
from torch import Tensor


class TwoLayerGrads(NamedTuple):
    """Gradients of the two-layer net; `x` is None when the input's gradient was not asked for (notebook 05)."""

    w1: Tensor
    w2: Tensor
    x: Tensor | None


def two_layer_forward(
    x: Float[Tensor, "batch d"], w1: Float[Tensor, "d d"], w2: Float[Tensor, "d k"]
) -> tuple[Float[Tensor, "batch d"], Float[Tensor, "batch k"]]:
    """The forward pass h1 = x w1, h2 = h1 w2; returns (h1, h2) because backward needs h1 (notebook 05)."""
    h1 = x @ w1
    return h1, h1 @ w2


def two_layer_backward(
    x: Float[Tensor, "batch d"],
    w1: Float[Tensor, "d d"],
    w2: Float[Tensor, "d k"],
    h1: Float[Tensor, "batch d"],
    grad_h2: Float[Tensor, "batch k"],
    *,
    input_grad: bool = False,
) -> TwoLayerGrads:
    """The backward pass by hand: two matmuls per weight matrix, one more if x needs a gradient (notebook 05)."""
    grad_w2 = h1.T @ grad_h2
    grad_h1 = grad_h2 @ w2.T
    grad_w1 = x.T @ grad_h1
    return TwoLayerGrads(w1=grad_w1, w2=grad_w2, x=grad_h1 @ w1.T if input_grad else None)
