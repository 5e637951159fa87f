import random
from fractions import Fraction

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from lecture_utils.flops import (
    arithmetic_intensity,
    attainable_flops,
    count_flops,
    linear_flops,
    matmul_bytes,
    matmul_flops,
    mfu,
    tokens_to_ridge,
)
from lecture_utils.hardware import ACCELERATORS, UnknownAcceleratorError, lookup_accelerator
from lecture_utils.peaks import peak_flops


def counted(fn) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def random_matmul_shapes(rng: random.Random) -> tuple[list[int], list[int]]:
    """Shapes (..., m, n) and (..., n, p) with 0-2 batch dims each that broadcast (some are 1)."""
    m, n, p = (rng.randint(1, 12) for _ in range(3))
    batch = [rng.randint(1, 4) for _ in range(rng.randint(0, 2))]
    a_batch = [d if rng.random() < 0.7 else 1 for d in batch]
    b_batch = [d if rng.random() < 0.7 else 1 for d in batch][rng.randint(0, len(batch)) :]
    return [*a_batch, m, n], [*b_batch, n, p]


@pytest.mark.parametrize("seed", range(60))
def test_matmul_flops_equals_flop_counter_mode(seed):
    rng = random.Random(seed)
    a_shape, b_shape = random_matmul_shapes(rng)
    a, b = torch.randn(a_shape), torch.randn(b_shape)
    assert matmul_flops(a_shape, b_shape) == counted(lambda: a @ b) == matmul_flops(a.shape, b.shape)


def test_matmul_flops_by_hand():
    assert matmul_flops((2, 3), (3, 4)) == 2 * 2 * 3 * 4
    assert matmul_flops((5, 2, 3), (3, 4)) == 5 * 48
    assert matmul_flops((5, 1, 2, 3), (7, 3, 4)) == 35 * 48


@pytest.mark.parametrize("seed", range(20))
def test_linear_flops_is_two_tokens_params_and_matches_the_counter(seed):
    rng = random.Random(seed)
    tokens, d_in, d_out = rng.randint(1, 64), rng.randint(1, 64), rng.randint(1, 64)
    layer = torch.nn.Linear(d_in, d_out, bias=False)
    x = torch.randn(tokens, d_in)
    params = sum(p.numel() for p in layer.parameters())
    assert linear_flops(tokens, d_in, d_out) == 2 * tokens * params == counted(lambda: layer(x))


def test_count_flops_reports_totals_and_modules():
    model = torch.nn.Sequential(torch.nn.Linear(8, 16, bias=False), torch.nn.ReLU(), torch.nn.Linear(16, 4, bias=False))
    x = torch.randn(3, 8)
    report = count_flops(lambda: model(x))
    assert report.module_total("Sequential.0") == linear_flops(3, 8, 16)
    assert report.module_total("Sequential.2") == linear_flops(3, 16, 4)
    assert report.total == report.module_total("Global") == report.module_total("Sequential") == 768 + 384
    assert report.by_module["Sequential.0"] == {"mm": 768}
    with pytest.raises(KeyError, match=r"no module 'Sequential\.1'"):
        report.module_total("Sequential.1")


def test_count_flops_counts_only_matmul_like_ops():
    x = torch.randn(32, 32)
    assert count_flops(lambda: x + x).total == 0  # by hand it is 32 x 32 additions
    assert count_flops(lambda: torch.relu(x @ x)).total == matmul_flops(x.shape, x.shape)


@pytest.mark.parametrize(
    "a_shape, b_shape, message",
    [
        ((2, 3), (4, 5), "inner dimensions differ"),
        ((3,), (3, 4), "2\\+ dims"),
        ((2, 2, 3), (3, 3, 4), "do not broadcast"),
    ],
)
def test_shapes_that_cannot_be_multiplied_are_refused(a_shape, b_shape, message):
    # The rules of a matmul itself; a shape is a tuple, not a tensor, so no annotation can say them.
    with pytest.raises(ValueError, match=message):
        matmul_flops(a_shape, b_shape)


def test_an_empty_matmul_costs_nothing():
    assert matmul_flops((0, 3), (3, 4)) == 0 == counted(lambda: torch.randn(0, 3) @ torch.randn(3, 4))


@pytest.mark.parametrize("seed", range(10))
def test_matmul_bytes_equals_the_bytes_of_the_real_tensors(seed):
    rng = random.Random(seed)
    a_shape, b_shape = random_matmul_shapes(rng)
    dtype = rng.choice([torch.float32, torch.bfloat16, torch.float64])
    a, b = torch.randn(a_shape, dtype=dtype), torch.randn(b_shape, dtype=dtype)
    assert matmul_bytes(a_shape, b_shape, dtype) == a.nbytes + b.nbytes + (a @ b).nbytes


