"""Post-training weight quantization: symmetric per-channel int8 and int4, with int4 packed two to a byte.

Each output channel (a row of a Linear weight) gets its own scale, amax(|row|) / qmax, so one
large row does not coarsen the steps of every other. Symmetric means no zero point: the integer
grid is -qmax..qmax with qmax = 2^(bits-1) - 1 (127 for int8, 7 for int4), and w ~ q * scale.
"""

from __future__ import annotations

import copy

import torch
from jaxtyping import Float, Int
from torch import nn

BITS = (8, 4)


def qmax(bits: int) -> int:
    """Largest integer of the symmetric grid: 127 for int8, 7 for int4."""
    if bits not in BITS:
        raise ValueError(f"bits must be one of {BITS}, got {bits!r}")
    return 2 ** (bits - 1) - 1


def quantize_per_channel(
    w: Float[torch.Tensor, "out in"], bits: int
) -> tuple[Int[torch.Tensor, "out in"], Float[torch.Tensor, "out 1"]]:
    """Round each row of w to the grid -qmax..qmax under its own fp32 scale; returns (int8 codes, scales)."""
    if not isinstance(w, torch.Tensor) or not w.is_floating_point() or w.dim() != 2:
        raise TypeError(f"expected a 2-D floating-point weight, got {getattr(w, 'shape', type(w).__name__)}")
    if not torch.isfinite(w).all():
        raise ValueError("w must be finite: an inf or NaN would make its row's scale meaningless")
    top = qmax(bits)
    amax = w.detach().float().abs().amax(dim=1, keepdim=True)
    scale = torch.where(amax > 0, amax / top, torch.ones_like(amax))  # an all-zero row keeps codes 0
    codes = (w.detach().float() / scale).round().clamp(-top, top).to(torch.int8)
    return codes, scale


def dequantize_per_channel(
    codes: Int[torch.Tensor, "out in"], scale: Float[torch.Tensor, "out 1"]
) -> Float[torch.Tensor, "out in"]:
    """Back to fp32: codes * scale, row by row."""
    if codes.dtype != torch.int8 or scale.shape != (codes.shape[0], 1):
        raise ValueError(f"expected int8 codes (out, in) and scales (out, 1), got {codes.dtype} "
                         f"{tuple(codes.shape)} and {tuple(scale.shape)}")
    return codes.float() * scale


def pack_int4(codes: Int[torch.Tensor, "out in"]) -> Int[torch.Tensor, "out half"]:
    """Two int4 codes (-8..7) per uint8 byte: the even column in the low nibble, the odd one in the high."""
    if codes.dtype != torch.int8 or codes.dim() != 2 or codes.shape[1] % 2:
        raise ValueError(f"expected int8 codes (out, in) with an even 'in', got {codes.dtype} {tuple(codes.shape)}")
    if codes.min() < -8 or codes.max() > 7:
        raise ValueError("int4 codes must lie in -8..7")
    nibbles = codes.to(torch.uint8) & 0xF  # two's complement in 4 bits
    return nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)


def unpack_int4(packed: Int[torch.Tensor, "out half"]) -> Int[torch.Tensor, "out in"]:
    """Inverse of pack_int4: sign-extend each nibble back to an int8 code."""
    if packed.dtype != torch.uint8 or packed.dim() != 2:
        raise ValueError(f"expected uint8 (out, in/2), got {packed.dtype} {tuple(packed.shape)}")
    low, high = (packed & 0xF).to(torch.int8), (packed >> 4).to(torch.int8)
    both = torch.stack((low, high), dim=-1).flatten(1)
    return torch.where(both > 7, both - 16, both)


def quantize_linears(model: nn.Module, bits: int) -> tuple[nn.Module, int]:
    """A copy of model whose Linear weights are rounded to the int grid (stored dequantized, for fp32 compute).

    Returns the copy and the bytes its quantized weights take as stored: codes (int8, or int4
    packed two per byte) plus one fp32 scale per row. Biases and other parameters stay fp32.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    if not linears:
        raise ValueError("the model has no nn.Linear layers to quantize")
    qmax(bits)  # rejects unsupported widths before any copying
    quantized = copy.deepcopy(model)
    stored = 0
    for module in (m for m in quantized.modules() if isinstance(m, nn.Linear)):
        codes, scale = quantize_per_channel(module.weight, bits)
        kept = pack_int4(codes) if bits == 4 else codes
        stored += kept.numel() * kept.element_size() + scale.numel() * scale.element_size()
        with torch.no_grad():
            module.weight.copy_(dequantize_per_channel(unpack_int4(kept) if bits == 4 else kept, scale))
    return quantized, stored
