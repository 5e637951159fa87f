"""How many bytes a tensor takes, and how to say a byte count so people can read it."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch

_BINARY_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
_DECIMAL_UNITS = ["B", "kB", "MB", "GB", "TB", "PB"]


def tensor_bytes(x: torch.Tensor) -> int:
    """Bytes of the tensor's own elements: numel x element_size (a view is charged its own extent)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"expected a torch.Tensor, got {type(x).__name__}")
    return x.numel() * x.element_size()


def storage_bytes(x: torch.Tensor) -> int:
    """Bytes of the storage behind the tensor, shared by every view of it."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"expected a torch.Tensor, got {type(x).__name__}")
    return x.untyped_storage().nbytes()


def dtype_bytes(dtype: torch.dtype) -> int:
    """Bytes of one element of a dtype (fp32 4, bf16 2, fp8 1)."""
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"expected a torch.dtype, got {type(dtype).__name__}")
    return dtype.itemsize


def format_bytes(n: int | float, *, binary: bool = True, digits: int = 1) -> str:
    """A byte count in the largest unit that keeps it >= 1: binary (KiB = 1024 B) or decimal (kB = 1000 B)."""
    if isinstance(n, bool) or not isinstance(n, (int, float)):
        raise TypeError(f"expected a number of bytes, got {type(n).__name__}")
    if n < 0:
        raise ValueError(f"a byte count cannot be negative, got {n}")
    base, units = (1024, _BINARY_UNITS) if binary else (1000, _DECIMAL_UNITS)
    value, unit = float(n), units[0]
    for unit in units:
        if value < base or unit == units[-1]:
            break
        value /= base
    if unit == "B":
        return f"{int(n)} B" if float(n).is_integer() else f"{n:.{digits}f} B"
    return f"{value:.{digits}f} {unit}"


def saved_tensor_bytes(fn: Callable[[], object], *, exclude: Iterable[torch.Tensor] = ()) -> int:
    """Bytes autograd keeps alive for backward while `fn()` runs its forward pass.

    Each storage is counted once, whole (a saved view keeps its full storage alive). Tensors in
    `exclude` (typically the model's parameters, which exist anyway) are not counted.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    excluded = {t.untyped_storage().data_ptr() for t in exclude}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in excluded:
            saved[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return sum(saved.values())
