"""The hand-written optimizers against torch.optim: same parameters after many steps."""

import io

import pytest
import torch
from torch import nn

from lecture_utils.accounting import measure_state, step_counter_bytes
from lecture_utils.memory import tensor_bytes
from lecture_utils.optim import (
    OPTIMIZERS,
    SGD,
    AdaGrad,
    Adam,
    AdamW,
    Momentum,
    RMSProp,
)
from lecture_utils.trajectories import trajectories

# name -> (ours, torch's, shared hyperparameters, options only torch needs to do the same math)
CASES = {
    "sgd": (SGD, torch.optim.SGD, dict(weight_decay=0.05), {}),
    "momentum": (Momentum, torch.optim.SGD, dict(momentum=0.9, weight_decay=0.05), dict(dampening=0.0)),
    "adagrad": (AdaGrad, torch.optim.Adagrad, dict(eps=1e-6, weight_decay=0.05, initial_accumulator_value=0.1), {}),
    "rmsprop": (RMSProp, torch.optim.RMSprop, dict(alpha=0.9, eps=1e-6, weight_decay=0.05), {}),
    "adam": (Adam, torch.optim.Adam, dict(betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05), {}),
    "adamw": (AdamW, torch.optim.AdamW, dict(betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05), {}),
}
STEPS, RESUME_AT = 60, 25


def param_groups(model: nn.Module, lr: float) -> list[dict]:
    # Two groups with different learning rates: the per-group hyperparameters must be honoured.
    return [{"params": model[0].parameters()}, {"params": model[2].parameters(), "lr": lr / 4}]


def train(make_model, make_optimizer, lr: float, *, resume_at: int | None) -> list[torch.Tensor]:
    """Run STEPS steps on a fixed stream of batches; optionally save, rebuild and load mid-way."""
    model = make_model()
    optimizer = make_optimizer(param_groups(model, lr), lr)
    data = torch.Generator().manual_seed(1)
    for step in range(STEPS):
        if step == resume_at:
            buffer = io.BytesIO()
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, buffer)
            buffer.seek(0)
            saved = torch.load(buffer, weights_only=True)
            model = make_model()
            optimizer = make_optimizer(param_groups(model, lr), lr)
            model.load_state_dict(saved["model"])
            optimizer.load_state_dict(saved["optimizer"])
        x = torch.randn(16, 6, generator=data)
        y = torch.randn(16, 1, generator=data)
        optimizer.zero_grad(set_to_none=True)
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    return [p.detach() for p in model.parameters()]