@pytest.mark.parametrize("n", [1, 7, 128, 4096, 16384])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_square_matmul_intensity_is_2n_over_3_bytes(n, dtype):
    intensity = arithmetic_intensity(matmul_flops((n, n), (n, n)), matmul_bytes((n, n), (n, n), dtype))
    assert intensity == pytest.approx(2 * n / (3 * dtype.itemsize), rel=1e-12)


def test_roofline_bound_and_ridge():
    h100 = ACCELERATORS["h100-sxm"]
    peak, bandwidth = h100.peak("bf16"), h100.bandwidth_bytes_per_s
    ridge = peak / bandwidth
    assert ridge == pytest.approx(295.37, abs=0.01)
    assert attainable_flops(10.0, peak, bandwidth) == pytest.approx(10 * 3.35e12)
    assert attainable_flops(ridge * 2, peak, bandwidth) == peak
    assert attainable_flops(ridge, peak, bandwidth) == pytest.approx(peak)


def first_token_count_at_ridge(d: int, f: int, ridge: float, dtype: torch.dtype) -> int:
    """The other route: bisect on T, in exact arithmetic, for the first FLOPs / bytes of real shapes at the ridge.

    The intensity grows with T, so the first T at or past the ridge is where the bisection closes.
    """

    def reaches(t: int) -> bool:
        shapes = (t, d), (d, f)
        return Fraction(matmul_flops(*shapes), matmul_bytes(*shapes, dtype)) >= Fraction(ridge)

    low, high = 0, 1  # reaches(low) is False (no tokens, no FLOPs), reaches(high) True once high is large
    while not reaches(high):
        low, high = high, 2 * high
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if reaches(mid) else (mid, high)
    return high


@pytest.mark.parametrize("seed", range(40))
def test_tokens_to_ridge_is_where_a_scan_of_the_intensity_crosses(seed):
    rng = random.Random(seed)
    d, f = rng.randint(64, 20000), rng.randint(64, 60000)
    dtype = rng.choice([torch.float32, torch.bfloat16, torch.float8_e4m3fn])
    limit = 2 * d * f / (dtype.itemsize * (d + f))  # the intensity as T grows without bound
    ridge = rng.uniform(0.5, 0.95) * limit
    assert tokens_to_ridge(d, f, ridge, dtype) == first_token_count_at_ridge(d, f, ridge, dtype)


def test_an_8b_layer_on_an_h100_needs_a_few_hundred_tokens():
    h100 = ACCELERATORS["h100-sxm"]
    ridge = h100.peak("bf16") / h100.bandwidth_bytes_per_s
    # By hand: 295.37 x 4096 x 14336 / (4096 x 14336 - 295.37 x (4096 + 14336)) = 325.6, so 326.
    assert tokens_to_ridge(4096, 14336, ridge, torch.bfloat16) == 326
    # In fp32 each element is twice the bytes: about twice the tokens for the same ridge.
    assert tokens_to_ridge(4096, 14336, ridge, torch.float32) == first_token_count_at_ridge(
        4096, 14336, ridge, torch.float32
    )
    assert tokens_to_ridge(4096, 14336, ridge, torch.float32) > 2 * 295
    assert tokens_to_ridge(4096, 14336, 0.01, torch.bfloat16) == 1  # any token at all is past a tiny ridge


def test_a_ridge_a_weight_cannot_reach_is_refused():
    # (64 x 64) in bf16 tops out at 2 x 64 x 64 / (2 x 128) = 32 FLOP/byte however many tokens share it.
    with pytest.raises(ValueError, match=r"never reaches 295 FLOP/byte.*stays below 32\.0"):
        tokens_to_ridge(64, 64, 295.0, torch.bfloat16)


def test_mfu_arithmetic_by_hand():
    assert mfu(1e12, 1e-3, 2e15) == pytest.approx(0.5)
    # CS336 Lecture 2's fp32 matmul on an H100: about 5.4e13 FLOP/s (one second's FLOPs) of the 67e12 peak.
    assert mfu(5.4e13, 1.0, 67e12) == pytest.approx(0.806, abs=1e-3)
    # One 8192^3 bf16 matmul in 1.5 ms, by hand: 2 x 8192^3 = 1.0995e12 FLOPs / 1.5e-3 s / 989.5e12 = 0.7408.
    flops = matmul_flops((8192, 8192), (8192, 8192))
    assert mfu(flops, 1.5e-3, 989.5e12) == pytest.approx(0.7408, abs=1e-4)
    assert mfu(100, 1.0, 100e9) == pytest.approx(1e-9)


