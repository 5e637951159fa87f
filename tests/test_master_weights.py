"""lecture_utils.master_weights against fp32 torch.optim on the same gradients, and bf16 rounding."""

import pytest
import torch
from torch import nn

from lecture_utils.accounting import measure_state
from lecture_utils.master_weights import MasterWeights


def _bf16_linear() -> nn.Linear:
    torch.manual_seed(0)
    return nn.Linear(4, 3).to(torch.bfloat16)


def _backward(model: nn.Module) -> None:
    x = torch.randn(2, 4, generator=torch.Generator().manual_seed(1)).to(next(model.parameters()).dtype)
    model(x).float().square().sum().backward()


def test_master_weights_step_matches_fp32_sgd_on_the_same_gradient():
    model = _bf16_linear()
    reference = [nn.Parameter(p.detach().float()) for p in model.parameters()]
    master = MasterWeights(model)
    optimizer = torch.optim.SGD(master.params, lr=0.1, momentum=0.9)
    reference_optimizer = torch.optim.SGD(reference, lr=0.1, momentum=0.9)
    for _ in range(3):
        model.zero_grad()
        _backward(model)
        for r, p in zip(reference, model.parameters(), strict=True):
            r.grad = p.grad.float()
        master.step(optimizer)
        reference_optimizer.step()
    for p, m, r in zip(model.parameters(), master.params, reference, strict=True):
        torch.testing.assert_close(m, r.detach(), rtol=0, atol=0)
        assert p.dtype == torch.bfloat16 and torch.equal(p.detach(), r.detach().bfloat16())
        assert m.grad is None


def test_master_weights_keep_updates_that_bf16_rounds_away():
    # At w = 1 half a bf16 ulp is 2^-8 ~ 0.0039: a 1e-3 step is lost in bf16, kept in the fp32 master.
    pure = nn.Parameter(torch.ones(1, dtype=torch.bfloat16))
    model = nn.Linear(1, 1, bias=False).to(torch.bfloat16)
    with torch.no_grad():
        model.weight.fill_(1.0)
    master = MasterWeights(model)
    master_opt, pure_opt = torch.optim.SGD(master.params, lr=1e-3), torch.optim.SGD([pure], lr=1e-3)
    for _ in range(5):
        model.weight.grad = torch.full_like(model.weight, -1.0)
        pure.grad = torch.full_like(pure, -1.0)
        master.step(master_opt)
        pure_opt.step()
    assert pure.item() == 1.0
    torch.testing.assert_close(master.params[0].item(), 1.005, rtol=0, atol=1e-6)
    assert model.weight.item() == 1 + 2**-7  # 1.005 rounds to the next bf16 number above 1


def test_measured_state_counts_the_master_copies():
    model = _bf16_linear()  # 12 weights + 3 biases = 15 parameters
    master = MasterWeights(model)
    optimizer = torch.optim.AdamW(master.params)
    _backward(model)
    master.step(optimizer)
    held = measure_state(model, optimizer)
    assert held.component_bytes() == {"parameters": 30, "gradients": 30, "master_weights": 60, "optimizer_state": 120}
    assert held.master_weights == {torch.float32: 60}


def test_master_weights_explain_how_to_build_the_optimizer():
    model = _bf16_linear()
    master = MasterWeights(model)
    with pytest.raises(ValueError, match=r"build it over MasterWeights\.params"):
        master.step(torch.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(TypeError, match="floating dtype"):
        MasterWeights(model, torch.int32)
