"""How many bytes a tensor takes, and how to say a byte count so people can read it (notebooks 01, 02)."""

from collections.abc import Callable, Iterable

import torch

from lecture_utils.checks import NonNegativeFloat, NonNegativeInt

_BINARY_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
_DECIMAL_UNITS = ["B", "kB", "MB", "GB", "TB", "PB"]


def tensor_bytes(x: torch.Tensor) -> int:
    """Bytes of the tensor's own elements: numel x element_size, a view charged its own extent (notebook 01)."""
    return x.numel() * x.element_size()


def storage_bytes(x: torch.Tensor) -> int:
    """Bytes of the storage behind the tensor, shared by every view of it (notebook 02)."""
    return x.untyped_storage().nbytes()


def dtype_bytes(dtype: torch.dtype) -> int:
    """Bytes of one element of a dtype: fp32 4, bf16 2, fp8 1 (notebook 01)."""
    return dtype.itemsize


def format_bytes(n: NonNegativeFloat, *, binary: bool = True, digits: NonNegativeInt = 1) -> str:
    """A byte count in the largest unit that keeps it >= 1, binary (KiB = 1024 B) or decimal (kB) (notebook 02)."""
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
    """Bytes autograd keeps alive for backward while `fn()` runs its forward pass (notebook 05).

    Each storage is counted once, whole (a saved view keeps its full storage alive). Tensors in
    `exclude` (typically the model's parameters, which exist anyway) are not counted.
    """
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
