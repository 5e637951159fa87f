"""fp4 (e2m1) and its two block-scaled formats, NVFP4 and MXFP4, emulated in fp32 on any device (notebook 01).

An e2m1 number is 1 sign bit, 2 exponent bits (bias 1) and 1 fraction bit, with no inf or NaN:
exponent 0 is subnormal (0 or 0.5), the others give 1, 1.5, 2, 3, 4, 6. Sixteen codes, fifteen
values (+0 and -0). A value that coarse is only useful with a scale beside each small block:

- NVFP4 (NVIDIA, Blackwell): blocks of 16 values, each with an fp8 e4m3 scale, and one fp32
  scale for the whole tensor that brings the block scales into e4m3's range.
- MXFP4 (OCP Microscaling): blocks of 32 values, each with an e8m0 scale, a bare power of two
  (the spec's rule for it, or the round-up rule some hardware and torch's tests use).

Here a quantized matrix is its codes (one int per value) and its scales; `values` multiplies them
back out in fp32, so the error can be measured on any device, and `pack_e2m1` stores the codes two
to a byte, as `torch.float4_e2m1fn_x2`.
"""

from dataclasses import dataclass
from typing import Literal

import torch
from jaxtyping import Float, Int
from torch import Tensor

from lecture_utils.checks import NonNegativeInt, PositiveInt

E2M1_MAX = 6.0
_E2M1_EMAX = 2  # the exponent of e2m1's largest power of two, 4
# The eight magnitudes in code order 0b000 ... 0b111: (exponent, fraction) = (00,0) (00,1) (01,0) ...
_MAGNITUDES = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
_MIDPOINTS = (_MAGNITUDES[1:] + _MAGNITUDES[:-1]) / 2


def e2m1_value(code: int) -> float:
    """The value of a 4-bit e2m1 code, from its bit fields: sign, exponent (bias 1), fraction (notebook 01)."""
    if not 0 <= code < 16:
        raise ValueError(f"an e2m1 code is 4 bits, 0 to 15, not {code}")
    sign, exponent, fraction = code >> 3, (code >> 1) & 0b11, code & 1
    magnitude = fraction / 2 if exponent == 0 else 2.0 ** (exponent - 1) * (1 + fraction / 2)
    return -magnitude if sign else magnitude


def e2m1_codes(x: Float[Tensor, "*shape"]) -> Int[Tensor, "*shape"]:
    """The nearest e2m1 code of each value: ties to an even fraction bit, past 6 saturating at 6 (notebook 01)."""
    if not torch.isfinite(x).all():
        raise ValueError("x must be finite: e2m1 has no inf or NaN")
    a, midpoints = x.detach().float().abs(), _MIDPOINTS.to(x.device)
    below, above = torch.bucketize(a, midpoints), torch.bucketize(a, midpoints, right=True)
    # The two differ only on a midpoint: keep the even code (fraction bit 0), as IEEE rounding does.
    index = torch.where(below % 2 == 0, below, above)
    return index + 8 * x.detach().signbit()


def e2m1_decode(codes: Int[Tensor, "*shape"]) -> Float[Tensor, "*shape"]:
    """The fp32 value of each e2m1 code, by table: code 8 + c is the negative of code c (notebook 01)."""
    magnitude = _MAGNITUDES.to(codes.device)[codes % 8]
    return torch.where(codes >= 8, -magnitude, magnitude)


def round_e2m1(x: Float[Tensor, "*shape"]) -> Float[Tensor, "*shape"]:
    """x rounded to the nearest e2m1 value, as fp32 (notebook 01)."""
    return e2m1_decode(e2m1_codes(x))


def pack_e2m1(codes: Int[Tensor, "*rows cols"]) -> Tensor:
    """Two 4-bit codes a byte, the first in the low nibble, as torch.float4_e2m1fn_x2 (notebook 01).

    That dtype only stores: this torch cannot compute with it on a CPU, so the notes compute in fp32.
    """
    if codes.shape[-1] % 2 or ((codes < 0) | (codes > 15)).any():
        raise ValueError("pack an even number of codes per row, each 0 to 15")
    pairs = codes.to(torch.uint8).unflatten(-1, (-1, 2))
    return (pairs[..., 0] | pairs[..., 1] << 4).view(torch.float4_e2m1fn_x2)


