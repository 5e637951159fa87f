"""lecture_utils.sharding*: the ZeRO formulas against the paper, and real gloo ranks against the formulas."""

import functools
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time

import matplotlib.pyplot as plt
import pytest
import torch
import torch.distributed as dist
from torch import nn

from lecture_utils.accounting import RECIPES, MemoryBudget
from lecture_utils.figures.sharding import plot_bytes_per_gpu
from lecture_utils.figures.style import MAX_WIDTH_IN, too_small_texts, use_style
from lecture_utils.memory import saved_tensor_bytes
from lecture_utils.rank_pool import RankError, RankPool, run_ranks
from lecture_utils.sharding import (
    APPROACHES,
    fsdp2_local_numel,
    gpt2_small,
    largest_params,
    make_batch,
    make_model,
    per_gpu_bytes,
    predicted_buffer_bytes,
    predicted_gathered_bytes,
    predicted_rank_bytes,
    predicted_step_counter_bytes,
    predicted_traffic,
    ring_bytes_sent,
    zero1_owned_tensors,
    zero1_partition,
)
from lecture_utils.sharding_engines import ddp_gradient_buckets, gathered_bytes, track_rank_step
from lecture_utils.sharding_launch import main, parse_args
from lecture_utils.sharding_measure import RankReport, check_reports, format_reports, train_rank
from lecture_utils.step_memory import napkin_peak

PSI = sum(p.numel() for p in make_model().parameters())  # 7,312 parameters, counted by torch
MIXED = RECIPES["bf16 + fp32 master"]

# --- the napkin -------------------------------------------------------------------------------


def test_recipes_are_the_lecture_and_the_paper_ones():
    assert RECIPES["fp32"].zero_split() == (4, 4, 8)
    assert MIXED.zero_split() == (2, 2, 12)


