"""Stop a run, checkpoint it, resume it in fresh objects: the harness of every bit-exact-resume check (notebook 07).

A resume is bit-exact when the resumed run ends where the straight run does: the same losses
step by step and the same weights. train_and_save trains a run part of the way and writes its
full checkpoint (lecture_utils.full_checkpoint); resume loads that file into objects built afresh, as
a new process would build them, and trains them to the end. Leaving one part out of the load
shows what that part is for.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from jaxtyping import Integer
from torch import nn

from lecture_utils.checkpointing import remove_stale_temporaries
from lecture_utils.checks import NonNegativeInt
from lecture_utils.full_checkpoint import load_full_checkpoint, save_full_checkpoint
from lecture_utils.training import TrainConfig, TrainLog, train

# Any seed other than the run's own: torch's global stream re-seeded with it draws other dropout masks.
OTHER_SEED = 123


@dataclass(frozen=True)
class Run:
    """What a training process builds at start-up: a model, its optimizer and its data-order generator (notebook 07)."""

    model: nn.Module
    optimizer: torch.optim.Optimizer
    data_generator: torch.Generator


def train_and_save(
    run: Run,
    train_data: Integer[np.ndarray, " tokens"],
    config: TrainConfig,
    path: str | Path,
    *,
    device: torch.device | str,
    stop_step: NonNegativeInt,
) -> TrainLog:
    """Train `run` from step 0 up to stop_step, then write its full checkpoint to `path` (notebook 07).

    Starting, it sweeps the temporaries of killed saves from the checkpoint's directory (on rank 0).
    """
    remove_stale_temporaries(Path(path).parent)
    log = train(
        run.model,
        run.optimizer,
        train_data,
        config,
        device=device,
        data_generator=run.data_generator,
        stop_step=stop_step,
    )
    save_full_checkpoint(
        path,
        model=run.model,
        optimizer=run.optimizer,
        step=stop_step,
        data_generator=run.data_generator,
        config=config.trajectory_fields(),
    )
    return log


def resume(
    path: str | Path,
    fresh: Run,
    train_data: Integer[np.ndarray, " tokens"],
    config: TrainConfig,
    *,
    device: torch.device | str,
    leave_out: Literal["optimizer", "rng", "dropout stream"] | None = None,
) -> tuple[int, TrainLog]:
    """Load the checkpoint at `path` into `fresh`, train it on to config.total_steps; return (step, log) (notebook 07).

    The log holds the steps after the checkpoint's. A config other than the saved one (total_steps,
    the schedule, the batch shape) raises ValueError: the run would change course mid-way.
    leave_out skips one part of the load: "optimizer" (AdamW restarts from m = v = 0 and step 0),
    "rng" (the data order and dropout come from wherever the streams stand), or "dropout stream"
    (all is loaded, then torch's global stream, which dropout draws from, is re-seeded). Starting, it
    sweeps the temporaries of killed saves from the checkpoint's directory (on rank 0).
    """
    remove_stale_temporaries(Path(path).parent)
    step = load_full_checkpoint(
        path,
        model=fresh.model,
        optimizer=None if leave_out == "optimizer" else fresh.optimizer,
        data_generator=None if leave_out == "rng" else fresh.data_generator,
        config=config.trajectory_fields(),
    )
    if leave_out == "dropout stream":
        torch.manual_seed(OTHER_SEED)
    log = train(
        fresh.model,
        fresh.optimizer,
        train_data,
        config,
        device=device,
        data_generator=fresh.data_generator,
        start_step=step,
    )
    return step, log
