"""get_batch as CS336 assignment 1 defines it: random windows of a 1-D token array, inputs and next-token targets.

A reference, not a submission: assignment 1 grades this function. Students taking CS336 write
their own under the course's policy and hand in only their own; use this file to check yours against
(shapes, dtypes, targets shifted by one, every start reachable), never to copy or hand in.

Self-contained: imports only numpy and torch (and jaxtyping for the shape notes); no other
lecture_utils module. In lecture_utils the package's import hook enforces the annotations (a 1-D
integer array, int sizes); alone they document them. Taught in notebook 07.
"""

import numpy as np
import torch
from jaxtyping import Int, Integer
from torch import Tensor


def get_batch(
    x: Integer[np.ndarray, " tokens"],
    batch_size: int,
    context_length: int,
    device: torch.device | str,
    *,
    generator: torch.Generator | None = None,
) -> tuple[Int[Tensor, "batch_size context_length"], Int[Tensor, "batch_size context_length"]]:
    """batch_size windows starting at uniform random offsets: inputs x[i : i + m] and targets x[i + 1 : i + m + 1].

    Both are int64 (torch.long) tensors of shape (batch_size, context_length) on `device`. Every
    start 0 .. len(x) - context_length - 1 is equally likely, so the last token of x can be a
    target. x may be a np.memmap: only the chosen windows are read from disk. Offsets come from
    `generator` (a CPU torch.Generator) if given, else from torch's global generator, so
    torch.manual_seed makes the batches reproducible. (notebook 07)
    """
    if context_length >= len(x):
        raise ValueError(
            f"context_length {context_length} needs {context_length + 1} tokens (inputs plus a target); x has {len(x)}"
        )
    device = torch.device(device)
    starts = torch.randint(0, len(x) - context_length, (batch_size,), generator=generator)
    # One fancy index copies just these windows, context_length + 1 tokens each, into RAM.
    windows = torch.from_numpy(x[starts.numpy()[:, None] + np.arange(context_length + 1)].astype(np.int64))
    inputs, targets = windows[:, :-1].contiguous(), windows[:, 1:].contiguous()  # (batch_size, context_length)
    if device.type == "cuda":
        # From page-locked host memory the copy to the GPU can run while the GPU works on something else.
        return inputs.pin_memory().to(device, non_blocking=True), targets.pin_memory().to(device, non_blocking=True)
    return inputs.to(device), targets.to(device)