@pytest.mark.parametrize(("stage", "gb"), [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_figure_1_example(stage, gb):
    # Rajbhandari et al. 2019, Fig. 1: 7.5B parameters, 64 GPUs, K = 12.
    assert round(per_gpu_bytes(7.5e9, 64, stage, MIXED) / 1e9, 1) == gb


def test_mixed_recipe_bytes_per_gpu_by_hand():
    # (2, 2, 12) on 8 GPUs: each stage shards one more term.
    assert [per_gpu_bytes(1, 8, s, MIXED) for s in range(4)] == [16, 2 + 2 + 12 / 8, 2 + 14 / 8, 16 / 8]


def test_gpt2_small_has_its_124m_parameters_and_an_embedding_that_unbalances_zero1():
    model = gpt2_small()
    assert all(p.is_meta for p in model.parameters())  # shapes only, no memory
    d, vocab, context, layers = 768, 50257, 1024, 12
    # per block: qkv 3d^2 + 3d, output d^2 + d, MLP 4d^2 + 4d and 4d^2 + d, two norms 4d
    by_hand = vocab * d + context * d + layers * (12 * d**2 + 13 * d) + 2 * d
    assert sum(p.numel() for p in model.parameters()) == by_hand == 124_439_808
    shares = zero1_partition(model, 8)
    assert shares[0] == vocab * d  # the embedding alone
    assert sum(shares) == by_hand and shares[0] / (by_hand / 8) == pytest.approx(2.48, abs=0.01)


@pytest.mark.parametrize(("stage", "billions"), [(0, 80 / 16), (1, 80 / 9), (2, 80 / 5.5), (3, 40.0)])
def test_largest_model_on_eight_80gb_gpus(stage, billions):
    assert largest_params(80e9, 8, stage) == pytest.approx(billions * 1e9)


def test_one_gpu_makes_every_stage_plain_data_parallelism():
    assert {per_gpu_bytes(1e9, 1, s) for s in range(4)} == {16e9}


def test_ring_volumes():
    assert ring_bytes_sent("all_reduce", 1000, 1) == 0
    assert ring_bytes_sent("all_reduce", 1000, 2) == 1000
    assert ring_bytes_sent("all_gather_single", 1000, 4) == 750
    # FSDP2's two all-gathers and a reduce-scatter send 1.5x DDP's all-reduce, whatever N.
    fsdp = sum(ring_bytes_sent(op, b, 8) for op, b in predicted_traffic("fsdp2", 4 * PSI).items())
    assert fsdp == pytest.approx(1.5 * ring_bytes_sent("all_reduce", 4 * PSI, 8))


def test_zero2_and_bf16_gathers_send_what_ddp_sends():
    # ZeRO-2 gathers the fp32 weights once; ZeRO-3 in bf16 gathers twice at 2 bytes each. Both then
    # reduce-scatter 4-byte gradients: (N - 1)/N of 8 Psi bytes, DDP's 2 (N - 1)/N of 4 Psi.
    fp32, bf16 = 4 * PSI, 2 * PSI
    assert predicted_traffic("zero2", fp32) == {"all_gather_single": fp32, "reduce_scatter_single": fp32}
    assert predicted_traffic("fsdp2_bf16", fp32) == {"all_gather_single": 2 * bf16, "reduce_scatter_single": fp32}
    for approach in ("zero2", "fsdp2_bf16"):
        sent = sum(ring_bytes_sent(op, b, 8) for op, b in predicted_traffic(approach, fp32).items())
        assert sent == pytest.approx(ring_bytes_sent("all_reduce", fp32, 8))


def test_gathered_bytes_by_hand():
    # The three linear layers: 32 x 64 + 64, 64 x 64 + 64 and 64 x 16 + 16 parameters.
    layers = [32 * 64 + 64, 64 * 64 + 64, 64 * 16 + 16]
    model = make_model()
    assert predicted_gathered_bytes(model, "fsdp2") == [4 * n for n in layers] + [0]  # one layer at a time
    assert predicted_gathered_bytes(model, "fsdp2_bf16") == [2 * n for n in layers] + [0]
    running = [4 * layers[0], 4 * (layers[0] + layers[1]), 4 * PSI]
    assert predicted_gathered_bytes(model, "zero2") == [*running, 4 * PSI]  # all kept until the backward
    assert predicted_gathered_bytes(model, "ddp") == predicted_gathered_bytes(model, "zero1") == []
    # The flat all-gather buffer of the layer computing, in the compute dtype, whether or not it reshards:
    assert (
        predicted_buffer_bytes(model, "fsdp2")
        == predicted_buffer_bytes(model, "zero2")
        == [4 * n for n in layers] + [0]
    )
    assert predicted_buffer_bytes(model, "fsdp2_bf16") == [2 * n for n in layers] + [0]
    assert predicted_buffer_bytes(model, "ddp") == []


def test_gathered_bytes_counts_live_full_parameters_once():
    model = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2))
    model[1].weight = model[0].weight  # nothing FSDP2 does, but a shared storage must count once
    assert gathered_bytes(model) == 4 * (3 * 4 + 3 + 2)
    model[0].bias.untyped_storage().resize_(0)  # how FSDP2 frees a full parameter
    assert gathered_bytes(model) == 4 * (3 * 4 + 2)


@pytest.mark.parametrize("world_size", [2, 8])
def test_zero_bytes_count_zero2s_full_parameters(world_size):
    model = make_model()
    held = predicted_rank_bytes(model, "zero2", world_size, 0)
    assert held == predicted_rank_bytes(model, "fsdp2", world_size, 0)  # between steps: shards only
    report = RankReport(0, world_size, "zero2", held, gathered=predicted_gathered_bytes(model, "zero2"))
    assert report.zero_bytes == per_gpu_bytes(PSI, world_size, 2)  # the paper's ZeRO-2: 4 Psi + 12 Psi / N
    zero3 = RankReport(0, world_size, "fsdp2", held, gathered=predicted_gathered_bytes(model, "fsdp2"))
    assert zero3.zero_bytes == per_gpu_bytes(PSI, world_size, 3)


def test_zero1_partition_is_greedy_on_whole_tensors():
    # Sizes 4096, 2048, 1024, 64, 64, 16: the largest alone on rank 0, all the rest on rank 1.
    assert zero1_partition(make_model(), 2) == [4096, 2048 + 1024 + 64 + 64 + 16]
    assert zero1_partition(make_model(), 8) == [4096, 2048, 1024, 64, 64, 16, 0, 0]
    assert zero1_owned_tensors(make_model(), 2) == [[4096], [2048, 1024, 64, 64, 16]]


