"""Post-training weight quantization (notebook 08): symmetric per-channel int8 and int4, int4 packed two to a byte.

Each output channel (a row of a Linear weight) gets its own scale, amax(|row|) / qmax, so one
large row does not coarsen the steps of every other. Symmetric means no zero point: the integer
grid is -qmax..qmax with qmax = 2^(bits-1) - 1 (127 for int8, 7 for int4), and w ~ q * scale.
"""

import copy
from typing import Literal

import torch
from jaxtyping import Float, Int8, UInt8
from torch import Tensor, nn

from lecture_utils.memory import tensor_bytes
from lecture_utils.transformer import LINEAR_LAYERS

Bits = Literal[8, 4]


def qmax(bits: Bits) -> int:
    """Largest integer of the symmetric grid: 127 for int8, 7 for int4 (notebook 08)."""
    return 2 ** (bits - 1) - 1


def quantize_per_channel(
    w: Float[Tensor, "out in"], bits: Bits
) -> tuple[Int8[Tensor, "out in"], Float[Tensor, "out 1"]]:
    """Round each row of w to the grid -qmax..qmax under its own fp32 scale: (int8 codes, scales) (notebook 08)."""
    if not torch.isfinite(w).all():
        raise ValueError("w must be finite: an inf or NaN would make its row's scale meaningless")
    top = qmax(bits)
    amax = w.detach().float().abs().amax(dim=1, keepdim=True)
    scale = torch.where(amax > 0, amax / top, torch.ones_like(amax))  # an all-zero row keeps codes 0
    codes = (w.detach().float() / scale).round().clamp(-top, top).to(torch.int8)
    return codes, scale


def dequantize_per_channel(codes: Int8[Tensor, "out in"], scale: Float[Tensor, "out 1"]) -> Float[Tensor, "out in"]:
    """Back to fp32: codes * scale, row by row (notebook 08)."""
    return codes.float() * scale


def pack_int4(codes: Int8[Tensor, "out in"]) -> UInt8[Tensor, "out half"]:
    """Two int4 codes (-8..7) per uint8 byte: the even column in the low nibble, the odd in the high (notebook 08)."""
    if codes.shape[1] % 2:
        raise ValueError(f"two int4 codes share a byte, so a row needs an even length, got {tuple(codes.shape)}")
    if codes.min() < -8 or codes.max() > 7:
        raise ValueError("int4 codes must lie in -8..7: four bits in two's complement hold no more")
    nibbles = codes.to(torch.uint8) & 0xF  # two's complement in 4 bits
    return nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)


def unpack_int4(packed: UInt8[Tensor, "out half"]) -> Int8[Tensor, "out in"]:
    """Inverse of pack_int4: sign-extend each nibble back to an int8 code (notebook 08)."""
    low, high = (packed & 0xF).to(torch.int8), (packed >> 4).to(torch.int8)
    both = torch.stack((low, high), dim=-1).flatten(1)
    return torch.where(both > 7, both - 16, both)


def quantize_linears(model: nn.Module, bits: Bits) -> tuple[nn.Module, int]:
    """A copy of model whose Linear weights are rounded to the int grid (stored dequantized, for fp32 compute).

    Recognises both LINEAR_LAYERS: torch's nn.Linear and lecture_utils.nn_basics.Linear. Returns
    the copy and the bytes its quantized weights take as stored: codes (int8, or int4 packed two
    per byte) plus one fp32 scale per row. Biases and other parameters stay fp32 (notebook 08).
    """
    quantized = copy.deepcopy(model)
    linears = [m for m in quantized.modules() if isinstance(m, LINEAR_LAYERS)]
    if not linears:
        raise ValueError("the model has no Linear layers (nn.Linear or nn_basics.Linear) to quantize")
    stored = 0
    for module in linears:
        codes, scale = quantize_per_channel(module.weight, bits)
        kept = pack_int4(codes) if bits == 4 else codes
        stored += tensor_bytes(kept) + tensor_bytes(scale)
        with torch.no_grad():
            module.weight.copy_(dequantize_per_channel(unpack_int4(kept) if bits == 4 else kept, scale))
    return quantized, stored
