"""Strides: where an element of a tensor sits in its storage, and a figure of one storage seen two ways.

A tensor is a view of a flat storage: element (i_0, ..., i_{n-1}) lives at
storage_offset + sum(i_k x stride_k). Views (slices, transposes, .view) change only the
shape, strides and offset, never the storage.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib.pyplot as plt
import torch
from jaxtyping import Shaped
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from lecture_utils.checks import check_dims, check_int
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


def _color(k: int, n: int) -> tuple[float, float, float, float]:
    """Colour of storage element k of n, so a cell and its storage slot match in every panel."""
    return plt.cm.viridis(0.15 + 0.8 * k / max(n - 1, 1))


def _grid(ax: plt.Axes, x0: float, y0: float, rows: int, cols: int, stride: tuple[int, int], title: str) -> None:
    """Draw a rows x cols tensor whose cell (i, j) shows storage[i*stride0 + j*stride1]."""
    n = rows * cols
    for i in range(rows):
        for j in range(cols):
            k = storage_index((i, j), stride)
            ax.add_patch(Rectangle((x0 + j, y0 - i), 1, 1, facecolor=_color(k, n),
                                   edgecolor="white", lw=2))
            ax.text(x0 + j + 0.5, y0 - i + 0.5, str(k), ha="center", va="center", fontsize=14,
                    color="white" if k < 0.6 * n else "black", fontweight="bold")
        ax.text(x0 - 0.3, y0 - i + 0.5, str(i), ha="right", va="center", fontsize=11, color="#777777")
    for j in range(cols):
        ax.text(x0 + j + 0.5, y0 + 1.2, str(j), ha="center", va="bottom", fontsize=11, color="#777777")
    ax.text(x0 + cols / 2, y0 + 1.9, title, ha="center", va="bottom", fontsize=12, family="monospace")
    ax.text(x0 + cols / 2, y0 - rows + 0.6, f"row step +{stride[0]}, column step +{stride[1]}",
            ha="center", va="top", fontsize=11)


def draw_strides(rows: int = 3, cols: int = 4) -> Figure:
    """One storage of rows x cols floats, read as a rows x cols tensor and through its transpose's strides."""
    check_dims(rows=rows, cols=cols)
    stride = contiguous_strides((rows, cols))
    n = rows * cols
    fig, ax = plt.subplots(figsize=(7, 5))
    top = 5.0
    ax.text(-0.3, top + 0.5, "storage", ha="right", va="center", fontsize=13, fontweight="bold")
    for k in range(n):
        ax.add_patch(Rectangle((k, top), 1, 1, facecolor=_color(k, n),
                               edgecolor="white", lw=2))
        ax.text(k + 0.5, top + 0.5, str(k), ha="center", va="center", fontsize=14,
                color="white" if k < 0.6 * n else "black", fontweight="bold")
    ax.text(n / 2, top + 1.3, f"{n} floats in one flat block: torch.arange({n}.)", ha="center", fontsize=12)
    left = n / 2 - cols - 2.5
    _grid(ax, left, 0.5, rows, cols, stride,
          f"x = storage.view({rows}, {cols})\nshape ({rows}, {cols})\nstride {stride}")
    _grid(ax, n / 2 + 2.0, 0.5, cols, rows, stride[::-1],
          f"x.T: same storage\nshape ({cols}, {rows})\nstride {stride[::-1]}")
    ax.text(n / 2, -cols + 0.2, "element (i, j) sits at\nstorage[offset + i x stride[0] + j x stride[1]]",
            ha="center", va="top", fontsize=12, style="italic")
    ax.set_xlim(-2.5, n + 1.5)
    ax.set_ylim(-cols - 1.4, top + 1.8)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig
