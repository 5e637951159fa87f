"""The 2026 lecture's five ops on the roofline: FLOPs, bytes moved and the MFU ceiling (notebook 04).

ReLU and GELU on n values, a dot product of two n-vectors, an (n x n) matrix times an n-vector and
an n x n matmul. Each reads its inputs once and writes its output once. The roofline caps each one's
MFU at min(1, intensity / ridge), the ridge being the chip's peak over its bandwidth (the lecture's
"accelerator intensity"): far below 1 for all but the matmul on an H100.
"""

from dataclasses import dataclass

import torch

from lecture_utils.checks import PositiveFloat, PositiveInt
from lecture_utils.flops import arithmetic_intensity, matmul_bytes, matmul_flops

# FLOPs per value, as the 2026 lecture counts them: ReLU compares each value with 0; GELU's tanh
# is approximated (by a polynomial, say), about 20 FLOPs in all. torch's default gelu, which
# roofline.time_activations times, is the erf form instead.
ACTIVATION_FLOPS = {"relu": 1, "gelu": 20}


@dataclass(frozen=True)
class OpCount:
    """One op's work and traffic: FLOPs, and the bytes of its inputs read and its output written (notebook 04)."""

    name: str
    flops: PositiveInt
    bytes_moved: PositiveInt

    @property
    def intensity(self) -> float:
        """FLOPs per byte moved."""
        return arithmetic_intensity(self.flops, self.bytes_moved)


def five_ops(n: PositiveInt, dtype: torch.dtype = torch.bfloat16) -> list[OpCount]:
    """ReLU, GELU, dot product, matrix-vector product and matmul at size n, in `dtype` (notebook 04).

    The products are matmuls of row vectors, (1 x n)(n x 1) and (1 x n)(n x n), counted by
    matmul_flops at 2 FLOPs per multiply-add; the lecture writes 2n - 1 for a dot product, leaving
    out the first add, which changes nothing at this scale.
    """
    elementwise = 2 * n * dtype.itemsize  # read x, write y
    products = {"dot": ((1, n), (n, 1)), "matvec": ((1, n), (n, n)), "matmul": ((n, n), (n, n))}
    return [
        *(OpCount(name, per_value * n, elementwise) for name, per_value in ACTIVATION_FLOPS.items()),
        *(OpCount(name, matmul_flops(*shapes), matmul_bytes(*shapes, dtype)) for name, shapes in products.items()),
    ]


def mfu_ceiling(intensity: PositiveFloat, ridge: PositiveFloat) -> float:
    """The highest MFU the roofline allows an op of `intensity` on a chip's `ridge`: min(1, I / ridge) (notebook 04)."""
    return min(1.0, intensity / ridge)
