"""The handout's AdamW against torch.optim.AdamW: bit for bit where the math is the same, measured where it is not.

The two differ in two places (see lecture_utils/adamw.py): where eps sits relative to the
bias correction, and whether weight decay comes before or after the Adam step. So:
  * eps = 0 and weight_decay = 0: the same math in the same float operations -> bit-exact;
  * the moments m and v never see eps or the decay -> bit-exact for any hyperparameters, given
    the same gradients;
  * zero gradients: the Adam step is exactly 0, the decay alone acts -> bit-exact;
  * one step with eps = 0: the decay order shows as exactly lr^2 wd sign(g);
  * one step with wd = 0: the handout with eps e matches torch with eps e / sqrt(1 - b2).
"""

import pytest
import torch
from torch import nn

from lecture_utils.adamw import AdamW

pytestmark = pytest.mark.usefixtures("one_thread")


def train(make_model, make_optimizer, steps: int) -> tuple[nn.Module, torch.optim.Optimizer]:
    """`steps` updates on a fixed stream of batches, with two parameter groups at different learning rates."""
    model = make_model()
    groups = [{"params": model[0].parameters()}, {"params": model[2].parameters(), "lr": 3e-3}]
    optimizer = make_optimizer(groups)
    data = torch.Generator().manual_seed(1)
    for _ in range(steps):
        x, y = torch.randn(16, 6, generator=data), torch.randn(16, 1, generator=data)
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()
    return model, optimizer


@pytest.mark.parametrize("foreach", [False, None])  # torch's per-tensor loop and its default path on this device
def test_bit_exact_with_torch_when_eps_and_weight_decay_are_zero(foreach, small_mlp):
    hyper = dict(lr=1e-2, betas=(0.8, 0.95), eps=0.0, weight_decay=0.0)
    ours, ours_opt = train(small_mlp, lambda groups: AdamW(groups, **hyper), steps=40)
    ref, ref_opt = train(small_mlp, lambda groups: torch.optim.AdamW(groups, foreach=foreach, **hyper), steps=40)
    for p, q in zip(ours.parameters(), ref.parameters(), strict=True):
        assert torch.equal(p, q)
        assert torch.equal(ours_opt.state[p]["m"], ref_opt.state[q]["exp_avg"])
        assert torch.equal(ours_opt.state[p]["v"], ref_opt.state[q]["exp_avg_sq"])
        assert ours_opt.state[p]["step"] == ref_opt.state[q]["step"].item() == 40


def test_moments_bit_exact_and_parameters_close_with_eps_and_decay():
    """Same gradients to both (a linear loss, so they do not depend on the parameters that drift apart)."""
    hyper = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    start = torch.randn(100, generator=torch.Generator().manual_seed(0))
    p, q = nn.Parameter(start.clone()), nn.Parameter(start.clone())
    ours, ref = AdamW([p], **hyper), torch.optim.AdamW([q], foreach=False, **hyper)
    grads = torch.Generator().manual_seed(1)
    for _ in range(50):
        p.grad = torch.randn(100, generator=grads)
        q.grad = p.grad.clone()
        ours.step()
        ref.step()
    assert torch.equal(ours.state[p]["m"], ref.state[q]["exp_avg"])
    assert torch.equal(ours.state[p]["v"], ref.state[q]["exp_avg_sq"])
    assert not torch.equal(p, q)  # the two differences below are real...
    torch.testing.assert_close(p, q, rtol=0, atol=1e-6)  # ...but far below one step (lr = 1e-3)


def test_weight_decay_alone_is_bit_exact():
    hyper = dict(lr=0.1, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)
    start = torch.randn(20, generator=torch.Generator().manual_seed(0))
    p, q = nn.Parameter(start.clone()), nn.Parameter(start.clone())
    ours, ref = AdamW([p], **hyper), torch.optim.AdamW([q], foreach=False, **hyper)
    for _ in range(10):
        p.grad, q.grad = torch.zeros(20), torch.zeros(20)
        ours.step()
        ref.step()
    assert torch.equal(p, q)
    torch.testing.assert_close(p.detach(), start * 0.99**10)