@pytest.mark.parametrize("name", CASES)
def test_matches_torch_after_many_steps_with_resume(name, small_mlp):
    ours, theirs, shared, extra = CASES[name]
    lr = 0.05 if name in {"sgd", "momentum", "adagrad"} else 0.01
    mine = train(small_mlp, lambda groups, lr: ours(groups, lr=lr, **shared), lr, resume_at=RESUME_AT)
    reference = train(small_mlp, lambda groups, lr: theirs(groups, lr=lr, **shared, **extra), lr, resume_at=None)
    start = [p.detach() for p in small_mlp().parameters()]
    for p, ref, p0 in zip(mine, reference, start, strict=True):
        assert not torch.equal(ref, p0), "the reference did not move: the comparison would be empty"
        torch.testing.assert_close(p, ref, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_every_optimizer_is_built_from_params_and_lr_alone(name):
    w = nn.Parameter(torch.tensor([1.0, -2.0]))
    optimizer = OPTIMIZERS[name]([w], lr=0.1)
    (w**2).sum().backward()
    optimizer.step()
    assert (w.detach().abs() < torch.tensor([1.0, 2.0])).all(), f"{name} did not move toward the minimum"


def test_momentum_as_an_average_is_heavy_ball_with_scaled_lr():
    # The docstring's claim: v <- mu v + (1 - mu) g with lr equals v <- mu v + g with lr (1 - mu).
    mu, lr = 0.9, 0.1
    w = nn.Parameter(torch.tensor([3.0, -1.0]))
    optimizer = Momentum([w], lr=lr * (1 - mu), momentum=mu)
    by_hand, v = torch.tensor([3.0, -1.0]), torch.zeros(2)
    for _ in range(20):
        optimizer.zero_grad()
        (w**4).sum().backward()
        optimizer.step()
        v = mu * v + (1 - mu) * 4 * by_hand**3
        by_hand = by_hand - lr * v
    torch.testing.assert_close(w.detach(), by_hand)


def test_step_runs_the_closure_and_returns_its_loss():
    w = nn.Parameter(torch.tensor([2.0]))
    optimizer = SGD([w], lr=0.25)

    def closure():
        optimizer.zero_grad()
        loss = (w**2).sum()
        loss.backward()
        return loss

    assert optimizer.step(closure).item() == 4.0
    assert w.item() == 1.0  # 2 - 0.25 * 2 * 2


def test_parameters_without_gradients_are_left_alone():
    used, unused = nn.Parameter(torch.ones(3)), nn.Parameter(torch.ones(3))
    optimizer = Adam([used, unused], lr=0.1)
    used.sum().backward()
    optimizer.step()
    assert torch.equal(unused.detach(), torch.ones(3))
    assert unused not in optimizer.state


def one_step(optimizer: torch.optim.Optimizer, model: nn.Module) -> torch.optim.Optimizer:
    for p in model.parameters():
        p.grad = torch.ones_like(p)
    optimizer.step()
    return optimizer


@pytest.mark.parametrize("name", CASES)
def test_state_bytes_are_the_declared_multiple_as_in_torch_optim(name):
    ours, theirs, _, extra = CASES[name]
    model = nn.Linear(3, 10)  # 40 parameters in 2 tensors
    options = dict(momentum=0.9) if name == "momentum" else {}
    mine = one_step(ours(model.parameters(), lr=0.1, **options), model)
    reference = one_step(theirs(model.parameters(), lr=0.1, **options, **extra), model)
    for optimizer in (mine, reference):  # torch.optim's own state, independent of our classes, agrees
        assert measure_state(model, optimizer).component_bytes().get("optimizer_state", 0) == ours.state_tensors * 160
    assert step_counter_bytes(mine) == 0  # our step counts are Python ints
    # torch.optim keeps a 0-d step tensor per parameter tensor (SGD with momentum keeps none).
    counters = sum(tensor_bytes(state["step"]) for state in reference.state.values() if "step" in state)
    assert step_counter_bytes(reference) == counters == (0 if name in {"sgd", "momentum"} else 4 * 2)


@pytest.mark.parametrize("cls", [Momentum, AdaGrad, RMSProp, Adam, AdamW])
def test_fp32_state_for_bf16_weights_is_the_fp32_step_rounded_once(cls):
    # The 2026 lecture's recipe: bf16 weights and gradients, fp32 state. One step equals the fp32
    # optimizer's step from the same (exactly widened) values, rounded into bf16 once.
    gen = torch.Generator().manual_seed(0)
    start, grad = torch.randn(64, generator=gen).bfloat16(), torch.randn(64, generator=gen).bfloat16()
    narrow, wide = nn.Parameter(start.clone()), nn.Parameter(start.float())
    narrow.grad, wide.grad = grad.clone(), grad.float()
    options = dict(lr=0.1) | (dict(weight_decay=0.0) if cls is AdamW else {})  # decay would round first
    mixed = cls([narrow], state_dtype=torch.float32, **options)
    mixed.step()
    cls([wide], **options).step()
    assert narrow.dtype == torch.bfloat16
    assert all(t.dtype == torch.float32 for t in mixed.state[narrow].values() if isinstance(t, torch.Tensor))
    assert torch.equal(narrow.detach(), wide.detach().bfloat16())
    assert measure_state(nn.ParameterList([narrow]), mixed).optimizer_state == {torch.float32: cls.state_tensors * 256}


@pytest.mark.parametrize(
    ("cls", "kwargs", "error", "match"),
    [
        (SGD, dict(lr=-0.1), ValueError, "lr must be in"),
        (Momentum, dict(lr=0.1, momentum=1.0), ValueError, "momentum must be in"),
        (AdaGrad, dict(lr=0.1, eps=-1e-8), ValueError, "eps must be in"),
        (RMSProp, dict(lr=0.1, alpha=1.5), ValueError, "alpha must be in"),
        (AdamW, dict(lr=0.1, betas=(0.9, 1.0)), ValueError, "betas must be in"),
        (AdamW, dict(lr=0.1, weight_decay=-0.01), ValueError, "weight_decay must be in"),
        (Adam, dict(lr=0.1, betas=(0.9,)), ValueError, r"betas must be a pair \(beta1, beta2\)"),
        (AdamW, dict(lr=0.1, betas=(0.9, 0.99, 0.999)), ValueError, r"betas must be a pair \(beta1, beta2\)"),
    ],
)
def test_bad_hyperparameters_are_rejected(cls, kwargs, error, match):
    with pytest.raises(error, match=match):
        cls([nn.Parameter(torch.zeros(2))], **kwargs)


def test_a_bad_override_in_a_param_group_is_rejected():
    with pytest.raises(ValueError, match="lr must be in"):
        Adam([{"params": [nn.Parameter(torch.zeros(2))], "lr": -1.0}], lr=0.1)


def test_a_param_group_override_of_betas_must_be_a_pair():
    with pytest.raises(ValueError, match=r"betas must be a pair \(beta1, beta2\)"):
        Adam([{"params": [nn.Parameter(torch.zeros(2))], "betas": (0.9,)}], lr=0.1)


def test_betas_may_be_a_list_as_in_torch_optim():
    trained = []
    for betas in ([0.8, 0.9], (0.8, 0.9)):
        torch.manual_seed(0)
        model = nn.Linear(3, 10)
        trained.append(one_step(Adam(model.parameters(), lr=0.1, betas=betas), model).param_groups[0]["params"][0])
    assert torch.equal(*trained)


def test_sparse_gradients_are_rejected():
    w = nn.Parameter(torch.zeros(4))
    w.grad = torch.zeros(4).to_sparse()
    with pytest.raises(ValueError, match="dense gradients only"):
        AdaGrad([w], lr=0.1).step()


def test_trajectories_follow_the_closed_form_of_sgd_on_a_bowl():
    # On f = |p|^2 / 2 the gradient is p, so SGD gives p_t = (1 - lr)^t p_0 for each lr.
    lrs = [0.1, 0.5, 1.5]
    paths = trajectories("sgd", lambda p: 0.5 * (p**2).sum(-1), [2.0, -1.0], steps=5, lrs=lrs)
    assert paths.shape == (3, 6, 2)
    for i, lr in enumerate(lrs):
        expected = torch.tensor([[(1 - lr) ** t * 2.0, (1 - lr) ** t * -1.0] for t in range(6)], dtype=torch.float64)
        torch.testing.assert_close(paths[i], expected)


def test_each_trajectory_equals_a_run_with_that_lr_alone():
    loss = lambda p: p[..., 0] ** 2 + 10 * p[..., 1] ** 2 + p[..., 0] * p[..., 1]  # noqa: E731
    together = trajectories(Adam, loss, [1.0, 1.0], steps=20, lrs=[0.01, 0.3])
    for i, lr in enumerate([0.01, 0.3]):
        torch.testing.assert_close(together[i], trajectories(Adam, loss, [1.0, 1.0], steps=20, lrs=[lr])[0])


def test_trajectories_need_a_learning_rate():
    with pytest.raises(ValueError, match="at least one learning rate"):
        trajectories("sgd", lambda p: (p**2).sum(-1), [1.0, 1.0], steps=3, lrs=[])
