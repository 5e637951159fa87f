"""The three checkpoint schedules against plain autograd, FlopCounterMode's counts and the bytes saved for backward."""

import math

import pytest
import torch
from torch.utils.checkpoint import checkpoint

from lecture_utils.checkpoint_schedule import (
    backward_storing_all,
    backward_storing_every,
    backward_storing_none,
    measure_schedule,
    recomputed_layers,
    stored_tensors,
)
from lecture_utils.memory import saved_tensor_bytes
from lecture_utils.models import DeepNetwork

B, D = 4, 16


def _net_and_input(num_layers: int) -> tuple[DeepNetwork, torch.Tensor]:
    gen = torch.Generator().manual_seed(num_layers)
    net = DeepNetwork(D, num_layers, generator=gen)
    return net, torch.randn(B, D, generator=gen).requires_grad_()


def _runs(net: DeepNetwork, x: torch.Tensor, every: int) -> dict[str, object]:
    return {
        "all": lambda: backward_storing_all(net.layers, x),
        "every": lambda: backward_storing_every(net.layers, x, every),
        "none": lambda: backward_storing_none(net.layers, x),
    }


@pytest.mark.parametrize("num_layers, every", [(4, 2), (9, 3), (12, 4), (6, 1), (6, 6)])
def test_every_schedule_gives_autograds_gradients(num_layers, every):
    net, x = _net_and_input(num_layers)
    expected = torch.autograd.grad(net(x).sum(), [*net.parameters(), x])
    for name, run in _runs(net, x, every).items():
        net.zero_grad(set_to_none=True)
        x.grad = None
        loss = run()
        torch.testing.assert_close(loss, net(x).sum().detach(), msg=name)
        for got, want in zip([*(p.grad for p in net.parameters()), x.grad], expected, strict=True):
            torch.testing.assert_close(got, want, msg=name)


@pytest.mark.parametrize("num_layers, every", [(4, 2), (16, 4), (12, 3), (12, 6)])
def test_measured_memory_and_recomputation_match_the_napkin(num_layers, every):
    layer_output = B * D * 4  # one fp32 (B, D) tensor
    layer_forward = 2 * B * D * D  # one x @ W
    net, x = _net_and_input(num_layers)
    plain = measure_schedule(net, x, _runs(net, x, every)["all"])
    for name, run in _runs(net, x, every).items():
        cost = measure_schedule(net, x, run)
        assert cost.peak_saved_bytes == stored_tensors(name, num_layers, every) * layer_output, name
        assert cost.flops - plain.flops == recomputed_layers(name, num_layers, every) * layer_forward, name


def test_the_plain_peak_is_what_the_forward_saves():
    net, x = _net_and_input(8)
    saved = saved_tensor_bytes(lambda: net(x), exclude=[*net.parameters(), x])
    assert measure_schedule(net, x, lambda: backward_storing_all(net.layers, x)).peak_saved_bytes == saved


def test_sqrt_spacing_scales_as_the_lecture_says():
    # Memory: L grows 4x -> all 4x, none 1x, every sqrt(L) about 2x. Recompute: none about 16x, sqrt about 4x.
    small, large = 16, 64
    ratio = {
        name: stored_tensors(name, large, math.isqrt(large)) / stored_tensors(name, small, math.isqrt(small))
        for name in ("all", "every", "none")
    }
    assert ratio["all"] == 4 and ratio["none"] == 1 and 2 <= ratio["every"] < 2.5
    rerun = recomputed_layers("none", large) / recomputed_layers("none", small)
    assert 15 < rerun <= 16
    assert recomputed_layers("every", large, 8) / recomputed_layers("every", small, 4) == pytest.approx(56 / 12)


def test_bad_schedules_are_refused():
    net, x = _net_and_input(6)
    with pytest.raises(ValueError, match="whole segments"):
        backward_storing_every(net.layers, x, 4)
    with pytest.raises(ValueError, match="whole segments"):
        stored_tensors("every", 6, 4)
    with pytest.raises(ValueError, match="require grad"):
        backward_storing_every(net.layers, x.detach(), 3)


@pytest.mark.parametrize("reentrant, seen", [(True, 16), (False, 0)])
def test_only_the_reentrant_checkpoint_shows_its_recomputation_to_the_counter(reentrant, seen):
    # Why backward_storing_every uses use_reentrant=True: one checkpoint over the whole stack keeps
    # only x, then recomputes all 16 outputs in the backward; the non-reentrant variant stores them
    # behind its own saved-tensor hook, where the counter cannot see them.
    net, x = _net_and_input(16)
    cost = measure_schedule(net, x, lambda: checkpoint(net, x, use_reentrant=reentrant).sum().backward())
    assert cost.peak_saved_bytes == seen * B * D * 4
