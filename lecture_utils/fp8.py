"""fp8 with per-tensor and per-block scaling, and a scaled fp8 matmul where there is one (notebook 08).

fp8's range is tiny (e4m3 tops out at 448), so a tensor is scaled before rounding: its largest
magnitude (amax) maps to the format's max, and the scale is kept to undo it, x ~ q.float() * scale.
Training recipes differ in where the amax comes from (this tensor, or a history of earlier steps:
cast_fp8 takes any scale) and in how many values share one scale (quantize_fp8_blocks).
"""

from typing import Annotated

import torch
from beartype.vale import Is
from jaxtyping import AbstractDtype, Float
from torch import Tensor

from lecture_utils.checks import PositiveInt

FP8_DTYPES = (torch.float8_e4m3fn, torch.float8_e5m2)


class Fp8(AbstractDtype):
    """jaxtyping dtype of an fp8 tensor, e4m3 or e5m2: Fp8[Tensor, "m n"] (notebook 08)."""

    dtypes = tuple(str(dtype).removeprefix("torch.") for dtype in FP8_DTYPES)


# The annotation of a `dtype` argument that must name one of the two fp8 formats.
Fp8Dtype = Annotated[torch.dtype, Is[lambda dtype: dtype in FP8_DTYPES]]


def quantize_fp8(
    x: Float[Tensor, "*shape"], dtype: Fp8Dtype = torch.float8_e4m3fn
) -> tuple[Fp8[Tensor, "*shape"], Float[Tensor, ""]]:
    """Round x to fp8 after scaling its largest magnitude to the format's max: x ~ q.float() * scale (notebook 08)."""
    if x.numel() == 0 or not torch.isfinite(x).all():
        raise ValueError("x must be non-empty and finite: inf or NaN would make the scale meaningless")
    scale = fp8_scale(x.detach().abs().amax(), dtype)
    return cast_fp8(x, scale, dtype), scale


def fp8_scale(amax: Float[Tensor, "*shape"], dtype: Fp8Dtype = torch.float8_e4m3fn) -> Float[Tensor, "*shape"]:
    """The scale that maps amax onto the format's max, amax / max, and 1 where amax is 0 (notebook 08)."""
    amax = amax.detach().float()
    if not torch.isfinite(amax).all() or (amax < 0).any():
        raise ValueError("amax must be finite and non-negative: it is a largest magnitude |x|")
    return torch.where(amax > 0, amax / torch.finfo(dtype).max, torch.ones_like(amax))


def cast_fp8(
    x: Float[Tensor, "*shape"], scale: Float[Tensor, "..."], dtype: Fp8Dtype = torch.float8_e4m3fn
) -> Fp8[Tensor, "*shape"]:
    """x / scale rounded to fp8; values past the format's max saturate there, so a scale too small clips (notebook 08).

    scale broadcasts against x: one number for the tensor, or one per block laid out beside it.
    """
    try:
        fits = torch.broadcast_shapes(x.shape, scale.shape) == x.shape
    except RuntimeError:  # shapes that do not broadcast at all
        fits = False
    if not fits:
        raise ValueError(f"a scale of shape {tuple(scale.shape)} does not broadcast over x of shape {tuple(x.shape)}")
    if not (scale > 0).all() or not torch.isfinite(scale).all():
        raise ValueError("every scale must be positive and finite: x is divided by it")
    fmax = torch.finfo(dtype).max
    # Clip explicitly: e4m3fn has no inf, and before 2.13 torch's CPU cast gave NaN past 448 + half a step.
    return (x.float() / scale).clamp(-fmax, fmax).to(dtype)


def dequantize_fp8(q: Fp8[Tensor, "*shape"], scale: Float[Tensor, "..."]) -> Float[Tensor, "*shape"]:
    """Back to fp32: q.float() * scale, a scale that broadcasts over q, as cast_fp8's (notebook 08)."""
    return q.float() * scale


def fp8_matmul_available(device: torch.device | str) -> bool:
    """True on a CUDA GPU with fp8 tensor cores: compute capability 8.9 (Ada) or later (notebook 08)."""
    device = torch.device(device)
    return device.type == "cuda" and torch.cuda.get_device_capability(device) >= (8, 9)


def scaled_fp8_matmul(
    a: Float[Tensor, "m k"], b: Float[Tensor, "k n"], out_dtype: torch.dtype = torch.bfloat16
) -> Float[Tensor, "m n"]:
    """a @ b with both quantized to e4m3 under per-tensor scales, multiplied by torch._scaled_mm (notebook 08)."""
    # cuBLASLt's fp8 kernels want sizes in multiples of 16, a row-major and b column-major.
    if any(size % 16 for size in (*a.shape, b.shape[1])):
        raise ValueError(f"fp8 matmul needs every dimension a multiple of 16, got {tuple(a.shape)} @ {tuple(b.shape)}")
    qa, scale_a = quantize_fp8(a)
    qb, scale_b = quantize_fp8(b)
    # The scales multiply the fp32 accumulator, so the product comes back at the operands' real size.
    return torch._scaled_mm(
        qa.contiguous(), qb.t().contiguous().t(), scale_a=scale_a, scale_b=scale_b, out_dtype=out_dtype
    )


def quantize_fp8_blocks(
    x: Float[Tensor, "m n"], block: tuple[PositiveInt, PositiveInt], dtype: Fp8Dtype = torch.float8_e4m3fn
) -> tuple[Fp8[Tensor, "m n"], Float[Tensor, "mb nb"]]:
    """One scale per block of block[0] x block[1] values, each from its own amax: (codes, scales) (notebook 08).

    DeepSeek-V3's recipe: (1, 128) tiles for activations (one token, 128 channels), (128, 128)
    blocks for weights. block = x.shape gives the single per-tensor scale of quantize_fp8.
    """
    (m, n), (rows, cols) = x.shape, block
    if m % rows or n % cols:
        raise ValueError(f"blocks of {rows} x {cols} must tile x of shape {(m, n)} exactly")
    if not torch.isfinite(x).all():
        raise ValueError("x must be finite: an inf or NaN would make its block's scale meaningless")
    tiles = x.detach().float().reshape(m // rows, rows, n // cols, cols)  # (block row, row, block col, col)
    scales = fp8_scale(tiles.abs().amax(dim=(1, 3)), dtype)
    codes = cast_fp8(tiles, scales[:, None, :, None], dtype)
    return codes.reshape(m, n), scales


def dequantize_fp8_blocks(q: Fp8[Tensor, "m n"], scales: Float[Tensor, "mb nb"]) -> Float[Tensor, "m n"]:
    """Back to fp32: each block of q times its own scale (notebook 08)."""
    (m, n), (mb, nb) = q.shape, scales.shape
    if m % mb or n % nb:
        raise ValueError(f"a {mb} x {nb} grid of scales does not tile q of shape {(m, n)} into equal blocks")
    tiles = q.reshape(mb, m // mb, nb, n // nb)  # (block row, row, block col, col), as quantize_fp8_blocks
    return dequantize_fp8(tiles, scales[:, None, :, None]).reshape(m, n)
