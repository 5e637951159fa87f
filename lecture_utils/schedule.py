"""The learning-rate schedule and the gradient clipping of CS336 assignment 1, as its handout defines them.

A reference, not a submission: assignment 1 grades both functions. Students taking CS336 write
their own under the course's policy and hand in only their own; use this file to check yours against
(the same iterations or gradients through both), never to copy or hand in.

Self-contained: imports only math, torch and jaxtyping (and collections.abc); no other lecture_utils
module. In lecture_utils the package's import hook enforces the annotations; alone they document
them. Both are taught in notebook 07.
"""

import math
from collections.abc import Iterable

import torch
from jaxtyping import Float
from torch import Tensor


def get_lr_cosine_schedule(
    it: int,
    max_learning_rate: float,
    min_learning_rate: float,
    warmup_iters: int,
    cosine_cycle_iters: int,
) -> float:
    """Learning rate at iteration `it`: linear warm-up, then a cosine from max to min, then min.

    With T_w = warmup_iters and T_c = cosine_cycle_iters (counted from iteration 0, so T_c
    includes the warm-up):
        t < T_w:          (t / T_w) a_max                 0 at t = 0
        T_w <= t <= T_c:  a_min + (1 + cos(pi (t - T_w) / (T_c - T_w))) (a_max - a_min) / 2
        t > T_c:          a_min
    A pure function of `it`, so resuming from a checkpoint needs only the iteration number (notebook 07).
    """
    if min(it, warmup_iters) < 0:  # a negative step would give a negative rate without complaint
        raise ValueError(f"it and warmup_iters cannot be negative, got {it} and {warmup_iters}")
    if warmup_iters > cosine_cycle_iters:
        raise ValueError(
            f"warmup_iters ({warmup_iters}) must not exceed cosine_cycle_iters ({cosine_cycle_iters}): "
            "the cycle is counted from iteration 0 and contains the warm-up"
        )
    if not 0 <= min_learning_rate <= max_learning_rate:
        raise ValueError(
            f"need 0 <= min_learning_rate <= max_learning_rate, got {min_learning_rate} and {max_learning_rate}"
        )
    if it < warmup_iters:
        return it / warmup_iters * max_learning_rate
    if it > cosine_cycle_iters:
        return min_learning_rate
    if cosine_cycle_iters == warmup_iters:  # a cosine of length 0: only its start, a_max, is on it
        return max_learning_rate
    progress = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters)
    return min_learning_rate + 0.5 * (1 + math.cos(math.pi * progress)) * (max_learning_rate - min_learning_rate)


@torch.no_grad()
def gradient_clipping(parameters: Iterable[Tensor] | Tensor, max_l2_norm: float) -> Float[Tensor, ""]:
    """Scale every gradient in place by M / (norm + 1e-6) unless the norm of all of them together is below M.

    `parameters` is one tensor or an iterable of tensors (Parameters or plain tensors with a .grad), as
    for clip_grad_norm_. The norm is the L2 norm of all gradients concatenated into one vector; tensors
    without a gradient are skipped. Returns that norm before clipping (as a tensor, to log it). Clipping
    multiplies by 1 when the norm is small instead of branching on it, so a GPU never waits for
    the CPU to read the norm. The handout leaves g as is when its norm is less than M and scales it
    otherwise, so a norm of exactly M is scaled (to just under M). torch.nn.utils.clip_grad_norm_ gives
    the same gradients bit for bit, except for a norm in (M - 1e-6, M), which it scales by
    M / (norm + 1e-6) and the handout does not. (notebook 07)
    """
    if not max_l2_norm > 0:  # a limit of 0 or below would zero or flip every gradient
        raise ValueError(f"max_l2_norm must be positive, got {max_l2_norm}")
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    device = grads[0].device
    # The norm of the per-tensor norms is the norm of the whole vector, without concatenating it.
    norms = [torch.linalg.vector_norm(g.float()).to(device) for g in grads]
    total = torch.linalg.vector_norm(torch.stack(norms))
    scale = torch.where(total >= max_l2_norm, max_l2_norm / (total + 1e-6), 1.0)  # "less than M": left as is
    for g in grads:
        g.mul_(scale.to(g.device))
    return total
