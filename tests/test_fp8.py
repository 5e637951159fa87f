"""lecture_utils.fp8 against rounding to nearest, the format's max, and the dequantized product."""

import pytest
import torch
from jaxtyping import TypeCheckError

from lecture_utils.dtypes import ulp
from lecture_utils.fp8 import dequantize_fp8, fp8_matmul_available, quantize_fp8, scaled_fp8_matmul
from lecture_utils.hardware import ACCELERATORS


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_quantize_fp8_maps_amax_to_max_and_rounds_to_nearest(dtype):
    x = 1e-4 * torch.randn(1000, generator=torch.Generator().manual_seed(0))
    q, scale = quantize_fp8(x, dtype)
    fmax = torch.finfo(dtype).max
    assert q.dtype == dtype and scale.dtype == torch.float32
    torch.testing.assert_close(scale, x.abs().max() / fmax)
    assert q.float().abs().max().item() == fmax
    # Round to nearest: no value is further from its scaled original than half an ulp there.
    scaled = x / scale
    assert ((q.float() - scaled).abs() <= ulp(scaled, dtype) / 2 + 1e-12).all()
    torch.testing.assert_close(dequantize_fp8(q, scale), q.float() * scale)


def test_quantize_fp8_of_zeros_uses_unit_scale():
    q, scale = quantize_fp8(torch.zeros(3))
    assert scale.item() == 1.0 and (q.float() == 0).all()


def test_a_scale_needs_finite_non_empty_input():
    with pytest.raises(ValueError, match="finite"):
        quantize_fp8(torch.tensor([1.0, float("inf")]))
    with pytest.raises(ValueError, match="non-empty"):
        quantize_fp8(torch.empty(0))


def test_the_fp8_annotations_admit_only_the_two_fp8_formats():
    with pytest.raises(TypeCheckError, match="dtype"):
        quantize_fp8(torch.ones(3), torch.bfloat16)
    with pytest.raises(TypeCheckError, match="q"):
        dequantize_fp8(torch.ones(3), torch.tensor(1.0))


def test_fp8_matmul_is_not_available_on_cpu():
    assert fp8_matmul_available("cpu") is False


@pytest.mark.parametrize("a_column_major", [False, True])
def test_scaled_fp8_matmul_equals_the_dequantized_product(a_column_major):
    g = torch.Generator().manual_seed(0)
    a = torch.randn(64, 32, generator=g).t() if a_column_major else torch.randn(32, 64, generator=g)
    b = torch.randn(64, 16, generator=g)
    reference = dequantize_fp8(*quantize_fp8(a)) @ dequantize_fp8(*quantize_fp8(b))
    try:
        out = scaled_fp8_matmul(a, b, out_dtype=torch.float32)
    except (RuntimeError, NotImplementedError) as err:  # builds without a CPU kernel for it
        pytest.skip(f"torch._scaled_mm is not available on this CPU build: {err}")
    torch.testing.assert_close(out, reference, rtol=1e-5, atol=1e-4)


def test_scaled_fp8_matmul_explains_the_multiple_of_16():
    with pytest.raises(ValueError, match="multiple of 16"):
        scaled_fp8_matmul(torch.ones(16, 24), torch.ones(24, 16))


def test_h100_datasheet_gives_fp8_twice_the_bf16_peak():
    # NVIDIA H100 SXM datasheet, dense (no 2:4 sparsity): FP8 1,979 TFLOP/s, BF16 989.5 TFLOP/s.
    h100 = ACCELERATORS["h100-sxm"]
    assert h100.peak("fp8") == pytest.approx(1979e12)
    assert h100.peak("fp8") == pytest.approx(2 * h100.peak("bf16"))
