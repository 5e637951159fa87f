"""Token data on disk: a synthetic corpus, .npy files read through a memory map, and a batch prefetcher.

Random batches come from lecture_utils.batching.get_batch (the assignment's function). Taught in
notebook 07.
"""

import bisect
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch
from jaxtyping import Float, Int, Integer

from lecture_utils.checks import NonNegativeFloat, NonNegativeInt, PositiveInt


def token_dtype(vocab_size: PositiveInt) -> np.dtype:
    """The smallest unsigned dtype that holds every token id below vocab_size: uint16 up to 65,536 ids (notebook 07)."""
    if vocab_size <= 2**16:
        return np.dtype(np.uint16)
    if vocab_size <= 2**32:
        return np.dtype(np.uint32)
    raise ValueError(f"vocab_size {vocab_size} does not fit in uint32; expected at most {2**32}")


def random_transition_matrix(
    vocab_size: PositiveInt, *, generator: torch.Generator, sharpness: NonNegativeFloat = 2.5
) -> Float[torch.Tensor, "vocab vocab"]:
    """A random Markov chain over token ids: row i is the distribution of the token after token i.

    Rows are softmax(sharpness x standard normal): larger sharpness makes each row peakier, so the
    text is more predictable and the lowest reachable loss (the entropy rate) is lower (notebook 07).
    """
    logits = sharpness * torch.randn(vocab_size, vocab_size, generator=generator, dtype=torch.float64)
    return torch.softmax(logits, dim=1)


def _check_rows_are_distributions(transition: Float[torch.Tensor, "vocab vocab"]) -> None:
    """Reject a matrix that is not a Markov chain's: row i is where token i goes next, so it must sum to 1."""
    if (transition < 0).any() or not torch.allclose(transition.sum(1), torch.ones((), dtype=transition.dtype)):
        raise ValueError("every row of transition must be a probability distribution (non-negative, sums to 1)")


def sample_markov_chain(
    transition: Float[torch.Tensor, "vocab vocab"], num_tokens: PositiveInt, *, generator: torch.Generator
) -> Int[np.ndarray, " tokens"]:
    """Walk the chain for num_tokens steps from token 0: a corpus whose next token depends on the last (notebook 07)."""
    _check_rows_are_distributions(transition)
    vocab_size = transition.shape[0]
    # Inverse-CDF sampling on plain Python lists: a sequential walk is far faster there than
    # one small torch call per token.
    cdf = transition.double().cumsum(1).tolist()
    uniforms = torch.rand(num_tokens, generator=generator, dtype=torch.float64).tolist()
    tokens = np.empty(num_tokens, dtype=np.int64)
    state = 0
    for i, u in enumerate(uniforms):
        state = min(bisect.bisect_right(cdf[state], u), vocab_size - 1)
        tokens[i] = state
    return tokens


def entropy_rate(transition: Float[torch.Tensor, "vocab vocab"]) -> float:
    """Nats per token of the chain in its stationary state: the lowest loss any model can reach (notebook 07)."""
    _check_rows_are_distributions(transition)
    p = transition.double()
    vocab_size = p.shape[0]
    # The stationary distribution pi solves pi P = pi with sum(pi) = 1; least squares on the
    # stacked equations finds it even for periodic chains, where power iteration would cycle.
    equations = torch.cat([p.T - torch.eye(vocab_size, dtype=p.dtype), torch.ones(1, vocab_size, dtype=p.dtype)])
    target = torch.zeros(vocab_size + 1, 1, dtype=p.dtype)
    target[-1] = 1.0
    stationary = torch.linalg.lstsq(equations, target).solution.squeeze(1)
    row_entropy = -(p * torch.log(p.clamp_min(1e-300))).sum(1)
    return float(stationary @ row_entropy)


def save_tokens(path: str | Path, tokens: Integer[np.ndarray, " tokens"], vocab_size: PositiveInt) -> Path:
    """Write token ids as a real .npy file (header + raw ids) in the smallest dtype for the vocab (notebook 07)."""
    path = Path(path)
    if path.suffix != ".npy":  # np.save would append the suffix, and the caller would look under another name
        raise ValueError(f"token files are written with np.save and end in .npy, got {path.name!r}")
    dtype = token_dtype(vocab_size)
    if tokens.size and (tokens.min() < 0 or tokens.max() >= vocab_size):
        raise ValueError(f"token ids must lie in [0, {vocab_size}), got [{tokens.min()}, {tokens.max()}]")
    np.save(path, tokens.astype(dtype), allow_pickle=False)
    return path


