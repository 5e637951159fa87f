import math
from dataclasses import replace

import matplotlib.pyplot as plt
import pytest
import torch

from lecture_utils.figures.flops import plot_roofline, plot_token_intensity
from lecture_utils.flops import count_flops
from lecture_utils.peaks import Peak
from lecture_utils.roofline import (
    MeasuredKernel,
    matmul_kernel,
    time_activations,
    time_adds,
    time_matvec,
    time_token_matmuls,
)


def test_a_matmul_kernel_has_the_closed_form_intensity(h100_bf16):
    point = matmul_kernel(h100_bf16)
    assert point.intensity == pytest.approx(2 * 8192 / (3 * 2))  # 2n / (3 bytes per element)
    assert point.flops_per_s == pytest.approx(h100_bf16.flops_per_s)


def test_adds_move_12_bytes_per_flop_and_take_real_time():
    points = time_adds("cpu", [16, 4096], rounds=1, min_trial_s=0.0)
    x = torch.rand(4096)
    assert [p.size for p in points] == [16, 4096]
    for p in points:
        assert p.flops == p.size and p.bytes_moved == 3 * x.element_size() * p.size  # read x, y; write out
        assert p.intensity == pytest.approx(1 / 12) and 0 < p.seconds < 1
    with pytest.raises(ValueError, match="at least one size"):
        time_adds("cpu", [])


def test_matvec_flops_agree_with_flopcountermode_on_the_same_product_as_a_matmul():
    point = time_matvec("cpu", 64, rounds=1, min_trial_s=0.0)
    matrix, column = torch.rand(64, 64), torch.rand(64, 1)
    assert point.flops == count_flops(lambda: matrix @ column).total
    assert point.bytes_moved == matrix.nbytes + 2 * column.nbytes  # the matrix, the vector in and out
    assert 0.45 < point.intensity < 0.5


def test_roofline_draws_one_roof_per_peak_and_one_group_per_kernel(h100_bf16):
    matmuls = [matmul_kernel(replace(h100_bf16, n=n, flops=2 * n**3)) for n in (2048, 8192)]
    add = MeasuredKernel("add", "fp32", 1 << 28, 1 << 28, 12 << 28, 1.1e-3)
    roofs = {"bf16": Peak(989.5e12, "datasheet", False), "fp32": Peak(67e12, "datasheet", False)}
    fig = plot_roofline([*matmuls, add], roofs, 3.35e12, "datasheet", "test")
    (ax,) = fig.axes
    memory, bf16, fp32 = ax.lines
    assert "datasheet" in memory.get_label() and "ridge 295 FLOP/B" in bf16.get_label()
    assert "ridge 20 FLOP/B" in fp32.get_label()
    # The memory slope ends where the highest peak begins: at 295 FLOP/B, at 989.5 TFLOP/s.
    assert math.isclose(memory.get_xdata()[-1], 989.5e12 / 3.35e12)
    assert math.isclose(memory.get_ydata()[-1], 989.5e12) and bf16.get_ydata()[0] == 989.5e12
    assert len(ax.collections) == 2  # bf16 matmuls, fp32 adds
    plt.close("all")


def test_token_matmuls_count_what_flopcountermode_and_the_tensors_say():
    points = time_token_matmuls("cpu", [1, 4, 16], 32, 48, rounds=1, min_trial_s=0.0)
    weight = torch.rand(48, 32, dtype=torch.bfloat16)  # stored (f x d), as torch.nn.Linear keeps it
    assert [p.size for p in points] == [1, 4, 16]
    for p in points:
        x = torch.rand(p.size, 32, dtype=torch.bfloat16)
        y = torch.nn.functional.linear(x, weight)
        assert p.kernel == "token matmul" and p.precision == "bf16"
        assert p.flops == count_flops(lambda x=x: torch.nn.functional.linear(x, weight)).total
        assert p.bytes_moved == x.nbytes + weight.nbytes + y.nbytes
        assert 0 < p.seconds < 1
    fp32 = time_token_matmuls("cpu", [2], 8, 8, dtype=torch.float32, rounds=1, min_trial_s=0.0)
    assert fp32[0].precision == "fp32" and fp32[0].bytes_moved == 4 * (2 * 8 + 8 * 8 + 2 * 8)
    with pytest.raises(ValueError, match="at least one token count"):
        time_token_matmuls("cpu", [], 8, 8)


def test_token_matmul_points_carry_their_token_count_on_the_roofline():
    points = [MeasuredKernel("token matmul", "bf16", t, 2 * t * 64, 2 * 64 + 4 * t, 1e-3) for t in (1, 8)]
    fig = plot_roofline(points, {}, 1e9, "measured", "test", size_labels={"token matmul": "T="})
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.texts] == ["T=1", "T=8"]
    assert len(plot_roofline(points, {}, 1e9, "measured", "test").axes[0].texts) == 0
    plt.close("all")


def test_token_intensity_figure_shades_each_side_of_the_crossing_and_marks_its_points():
    tokens = [1, 2, 4, 8, 16]
    intensities = [0.9, 1.8, 3.5, 6.7, 12.0]
    fig = plot_token_intensity(tokens, intensities, 5.0, "ridge", {"decode": 1}, "test")
    (ax,) = fig.axes
    memory, compute = ax.patches
    # 8 is the first token count whose intensity (6.7) reaches the ridge (5.0).
    assert memory.get_x() < 1 and memory.get_x() + memory.get_width() == 8
    assert compute.get_x() == 8 and compute.get_x() + compute.get_width() > 16
    assert [t.get_text() for t in ax.texts] == ["decode"]
    with pytest.raises(ValueError, match="one intensity per token count"):
        plot_token_intensity(tokens, intensities[:-1], 5.0, "ridge", {}, "test")
    with pytest.raises(ValueError, match=r"marks \['prefill'\] are not among"):
        plot_token_intensity(tokens, intensities, 5.0, "ridge", {"prefill": 3}, "test")
    plt.close("all")


def test_activations_move_the_same_bytes_and_compute_what_torch_computes():
    relu, gelu = time_activations("cpu", 1024, rounds=1, min_trial_s=0.0)
    x = torch.empty(1024)
    assert (relu.kernel, gelu.kernel) == ("relu", "gelu")
    assert relu.bytes_moved == gelu.bytes_moved == 2 * x.nbytes  # read x, write y
    assert (relu.flops, gelu.flops) == (1024, 20 * 1024)  # the 2026 lecture's counts per value
    assert 0 < relu.seconds < 1 and 0 < gelu.seconds < 1
    values, out = torch.randn(64), torch.empty(64)
    assert torch.equal(torch.clamp_min(values, 0.0, out=out), torch.relu(values))  # the timed ReLU
    assert torch.equal(torch.ops.aten.gelu.out(values, out=out), torch.nn.functional.gelu(values))
