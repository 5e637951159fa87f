"""Strides: where an element of a tensor sits in its storage, and a figure of one storage seen two ways.

A tensor is a view of a flat storage: element (i_0, ..., i_{n-1}) lives at
storage_offset + sum(i_k x stride_k). Views (slices, transposes, .view) change only the
shape, strides and offset, never the storage.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from jaxtyping import Shaped

from lecture_utils.checks import check_int
from lecture_utils.memory import storage_bytes


def _check_ints(name: str, values: Sequence[int], minimum: int) -> tuple[int, ...]:
    """Raise unless `values` is a sequence of ints, each >= `minimum`; return it as a tuple."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence of ints, got {type(values).__name__}")
    for k, v in enumerate(values):
        check_int(f"{name}[{k}]", v, minimum)
    return tuple(values)


def _check_tensor(x: object) -> None:
    """Raise TypeError unless x is a tensor."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"expected a torch.Tensor, got {type(x).__name__}")


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides of a shape: stride_k is the product of the sizes after dimension k."""
    shape = _check_ints("shape", shape, 1)
    return tuple(math.prod(shape[k + 1:]) for k in range(len(shape)))


def storage_index(index: Sequence[int], stride: Sequence[int], offset: int = 0) -> int:
    """Position of element `index` in storage: offset + sum(i_k x stride_k)."""
    index, stride = _check_ints("index", index, 0), _check_ints("stride", stride, 0)
    check_int("offset", offset, 0)
    if len(index) != len(stride):
        raise ValueError(f"index {index} has {len(index)} dims but stride {stride} has {len(stride)}")
    return offset + sum(i * s for i, s in zip(index, stride))


def storage_elements(x: Shaped[torch.Tensor, "*shape"]) -> Shaped[torch.Tensor, " storage"]:
    """The whole storage behind x as a 1-D tensor of x's dtype; a view, so nothing is copied."""
    _check_tensor(x)
    # as_strided's offset counts from the start of the storage, not from x's own offset.
    return x.as_strided((storage_bytes(x) // x.element_size(),), (1,), 0)


def element_via_storage(x: Shaped[torch.Tensor, "*shape"], index: Sequence[int]) -> Shaped[torch.Tensor, ""]:
    """Read x[index] the way the hardware does: compute its storage position and read the storage there."""
    _check_tensor(x)
    index = _check_ints("index", index, 0)
    if len(index) != x.dim():
        raise ValueError(f"index {index} has {len(index)} dims but the tensor has shape {tuple(x.shape)}")
    for dim, (i, size) in enumerate(zip(index, x.shape)):
        if not 0 <= i < size:
            raise ValueError(f"index {i} is out of range for dim {dim} of size {size}; expected 0 <= i < {size}")
    return storage_elements(x)[storage_index(index, x.stride(), x.storage_offset())]


def shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors are views of the same storage (so writing one changes the other)."""
    _check_tensor(a)
    _check_tensor(b)
    pointer = a.untyped_storage().data_ptr()
    # Every empty storage (and every meta tensor) reports pointer 0, yet none shares data with another.
    return a.device == b.device and pointer != 0 and pointer == b.untyped_storage().data_ptr()