def load_tokens(path: str | Path) -> np.memmap:
    """Open a .npy token file as a read-only memory map: nothing but the header is read until indexed (notebook 07)."""
    tokens = np.load(path, mmap_mode="r", allow_pickle=False)
    if tokens.ndim != 1 or not np.issubdtype(tokens.dtype, np.integer):  # the file's content, not an argument
        raise TypeError(f"{Path(path).name}: expected a 1-D integer array, got shape {tokens.shape} of {tokens.dtype}")
    return tokens


# id() of every generator a Prefetcher's thread is drawing ahead from, while its `with` block runs.
_DRAWING_AHEAD: set[int] = set()


def drawn_ahead(generator: torch.Generator) -> bool:
    """Whether a running Prefetcher's thread may have drawn past the batch in flight from `generator` (notebook 07)."""
    return id(generator) in _DRAWING_AHEAD


class Prefetcher:
    """Yield `steps` batches from `produce()` while a background thread already makes the next one.

    produce() returns CPU tensors; the thread calls it in order, so the batches are a plain loop's,
    each made one step early. On CUDA the thread also pins each batch and starts its copy with
    non_blocking=True on a side stream, so the copy runs while the current step's kernels do.
    A thread hides waiting (a slow disk, a network) and work that releases the GIL; CPU-heavy
    Python needs worker processes (DataLoader's num_workers). Use it in a `with` block, which
    stops the thread; wait_seconds adds up how long the consumer waited for batches (notebook 07).

    Pass the `generator` produce() draws from (and nothing else random) to checkpoint inside the
    loop: data_state() is its state after the last batch handed out, a plain loop's state, while the
    generator itself may be a draw ahead. Leaving the block puts the generator back to that state.
    """

    def __init__(
        self,
        produce: Callable[[], tuple[torch.Tensor, ...]],
        steps: NonNegativeInt,
        device: torch.device | str,
        *,
        generator: torch.Generator | None = None,
    ) -> None:
        self.device, self.steps, self.wait_seconds = torch.device(device), steps, 0.0
        self._produce, self._generator = produce, generator
        self._stream = torch.cuda.Stream(self.device) if self.device.type == "cuda" else None
        self._pool: ThreadPoolExecutor | None = None
        self._handed_out_state: torch.Tensor | None = None  # the generator's state after the last batch yielded

    def _fetch(self) -> tuple[tuple[torch.Tensor, ...], torch.cuda.Event | None, torch.Tensor | None]:
        batch = self._produce()
        drawn = None if self._generator is None else self._generator.get_state()  # right after this batch's draws
        if self._stream is None:
            return tuple(t.to(self.device) for t in batch), None, drawn
        with torch.cuda.stream(self._stream):
            moved = tuple(t.pin_memory().to(self.device, non_blocking=True) for t in batch)
            return moved, self._stream.record_event(), drawn

    def __enter__(self) -> "Prefetcher":
        if self._generator is not None:
            if drawn_ahead(self._generator):
                raise RuntimeError("another Prefetcher is already drawing from this generator")
            self._handed_out_state = self._generator.get_state()
            _DRAWING_AHEAD.add(id(self._generator))
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="prefetch")
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool = None
        if self._generator is not None:  # undo the draws of a batch made but never handed out
            self._generator.set_state(self._handed_out_state)
            _DRAWING_AHEAD.discard(id(self._generator))

    def data_state(self) -> torch.Tensor:
        """The generator's state after the batch last handed out was drawn: what a checkpoint stores (notebook 07)."""
        if self._handed_out_state is None:
            raise RuntimeError("pass generator= to the Prefetcher, and enter its `with` block, to get its data state")
        return self._handed_out_state.clone()

    def __iter__(self) -> Iterator[tuple[torch.Tensor, ...]]:
        if self._pool is None:
            raise RuntimeError("iterate over a Prefetcher inside its `with` block, which starts and stops the thread")
        pending: Future | None = self._pool.submit(self._fetch) if self.steps else None
        for i in range(self.steps):
            start = time.perf_counter()
            batch, copied, drawn = pending.result()
            self.wait_seconds += time.perf_counter() - start
            # Ask for the next batch before handing this one out: it is made during this step.
            pending = self._pool.submit(self._fetch) if i + 1 < self.steps else None
            if copied is not None:
                current = torch.cuda.current_stream(self.device)
                current.wait_event(copied)  # the step's kernels start after the copy lands
                for t in batch:
                    t.record_stream(current)  # so the allocator keeps it until the step is done with it
            if drawn is not None:
                self._handed_out_state = drawn
            yield batch
