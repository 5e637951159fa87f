"""fp8 with per-tensor scaling, and a scaled fp8 matmul on hardware that has one (notebook 08).

fp8's range is tiny (e4m3 tops out at 448), so a tensor is scaled before rounding: its largest
magnitude (amax) maps to the format's max, and the scale is kept to undo it, x ~ q.float() * scale.
"""

from typing import Annotated

import torch
from beartype.vale import Is
from jaxtyping import AbstractDtype, Float
from torch import Tensor

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
    fmax = torch.finfo(dtype).max
    amax = x.detach().abs().amax().float()
    scale = torch.where(amax > 0, amax / fmax, torch.ones_like(amax))
    # The clamp guards the top value against rounding just past max (e4m3fn has no inf to absorb it).
    q = (x.float() / scale).clamp(-fmax, fmax).to(dtype)
    return q, scale


def dequantize_fp8(q: Fp8[Tensor, "*shape"], scale: Float[Tensor, ""]) -> Float[Tensor, "*shape"]:
    """Back to fp32: q.float() * scale (notebook 08)."""
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
