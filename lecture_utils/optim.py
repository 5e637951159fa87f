"""SGD, momentum, AdaGrad, RMSProp, Adam and AdamW written out as torch.optim.Optimizer subclasses (notebook 06).

Each one is a short `_update` that says the math; the base class walks the parameter groups,
skips parameters without a gradient and checks the hyperparameters. Every class is built as
`cls(params, lr=...)` and matches its torch.optim counterpart (tests/test_optim.py):

    SGD       torch.optim.SGD(lr, weight_decay)
    Momentum  torch.optim.SGD(lr, momentum, weight_decay, dampening=0)
    AdaGrad   torch.optim.Adagrad(lr, eps, weight_decay, initial_accumulator_value)
    RMSProp   torch.optim.RMSprop(lr, alpha, eps, weight_decay)
    Adam      torch.optim.Adam(lr, betas, eps, weight_decay)
    AdamW     torch.optim.AdamW(lr, betas, eps, weight_decay)   (the handout's AdamW: lecture_utils.adamw)

State lives in `self.state[p]` as tensors shaped like the parameter, so state_dict() round-trips
it; they take the parameter's dtype, as torch.optim's do, unless `state_dtype` names a wider one
(fp32 state beside bf16 weights, as the 2026 lecture counts bytes; with no fp32 master copy, each
update is then rounded into p). Step counters are Python ints (no tensor memory), so the state
bytes are exactly `state_tensors` (0, 1 or 2) times the parameter's element count times the
state's element size: the count lecture_utils.accounting's recipes read off the class.
"""

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch

ParamsT = Iterable[torch.Tensor] | Iterable[dict[str, Any]]


class _Optimizer(torch.optim.Optimizer):
    """Shared loop: each parameter with a gradient goes to the subclass's `_update(p, grad, state, group)`."""

    state_tensors: int  # tensors shaped like the parameter that `_update` keeps in self.state[p]
    # Hyperparameters below 1, as well as >= 0 (a running average must forget to average).
    _below_one: tuple[str, ...] = ("betas",)
    # True: weight decay shrinks p directly (AdamW); False: it is an L2 term added to the gradient.
    decoupled_weight_decay = False

    def __init__(self, params: ParamsT, defaults: dict[str, Any], state_dtype: torch.dtype | None = None) -> None:
        self._check(defaults)
        self.state_dtype = state_dtype
        super().__init__(params, defaults)

    def _new_state(self, p: torch.Tensor, fill: float = 0.0) -> torch.Tensor:
        """A state tensor shaped like p, filled with `fill`, in `state_dtype` (default: p's dtype)."""
        return torch.full_like(p, fill, dtype=self.state_dtype or p.dtype, memory_format=torch.preserve_format)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters, checking any hyperparameters it overrides."""
        super().add_param_group(param_group)
        self._check({k: v for k, v in self.param_groups[-1].items() if k in self.defaults})

    def _check(self, hyper: dict[str, Any]) -> None:
        """Reject a hyperparameter out of range, as torch.optim does (a group's overrides are not annotated)."""
        if "betas" in hyper and len(hyper["betas"]) != 2:
            raise ValueError(f"betas must be a pair (beta1, beta2), got {hyper['betas']}")
        for name, value in hyper.items():
            high = 1.0 if name in self._below_one else math.inf
            if not all(0 <= v < high for v in (value if name == "betas" else (value,))):
                raise ValueError(f"{name} must be in [0, {high}), got {value}")

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None) -> torch.Tensor | None:
        """Update every parameter that has a gradient; `closure` re-evaluates the loss if given."""
        with torch.enable_grad():
            loss = None if closure is None else closure()
        for group in self.param_groups:
            for p in (p for p in group["params"] if p.grad is not None):  # no gradient: not trained this step
                if p.grad.is_sparse:
                    raise ValueError(f"{type(self).__name__} supports dense gradients only, got a sparse one")
                grad = p.grad
                if group["weight_decay"] and not self.decoupled_weight_decay:
                    grad = grad.add(p, alpha=group["weight_decay"])  # the gradient of (wd / 2) |p|^2
                self._update(p, grad, self.state[p], group)
        return loss


class SGD(_Optimizer):
    """p <- p - lr * g. No state (notebook 06)."""

    state_tensors = 0

    def __init__(self, params: ParamsT, lr: float = 1e-2, weight_decay: float = 0.0) -> None:
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay))

    def _update(self, p, grad, state, group):
        p.add_(grad, alpha=-group["lr"])


