"""Memory over one training step (lecture_utils.step_memory): each reading against a second route.

The references: the bytes of the .grad tensors and of the parameters, the napkin counts of
lecture_utils.models (B D L activations, D^2 L + D parameters), a plain saved-tensor-hooks pass
(lecture_utils.memory.saved_tensor_bytes), and the optimizer's own state tensors.
"""

import functools
import itertools
import time
import warnings

import matplotlib.pyplot as plt
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lecture_utils.accounting import COMPONENTS, RECIPES, plain_recipe
from lecture_utils.figures.step_memory import _STACK_ORDER, draw_step_memories, draw_step_memory
from lecture_utils.figures.style import MAX_WIDTH_IN, too_small_texts, use_style
from lecture_utils.memory import saved_tensor_bytes, tensor_bytes
from lecture_utils.models import Cruncher, cruncher_activation_numel, cruncher_num_parameters
from lecture_utils.optim import SGD, AdaGrad, AdamW
from lecture_utils.sharding import make_batch, make_model
from lecture_utils.sharding_launch import run_ranks
from lecture_utils.step_memory import ActivationCounter, StepEvent, StepTimeline, napkin_peak, track_step


def cruncher_case(dim: int, layers: int, batch: int, optimizer=AdaGrad):
    """A seeded Cruncher, its optimizer, its batch, and a sum loss (which saves nothing itself)."""
    model = Cruncher(dim, layers, generator=torch.Generator().manual_seed(0))
    x = torch.randn(batch, dim, generator=torch.Generator().manual_seed(3))
    return model, optimizer(model.parameters(), lr=0.01), x, lambda: model(x).sum()


def param_bytes(model: nn.Module) -> int:
    return sum(tensor_bytes(p) for p in model.parameters())


