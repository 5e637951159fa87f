"""Strides (notebook 02): where an element of a tensor sits in its storage.

A tensor is a view of a flat storage: element (i_0, ..., i_{n-1}) lives at
storage_offset + sum(i_k x stride_k). Views (slices, transposes, .view) change only the
shape, strides and offset, never the storage. Indexing with a tensor of positions or a boolean
mask is not a view: it copies the picked elements into new storage. `new_bytes` measures the
difference: a view allocates nothing, a copy as much again as the elements it holds.
"""

import math
from collections.abc import Callable, Sequence

import torch
from jaxtyping import Shaped

from lecture_utils.checks import NonNegativeInt, NonNegativeInts, PositiveInts
from lecture_utils.memory import storage_bytes


def contiguous_strides(shape: PositiveInts) -> tuple[int, ...]:
    """Row-major strides of a shape: stride_k is the product of the sizes after dimension k (notebook 02)."""
    return tuple(math.prod(shape[k + 1 :]) for k in range(len(shape)))


def storage_index(index: NonNegativeInts, stride: NonNegativeInts, offset: NonNegativeInt = 0) -> int:
    """Position of element `index` in storage: offset + sum(i_k x stride_k), one stride per dim (notebook 02)."""
    if len(index) != len(stride):  # each dimension has one stride: an index needs one entry per dimension
        raise ValueError(f"index has {len(index)} dims but stride has {len(stride)}: give one index per dimension")
    return offset + sum(i * s for i, s in zip(index, stride, strict=True))


def storage_elements(x: Shaped[torch.Tensor, "*shape"]) -> Shaped[torch.Tensor, " storage"]:
    """The whole storage behind x as a 1-D tensor of x's dtype; a view, so nothing is copied (notebook 02)."""
    # as_strided's offset counts from the start of the storage, not from x's own offset.
    return x.as_strided((storage_bytes(x) // x.element_size(),), (1,), 0)


def element_via_storage(x: Shaped[torch.Tensor, "*shape"], index: Sequence[int]) -> Shaped[torch.Tensor, ""]:
    """Read x[index] as the hardware does: compute its storage position, read the storage there (notebook 02)."""
    # Unchecked, the formula reads some other element (or past the end): it does not know the shape.
    if len(index) != x.dim() or not all(0 <= i < n for i, n in zip(index, x.shape, strict=True)):
        raise ValueError(f"index {tuple(index)} is out of range for shape {tuple(x.shape)}; expected 0 <= i_k < size_k")
    return storage_elements(x)[storage_index(index, x.stride(), x.storage_offset())]


def shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors are views of the same storage, so writing one changes the other (notebook 02)."""
    pointer = a.untyped_storage().data_ptr()
    # Every empty storage (and every meta tensor) reports pointer 0, yet none shares data with another.
    return a.device == b.device and pointer != 0 and pointer == b.untyped_storage().data_ptr()


def new_bytes(make: Callable[[], torch.Tensor], base: torch.Tensor) -> int:
    """Bytes of new memory make() allocates for its result, a tensor made from base (notebook 02).

    On a GPU: how much torch.cuda.memory_allocated grows while the result is alive. A CPU has no
    such counter, so there: 0 when the result is a view of base's storage, else the size of the
    storage the result points into.
    """
    if base.device.type == "cuda":
        before = torch.cuda.memory_allocated(base.device)
        result = make()  # alive while the counter is read
        return torch.cuda.memory_allocated(base.device) - before
    result = make()
    return 0 if shares_storage(result, base) else storage_bytes(result)