@pytest.mark.parametrize("world_size", [1, 2, 8])
def test_step_counters_follow_the_tensors_each_rank_updates(world_size):
    model = make_model()  # six tensors
    zero1 = [predicted_step_counter_bytes(model, "zero1", world_size, r) for r in range(world_size)]
    assert sum(zero1) == 4 * 6  # each tensor has exactly one owner
    assert zero1 == {1: [24], 2: [4, 20], 8: [4] * 6 + [0, 0]}[world_size]
    for approach in ("ddp", "zero2", "fsdp2", "fsdp2_bf16"):
        counters = [predicted_step_counter_bytes(model, approach, world_size, r) for r in range(world_size)]
        assert counters == [24] * world_size
    with pytest.raises(ValueError, match="rank must be below"):
        predicted_step_counter_bytes(model, "ddp", world_size, world_size)


@pytest.mark.parametrize("world_size", [1, 2, 3, 5, 8])
def test_fsdp2_shares_follow_torch_chunk(world_size):
    for shape in [(64, 32), (10,), (7, 3), (3, 5)]:
        chunks = torch.empty(shape).chunk(world_size, dim=0)
        numels = [c.numel() for c in chunks] + [0] * (world_size - len(chunks))
        assert [fsdp2_local_numel(shape, world_size, r) for r in range(world_size)] == numels  # a plain tuple
        assert fsdp2_local_numel(torch.Size(shape), world_size, 0) == numels[0]  # or a parameter's torch.Size


@pytest.mark.parametrize(
    ("approach", "world_size"), [("ddp", 1), ("zero1", 2), ("zero1", 8), ("fsdp2", 3), ("zero2", 3)]
)
def test_rank_predictions_speak_the_recipes_components(approach, world_size):
    # Every rank together holds what one copy per stage says: shards sum to the whole. Between steps
    # FSDP2's ZeRO-2 holds what ZeRO-3 does; its full parameters live only inside a step.
    for recipe in (RECIPES["fp32"], MIXED):
        ranks = [predicted_rank_bytes(make_model(), approach, world_size, r, recipe) for r in range(world_size)]
        assert {name for held in ranks for name in held} <= set(recipe.bytes_per_param())
        total = sum(sum(held.values()) for held in ranks) / world_size
        assert total == pytest.approx(
            per_gpu_bytes(PSI, world_size, {"ddp": 0, "zero1": 1, "fsdp2": 3, "zero2": 3}[approach], recipe)
        )
    mixed_rank0 = predicted_rank_bytes(make_model(), "zero1", 2, 0, MIXED)
    assert mixed_rank0 == {
        "parameters": 2 * PSI,
        "gradients": 2 * PSI,
        "master_weights": 4 * 4096,
        "optimizer_state": 8 * 4096,
    }


def test_the_questions_that_have_no_answer_are_refused():
    with pytest.raises(ValueError, match="no trainable parameters"):
        predicted_rank_bytes(nn.ReLU(), "ddp", 2, 0)
    with pytest.raises(ValueError, match="rank must be below"):
        predicted_rank_bytes(make_model(), "ddp", 2, 2)
    with pytest.raises(ValueError, match="rank must be below"):
        fsdp2_local_numel((4, 3), 2, 2)


def test_plot_has_a_line_per_stage_and_labelled_axes():
    use_style()  # as the notebook does: the style sets the notes' minimum font size
    fig = plot_bytes_per_gpu(40e9, 80e9)
    ax = fig.axes[0]
    assert len(ax.lines) == 5 and "GPUs" in ax.get_xlabel() and "GB" in ax.get_ylabel()
    assert fig.get_figwidth() <= MAX_WIDTH_IN and too_small_texts(fig) == []
    zero3 = ax.lines[3].get_ydata()
    assert zero3[3] == pytest.approx(80.0)  # 40B on 8 GPUs at ZeRO-3: exactly 80 GB each
    # each line that levels off is labelled with its level, the part never sharded
    labels = [t.get_text() for t in ax.texts]
    assert labels == ["640 GB", "320 GB", "160 GB"]
    assert ax.lines[1].get_ydata()[-1] == pytest.approx(320, rel=1e-2)  # ZeRO-1 near its label
    plt.close(fig)


# --- real ranks -------------------------------------------------------------------------------