@pytest.mark.usefixtures("one_thread")
def test_activations_dominate_so_the_peak_is_at_the_start_of_the_backward():
    dim, layers, batch = 64, 4, 256  # B > D: the activations B D L outweigh the gradients D^2 L + D
    model, optimizer, x, loss_fn = cruncher_case(dim, layers, batch)
    saved = saved_tensor_bytes(loss_fn, exclude=[*model.parameters(), x])  # a separate pass
    params = param_bytes(model)
    assert params == 4 * cruncher_num_parameters(dim, layers)
    assert saved == 4 * cruncher_activation_numel(dim, layers, batch)
    budget = plain_recipe(AdaGrad).predict(cruncher_num_parameters(dim, layers), saved // 4)

    first = track_step(model, optimizer, loss_fn, data=[x])  # a fresh optimizer: no state until the step
    assert first.peak.label == "loss" and first.peak.total == params + saved
    assert first.events[first.index("backward end")].components["optimizer_state"] == 0
    assert first.events[first.index("step")].components["optimizer_state"] == params  # AdaGrad's sum, lazily made
    assert first.peak.total == napkin_peak(budget, first_step=True)

    second = track_step(model, optimizer, loss_fn, data=[x])  # the state is there from the start
    state = sum(tensor_bytes(t) for s in optimizer.state.values() for t in s.values())  # AdaGrad's sum_sq
    assert second.peak.label == "loss"
    assert second.peak.total == params + state + saved == napkin_peak(budget)
    assert second.peak.components["gradients"] == 0  # activations all alive, no gradient yet
    assert second.peak.total < budget.total  # the napkin's sum of all four never happens at once


@pytest.mark.usefixtures("one_thread")
def test_the_lectures_tiny_case_peaks_at_the_step_where_gradients_outweigh_activations():
    model, optimizer, x, loss_fn = cruncher_case(4, 2, 2)  # D = 4, L = 2, B = 2: 36 params, 16 activations
    budget = plain_recipe(AdaGrad).predict(36, 16)
    assert budget.total == 496  # the lecture's 4 x (36 + 16 + 36 + 36), all four at once
    first = track_step(model, optimizer, loss_fn, data=[x])
    second = track_step(model, optimizer, loss_fn, data=[x])
    for timeline, first_step in ((first, True), (second, False)):
        assert timeline.peak.label == "step"
        assert timeline.peak.components == {c: 0 for c in COMPONENTS} | {
            "parameters": 144,
            "gradients": 144,
            "optimizer_state": 144,
        }
        assert timeline.peak.total == napkin_peak(budget, first_step=first_step) == 432
    # From the second step the gradients are complete, and the peak reached, as the backward ends.
    assert second.totals[second.index("backward layers.0")] == 432
    assert max(first.totals[: first.index("step")]) == 288  # before the state exists


@pytest.mark.usefixtures("one_thread")
def test_activations_are_freed_layer_by_layer_as_the_gradients_land():
    dim, layers, batch = 16, 3, 8
    model, optimizer, x, loss_fn = cruncher_case(dim, layers, batch)
    timeline = track_step(model, optimizer, loss_fn, data=[x])
    acts = timeline.series("activations")
    for k in range(layers):  # layer k saves its input: the data for k = 0, then the k outputs before it
        assert acts[timeline.index(f"forward layers.{k}")] == 4 * cruncher_activation_numel(dim, k, batch)
    assert acts[timeline.index("backward head")] == 4 * cruncher_activation_numel(dim, layers - 1, batch)
    for k in range(1, layers):  # layer k's backward releases its input
        assert acts[timeline.index(f"backward layers.{k}")] == 4 * cruncher_activation_numel(dim, k - 1, batch)
    assert acts[timeline.index("backward end")] == 0
    names = [n for n, _ in model.named_parameters()]
    assert list(timeline.grad_order) == names[::-1]  # the backward walks the layers in reverse
    grads = timeline.series("gradients")
    assert grads[timeline.index("backward head")] == tensor_bytes(model.head.weight)
    assert all(a <= b for a, b in itertools.pairwise(grads[: timeline.index("step") + 1]))


@pytest.mark.usefixtures("one_thread")
def test_gradients_match_the_parameters_after_the_step_and_vanish_at_zero_grad():
    model, optimizer, x, loss_fn = cruncher_case(8, 2, 4, optimizer=AdamW)
    grads_seen: list[int] = []
    original_step = optimizer.step

    def step_and_read_grads(*args, **kwargs):
        grads_seen.append(sum(tensor_bytes(p.grad) for p in model.parameters()))
        return original_step(*args, **kwargs)

    optimizer.step = step_and_read_grads
    timeline = track_step(model, optimizer, loss_fn, data=[x])
    step = timeline.events[timeline.index("step")]
    assert step.components["gradients"] == grads_seen[0] == param_bytes(model)  # fp32: one per parameter
    assert step.components["optimizer_state"] == 2 * param_bytes(model)  # Adam's m and v appear at the step
    end = timeline.events[-1]
    assert end.label == "zero_grad" and end.components["gradients"] == 0
    assert all(p.grad is None for p in model.parameters())


@pytest.mark.usefixtures("one_thread")
def test_the_input_is_an_activation_unless_it_is_named_as_data():
    model, optimizer, x, loss_fn = cruncher_case(8, 2, 4, optimizer=SGD)
    with_data = max(track_step(model, optimizer, loss_fn, data=[x]).series("activations"))
    without = max(track_step(model, optimizer, loss_fn).series("activations"))
    assert without - with_data == tensor_bytes(x)


@pytest.mark.usefixtures("one_thread")
def test_tinylm_peaks_at_the_loss_and_matches_a_plain_saved_tensor_count(tiny_lm):
    model = tiny_lm()
    tokens = torch.randint(0, 16, (4, 9), generator=torch.Generator().manual_seed(1))
    x, y = tokens[:, :-1], tokens[:, 1:]
    optimizer = AdamW(model.parameters(), lr=1e-3)

    def loss_fn() -> torch.Tensor:
        return F.cross_entropy(model(x).flatten(0, 1), y.flatten())

    saved = saved_tensor_bytes(loss_fn, exclude=[*model.parameters(), x, y])
    for _ in range(2):
        timeline = track_step(model, optimizer, loss_fn, data=[x, y])
        acts = timeline.series("activations")
        assert timeline.peak.label == "loss" and max(acts) == acts[timeline.index("loss")] == saved
        assert acts[timeline.index("backward end")] == 0
        assert timeline.events[timeline.index("step")].components["gradients"] == param_bytes(model)
    embedding = timeline.index("backward token_embedding")
    assert embedding > timeline.index("backward unembedding")  # the last layer's gradient lands first


@pytest.mark.usefixtures("one_thread")
def test_autocast_bf16_roughly_halves_the_activations():
    dim, layers, batch = 32, 8, 512
    model, optimizer, x, loss_fn = cruncher_case(dim, layers, batch, optimizer=SGD)

    def bf16_loss() -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return model(x).float().sum()

    fp32 = max(track_step(model, optimizer, loss_fn, data=[x]).series("activations"))
    bf16 = max(track_step(model, optimizer, bf16_loss, data=[x]).series("activations"))
    assert bf16 == saved_tensor_bytes(bf16_loss, exclude=[*model.parameters(), x])
    # bf16 outputs of every layer, plus the bf16 copies autocast makes of the input and of each
    # weight a backward matmul needs (all but the first layer's, whose input needs no gradient).
    copies = batch * dim + dim * dim * (layers - 1) + dim
    assert bf16 == 2 * (cruncher_activation_numel(dim, layers, batch) + copies)
    assert 0.5 < bf16 / fp32 < 0.65


@pytest.mark.usefixtures("one_thread")
def test_the_counter_keeps_the_peak_and_returns_to_zero_after_the_backward():
    model, x = Cruncher(16, 3, generator=torch.Generator().manual_seed(0)), torch.randn(4, 16)
    counter = ActivationCounter(model, [x])
    with torch.autograd.graph.saved_tensors_hooks(counter.pack, counter.unpack):
        loss = model(x).sum()
    saved = saved_tensor_bytes(lambda: model(x).sum(), exclude=[*model.parameters(), x])
    assert counter.live == counter.peak == saved == 4 * cruncher_activation_numel(16, 3, 4)
    loss.backward()
    del loss
    assert counter.live == 0 and counter.peak == saved


def test_a_shared_layer_lands_its_gradient_once():
    layer = nn.Linear(8, 8, bias=False)
    model = nn.Sequential(layer, nn.ReLU(), layer)
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(0))
    timeline = track_step(model, SGD(model.parameters(), lr=0.1), lambda: model(x).sum(), data=[x])
    assert timeline.grad_order == ("0.weight",)
    assert timeline.events[timeline.index("backward end")].components["gradients"] == tensor_bytes(layer.weight)


