"""A training loop small enough to read: warm-up + cosine schedule, clipping, evaluation, logging (notebook 07)."""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from jaxtyping import Int, Integer
from torch import nn

from lecture_utils.batching import get_batch
from lecture_utils.checks import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt
from lecture_utils.nn_basics import cross_entropy
from lecture_utils.schedule import get_lr_cosine_schedule, gradient_clipping


@contextmanager
def deterministic_algorithms(device: torch.device | str) -> Iterator[None]:
    """Run the block with deterministic kernels only, then restore every flag it changed.

    On a GPU the same inputs can give different last bits run to run: kernels that add with
    atomics, cuDNN's benchmark mode picking the fastest algorithm each time. Inside, torch raises
    on an op that has no deterministic version. cuBLAS needs CUBLAS_WORKSPACE_CONFIG=:4096:8 (or
    :16:8) set before its first call, so on CUDA a missing setting is an error here, not later (notebook 07).
    """
    if torch.device(device).type == "cuda" and os.environ.get("CUBLAS_WORKSPACE_CONFIG") not in (":4096:8", ":16:8"):
        raise RuntimeError("set CUBLAS_WORKSPACE_CONFIG=:4096:8 before the first cuBLAS call (at the program's top)")
    saved = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    cudnn = (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = False, True
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(saved[0], warn_only=saved[1])
        torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = cudnn


@dataclass(frozen=True)
class TrainConfig:
    """Everything the loop needs besides model, optimizer and data; the schedule runs over total_steps.

    The schedule is the assignment's get_lr_cosine_schedule with cosine_cycle_iters = total_steps:
    rate 0 at step 0, the peak at step warmup_steps, max_lr * min_lr_ratio from total_steps on (notebook 07).
    """

    max_lr: PositiveFloat
    total_steps: PositiveInt
    batch_size: PositiveInt = 16
    context_length: PositiveInt = 32
    warmup_steps: NonNegativeInt = 10
    min_lr_ratio: NonNegativeFloat = 0.1
    max_grad_norm: PositiveFloat = 1.0
    eval_every: PositiveInt = 25
    eval_batches: PositiveInt = 4
    eval_seed: int = 1234

    def __post_init__(self) -> None:
        # Rules between fields, which no single annotation can state.
        if self.min_lr_ratio > 1:
            raise ValueError(f"min_lr_ratio is the floor as a share of max_lr, at most 1, got {self.min_lr_ratio}")
        if self.warmup_steps > self.total_steps:
            raise ValueError(
                f"warmup_steps must lie in [0, total_steps]: the cosine follows it, got {self.warmup_steps}"
            )

    def trajectory_fields(self) -> dict[str, int | float]:
        """The fields that decide the weights a run reaches, schedule included; evaluation settings do not.

        A full checkpoint stores them, and resume refuses to go on under other values (notebook 07).
        """
        return {k: v for k, v in asdict(self).items() if k not in ("eval_every", "eval_batches", "eval_seed")}

    def lr(self, step: NonNegativeInt) -> float:
        """The scheduled learning rate at 0-based `step`."""
        return get_lr_cosine_schedule(
            step, self.max_lr, self.max_lr * self.min_lr_ratio, self.warmup_steps, self.total_steps
        )


@dataclass
class TrainLog:
    """Per-update records keyed by the 0-based step (notebook 07).

    eval_step counts the updates done before each evaluation.
    """

    step: list[int] = field(default_factory=list)
    lr: list[float] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    grad_norm: list[float] = field(default_factory=list)
    eval_step: list[int] = field(default_factory=list)
    eval_loss: list[float] = field(default_factory=list)


def train_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    x: Int[torch.Tensor, "batch seq"],
    y: Int[torch.Tensor, "batch seq"],
    *,
    lr: NonNegativeFloat,
    max_grad_norm: PositiveFloat,
) -> tuple[float, float]:
    """One update: set lr, forward, loss, zero_grad, backward, clip, step (notebook 07).

    Returns the loss and the gradient norm before clipping, as Python floats.
    """
    for group in optimizer.param_groups:
        group["lr"] = lr
    model.train()
    loss = cross_entropy(model(x), y)
    # None, not zeros: no memset, and backward writes the gradient, not adds it.
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    grad_norm = gradient_clipping(model.parameters(), max_grad_norm)
    optimizer.step()
    return loss.item(), grad_norm.item()


@torch.no_grad()
def evaluate(
    model: nn.Module,
    data: Integer[np.ndarray, " tokens"],
    *,
    batch_size: PositiveInt,
    context_length: PositiveInt,
    batches: PositiveInt,
    device: torch.device | str,
    seed: int,
) -> float:
    """Mean loss on `batches` held-out batches, the same ones on every call (their own generator, from `seed`).

    Dropout is off during evaluation and no shared random stream is touched, so evaluating
    leaves the training run exactly as it would have been without it (notebook 07).
    """
    was_training = model.training
    model.eval()
    generator = torch.Generator().manual_seed(seed)
    losses = [
        cross_entropy(model(x), y).item()
        for x, y in (get_batch(data, batch_size, context_length, device, generator=generator) for _ in range(batches))
    ]
    model.train(was_training)
    return sum(losses) / len(losses)


def train(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    train_data: Integer[np.ndarray, " tokens"],
    config: TrainConfig,
    *,
    device: torch.device | str,
    data_generator: torch.Generator,
    start_step: NonNegativeInt = 0,
    stop_step: NonNegativeInt | None = None,
    eval_data: Integer[np.ndarray, " eval_tokens"] | None = None,
    log: TrainLog | None = None,
    print_every: PositiveInt | None = None,
) -> TrainLog:
    """Run steps start_step .. stop_step - 1 (default: to config.total_steps), evaluating every config.eval_every steps.

    Pass the log of an earlier call to continue it. print_every prints a line at each evaluation
    whose step is a multiple of it (notebook 07).
    """
    stop_step = config.total_steps if stop_step is None else stop_step
    if start_step > stop_step:
        raise ValueError(f"need 0 <= start_step <= stop_step, got {start_step} and {stop_step}")
    log = TrainLog() if log is None else log
    for step in range(start_step, stop_step):
        x, y = get_batch(train_data, config.batch_size, config.context_length, device, generator=data_generator)
        loss, grad_norm = train_step(model, optimizer, x, y, lr=config.lr(step), max_grad_norm=config.max_grad_norm)
        log.step.append(step)
        # Record the rate the optimizer actually held, not the schedule's value, so a schedule
        # that never reached the optimizer shows up in the log.
        log.lr.append(optimizer.param_groups[0]["lr"])
        log.train_loss.append(loss)
        log.grad_norm.append(grad_norm)
        done = step + 1
        if eval_data is not None and (done % config.eval_every == 0 or done == config.total_steps):
            eval_loss = evaluate(
                model,
                eval_data,
                batch_size=config.batch_size,
                context_length=config.context_length,
                batches=config.eval_batches,
                device=device,
                seed=config.eval_seed,
            )
            log.eval_step.append(done)
            log.eval_loss.append(eval_loss)
            if print_every and done % print_every == 0:
                print(
                    f"step {done:4d}  lr {log.lr[-1]:.2e}  train loss {loss:.3f}  "
                    f"eval loss {eval_loss:.3f}  grad norm {grad_norm:.2f}"
                )
    return log
