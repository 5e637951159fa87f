"""lecture_utils.fp8 against rounding to nearest, the format's max, and the dequantized product."""

import pytest
import torch
from jaxtyping import TypeCheckError

from lecture_utils.dtypes import ulp
from lecture_utils.fp8 import (
    cast_fp8,
    dequantize_fp8,
    dequantize_fp8_blocks,
    fp8_matmul_available,
    fp8_scale,
    quantize_fp8,
    quantize_fp8_blocks,
    scaled_fp8_matmul,
)
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


E4M3_MAX = 448.0  # the largest e4m3 value in the OCP 8-bit floating point specification


def test_fp8_scale_maps_amax_to_the_format_max_and_zero_to_one():
    amax = torch.tensor([0.0, 1.0, 896.0])
    torch.testing.assert_close(fp8_scale(amax), torch.tensor([1.0, 1 / E4M3_MAX, 2.0]))
    torch.testing.assert_close(fp8_scale(torch.tensor(57344.0), torch.float8_e5m2), torch.tensor(1.0))
    with pytest.raises(ValueError, match="non-negative"):
        fp8_scale(torch.tensor(-1.0))


def test_cast_fp8_clips_what_a_stale_scale_cannot_hold_like_torch_saturating_cast():
    x = torch.tensor([0.5, -1.0, 2.0, -4.0, 8.0])
    scale = torch.tensor(2.0 / E4M3_MAX)  # from an amax of 2: 4 and 8 no longer fit
    q = cast_fp8(x, scale)
    assert q.float().tolist() == [112.0, -224.0, 448.0, -448.0, 448.0]
    # torch 2.13+ saturates the cast itself: the clamp in cast_fp8 must agree with it bit for bit
    assert torch.equal(q.view(torch.uint8), (x / scale).to(torch.float8_e4m3fn).view(torch.uint8))


def test_cast_fp8_broadcasts_one_scale_per_row_and_rejects_a_bad_scale():
    x = torch.tensor([[1.0, 2.0], [10.0, 20.0]])
    q = cast_fp8(x, torch.tensor([[2.0 / E4M3_MAX], [20.0 / E4M3_MAX]]))
    assert q.float().tolist() == [[224.0, 448.0], [224.0, 448.0]]
    with pytest.raises(ValueError, match="broadcast"):
        cast_fp8(x, torch.ones(3))
    with pytest.raises(ValueError, match="positive"):
        cast_fp8(x, torch.tensor(0.0))


def blocks_by_hand(x, rows, cols):
    """Each block quantized on its own with plain torch ops (amax / 448, divide, clamp, cast), and back."""
    codes, scales, back = torch.empty_like(x, dtype=torch.float8_e4m3fn), [], torch.empty_like(x)
    for i in range(0, x.shape[0], rows):
        scales.append([])
        for j in range(0, x.shape[1], cols):
            block = x[i : i + rows, j : j + cols]
            scale = block.abs().max() / E4M3_MAX
            codes[i : i + rows, j : j + cols] = (block / scale).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
            back[i : i + rows, j : j + cols] = codes[i : i + rows, j : j + cols].float() * scale
            scales[-1].append(scale.item())
    return codes, torch.tensor(scales), back


@pytest.mark.parametrize("block", [(1, 128), (128, 128), (64, 32)])
def test_quantize_fp8_blocks_equals_quantizing_each_block_by_hand(block):
    x = torch.randn(256, 256, generator=torch.Generator().manual_seed(1))
    x[7] *= 1e4  # an outlier row, so the blocks' scales differ by orders of magnitude
    codes, scales = quantize_fp8_blocks(x, block)
    expected_codes, expected_scales, expected_back = blocks_by_hand(x, *block)
    assert scales.shape == (256 // block[0], 256 // block[1])
    torch.testing.assert_close(scales, expected_scales, rtol=0, atol=0)
    assert torch.equal(codes.view(torch.uint8), expected_codes.view(torch.uint8))
    torch.testing.assert_close(dequantize_fp8_blocks(codes, scales), expected_back, rtol=0, atol=0)


def test_one_block_for_the_whole_tensor_is_per_tensor_scaling():
    x = torch.randn(64, 128, generator=torch.Generator().manual_seed(2))
    codes, scales = quantize_fp8_blocks(x, (64, 128))
    q, scale = quantize_fp8(x)
    assert torch.equal(codes.view(torch.uint8), q.view(torch.uint8)) and scales.item() == scale.item()


def test_tiles_keep_an_outlier_row_from_touching_the_other_rows():
    x = torch.randn(8, 256, generator=torch.Generator().manual_seed(3))
    spiked = x.clone()
    spiked[3] *= 1e5
    others = torch.arange(8) != 3
    tiles, _ = quantize_fp8_blocks(spiked, (1, 128))
    clean, _ = quantize_fp8_blocks(x, (1, 128))
    assert torch.equal(tiles[others].view(torch.uint8), clean[others].view(torch.uint8))
    # one scale for the tensor: the outlier coarsens every other row, flushing many of them to zero
    whole, _ = quantize_fp8(spiked)
    assert (whole[others].float() == 0).float().mean() > 0.2


def test_blocks_must_tile_the_tensor_and_be_positive():
    with pytest.raises(ValueError, match="tile"):
        quantize_fp8_blocks(torch.ones(4, 6), (4, 4))
    with pytest.raises(ValueError, match="finite"):
        quantize_fp8_blocks(torch.tensor([[1.0, float("nan")]]), (1, 2))
    with pytest.raises(TypeCheckError, match="block"):
        quantize_fp8_blocks(torch.ones(4, 4), (0, 4))
    with pytest.raises(ValueError, match="tile"):
        dequantize_fp8_blocks(torch.ones(4, 6).to(torch.float8_e4m3fn), torch.ones(4, 4))