@pytest.mark.usefixtures("one_thread")
def test_a_cruncher_step_is_fast():
    model, optimizer, x, loss_fn = cruncher_case(64, 4, 256)
    trials = []
    for _ in range(3):
        start = time.perf_counter()
        track_step(model, optimizer, loss_fn, data=[x])
        trials.append(time.perf_counter() - start)
    assert min(trials) < 0.5


def test_bad_input_is_rejected_and_no_hook_is_left_behind():
    model, optimizer, x, _ = cruncher_case(4, 1, 2)
    with pytest.raises(ValueError, match="no parameters"):
        track_step(nn.ReLU(), optimizer, lambda: x.sum())
    with pytest.raises(ValueError, match="scalar"):
        track_step(model, optimizer, lambda: model(x), data=[x])
    assert all(not m._forward_hooks for m in model.modules())
    assert all(not p._post_accumulate_grad_hooks for p in model.parameters())
    timeline = track_step(model, optimizer, lambda: model(x).sum(), data=[x])
    with pytest.raises(ValueError, match="unknown component"):
        timeline.series("weights")
    with pytest.raises(ValueError, match="no event"):
        timeline.index("backward nowhere")


def test_napkin_peak_against_hand_sums():
    budget = RECIPES["fp32"].predict(1000, 5000)  # AdamW in fp32: 4 + 4 + 8 bytes per parameter
    assert napkin_peak(budget) == 4000 + 8000 + 20000  # activations outweigh the gradients
    assert napkin_peak(budget, first_step=True) == 4000 + 20000  # state only at the step: 4000 + 12000 < 20000
    small = RECIPES["fp32"].predict(1000, 10)
    assert napkin_peak(small) == 4000 + 8000 + 4000
    assert napkin_peak(small, first_step=True) == 4000 + 4000 + 8000


def test_the_figure_stacks_every_component_and_is_legible():
    assert set(_STACK_ORDER) == set(COMPONENTS)
    use_style()
    model, optimizer, x, loss_fn = cruncher_case(16, 2, 32)
    timeline = track_step(model, optimizer, loss_fn, data=[x])
    fig = draw_step_memory(timeline, napkin=timeline.peak.total, napkin_label="napkin peak")
    try:
        assert fig.get_size_inches()[0] <= MAX_WIDTH_IN and too_small_texts(fig) == []
        (ax,) = fig.axes
        shown = [t.get_text() for t in fig.legends[0].get_texts()]
        assert shown == ["activations", "gradients", "optimizer_state", "parameters"]
        (marker,) = [line for line in ax.get_lines() if line.get_marker() == "o"]
        assert marker.get_xdata()[0] == timeline.peak_index
    finally:
        plt.close(fig)


