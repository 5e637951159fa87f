import math

import matplotlib.pyplot as plt
import pytest
import torch

from lecture_utils.dtypes import FORMATS, float_bits, float_format, float_range, relative_spacing, ulp
from lecture_utils.figures.floats import draw_float_formats, draw_float_spacing
from lecture_utils.figures.memory import draw_host_to_gpu
from lecture_utils.hardware import PCIE_GEN5_X16_BYTES_PER_S

DTYPES = [f.dtype for f in FORMATS.values()]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_layout_agrees_with_torch_finfo(dtype):
    fmt, info = float_format(dtype), torch.finfo(dtype)
    assert fmt.bits == info.bits == 8 * dtype.itemsize
    assert info.eps == 2.0**-fmt.fraction_bits
    assert info.tiny == 2.0 ** (1 - fmt.bias)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_smallest_subnormal_is_bit_pattern_one(dtype):
    fmt = float_format(dtype)
    one = torch.tensor([1], dtype=fmt.int_dtype).view(dtype).item()
    assert fmt.smallest_subnormal == one == float_range(dtype).smallest_subnormal


@pytest.mark.parametrize(
    "x, dtype, fields",
    [
        (1.0, torch.float32, (0, 127, 0)),  # 0x3F800000
        (0.1, torch.float32, (0, 123, 0x4CCCCD)),  # 0x3DCCCCCD
        (-2.0, torch.float16, (1, 16, 0)),  # 0xC000
        (0.1, torch.bfloat16, (0, 123, 0x4D)),  # 0x3DCD
        (65504.0, torch.float16, (0, 30, 0x3FF)),  # 0x7BFF, fp16 max
        (448.0, torch.float8_e4m3fn, (0, 15, 6)),  # 0x7E, e4m3fn max
        (math.inf, torch.float8_e5m2, (0, 31, 0)),  # 0x7C
        (2.0**-24, torch.float16, (0, 0, 1)),  # smallest fp16 subnormal
    ],
)
def test_float_bits_match_hand_computed_patterns(x, dtype, fields):
    bits = float_bits(x, dtype)
    assert (bits.sign, bits.exponent, bits.fraction) == fields
    assert len(bits.bit_string(sep="")) == bits.format.bits


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_fields_rebuild_the_value_torch_stores(dtype):
    gen = torch.Generator().manual_seed(0)
    samples = torch.randn(300, generator=gen, dtype=torch.float64) * 10.0 ** torch.randint(-9, 6, (300,), generator=gen)
    specials = [0.0, -0.0, math.pi, -1e-8, 1e-40, 70000.0, -math.inf, math.inf]
    for x in samples.tolist() + specials:
        stored = torch.tensor([x], dtype=torch.float64).to(dtype).item()
        rebuilt = float_bits(x, dtype).value()
        assert rebuilt == stored or (math.isnan(rebuilt) and math.isnan(stored)), (x, rebuilt, stored)
        assert math.copysign(1, rebuilt) == math.copysign(1, stored)


def test_nan_patterns():
    assert math.isnan(float_bits(math.nan, torch.float16).value())
    nan_e4m3 = float_bits(math.nan, torch.float8_e4m3fn)
    assert (nan_e4m3.exponent, nan_e4m3.fraction) == (15, 7)
    assert math.isnan(nan_e4m3.value())


def test_syllabus_ranges():
    fp16, bf16 = float_range(torch.float16), float_range(torch.bfloat16)
    assert fp16.max == 65504 and fp16.tiny == pytest.approx(6.1035e-5, rel=1e-4)
    assert fp16.smallest_subnormal == pytest.approx(5.96e-8, rel=1e-3)
    assert bf16.eps == 0.0078125 and bf16.max == pytest.approx(3.39e38, rel=1e-3)
    assert float_range(torch.float8_e4m3fn).max == 448
    assert float_range(torch.float8_e5m2).max == 57344


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_ulp_equals_gap_to_nextafter(dtype):
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(1000, generator=gen) * 10.0 ** torch.randint(-6, 4, (1000,), generator=gen)
    stored = x.to(dtype).abs()
    after = torch.nextafter(stored, torch.full_like(stored, math.inf))
    torch.testing.assert_close(ulp(x, dtype), (after.double() - stored.double()), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2], ids=str)
def test_fp8_ulp_equals_gap_to_next_bit_pattern(dtype):
    patterns = torch.arange(1, 0x7B, dtype=torch.uint8)  # positive finite values below the top binade's end
    values = patterns.view(dtype).double()
    following = (patterns + 1).view(dtype).double()
    torch.testing.assert_close(ulp(values, dtype), following - values, rtol=0, atol=0)


def test_relative_spacing_at_one_is_eps_and_undefined_outside_the_range():
    for dtype in DTYPES:
        assert relative_spacing(torch.tensor([1.0]), dtype).item() == torch.finfo(dtype).eps
    edge = relative_spacing(torch.tensor([0.0, 1e-9, 70000.0]), torch.float16)
    assert torch.isnan(edge).all()
    assert relative_spacing(torch.tensor([2.0**-24]), torch.float16).item() == 1.0


def test_a_dtype_without_a_bit_layout_is_named():
    with pytest.raises(ValueError, match=r"no bit layout for torch\.int32"):
        float_format(torch.int32)
    with pytest.raises(ValueError, match=r"no bit layout for torch\.float64"):
        float_bits(1.0, torch.float64)


def test_pcie_gen5_x16_is_64_gb_per_s():
    assert PCIE_GEN5_X16_BYTES_PER_S == 64e9


def test_figures_show_the_real_bits():
    fig = draw_float_formats(math.pi)
    drawn = "".join(t.get_text() for t in fig.axes[0].texts)
    for fmt in FORMATS.values():
        assert float_bits(math.pi, fmt.dtype).bit_string(sep="") in drawn
    plt.close(fig)
    for draw in (draw_float_spacing, draw_host_to_gpu):
        fig = draw()
        assert fig.axes
        plt.close(fig)
    fig = draw_host_to_gpu()
    labels = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert "3.35 TB/s" in labels and "64 GB/s" in labels
    plt.close(fig)
