import math

import pytest
import torch
import torch.nn.functional as F

from lecture_utils.flops import attainable_flops, count_flops
from lecture_utils.op_intensity import ACTIVATION_FLOPS, OpCount, five_ops, mfu_ceiling


def test_bytes_are_the_inputs_and_output_of_real_tensors_and_product_flops_are_counted():
    n = 256
    for dtype in (torch.bfloat16, torch.float32):
        row, square = torch.empty(1, n, dtype=dtype), torch.empty(n, n, dtype=dtype)
        runs = {
            "relu": ((row,), torch.relu),
            "gelu": ((row,), F.gelu),
            "dot": ((row, row.T), torch.matmul),
            "matvec": ((row, square), torch.matmul),
            "matmul": ((square, square), torch.matmul),
        }
        ops = five_ops(n, dtype)
        assert [op.name for op in ops] == list(runs)
        for op in ops:
            args, fn = runs[op.name]
            assert op.bytes_moved == sum(a.nbytes for a in args) + fn(*args).nbytes, op.name
            if op.name in ACTIVATION_FLOPS:
                assert op.flops == ACTIVATION_FLOPS[op.name] * n
            else:
                assert op.flops == count_flops(lambda fn=fn, args=args: fn(*args)).total, op.name


def test_the_2026_lecture_intensities_in_bf16():
    """ReLU 1/4, GELU 5, dot ~1/2, matrix-vector ~1, matmul ~n/3, from the lecture's own byte and FLOP counts."""
    n = 1024
    got = {op.name: op.intensity for op in five_ops(n)}
    assert got["relu"] == 1 / 4 and got["gelu"] == 5
    assert got["dot"] == pytest.approx((2 * n - 1) / (2 * n + 2 * n + 2), rel=1e-3)  # the lecture writes 2n - 1
    assert got["matvec"] == pytest.approx(n * (2 * n - 1) / (2 * n + 2 * n * n + 2 * n), rel=1e-3)
    assert got["matmul"] == pytest.approx(n * n * (2 * n - 1) / (6 * n * n), rel=1e-3)


def test_the_ceiling_is_the_rooflines_share_of_the_peak():
    peak, bandwidth = 989.5e12, 3.35e12
    for intensity in (0.25, 5.0, 295.0, 341.0, 5000.0):
        expected = attainable_flops(intensity, peak, bandwidth) / peak
        assert mfu_ceiling(intensity, peak / bandwidth) == pytest.approx(expected)
    assert mfu_ceiling(1e6, 295.0) == 1.0
    assert math.isclose(OpCount("x", 10, 4).intensity, 2.5)
