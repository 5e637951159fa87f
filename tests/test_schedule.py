"""The handout's warm-up + cosine schedule at hand-computed points, and its clipping against clip_grad_norm_."""

import itertools
import math

import pytest
import torch
from torch import nn

from lecture_utils.schedule import get_lr_cosine_schedule, gradient_clipping


def lr(it: int, warmup: int = 10, cycle: int = 30) -> float:
    return get_lr_cosine_schedule(
        it, max_learning_rate=1.0, min_learning_rate=0.1, warmup_iters=warmup, cosine_cycle_iters=cycle
    )


@pytest.mark.parametrize(
    "it, expected",
    [
        (0, 0.0),  # warm-up starts at 0: t / T_w, not (t + 1) / T_w
        (5, 0.5),  # half-way up
        (10, 1.0),  # t = T_w: the top of the cosine
        (20, 0.55),  # cosine midpoint: a_min + (a_max - a_min) / 2
        (30, 0.1),  # t = T_c: the bottom
        (31, 0.1),  # after the cycle: a_min
        (10_000, 0.1),
    ],
)
def test_schedule_at_hand_computed_points(it, expected):
    assert lr(it) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_schedule_matches_the_assignments_reference_values():
    # From test_get_lr_cosine_schedule in the assignment's tests (max 1, min 0.1, T_w = 7, T_c = 21).
    reference = {3: 0.42857142857142855, 8: 0.9887175604818206, 14: 0.55, 20: 0.11128243951817937, 21: 0.1}
    for it, expected in reference.items():
        assert lr(it, warmup=7, cycle=21) == pytest.approx(expected, rel=1e-12)


def test_schedule_is_continuous_and_decreasing_after_warm_up():
    values = [lr(it) for it in range(10, 31)]
    assert all(a > b for a, b in itertools.pairwise(values))
    assert lr(9) == pytest.approx(0.9) and lr(9) < lr(10)


def test_schedule_without_warm_up_or_without_cosine():
    assert lr(0, warmup=0, cycle=10) == 1.0
    assert lr(5, warmup=0, cycle=10) == pytest.approx(0.55)
    assert lr(10, warmup=10, cycle=10) == 1.0  # a zero-length cosine: its start, not 0 / 0
    assert lr(11, warmup=10, cycle=10) == 0.1


def params_with_grads(scale: float) -> list[nn.Parameter]:
    """Three parameters with gradients (two shapes) and one without, to be skipped."""
    g = torch.Generator().manual_seed(0)
    params = [nn.Parameter(torch.zeros(shape)) for shape in [(4, 5), (7,), (2, 3, 2), (3,)]]
    for p in params[:3]:
        p.grad = scale * torch.randn(p.shape, generator=g)
    return params


@pytest.mark.parametrize("scale", [10.0, 0.01])  # clipped, and left alone
def test_clipping_matches_torch_clip_grad_norm_bit_for_bit(scale):
    ours, ref = params_with_grads(scale), params_with_grads(scale)
    original = [p.grad.clone() for p in ours[:3]]
    norm = gradient_clipping(iter(ours), max_l2_norm=1.0)  # a one-pass iterable, as model.parameters() is
    ref_norm = torch.nn.utils.clip_grad_norm_(ref, max_norm=1.0)
    assert torch.equal(norm, ref_norm)
    for p, q in zip(ours[:3], ref[:3], strict=True):
        assert torch.equal(p.grad, q.grad)
    assert ours[3].grad is None
    clipped = torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in ours[:3]])).item()
    if scale > 1:
        assert norm > 1.0 and clipped == pytest.approx(1.0, abs=1e-5)  # just under M, by the 1e-6
    else:
        assert norm < 1.0 and all(torch.equal(p.grad, g) for p, g in zip(ours[:3], original, strict=True))


def test_clipping_at_exactly_the_limit_scales_as_the_handout_and_clip_grad_norm_do():
    """The handout leaves g as is only when its norm is less than M: at M it scales, as clip_grad_norm_ does."""
    p, q = nn.Parameter(torch.zeros(2)), nn.Parameter(torch.zeros(2))
    p.grad, q.grad = torch.tensor([3.0, 4.0]), torch.tensor([3.0, 4.0])  # norm exactly 5
    assert gradient_clipping([p], max_l2_norm=5.0).item() == 5.0
    torch.nn.utils.clip_grad_norm_([q], max_norm=5.0)
    assert (p.grad < torch.tensor([3.0, 4.0])).all() and torch.equal(p.grad, q.grad)  # both x 5 / (5 + 1e-6)


def test_clipping_just_under_the_limit_differs_from_clip_grad_norm_as_documented():
    """In (M - 1e-6, M) the handout leaves g alone; clip_grad_norm_ scales it by M / (norm + 1e-6) < 1."""
    p, q = nn.Parameter(torch.zeros(2)), nn.Parameter(torch.zeros(2))
    under = torch.tensor([3.0, 4.0]) * (1 - 1e-7)
    p.grad, q.grad = under.clone(), under.clone()
    assert 5.0 - 1e-6 < gradient_clipping([p], max_l2_norm=5.0).item() < 5.0
    torch.nn.utils.clip_grad_norm_([q], max_norm=5.0)
    assert torch.equal(p.grad, under) and (q.grad < p.grad).all()


def test_clipping_takes_one_tensor_or_plain_tensors_as_clip_grad_norm_does():
    one, ref = torch.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)
    one.grad, ref.grad = torch.tensor([6.0, 8.0]), torch.tensor([6.0, 8.0])
    assert gradient_clipping(one, max_l2_norm=5.0).item() == 10.0  # a single tensor, not a list of its rows
    torch.nn.utils.clip_grad_norm_(ref, max_norm=5.0)
    assert torch.equal(one.grad, ref.grad)
    plain = [torch.zeros(2, requires_grad=True) for _ in range(2)]
    plain[0].grad, plain[1].grad = torch.tensor([3.0, 0.0]), torch.tensor([0.0, 4.0])
    assert gradient_clipping(plain, max_l2_norm=1.0).item() == 5.0
    torch.testing.assert_close(plain[1].grad, torch.tensor([0.0, 0.8]))


def test_clipping_with_no_gradients_returns_zero():
    assert gradient_clipping([nn.Parameter(torch.ones(3))], 1.0).item() == 0.0


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: lr(-1), ValueError, "cannot be negative"),
        (lambda: lr(0, warmup=31, cycle=30), ValueError, "must not exceed cosine_cycle_iters"),
        (lambda: get_lr_cosine_schedule(0, 0.1, 1.0, 1, 2), ValueError, "min_learning_rate <= max_learning_rate"),
        (lambda: gradient_clipping(params_with_grads(1.0), 0.0), ValueError, "max_l2_norm must be positive"),
    ],
)
def test_bad_input_gets_a_clear_error(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_schedule_reference_point_is_what_the_formula_says():
    # Iteration 8 of (1, 0.1, 7, 21) written out by hand: 0.1 + 0.45 (1 + cos(pi / 14)).
    assert lr(8, warmup=7, cycle=21) == pytest.approx(0.1 + 0.45 * (1 + math.cos(math.pi / 14)), rel=1e-15)
