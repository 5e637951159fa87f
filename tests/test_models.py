"""The truncated normal's std and the Cruncher against hand-computed values and independent references."""

import math

import pytest
import torch

from lecture_utils.memory import saved_tensor_bytes
from lecture_utils.models import (
    Cruncher,
    DeepNetwork,
    cruncher_activation_numel,
    cruncher_num_parameters,
    truncated_normal_std,
)
from lecture_utils.nn_basics import Linear


def test_truncated_normal_std_matches_numerical_integration():
    for cut in (0.5, 2.0, 3.0):
        z = torch.linspace(-cut, cut, 200_001, dtype=torch.float64)
        density = torch.exp(-z * z / 2)
        variance = torch.trapezoid(z * z * density, z) / torch.trapezoid(density, z)
        assert truncated_normal_std(cut) == pytest.approx(variance.sqrt().item(), rel=1e-9)


def test_cruncher_layers_are_the_assignments_linear_with_the_lectures_std():
    model = Cruncher(256, 3, generator=torch.Generator().manual_seed(0))
    assert all(type(m) is Linear for m in [*model.layers, model.head])
    assert model.head.weight.shape == (1, 256)  # (d_out, d_in), as nn.Linear stores it
    weights = torch.cat([layer.weight.flatten() for layer in model.layers])
    # Square layers: sqrt(2 / (D + D)) = 1 / sqrt(D), then cut at 3 std.
    assert weights.abs().max() <= 3 / math.sqrt(256)
    assert weights.std().item() * math.sqrt(256) == pytest.approx(truncated_normal_std(3.0), abs=0.005)


def test_cruncher_init_follows_its_generator_and_leaves_every_global_stream_alone(monkeypatch):
    def reseeds_a_gpu_stream(seed):
        raise AssertionError("the init reseeded a GPU's global stream")

    torch.manual_seed(1)
    # torch.manual_seed reseeds every GPU's stream through this, even on a machine without one.
    monkeypatch.setattr(torch.cuda, "manual_seed_all", reseeds_a_gpu_stream)
    before = torch.get_rng_state()
    cuda_before = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []
    a = Cruncher(8, 2, generator=torch.Generator().manual_seed(5))
    assert torch.equal(torch.get_rng_state(), before)
    cuda_after = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []
    assert all(torch.equal(x, y) for x, y in zip(cuda_after, cuda_before, strict=True))
    monkeypatch.undo()
    torch.manual_seed(2)  # another global stream: the init must not depend on it
    b = Cruncher(8, 2, generator=torch.Generator().manual_seed(5))
    c = Cruncher(8, 2, generator=torch.Generator().manual_seed(6))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert not torch.equal(a.head.weight, c.head.weight)


def test_a_generator_draws_what_the_assignments_linear_draws_from_the_global_stream_seeded_alike():
    # The generator path has its own sampler; nn_basics.truncated_normal_ is the reference.
    ours = Cruncher(64, 3, generator=torch.Generator().manual_seed(7))
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(7)  # the CPU stream only
        reference = Cruncher(64, 3)  # the assignment's Linear, drawing from the global stream
    assert all(torch.equal(p, q) for p, q in zip(ours.parameters(), reference.parameters(), strict=True))


@pytest.mark.parametrize(("dim", "layers", "expected"), [(64, 2, 8256), (4, 2, 36), (10, 0, 10)])
def test_cruncher_parameter_count(dim, layers, expected):
    model = Cruncher(dim, layers)
    assert sum(p.numel() for p in model.parameters()) == cruncher_num_parameters(dim, layers) == expected


def test_cruncher_forward_is_a_chain_of_matmuls():
    model = Cruncher(6, 3, generator=torch.Generator().manual_seed(0))
    x = torch.randn(4, 6)
    by_hand = x
    for w in [layer.weight for layer in model.layers] + [model.head.weight]:
        by_hand = by_hand @ w.T  # each weight is (d_out, d_in)
    out = model(x)
    assert out.shape == (4,)
    torch.testing.assert_close(out, by_hand[:, 0])


@pytest.mark.parametrize(("dim", "layers", "batch"), [(4, 2, 2), (32, 3, 5), (16, 0, 4)])
def test_activation_count_equals_what_autograd_saves(dim, layers, batch):
    model = Cruncher(dim, layers)
    x = torch.randn(batch, dim)
    saved = saved_tensor_bytes(lambda: model(x).sum(), exclude=[*model.parameters(), x])
    assert saved == 4 * cruncher_activation_numel(dim, layers, batch)


def test_the_2026_deep_network_has_d2_l_parameters_and_halves_the_mean_square_per_block():
    dim, depth = 256, 6
    net = DeepNetwork(dim, depth, generator=torch.Generator().manual_seed(0))
    assert sum(p.numel() for p in net.parameters()) == dim * dim * depth
    assert all(p.shape == (dim, dim) for p in net.parameters())
    x = torch.randn(2048, dim, generator=torch.Generator().manual_seed(1))
    first = net.layers[0]
    torch.testing.assert_close(first(x), torch.relu(x @ first.weight))
    # randn / sqrt(D) keeps x @ W's mean square at the input's; the relu keeps the positive half.
    assert (x @ first.weight).square().mean().item() == pytest.approx(1, rel=0.05)
    assert first(x).square().mean().item() == pytest.approx(0.5, rel=0.05)
    # Deeper, the relu's outputs are not centred and the ratio per block wanders around 1/2.
    assert 0.5 < net(x).square().mean().item() / 0.5**depth < 2
