"""Seeding, every RNG state in a safe-to-load form, and checkpoints that resume a run bit for bit.

A full checkpoint is the assignment's checkpoint (lecture_utils.checkpointing: model, optimizer,
iteration) plus every random stream, the run's config, the environment it ran in and a format
version, written with the same atomic save. checkpointing.load_checkpoint reads one too; it just
ignores the rest.

Bit for bit also needs what no file holds: the same torch release, the same hardware (GPU model,
and CPU for CPU runs) and the same number of CPU threads, since each can change how a sum is
split and so the last bits of a step, which training then amplifies. The checkpoint records the
torch version, the thread count and the GPUs' names, not the CPU model (no portable name for it),
and loading warns (ResumeWarning) on each recorded one that differs, and when the GPU random
streams cannot be restored. Taught in notebook 07.
"""

import random
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from lecture_utils.checkpointing import atomic_save
from lecture_utils.checks import NonNegativeInt
from lecture_utils.data import drawn_ahead

FORMAT_VERSION = 3  # 3: adds the run's config and the environment; 2: the step under "iteration"
_KEYS = {"format_version", "iteration", "model", "optimizer", "rng", "config", "environment"}
Config = dict[str, bool | int | float | str]


class ResumeWarning(UserWarning):
    """A resume that will not be bit-exact: the checkpoint was written under other conditions (notebook 07)."""


def seed_everything(seed: NonNegativeInt) -> None:
    """Seed Python's `random`, NumPy's global generator and torch on the CPU and every GPU (notebook 07)."""
    if seed >= 2**32:  # NumPy's legacy seeding takes 32 bits
        raise ValueError(f"seed must be below 2**32, got {seed}")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device


def _gpu_count() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def rng_state(data_generator: torch.Generator, data_state: torch.Tensor | None = None) -> dict[str, Any]:
    """Every random stream a training run draws from, as tensors and plain numbers (notebook 07).

    Tensors and plain numbers only, so torch.load(..., weights_only=True) reads them back.
    data_state replaces data_generator's own state: a Prefetcher's data_state(), when its thread
    has drawn past the batch in flight. A generator a running Prefetcher draws ahead from is refused
    without it, since saving its state would skip that batch on resume.
    """
    if data_state is None and drawn_ahead(data_generator):
        raise ValueError(
            "a Prefetcher's thread draws ahead from this generator: pass data_state=prefetcher.data_state(), "
            "its state before the batch in flight, or the resumed run skips that batch"
        )
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
        "torch_cuda": torch.cuda.get_rng_state_all() if _gpu_count() else [],
        "data": data_generator.get_state() if data_state is None else data_state.clone(),
    }


def set_rng_state(state: dict[str, Any], data_generator: torch.Generator) -> None:
    """Put every stream back where rng_state found it (notebook 07).

    The GPU streams are restored only where this process sees as many GPUs as the saving one did;
    otherwise they are left as they are, with a ResumeWarning.
    """
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
    cuda_states, gpus = state["torch_cuda"], _gpu_count()
    if len(cuda_states) == gpus:
        if gpus:
            torch.cuda.set_rng_state_all(cuda_states)
    else:
        warnings.warn(
            f"the checkpoint holds {len(cuda_states)} GPU random streams and this process sees {gpus} GPUs: "
            "they are not restored (dropout on a GPU will draw other masks), so the resume is not bit-exact",
            ResumeWarning,
            stacklevel=2,
        )
    data_generator.set_state(state["data"])


def environment() -> dict[str, Any]:
    """What a bit-exact resume needs unchanged, as recorded: torch's version, CPU threads, GPU names (notebook 07).

    The CPU model is not recorded (no portable name for it): a CPU run resumed on another CPU may
    differ in the last bits without a warning.
    """
    gpus = [torch.cuda.get_device_name(i) for i in range(_gpu_count())]
    return {"torch": str(torch.__version__), "threads": torch.get_num_threads(), "gpus": gpus}