class Momentum(_Optimizer):
    """Heavy ball: v <- mu * v + g; p <- p - lr * v. One state tensor, the velocity (notebook 06).

    Some write the velocity as an average, v <- mu * v + (1 - mu) * g; from v = 0 that is this
    update with lr scaled by (1 - mu). This form is torch.optim.SGD's with dampening=0.
    """

    state_tensors = 1
    _below_one = ("momentum",)

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        momentum: float = 0.9,
        weight_decay: float = 0.0,
        *,
        state_dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay), state_dtype)

    def _update(self, p, grad, state, group):
        if "velocity" not in state:
            state["velocity"] = self._new_state(p)
        v = state["velocity"]
        v.mul_(group["momentum"]).add_(grad)
        p.add_(v, alpha=-group["lr"])


class AdaGrad(_Optimizer):
    """s <- s + g^2; p <- p - lr * g / (sqrt(s) + eps). One state tensor (the sum of squares).

    eps = 1e-10 sits outside the square root, as in torch.optim.Adagrad, and only guards against
    dividing by zero. The lecture's sketch writes sqrt(s + 1e-5): an eps inside the root and
    100,000 times larger, which damps the steps of coordinates with tiny accumulated gradients
    (notebook 06 separates the two effects).
    """

    state_tensors = 1

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        eps: float = 1e-10,
        weight_decay: float = 0.0,
        initial_accumulator_value: float = 0.0,
        *,
        state_dtype: torch.dtype | None = None,
    ) -> None:
        defaults = dict(lr=lr, eps=eps, weight_decay=weight_decay, initial_accumulator_value=initial_accumulator_value)
        super().__init__(params, defaults, state_dtype)

    def _update(self, p, grad, state, group):
        if "sum_sq" not in state:
            state["sum_sq"] = self._new_state(p, group["initial_accumulator_value"])
        s = state["sum_sq"]
        s.addcmul_(grad, grad)
        p.addcdiv_(grad, s.sqrt().add_(group["eps"]), value=-group["lr"])


class RMSProp(_Optimizer):
    """AdaGrad with forgetting (notebook 06): s <- alpha s + (1 - alpha) g^2; p <- p - lr g / (sqrt(s) + eps)."""

    state_tensors = 1
    _below_one = ("alpha",)

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        *,
        state_dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay), state_dtype)

    def _update(self, p, grad, state, group):
        if "square_avg" not in state:
            state["square_avg"] = self._new_state(p)
        s = state["square_avg"]
        s.mul_(group["alpha"]).addcmul_(grad, grad, value=1 - group["alpha"])
        p.addcdiv_(grad, s.sqrt().add_(group["eps"]), value=-group["lr"])


class Adam(_Optimizer):
    """RMSProp plus momentum (Kingma & Ba, 2014): averages m of g and v of g^2, both bias-corrected (notebook 06).

    m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2;  p <- p - lr * m_hat / (sqrt(v_hat) + eps),
    with m_hat = m / (1 - b1^t) and v_hat = v / (1 - b2^t). Weight decay here is the L2 kind
    (added to g); AdamW decouples it. Two state tensors, plus the step count t as an int.
    """

    state_tensors = 2

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: Sequence[float] = (0.9, 0.999),  # a pair, as a tuple or a list (as torch.optim takes); _check sees to it
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        *,
        state_dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay), state_dtype)

    def _update(self, p, grad, state, group):
        if "step" not in state:
            state["step"] = 0
            state["exp_avg"] = self._new_state(p)
            state["exp_avg_sq"] = self._new_state(p)
        lr, (beta1, beta2) = group["lr"], group["betas"]
        if self.decoupled_weight_decay:
            p.mul_(1 - lr * group["weight_decay"])  # shrink p directly, not through the adaptive scaling
        state["step"] += 1
        t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
        m.lerp_(grad.to(m.dtype), 1 - beta1)  # lerp_ wants one dtype; a no-op unless the state is wider
        v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = (v.sqrt() / (1 - beta2**t) ** 0.5).add_(group["eps"])
        p.addcdiv_(m, denom, value=-lr / (1 - beta1**t))


class AdamW(Adam):
    """torch.optim.AdamW's algorithm (Loshchilov & Hutter, 2019) bit for bit: decoupled weight decay (notebook 06).

    p <- p (1 - lr wd) before the Adam step, and eps added after the bias correction.
    lecture_utils.adamw.AdamW is the assignment handout's version (eps before the bias
    correction, the decay after the step); notebook 06 measures the difference.
    """

    decoupled_weight_decay = True

    def __init__(  # weight_decay = 1e-2 by default, as torch.optim.AdamW's
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: Sequence[float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        *,
        state_dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, state_dtype=state_dtype)


OPTIMIZERS: dict[str, type[torch.optim.Optimizer]] = {
    c.__name__.lower(): c for c in (SGD, Momentum, AdaGrad, RMSProp, Adam, AdamW)
}
