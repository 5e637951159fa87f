"""Floating-point formats (notebook 01): their bit fields read off real tensors, their range and spacing.

Each format is 1 sign bit, `exponent_bits` of biased exponent and `fraction_bits` of fraction.
A normal number is (-1)^sign x 2^(exponent - bias) x (1 + fraction / 2^fraction_bits); an
all-zeros exponent marks a subnormal, (-1)^sign x 2^(1 - bias) x (fraction / 2^fraction_bits).
"""

import math
from dataclasses import dataclass

import torch
from jaxtyping import Float


@dataclass(frozen=True)
class FloatFormat:
    """A float format's layout: 1 sign bit, `exponent_bits` biased exponent, `fraction_bits` fraction (notebook 01)."""

    name: str
    dtype: torch.dtype
    exponent_bits: int
    fraction_bits: int
    # IEEE 754 reserves the all-ones exponent for inf and NaN. float8_e4m3fn ("finite, NaN") does
    # not: it has no inf, and only the all-ones exponent *and* fraction pattern is NaN.
    ieee_specials: bool = True

    @property
    def bits(self) -> int:
        """Total width: sign + exponent + fraction."""
        return 1 + self.exponent_bits + self.fraction_bits

    @property
    def bias(self) -> int:
        """What is subtracted from the stored exponent: 2^(exponent_bits - 1) - 1."""
        return 2 ** (self.exponent_bits - 1) - 1

    @property
    def int_dtype(self) -> torch.dtype:
        """The integer dtype of the same width, for reading the raw bits with tensor.view()."""
        return {32: torch.int32, 16: torch.int16, 8: torch.uint8}[self.bits]

    @property
    def smallest_subnormal(self) -> float:
        """The smallest positive value: bit pattern 0...01, that is 2^(1 - bias - fraction_bits)."""
        return math.ldexp(1.0, 1 - self.bias - self.fraction_bits)


FORMATS: dict[str, FloatFormat] = {
    f.name: f
    for f in (
        FloatFormat("fp32", torch.float32, 8, 23),
        FloatFormat("fp16", torch.float16, 5, 10),
        FloatFormat("bf16", torch.bfloat16, 8, 7),
        FloatFormat("fp8 e4m3", torch.float8_e4m3fn, 4, 3, ieee_specials=False),
        FloatFormat("fp8 e5m2", torch.float8_e5m2, 5, 2),
    )
}


def float_format(dtype: torch.dtype) -> FloatFormat:
    """The layout of a floating-point dtype: fp32, fp16, bf16, fp8 e4m3fn, fp8 e5m2 (notebook 01)."""
    for fmt in FORMATS.values():
        if fmt.dtype == dtype:
            return fmt
    raise ValueError(f"no bit layout for {dtype}; expected one of {[f.dtype for f in FORMATS.values()]}")


@dataclass(frozen=True)
class FloatBits:
    """The three bit fields of one stored value, as unsigned integers (notebook 01)."""

    format: FloatFormat
    sign: int
    exponent: int
    fraction: int

    def bit_string(self, sep: str = " ") -> str:
        """The bits, most significant first, with `sep` between sign, exponent and fraction."""
        fmt = self.format
        return sep.join(
            (f"{self.sign:b}", f"{self.exponent:0{fmt.exponent_bits}b}", f"{self.fraction:0{fmt.fraction_bits}b}")
        )

    @property
    def is_subnormal(self) -> bool:
        """An all-zeros exponent field: no implicit leading 1 (zero is one of these)."""
        return self.exponent == 0

    def value(self) -> float:
        """Rebuild the number from the fields alone, with the format's rules for zero, subnormals, inf, NaN."""
        fmt = self.format
        sign = -1.0 if self.sign else 1.0
        top_exponent = 2**fmt.exponent_bits - 1
        if self.exponent == top_exponent:
            if fmt.ieee_specials:
                return sign * math.inf if self.fraction == 0 else math.nan
            if self.fraction == 2**fmt.fraction_bits - 1:
                return math.nan
        if self.is_subnormal:
            return sign * math.ldexp(self.fraction, 1 - fmt.bias - fmt.fraction_bits)
        return sign * math.ldexp(2**fmt.fraction_bits + self.fraction, self.exponent - fmt.bias - fmt.fraction_bits)

    def formula(self) -> str:
        """The value written out from its fields, e.g. '+2^(128-127) x (1 + 4788187/2^23)'."""
        fmt = self.format
        sign = "-" if self.sign else "+"
        if self.is_subnormal:
            return f"{sign}2^(1-{fmt.bias}) x (0 + {self.fraction}/2^{fmt.fraction_bits})"
        return f"{sign}2^({self.exponent}-{fmt.bias}) x (1 + {self.fraction}/2^{fmt.fraction_bits})"


def float_bits(x: float, dtype: torch.dtype) -> FloatBits:
    """Round `x` to `dtype`, read its sign, exponent and fraction bits with tensor.view(int dtype) (notebook 01)."""
    fmt = float_format(dtype)
    raw = int(torch.tensor([x], dtype=torch.float64).to(dtype).view(fmt.int_dtype).item())
    raw &= 2**fmt.bits - 1  # int32/int16 read the top bit as a sign; we want the plain bit pattern
    return FloatBits(
        fmt,
        sign=raw >> (fmt.bits - 1),
        exponent=(raw >> fmt.fraction_bits) & (2**fmt.exponent_bits - 1),
        fraction=raw & (2**fmt.fraction_bits - 1),
    )


@dataclass(frozen=True)
class FloatRange:
    """What torch.finfo says about a format, plus the smallest subnormal that finfo leaves out (notebook 01)."""

    name: str
    bits: int
    eps: float
    max: float
    tiny: float
    smallest_subnormal: float


def float_range(dtype: torch.dtype) -> FloatRange:
    """eps (gap above 1), max, tiny (smallest normal) and smallest subnormal of a float dtype (notebook 01)."""
    fmt = float_format(dtype)
    info = torch.finfo(dtype)
    return FloatRange(fmt.name, info.bits, info.eps, info.max, info.tiny, fmt.smallest_subnormal)


def ulp(x: Float[torch.Tensor, "*shape"], dtype: torch.dtype) -> Float[torch.Tensor, "*shape"]:
    """Gap (float64) between |x| rounded to `dtype` and the next larger value of its binade (notebooks 01, 08).

    NaN where x is not finite. Notebook 08 uses it to say which updates a bf16 weight loses.
    """
    fmt = float_format(dtype)
    stored = x.to(dtype).to(torch.float64).abs()
    _, exponent = torch.frexp(stored)  # stored = m x 2^exponent with m in [0.5, 1); frexp(0) gives 0
    # Below the normal range (zero included) the gap stops shrinking: subnormals are spaced 2^(1-bias-fraction_bits).
    binade = torch.where(stored > 0, exponent - 1, 1 - fmt.bias).clamp(min=1 - fmt.bias)
    gap = torch.ldexp(torch.ones_like(stored), binade - fmt.fraction_bits)
    return torch.where(torch.isfinite(stored), gap, torch.nan)


def relative_spacing(x: Float[torch.Tensor, "*shape"], dtype: torch.dtype) -> Float[torch.Tensor, "*shape"]:
    """ulp / |x| after rounding x to `dtype`: the relative rounding step there (notebook 01).

    NaN where x rounds to 0 or inf. lecture_utils.figures.floats draws it.
    """
    gaps = ulp(x, dtype)
    stored = x.to(dtype).to(torch.float64).abs()
    return torch.where(stored > 0, gaps / stored, torch.nan)