@pytest.mark.parametrize("world_size", [2, 4])
@pytest.mark.parametrize("approach", list(APPROACHES))
def test_measured_bytes_equal_predicted(approach, world_size):
    reports = run_ranks(functools.partial(train_rank, approach=approach), world_size)
    check_reports(reports)  # bytes, traffic, weights equal across ranks and to one process
    optim = [r.held.get("optimizer_state", 0) for r in reports]
    if approach == "ddp":
        assert optim == [8 * PSI] * world_size
    elif approach == "zero1":
        assert sum(optim) == 8 * PSI and len(set(optim)) > 1  # all of it, split unevenly
    else:  # every FSDP2 setting keeps fp32 shards of everything between steps
        assert optim == [8 * PSI // world_size] * world_size
        assert reports[0].held["parameters"] == 4 * PSI // world_size
    # A ring sends 2 (N - 1)/N of an all-reduced tensor and (N - 1)/N of the others, by hand: in
    # units of the fp32 weights' 4 Psi bytes, ZeRO-3 gathers twice and ZeRO-2 once, bf16 gathers half.
    units = {"ddp": 2, "zero1": 2 + 1, "zero2": 1 + 1, "fsdp2": 2 + 1, "fsdp2_bf16": 2 / 2 + 1}[approach]
    assert all(r.ring_sent == pytest.approx(units * (world_size - 1) / world_size * 4 * PSI) for r in reports)
    # Still held after the step: DDP's buckets (the gradients), ZeRO-1's also the parameters it
    # broadcast into; FSDP2 frees every buffer it gathered or scattered.
    kept = {"ddp": 4 * PSI, "zero1": 8 * PSI}.get(approach, 0)
    assert all(r.kept_bytes == kept for r in reports)
    # Full parameters at the forward's end: all of them under ZeRO-2 (fp32), none under ZeRO-3.
    after_forward = {"zero2": [4 * PSI], "fsdp2": [0], "fsdp2_bf16": [0]}.get(approach, [])
    assert all(r.gathered[-1:] == after_forward for r in reports)
    if approach in ("fsdp2", "fsdp2_bf16"):  # a layer computes with its full weights and its flat buffer
        assert all(b >= g for r in reports for b, g in zip(r.buffers, r.gathered, strict=True))
    header = format_reports(reports).splitlines()[0]
    assert "passed B" in header and "sent B" in header


def test_ddp_buckets_are_a_second_copy_unless_the_grads_are_views_into_them():
    copied, viewed = (run_ranks(functools.partial(ddp_gradient_buckets, as_view=v), 2) for v in (False, True))
    assert copied == [(4 * PSI, 4 * PSI, 0)] * 2  # buckets and .grad: two copies
    assert viewed == [(4 * PSI, 4 * PSI, 4 * PSI)] * 2  # every .grad inside a bucket: one copy


@pytest.mark.parametrize("approach", ["ddp", "zero1", "fsdp2", "zero2"])
def test_a_tracked_rank_step_holds_its_share_and_peaks_where_the_napkin_says(approach):
    world_size = 2
    timelines = run_ranks(functools.partial(track_rank_step, approach=approach), world_size)
    model = make_model()
    rows = make_batch()[0].shape[0] // world_size
    for rank, timeline in enumerate(timelines):
        x, y = (t[rank * rows : (rank + 1) * rows] for t in make_batch())
        # A second route to the activations: a plain saved-tensor count on this rank's rows, one process.
        saved = saved_tensor_bytes(
            lambda x=x, y=y: nn.functional.mse_loss(model(x), y), exclude=[*model.parameters(), x, y]
        )
        start, step = timeline.events[0].components, timeline.events[timeline.index("step")].components
        at_rest = {c: b for c, b in (start | {"gradients": step["gradients"]}).items() if b}
        predicted = predicted_rank_bytes(model, approach, world_size, rank)
        assert at_rest == predicted  # the warm-up step made Adam's state: there from the start
        assert max(timeline.series("activations")) == timeline.series("activations")[timeline.index("loss")] == saved
        if approach == "zero2":  # the full weights, kept from the forward to the backward, come on top
            full = predicted_gathered_bytes(model, approach)[-1]
            assert timeline.peak.label == "loss"
            assert timeline.peak.total == sum(predicted.values()) - predicted["gradients"] + full + saved
        else:  # the napkin for this rank's share of each part; here the gradients outweigh the activations
            budget = MemoryBudget(**{c: {torch.float32: b} for c, b in (predicted | {"activations": saved}).items()})
            assert timeline.peak.label == "step" and timeline.peak.total == napkin_peak(budget)
    assert timelines[0].loss != timelines[1].loss  # each rank its own rows


def test_a_tracked_rank_step_needs_a_batch_that_splits():
    with pytest.raises(ValueError, match="does not split over 3 ranks"):
        track_rank_step(0, 3, "ddp")


def _fail_on_rank_one(rank: int, world_size: int) -> None:
    if rank == 1:
        raise ValueError("bad shard")
    dist.all_reduce(torch.ones(1))  # the other ranks wait for rank 1 in a collective


def _hang_on_rank_one(rank: int, world_size: int) -> None:
    if rank == 1:
        time.sleep(60)
    dist.all_reduce(torch.ones(1))


def test_a_failing_rank_surfaces_its_exception_quickly():
    start = time.monotonic()
    with pytest.raises(RankError, match="rank 1 raised ValueError: bad shard") as info:
        run_ranks(_fail_on_rank_one, 4, timeout_s=20)
    assert (info.value.rank, info.value.exc_type, info.value.message) == (1, "ValueError", "bad shard")
    assert time.monotonic() - start < 10
    assert mp.active_children() == []


def test_a_hanging_rank_times_out_and_is_killed():
    start = time.monotonic()
    with pytest.raises(RankError):
        run_ranks(_hang_on_rank_one, 2, timeout_s=2)
    assert time.monotonic() - start < 10
    assert mp.active_children() == []


def test_no_file_is_left_behind(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert run_ranks(lambda rank, world_size: rank * world_size, 3) == [0, 3, 6]
    with pytest.raises(RankError):
        run_ranks(_fail_on_rank_one, 2, timeout_s=10)
    assert list(tmp_path.iterdir()) == []


def _pid(rank: int, world_size: int) -> int:
    return os.getpid()


def _sum_of_ranks(rank: int, world_size: int) -> int:
    total = torch.tensor(float(rank))
    dist.all_reduce(total)
    return int(total.item())


def test_a_pool_reuses_its_ranks_and_group_and_starts_new_ones_after_a_failure(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with RankPool(3, timeout_s=20) as pool:
        first = pool.run(_pid)
        assert pool.run(_sum_of_ranks) == [0 + 1 + 2] * 3  # a collective in the group the first run made
        assert pool.run(functools.partial(_pid)) == first  # the same processes: nothing forked again
        with pytest.raises(RankError, match="rank 1 raised ValueError: bad shard"):
            pool.run(_fail_on_rank_one)
        assert mp.active_children() == []  # a failed run ends every rank
        again = pool.run(_pid)
        assert set(again).isdisjoint(first)  # new ranks, which work
        assert pool.run(_sum_of_ranks) == [3] * 3
    assert mp.active_children() == [] and list(tmp_path.iterdir()) == []


def _matmul_threads(rank: int, world_size: int) -> int:
    torch.randn(256, 256) @ torch.randn(256, 256)
    return torch.get_num_threads()


def test_forking_after_the_parent_used_threads_is_repeatable(two_threads):
    for _ in range(5):
        torch.randn(512, 512) @ torch.randn(512, 512)  # the parent's thread pool is live at fork
        assert run_ranks(_matmul_threads, 4, timeout_s=20) == [1] * 4


# --- the command line -------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["--nproc", "0"], ["--steps", "0"], ["--approach", "zero4"], ["--timeout", "0"]])
def test_cli_rejects_bad_arguments(argv, capsys):
    with pytest.raises(SystemExit) as info:
        parse_args(argv)
    assert info.value.code == 2 and argv[0] in capsys.readouterr().err


def test_cli_forks_ranks_without_torchrun(capsys, monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    assert main(["--nproc", "2", "--approach", "zero1", "--steps", "2"]) == 0
    out = capsys.readouterr().out
    assert "measured == predicted on every rank" in out and out.count("zero1 ") == 2


def test_cli_under_torchrun(tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path), "CUDA_VISIBLE_DEVICES": ""}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        "-m",
        "lecture_utils.sharding_launch",
        "--approach",
        "fsdp2",
        "--steps",
        "2",
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "measured == predicted on every rank" in done.stdout and done.stdout.count("fsdp2 ") == 2