@dataclass(frozen=True)
class BlockQuantized:
    """A matrix in a block-scaled fp4 format: its e2m1 codes and the scales they are multiplied by (notebook 01)."""

    codes: Int[Tensor, "rows cols"]
    block_scales: Float[Tensor, "rows blocks"]  # one per block, as stored, times the tensor scale
    tensor_scale: float  # NVFP4's fp32 scale (1.0 for MXFP4, which has none)
    block: int

    @property
    def values(self) -> Float[Tensor, "rows cols"]:
        """The dequantized matrix, fp32: each code's value times its block's scale."""
        signed = e2m1_decode(self.codes).unflatten(1, (-1, self.block))
        return (signed * self.block_scales[..., None]).flatten(1)


def _blocks(x: Float[Tensor, "rows cols"], block: int) -> Float[Tensor, "rows blocks block"]:
    if x.shape[1] % block:
        raise ValueError(f"{x.shape[1]} columns do not split into blocks of {block}")
    if not torch.isfinite(x).all():
        raise ValueError("x must be finite: an inf or NaN would make its block's scale meaningless")
    return x.detach().float().reshape(x.shape[0], -1, block)


def quantize_nvfp4(x: Float[Tensor, "rows cols"]) -> BlockQuantized:
    """NVFP4: e2m1 codes in blocks of 16 along a row, an e4m3 scale per block, an fp32 scale per tensor (notebook 01).

    The tensor scale maps the largest block scale, amax / 6, onto e4m3's max (448); each block's
    scale, amax_block / 6 in those units, is then rounded to e4m3 and the block's values to e2m1.
    """
    blocks = _blocks(x, 16)
    e4m3_max = torch.finfo(torch.float8_e4m3fn).max
    amax = blocks.abs().amax().item()
    tensor_scale = amax / (E2M1_MAX * e4m3_max) if amax > 0 else 1.0
    stored = (blocks.abs().amax(dim=2) / E2M1_MAX / tensor_scale).to(torch.float8_e4m3fn).float()
    scale = stored * tensor_scale
    # A block whose scale rounds to 0 in e4m3 stores zeros: divide it by 1 and multiply back by 0.
    codes = e2m1_codes(blocks / torch.where(scale > 0, scale, 1.0)[..., None])
    codes = torch.where(scale[..., None] > 0, codes, 0)
    return BlockQuantized(codes.flatten(1), scale, tensor_scale, 16)


def quantize_mxfp4(x: Float[Tensor, "rows cols"], scale_rule: Literal["ocp", "rceil"] = "ocp") -> BlockQuantized:
    """MXFP4: e2m1 codes in blocks of 32 along a row, each block scaled by a power of two (e8m0) (notebook 01).

    scale_rule "ocp", the OCP MX spec's: 2^(floor(log2 amax) - 2), e2m1's largest power of two being
    2^2, so a block's largest values may land past 6 and saturate there. "rceil" (torch's test
    reference, NVIDIA's hardware option): the smallest power of two that brings amax to 6 or below,
    found exactly from amax's bits. (ceil(log2(amax / 6)) computed in fp32, as torch's reference and
    torchao do, comes out one too small for amax a few ulps above 6 x 2^k, and that block's largest
    value then saturates at 6.)
    """
    if scale_rule not in ("ocp", "rceil"):
        raise ValueError(f'scale_rule is "ocp" or "rceil", not {scale_rule!r}')
    blocks = _blocks(x, 32)
    amax = blocks.abs().amax(dim=2)
    # frexp: amax = m * 2^e, m in [0.5, 1), exactly; no logarithm is rounded
    mantissa, power = torch.frexp(amax)
    if scale_rule == "ocp":
        exponent = (power - 1 - _E2M1_EMAX).float()
    else:  # 6 x 2^(e - 3) = 0.75 x 2^e holds amax when m <= 0.75, else 6 x 2^(e - 2) = 1.5 x 2^e
        exponent = (power - 3 + (mantissa > 0.75).int()).float()
    # e8m0 holds 2^-127 ... 2^127; an all-zero block takes scale 1
    scale = torch.where(amax > 0, torch.exp2(exponent.clamp(-127, 127)), 1.0)
    return BlockQuantized(e2m1_codes(blocks / scale[..., None]).flatten(1), scale, 1.0, 32)


def bits_per_value(
    block: PositiveInt, scale_bits: PositiveInt, numel: PositiveInt | None = None, tensor_bits: NonNegativeInt = 0
) -> float:
    """Storage bits per value of a block-scaled 4-bit format: 4 + scale_bits / block, plus a tensor scale (notebook 01).

    NVFP4: bits_per_value(16, 8, numel, 32) = 4.5 + 32 / numel; MXFP4: bits_per_value(32, 8) = 4.25.
    """
    if tensor_bits and numel is None:
        raise ValueError("a tensor scale is shared by the tensor's values: give numel to spread its bits")
    return 4 + scale_bits / block + (tensor_bits / numel if tensor_bits else 0.0)
