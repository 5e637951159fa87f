"""AdamW as the CS336 assignment 1 handout writes it (its Algorithm 1), as a torch.optim.Optimizer (notebook 06).

For every parameter theta with gradient g, at step t = 1, 2, ...:

    m <- b1 m + (1 - b1) g
    v <- b2 v + (1 - b2) g^2
    alpha_t = lr sqrt(1 - b2^t) / (1 - b1^t)
    theta <- theta - alpha_t m / (sqrt(v) + eps)
    theta <- theta - lr wd theta

How this differs from torch.optim.AdamW (tests/test_adamw.py measures both):
  * eps: torch adds eps after bias correction, sqrt(v / (1 - b2^t)) + eps; the handout adds it
    before, so the handout with eps e matches torch with eps e / sqrt(1 - b2^t): a larger eps,
    about 32x at step 1 with b2 = 0.999, the factor falling towards 1 as t grows.
  * order: torch decays theta before the Adam step, the handout after it; the results differ
    by lr * wd * (the Adam step), a second-order amount.
With eps = 0 and wd = 0 the two are the same math, and this file does the same float operations
as torch's, so they agree bit for bit.

A reference, not a submission: assignment 1 grades this optimizer. Students taking CS336 write
their own under the course's policy and hand in only their own; use this file to check yours against
(the same parameters and gradients through both, compared step by step), never to copy or hand in.

Self-contained: imports only torch (and collections.abc / typing); no other lecture_utils module.
Inside the package, lecture_utils' import hook checks the annotations; alone, only the range checks run.
"""

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch

ParamsT = Iterable[torch.Tensor] | Iterable[dict[str, Any]]
Betas = Sequence[float]  # (beta1, beta2), the decay rates of m and v: a tuple or a list, as torch.optim takes


class AdamW(torch.optim.Optimizer):
    """Adam with decoupled weight decay; state per parameter: step t (int), m and v like theta (notebook 06)."""

    state_tensors = 2  # m and v; the step count is a Python int

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: Betas = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.01,
    ) -> None:
        _check_hyperparameters(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters, checking any hyperparameter it sets for itself."""
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        _check_hyperparameters(**{name: group[name] for name in ("lr", "betas", "eps", "weight_decay")})

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None) -> torch.Tensor | None:
        """One AdamW update of every parameter that has a gradient; `closure` re-computes the loss if given."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, (beta1, beta2), eps, weight_decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise ValueError("AdamW supports dense gradients only, got a sparse one")
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["m"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["v"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] += 1
                t, m, v, grad = state["step"], state["m"], state["v"], p.grad
                m.lerp_(grad, 1 - beta1)  # m + (1 - b1)(g - m) = b1 m + (1 - b1) g
                v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                # alpha_t m / (sqrt(v) + eps) with alpha_t = lr sqrt(1 - b2^t) / (1 - b1^t), written as
                # (lr / (1 - b1^t)) m / ((sqrt(v) + eps) / sqrt(1 - b2^t)): the same number, in the
                # order torch.optim.AdamW computes it (with ** 0.5 as there), so eps = 0 matches bit for bit.
                denom = v.sqrt().add_(eps).div_((1 - beta2**t) ** 0.5)
                p.addcdiv_(m, denom, value=-lr / (1 - beta1**t))
                if weight_decay != 0:
                    p.mul_(1 - lr * weight_decay)  # theta - lr wd theta, after the Adam step as in the handout
        return loss


def _check_hyperparameters(lr: float, betas: Betas, eps: float, weight_decay: float) -> None:
    """Reject hyperparameters out of range, as torch.optim.AdamW does: lr, eps, weight_decay >= 0; 0 <= b1, b2 < 1."""
    if len(betas) != 2:
        raise ValueError(f"betas must be a pair (beta1, beta2), got {betas}")
    values = {"lr": lr, "betas[0]": betas[0], "betas[1]": betas[1], "eps": eps, "weight_decay": weight_decay}
    for name, value in values.items():
        high = 1.0 if name.startswith("betas") else float("inf")
        if not 0 <= value < high:
            raise ValueError(f"{name} must be in [0, {high}), got {value}")