def test_two_steps_side_by_side_share_one_scale_and_one_legend():
    use_style()
    model, optimizer, x, loss_fn = cruncher_case(16, 2, 32)
    big = track_step(model, optimizer, loss_fn, data=[x])
    small_model, small_opt, small_x, small_loss = cruncher_case(4, 2, 2, optimizer=SGD)  # no state: 3 bands
    small = track_step(small_model, small_opt, small_loss, data=[small_x])
    fig = draw_step_memories({"big": big, "small": small}, napkins={"small": small.peak.total})
    try:
        assert fig.get_size_inches()[0] <= MAX_WIDTH_IN and too_small_texts(fig) == []
        left, right = fig.axes
        assert [left.get_title(), right.get_title()] == ["big", "small"]
        assert left.get_ylim() == right.get_ylim()  # one scale: the smaller step is visibly lower
        # One legend: every component either panel shows, the top band first.
        (legend,) = fig.legends
        assert [t.get_text() for t in legend.get_texts()] == [
            "activations",
            "gradients",
            "optimizer_state",
            "parameters",
        ]
        assert [line.get_linestyle() for line in left.get_lines()].count("--") == 0  # no napkin given for it
        assert [line.get_linestyle() for line in right.get_lines()].count("--") == 1
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="one or two"):
        draw_step_memories({"a": big, "b": big, "c": big})
    with pytest.raises(ValueError, match="not drawn"):
        draw_step_memories({"a": big}, napkins={"b": 100})


def test_the_figure_draws_the_allocator_curve_when_there_is_one():
    use_style()
    parts = {c: 0 for c in COMPONENTS}
    events = tuple(
        StepEvent(phase, phase, parts | {"parameters": 1024, "activations": acts}, allocated)
        for phase, acts, allocated in (("start", 0, 5000), ("loss", 2048, 8000), ("zero_grad", 0, 5000))
    )
    fig = draw_step_memory(StepTimeline(events, (), 0.0))
    try:
        (line,) = [line for line in fig.axes[0].get_lines() if line.get_label() == "memory_allocated"]
        # Moved to start where the stack starts (1024 B), and drawn in KiB.
        assert list(line.get_ydata()) == [1.0, (8000 - 5000 + 1024) / 1024, 1.0]
    finally:
        plt.close(fig)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU (LECTURE_TEST_CUDA=1 on one)")
def test_on_a_gpu_the_allocator_sees_at_least_the_tracked_bytes():
    model, _, x, _ = cruncher_case(256, 4, 1024)
    model, x = model.cuda(), x.cuda()
    optimizer = AdaGrad(model.parameters(), lr=0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        timeline = track_step(model, optimizer, lambda: model(x).sum(), data=[x])
    allocated, totals = [e.allocated for e in timeline.events], timeline.totals
    assert None not in allocated
    for i in (timeline.index("loss"), timeline.index("step")):
        assert allocated[i] - allocated[0] >= totals[i] - totals[0]


def _rank_timeline(rank: int, world_size: int, approach: str) -> dict[str, dict[str, int]]:
    """One rank's second step under `approach`: the readings at the loss and at the step, by component."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.optim import ZeroRedundancyOptimizer
    from torch.nn.parallel import DistributedDataParallel

    torch.manual_seed(0)
    model = make_model()
    x, y = (t.chunk(world_size)[rank] for t in make_batch())
    if approach == "fsdp2":
        mesh = DeviceMesh.from_group(dist.group.WORLD, "cpu")
        for layer in (m for m in model if isinstance(m, nn.Linear)):
            fully_shard(layer, mesh=mesh)
        wrapped = fully_shard(model, mesh=mesh)
    else:
        wrapped = DistributedDataParallel(model)
    if approach == "zero1":
        optimizer = ZeroRedundancyOptimizer(wrapped.parameters(), optimizer_class=torch.optim.AdamW, lr=0.01)
        state_of = optimizer.optim
    else:
        optimizer, state_of = torch.optim.AdamW(wrapped.parameters(), lr=0.01), None
    for _ in range(2):
        timeline = track_step(wrapped, optimizer, lambda: F.mse_loss(wrapped(x), y), data=[x, y], state_of=state_of)
    return {label: timeline.events[timeline.index(label)].components for label in ("loss", "step")}


@pytest.mark.parametrize("approach", ["ddp", "zero1", "fsdp2"])
def test_per_rank_the_shards_add_up_to_the_whole(approach):
    world_size = 2
    ranks = run_ranks(functools.partial(_rank_timeline, approach=approach), world_size)
    whole = param_bytes(make_model())
    x, y = make_batch()
    batch = x[: x.shape[0] // world_size]
    model = make_model()
    target = y[: batch.shape[0]]
    saved = saved_tensor_bytes(lambda: F.mse_loss(model(batch), target), exclude=[*model.parameters(), batch, target])
    held = {c: sum(r["step"][c] for r in ranks) for c in ("parameters", "gradients", "optimizer_state")}
    copies = 1 if approach == "fsdp2" else world_size  # FSDP2 shards all three; ZeRO-1 only the state
    assert held["parameters"] == held["gradients"] == copies * whole
    assert held["optimizer_state"] == 2 * whole * (1 if approach != "ddp" else world_size)
    # Each rank saves the activations of its own slice of the batch (the gathered weights are not counted).
    assert [r["loss"]["activations"] for r in ranks] == [saved] * world_size
