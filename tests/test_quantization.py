"""lecture_utils.quantization against hand-computed grids, round trips, and the bytes the tensors take."""

import pytest
import torch
from torch import nn

from lecture_utils import nn_basics
from lecture_utils.quantization import (
    dequantize_per_channel,
    pack_int4,
    qmax,
    quantize_linears,
    quantize_per_channel,
    unpack_int4,
)


def test_qmax_is_the_symmetric_grid_top():
    assert qmax(8) == 127 and qmax(4) == 7


@pytest.mark.parametrize("bits", [8, 4])
def test_per_channel_rounds_each_row_to_its_own_grid(bits):
    w = torch.tensor([[1.0, -0.5, 0.25, 0.0], [100.0, 3.0, -40.0, 7.0]])
    codes, scale = quantize_per_channel(w, bits)
    top = qmax(bits)
    torch.testing.assert_close(scale, w.abs().amax(dim=1, keepdim=True) / top)
    assert codes.dtype == torch.int8 and codes.abs().max() == top
    assert (codes.abs().amax(dim=1) == top).all()  # every row's largest entry lands on the grid's end
    error = (dequantize_per_channel(codes, scale) - w).abs()
    assert (error <= scale / 2 + 1e-6).all()  # round to nearest: at most half a step per row


def test_per_channel_int8_is_finer_than_int4_and_zero_rows_stay_zero():
    w = torch.randn(16, 32, generator=torch.Generator().manual_seed(0))
    errors = {bits: (dequantize_per_channel(*quantize_per_channel(w, bits)) - w).norm() for bits in (8, 4)}
    assert errors[8] < errors[4] / 10
    codes, scale = quantize_per_channel(torch.zeros(2, 4), 8)
    assert (codes == 0).all() and (scale == 1).all()


def test_int4_packing_round_trips_every_code_in_half_the_bytes():
    codes = torch.arange(-8, 8, dtype=torch.int8).repeat(3, 2)  # (3, 32): every int4 value
    packed = pack_int4(codes)
    assert packed.dtype == torch.uint8 and packed.shape == (3, 16)
    assert packed.numel() * packed.element_size() == codes.numel() // 2
    assert torch.equal(unpack_int4(packed), codes)
    assert packed[0, 0] == (-8 & 0xF) | ((-7 & 0xF) << 4)  # low nibble first


def test_quantize_linears_copies_the_model_and_counts_stored_bytes():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 6), nn.ReLU(), nn.Linear(6, 2))
    before = [p.detach().clone() for p in model.parameters()]
    for bits, code_bytes in ((8, 8 * 6 + 6 * 2), (4, (8 * 6 + 6 * 2) // 2)):
        quantized, stored = quantize_linears(model, bits)
        assert stored == code_bytes + 4 * (6 + 2)  # one fp32 scale per output row
        for original, q in zip((model[0], model[2]), (quantized[0], quantized[2]), strict=True):
            codes, scale = quantize_per_channel(original.weight, bits)
            torch.testing.assert_close(q.weight, dequantize_per_channel(codes, scale))
            assert torch.equal(q.bias, original.bias)  # biases stay fp32
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))  # the original is untouched


def test_quantize_linears_recognises_the_assignments_linear():
    torch.manual_seed(0)
    model = nn.Sequential(nn_basics.Linear(8, 6), nn.ReLU(), nn.Linear(6, 2))
    quantized, stored = quantize_linears(model, 4)
    assert stored == (8 * 6 + 6 * 2) // 2 + 4 * (6 + 2)  # both layers' codes and scales
    codes, scale = quantize_per_channel(model[0].weight, 4)
    torch.testing.assert_close(quantized[0].weight, dequantize_per_channel(codes, scale))
    assert isinstance(quantized[0], nn_basics.Linear) and not torch.equal(quantized[0].weight, model[0].weight)


def test_teaching_checks():
    with pytest.raises(ValueError, match="finite"):
        quantize_per_channel(torch.tensor([[1.0, float("nan")]]), 8)
    with pytest.raises(ValueError, match="even length"):
        pack_int4(torch.zeros(2, 3, dtype=torch.int8))
    with pytest.raises(ValueError, match=r"-8\.\.7"):
        pack_int4(torch.full((1, 2), 9, dtype=torch.int8))
    with pytest.raises(ValueError, match="no Linear layers"):
        quantize_linears(nn.ReLU(), 8)
