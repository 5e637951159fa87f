"""Seeding, every RNG state in a safe-to-load form, and checkpoints that resume a run bit for bit.

A full checkpoint is the assignment's checkpoint (lecture_utils.checkpointing: model, optimizer,
iteration) plus every random stream and a format version, written with the same atomic save.
checkpointing.load_checkpoint reads one too; it just ignores the RNG states. Taught in notebook 07.
"""

import random
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from lecture_utils.checkpointing import atomic_save
from lecture_utils.checks import NonNegativeInt

FORMAT_VERSION = 2  # 2: the step is stored under the assignment's key, "iteration"
_KEYS = {"format_version", "iteration", "model", "optimizer", "rng"}


def seed_everything(seed: NonNegativeInt) -> None:
    """Seed Python's `random`, NumPy's global generator and torch on the CPU and every GPU (notebook 07)."""
    if seed >= 2**32:  # NumPy's legacy seeding takes 32 bits
        raise ValueError(f"seed must be below 2**32, got {seed}")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device


def rng_state(data_generator: torch.Generator) -> dict[str, Any]:
    """Every random stream a training run draws from, as tensors and plain numbers (notebook 07).

    Tensors and plain numbers only, so torch.load(..., weights_only=True) reads them back.
    """
    py_version, py_internal, py_gauss = random.getstate()
    np_name, np_keys, np_pos, np_has_gauss, np_cached = np.random.get_state()
    return {
        "python": {
            "version": py_version,
            "internal": torch.tensor(py_internal, dtype=torch.int64),
            "gauss_next": py_gauss,
        },
        # NumPy hands back a uint32 ndarray; an int64 tensor holds it exactly and is safe to unpickle.
        "numpy": {
            "name": np_name,
            "keys": torch.from_numpy(np_keys.astype(np.int64)),
            "pos": int(np_pos),
            "has_gauss": int(np_has_gauss),
            "cached_gaussian": float(np_cached),
        },
        "torch_cpu": torch.get_rng_state(),
        "torch_cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "data": data_generator.get_state(),
    }


def set_rng_state(state: dict[str, Any], data_generator: torch.Generator) -> None:
    """Put every stream back where rng_state found it (CUDA streams only where as many GPUs; notebook 07)."""
    missing = {"python", "numpy", "torch_cpu", "torch_cuda", "data"} - set(state)
    if missing:
        raise ValueError(f"RNG state is missing {sorted(missing)}; expected the dict rng_state returns")
    py = state["python"]
    random.setstate((py["version"], tuple(py["internal"].tolist()), py["gauss_next"]))
    npy = state["numpy"]
    np.random.set_state(
        (npy["name"], npy["keys"].numpy().astype(np.uint32), npy["pos"], npy["has_gauss"], npy["cached_gaussian"])
    )
    torch.set_rng_state(state["torch_cpu"])
    cuda_states = state["torch_cuda"]
    if cuda_states and torch.cuda.is_available() and torch.cuda.device_count() == len(cuda_states):
        torch.cuda.set_rng_state_all(cuda_states)
    data_generator.set_state(state["data"])


def save_full_checkpoint(
    path: str | Path,
    *,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    step: NonNegativeInt,
    data_generator: torch.Generator,
) -> Path:
    """Atomically write what a bit-exact resume needs: model, optimizer state, step and every RNG state.

    The keys model, optimizer and iteration are checkpointing.save_checkpoint's; rng and
    format_version are added. Returns the path, as a Path (notebook 07).
    """
    checkpoint = {
        "format_version": FORMAT_VERSION,
        "iteration": step,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "rng": rng_state(data_generator),
    }
    atomic_save(checkpoint, path)
    return Path(path)


def load_full_checkpoint(
    path: str | Path,
    *,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None,
    data_generator: torch.Generator | None,
) -> int:
    """Load a save_full_checkpoint file into existing objects and return its step (notebook 07).

    weights_only=True refuses any pickled object but tensors and plain containers, so a
    checkpoint from elsewhere cannot run code on load. Pass optimizer=None or data_generator=None
    to skip restoring the optimizer state or the RNG states (to see what that breaks).
    """
    checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(checkpoint, dict) or not _KEYS <= set(checkpoint):
        raise ValueError(
            f"{Path(path).name} is not a checkpoint written by save_full_checkpoint; expected keys {sorted(_KEYS)}"
        )
    if checkpoint["format_version"] != FORMAT_VERSION:
        raise ValueError(f"checkpoint format {checkpoint['format_version']} is not the supported {FORMAT_VERSION}")
    model.load_state_dict(checkpoint["model"])
    if optimizer is not None:
        optimizer.load_state_dict(checkpoint["optimizer"])
    if data_generator is not None:
        set_rng_state(checkpoint["rng"], data_generator)
    return checkpoint["iteration"]