def test_one_step_decay_order_difference_is_lr_squared_wd_sign_g():
    """Handout: (theta - u)(1 - lr wd); torch: theta (1 - lr wd) - u. With eps = 0, step 1 has u = lr sign(g)."""
    lr, wd = 0.1, 0.5
    g = torch.randn(30, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    start = torch.randn(30, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    p, q = nn.Parameter(start.clone()), nn.Parameter(start.clone())
    p.grad, q.grad = g.clone(), g.clone()
    AdamW([p], lr=lr, eps=0.0, weight_decay=wd).step()
    torch.optim.AdamW([q], lr=lr, eps=0.0, weight_decay=wd).step()
    torch.testing.assert_close(p - q, lr**2 * wd * g.sign(), rtol=0, atol=1e-15)


def test_one_step_eps_is_torch_eps_times_sqrt_of_bias_correction():
    """At step 1 the handout divides by sqrt(v) + eps, torch by sqrt(v / (1 - b2)) + eps."""
    eps, beta2 = 1e-3, 0.99
    g = 1e-3 * torch.randn(30, dtype=torch.float64, generator=torch.Generator().manual_seed(0))  # sqrt(v) ~ eps
    start = torch.zeros(30, dtype=torch.float64)
    ours, same, naive = (nn.Parameter(start.clone()) for _ in range(3))
    for param in (ours, same, naive):
        param.grad = g.clone()
    AdamW([ours], lr=0.1, betas=(0.9, beta2), eps=eps, weight_decay=0.0).step()
    torch.optim.AdamW([same], lr=0.1, betas=(0.9, beta2), eps=eps / (1 - beta2) ** 0.5, weight_decay=0.0).step()
    torch.optim.AdamW([naive], lr=0.1, betas=(0.9, beta2), eps=eps, weight_decay=0.0).step()
    torch.testing.assert_close(ours, same, rtol=1e-12, atol=0)
    assert (ours - naive).abs().max() > 1e-3  # the same eps in the other place is a visibly different step


def test_parameters_without_gradient_are_left_alone():
    a, b = nn.Parameter(torch.ones(3)), nn.Parameter(torch.ones(3))
    a.grad = torch.ones(3)
    optimizer = AdamW([a, b], lr=0.1)
    optimizer.step()
    assert torch.equal(b, torch.ones(3)) and b not in optimizer.state
    assert (a < 1).all()


def test_state_tensors_is_the_number_of_state_tensors_shaped_like_the_parameter():
    p = nn.Parameter(torch.ones(2, 3))
    p.grad = torch.ones(2, 3)
    optimizer = AdamW([p], lr=0.1)
    optimizer.step()
    shaped_like_p = [v for v in optimizer.state[p].values() if isinstance(v, torch.Tensor) and v.shape == p.shape]
    assert len(shaped_like_p) == len(optimizer.state[p]) - 1 == AdamW.state_tensors == 2  # and the int step


@pytest.mark.parametrize(
    "hyper, error, match",
    [
        (dict(lr=-1e-3), ValueError, "lr must be in"),
        (dict(betas=(0.9, 1.0)), ValueError, r"betas\[1\] must be in"),
        (dict(betas=(0.9,)), ValueError, r"betas must be a pair \(beta1, beta2\)"),
        (dict(betas=(0.9, 0.99, 0.999)), ValueError, r"betas must be a pair \(beta1, beta2\)"),
        (dict(eps=-1e-8), ValueError, "eps must be in"),
        (dict(weight_decay=-0.1), ValueError, "weight_decay must be in"),
    ],
)
def test_bad_hyperparameters_get_a_clear_error(hyper, error, match):
    with pytest.raises(error, match=match):
        AdamW([nn.Parameter(torch.zeros(1))], **hyper)


def test_a_bad_group_override_is_rejected_too():
    with pytest.raises(ValueError, match="lr must be in"):
        AdamW([{"params": [nn.Parameter(torch.zeros(1))], "lr": -1.0}], lr=1e-3)


def test_a_group_override_of_betas_must_be_a_pair():
    with pytest.raises(ValueError, match=r"betas must be a pair \(beta1, beta2\)"):
        AdamW([{"params": [nn.Parameter(torch.zeros(1))], "betas": (0.9, 0.99, 0.999)}], lr=1e-3)


def test_betas_may_be_a_list_as_in_torch_optim():
    p, q = nn.Parameter(torch.ones(3)), nn.Parameter(torch.ones(3))
    for param, betas in ((p, [0.9, 0.95]), (q, (0.9, 0.95))):
        param.grad = torch.tensor([1.0, -2.0, 3.0])
        AdamW([param], lr=0.1, betas=betas).step()
    assert torch.equal(p, q) and not torch.equal(p, torch.ones(3))