def warn_on_environment_change(saved: dict[str, Any]) -> None:
    """Warn (ResumeWarning) once for each part of environment() that differs from `saved` (notebook 07)."""
    now = environment()
    for key, label in (("torch", "torch version"), ("threads", "torch.get_num_threads()"), ("gpus", "GPUs")):
        if saved.get(key) != now[key]:
            warnings.warn(
                f"{label} was {saved.get(key)!r} when the checkpoint was saved and is {now[key]!r} now: "
                "the resumed run will not be bit-exact",
                ResumeWarning,
                stacklevel=3,
            )


def save_full_checkpoint(
    path: str | Path,
    *,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    step: NonNegativeInt,
    data_generator: torch.Generator,
    config: Config | None = None,
    data_state: torch.Tensor | None = None,
) -> Path:
    """Atomically write what a bit-exact resume needs: model, optimizer state, step, every RNG state, config.

    The keys model, optimizer and iteration are checkpointing.save_checkpoint's. config holds what
    decides the run's course (TrainConfig.trajectory_fields(): total_steps and the schedule among
    them), so a resume can check it continues the same run. data_state: see rng_state. Returns the
    path, as a Path (notebook 07).
    """
    checkpoint = {
        "format_version": FORMAT_VERSION,
        "iteration": step,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "rng": rng_state(data_generator, data_state),
        "config": None if config is None else dict(config),
        "environment": environment(),
    }
    atomic_save(checkpoint, path)
    return Path(path)


def _check_config(saved: Config | None, config: Config) -> None:
    """Refuse to continue a run under another config: a schedule resumed with other settings bends silently."""
    if saved is None:
        raise ValueError("the checkpoint was saved without a config, so a resume cannot check it continues the run")
    keys = sorted(saved.keys() | config.keys())
    changed = [f"{k}: {saved.get(k)!r} saved, {config.get(k)!r} now" for k in keys if saved.get(k) != config.get(k)]
    if changed:
        raise ValueError(
            "the checkpoint was saved under another config (" + "; ".join(changed) + "): resuming would change "
            "the run mid-way, e.g. bend the learning-rate schedule; resume with the saved config"
        )


def _check_format(checkpoint: object, name: str) -> None:
    """Raise ValueError unless `checkpoint` is a full checkpoint of this format, with every key."""
    if not isinstance(checkpoint, dict) or "format_version" not in checkpoint:
        raise ValueError(f"{name} is not a checkpoint written by save_full_checkpoint")
    if checkpoint["format_version"] != FORMAT_VERSION:
        raise ValueError(f"checkpoint format {checkpoint['format_version']} is not the supported {FORMAT_VERSION}")
    if not _KEYS <= set(checkpoint):
        raise ValueError(f"{name} lacks {sorted(_KEYS - set(checkpoint))}; expected keys {sorted(_KEYS)}")


def load_full_checkpoint(
    path: str | Path,
    *,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None,
    data_generator: torch.Generator | None,
    config: Config | None = None,
) -> int:
    """Load a save_full_checkpoint file into existing objects and return its step (notebook 07).

    weights_only=True refuses any pickled object but tensors and plain containers, so a
    checkpoint from elsewhere cannot run code on load. Pass optimizer=None or data_generator=None
    to skip restoring the optimizer state or the RNG states (to see what that breaks). Given a
    config, raise ValueError unless it is the saved one. Warns (ResumeWarning) where torch, the
    thread count or the GPUs differ from the saving process's.
    """
    checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    _check_format(checkpoint, Path(path).name)
    if config is not None:
        _check_config(checkpoint["config"], config)
    warn_on_environment_change(checkpoint["environment"])
    model.load_state_dict(checkpoint["model"])
    if optimizer is not None:
        optimizer.load_state_dict(checkpoint["optimizer"])
    if data_generator is not None:
        set_rng_state(checkpoint["rng"], data_generator)
    return checkpoint["iteration"]