def test_an_mfu_above_1_is_refused_with_its_likely_causes():
    with pytest.raises(ValueError, match=r"(?s)MFU 2\.02 > 1.*peak is for this device and dtype.*timing synchronized"):
        mfu(2e15, 1.0, 989.5e12)


@pytest.mark.parametrize("peak", [1.0, 989.5])  # a placeholder, and TFLOP/s passed as FLOP/s
def test_an_implausible_peak_is_refused(peak):
    with pytest.raises(ValueError, match="not a real device's; pass the dense peak in FLOP/s"):
        mfu(1e9, 1.0, peak)


# (torch.cuda.get_device_name spelling, dense bf16, fp32 'highest', fp32 'high' = TF32) in TFLOP/s
GPU_VARIANTS = [
    ("NVIDIA H100 80GB HBM3", 989.5, 67, 494.7),
    ("NVIDIA H100 SXM5 80GB", 989.5, 67, 494.7),
    ("NVIDIA H100 PCIe", 756.5, 51, 378),
    ("NVIDIA H200", 989.5, 67, 494.7),
    ("NVIDIA A100-SXM4-40GB", 312, 19.5, 156),
    ("NVIDIA A100-SXM4-80GB", 312, 19.5, 156),
]


@pytest.fixture
def gpu_named(monkeypatch):
    """Make peak_flops believe a CUDA GPU of the given name is present (no GPU needed)."""
    return lambda name: monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)


@pytest.mark.parametrize("name, bf16, fp32, tf32", GPU_VARIANTS)
def test_mfu_uses_the_dense_peak_of_the_dtype_in_effect(gpu_named, name, bf16, fp32, tf32):
    gpu_named(name)
    cuda = torch.device("cuda")
    bf16_peak = peak_flops(cuda, torch.bfloat16)
    assert bf16_peak.flops_per_s == pytest.approx(bf16 * 1e12) and not bf16_peak.estimate
    assert "dense bf16" in bf16_peak.source
    previous = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("highest")
        assert peak_flops(cuda, torch.float32).flops_per_s == pytest.approx(fp32 * 1e12)
        torch.set_float32_matmul_precision("high")
        assert peak_flops(cuda, torch.float32).flops_per_s == pytest.approx(tf32 * 1e12)
    finally:
        torch.set_float32_matmul_precision(previous)
    # Half the dense peak for one second is MFU 0.5 on every variant.
    assert mfu(bf16_peak.flops_per_s / 2, 1.0, bf16_peak.flops_per_s) == pytest.approx(0.5)


@pytest.mark.parametrize("name", [n for n, *_ in GPU_VARIANTS] + ["NVIDIA B200"])
def test_the_sparse_figure_is_never_the_peak(gpu_named, name):
    gpu_named(name)
    peak = peak_flops(torch.device("cuda"), torch.bfloat16).flops_per_s
    sparse = lookup_accelerator(name).peak("bf16", sparse=True)
    assert peak == sparse / 2
    # A dense matmul reported against the sparse figure would look half as good: the dense peak is binding.
    with pytest.raises(ValueError, match="> 1"):
        mfu(0.75 * sparse, 1.0, peak)


def test_an_h100_sxm_result_is_impossible_on_an_h100_pcie(gpu_named):
    gpu_named("NVIDIA H100 PCIe")
    flops = matmul_flops((8192, 8192), (8192, 8192))
    with pytest.raises(ValueError, match="exceeds the peak"):
        # 0.8 of the SXM's dense bf16 peak (792 TFLOP/s) is above the PCIe card's whole peak (756.5)
        mfu(flops, flops / (0.8 * 989.5e12), peak_flops(torch.device("cuda"), torch.bfloat16).flops_per_s)


@pytest.mark.parametrize("name", ["NVIDIA A10G", "NVIDIA L40", "NVIDIA GeForce RTX 3090 Ti", "NVIDIA GB200", ""])
def test_no_peak_and_so_no_mfu_for_unlisted_variants(gpu_named, name):
    gpu_named(name)
    with pytest.raises(UnknownAcceleratorError, match="report achieved FLOP/s only"):
        peak_flops(torch.device("cuda"), torch.bfloat16)
