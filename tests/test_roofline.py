import math
from dataclasses import replace

import matplotlib.pyplot as plt
import pytest
import torch

from lecture_utils.figures.flops import plot_roofline
from lecture_utils.flops import count_flops, matmul_flops
from lecture_utils.matmul_benchmark import MatmulResult
from lecture_utils.peaks import Peak
from lecture_utils.roofline import MeasuredKernel, matmul_kernel, time_adds, time_matvec

H100_BF16 = MatmulResult(
    n=8192,
    dtype="bfloat16",
    precision="bf16",
    flops=matmul_flops((8192, 8192), (8192, 8192)),
    seconds=1.383e-3,
    peak_flops_per_s=989.5e12,
    peak_source="H100 SXM dense bf16, NVIDIA H100 Tensor Core GPU datasheet",
    peak_estimate=False,
)


def test_a_matmul_kernel_has_the_closed_form_intensity():
    point = matmul_kernel(H100_BF16)
    assert point.intensity == pytest.approx(2 * 8192 / (3 * 2))  # 2n / (3 bytes per element)
    assert point.flops_per_s == pytest.approx(H100_BF16.flops_per_s)


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


def test_roofline_draws_one_roof_per_peak_and_one_group_per_kernel():
    matmuls = [matmul_kernel(replace(H100_BF16, n=n, flops=2 * n**3)) for n in (2048, 8192)]
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
