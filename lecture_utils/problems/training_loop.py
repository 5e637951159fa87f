"""Practice for notebook 07: a corpus on disk, a checkpoint's write time, the schedule, steps per pass, coverage.

Each problem's numbers are set once, below, and both its question and its worked answer are built
from them, so the two cannot disagree. The worked answers use the package's pieces (token_dtype,
the memory recipes, the assignment's schedule); the notebook checks each against something real:
a saved file's size, torch's own cosine scheduler, get_batch's batches.
"""

import math

from lecture_utils.accounting import plain_recipe
from lecture_utils.data import token_dtype
from lecture_utils.optim import AdamW
from lecture_utils.practice import Mistake, Problem, Worked
from lecture_utils.problems import percent_as_fraction, unit_mixup
from lecture_utils.schedule import get_lr_cosine_schedule

# 1: a corpus whose vocabulary outgrows 16 bits
CORPUS_TOKENS, CORPUS_VOCAB = 2.4e12, 100_256
# 2: a checkpoint of a 6.7B model with AdamW, written to disk
CKPT_PARAMS, DISK_BYTES_PER_S = 6.7e9, 1.5e9
# 3: the learning rate at one step of a warm-up + cosine schedule
MAX_LR, MIN_LR, WARMUP, CYCLE, AT_STEP = 6e-4, 6e-5, 700, 12_000, 8_000
# 4 and 5: one pass over a corpus with random windows
PASS_TOKENS, BATCH, CONTEXT = 10e9, 256, 2_048


def _corpus_tb() -> Worked:
    dtype = token_dtype(CORPUS_VOCAB)
    size = CORPUS_TOKENS * dtype.itemsize
    steps = (
        f"ids run from 0 to {CORPUS_VOCAB - 1:,}; uint16 holds up to {2**16 - 1:,}, so save_tokens picks {dtype}",
        f"{CORPUS_TOKENS / 1e12:g}e12 tokens x {dtype.itemsize} B = {size:.4g} B = {size / 1e12:g} TB",
    )
    return Worked(steps, size / 1e12, f"{size / 1e12:g} TB")


def _saved_bytes_per_param() -> int:
    """Bytes per parameter a checkpoint keeps with fp32 AdamW: everything the step uses but the gradients."""
    kept = plain_recipe(AdamW).bytes_per_param()
    return sum(size for name, size in kept.items() if name != "gradients")


def _write_seconds() -> Worked:
    per_param = plain_recipe(AdamW).bytes_per_param()
    saved = _saved_bytes_per_param()
    size = CKPT_PARAMS * saved
    seconds = size / DISK_BYTES_PER_S
    kept = " + ".join(f"{name} {n}" for name, n in per_param.items() if name != "gradients")
    steps = (
        f"fp32 AdamW per parameter: {kept} = {saved} B",
        "  (the gradients are recomputed every step, not saved)",
        f"{CKPT_PARAMS / 1e9:g}e9 x {saved} B = {size:.4g} B",
        f"{size:.4g} B / {DISK_BYTES_PER_S:.3g} B/s = {seconds:.1f} s",
    )
    return Worked(steps, seconds, f"{seconds:.1f} s")


def _rate_at_step() -> Worked:
    rate = get_lr_cosine_schedule(AT_STEP, MAX_LR, MIN_LR, WARMUP, CYCLE)
    progress = (AT_STEP - WARMUP) / (CYCLE - WARMUP)
    steps = (
        f"step {AT_STEP:,} is past the warm-up ({WARMUP}) and inside the cosine (to {CYCLE:,})",
        f"progress = ({AT_STEP:,} - {WARMUP}) / ({CYCLE:,} - {WARMUP}) = {progress:.4f}",
        f"lr = {MIN_LR:.1e} + (1 + cos(pi x {progress:.4f})) / 2 x ({MAX_LR:.1e} - {MIN_LR:.1e})",
        f"   = {MIN_LR:.1e} + {(1 + math.cos(math.pi * progress)) / 2:.4f} x {MAX_LR - MIN_LR:.2e} = {rate:.4e}",
    )
    return Worked(steps, rate, f"{rate:.3e}")


def _steps_per_pass() -> int:
    return math.ceil(PASS_TOKENS / (BATCH * CONTEXT))


def _one_pass() -> Worked:
    per_step, steps_needed = BATCH * CONTEXT, _steps_per_pass()
    steps = (
        f"each step trains on {BATCH} windows x {CONTEXT:,} targets = {per_step:,} tokens",
        f"{PASS_TOKENS:,.0f} / {per_step:,} = {PASS_TOKENS / per_step:,.1f}, rounded up: {steps_needed:,} steps",
    )
    return Worked(steps, steps_needed, f"{steps_needed:,} steps")


def never_a_target(tokens: float, context: int, draws: int) -> float:
    """Chance that a position away from the ends is in none of `draws` random windows of targets (notebook 07).

    get_batch draws each start uniformly from tokens - context offsets, and `context` of them put a
    given position among a window's targets.
    """
    return math.exp(draws * math.log1p(-context / (tokens - context)))


def _coverage() -> Worked:
    draws = _steps_per_pass() * BATCH
    missed = never_a_target(PASS_TOKENS, CONTEXT, draws)
    steps = (
        f"{_steps_per_pass():,} steps x {BATCH} windows = {draws:,} random windows",
        f"a position is a target of a window for {CONTEXT:,} of the {PASS_TOKENS - CONTEXT:,.0f} possible starts",
        f"never a target: (1 - {CONTEXT:,} / {PASS_TOKENS - CONTEXT:,.0f})^{draws:,} = {missed:.4f}"
        f" (about 1/e = {math.exp(-1):.4f})",
        f"a target at least once: 1 - {missed:.4f} = {1 - missed:.2%}",
    )
    return Worked(steps, 100 * (1 - missed), f"{1 - missed:.1%}")


_ROUNDING = "check your rounding: the fewest steps that train on at least as many targets as the corpus holds."
_TB = {"GB": 1e-3, "PB": 1e3, "TiB": 2**40 / 1e12, "B": 1e-12, "bytes": 1e-12}
_SECONDS = {"s": 1.0, "min": 60.0, "ms": 1e-3}

PROBLEMS: dict[int, Problem] = {
    1: Problem(
        1,
        "a corpus on disk",
        f"A corpus of {CORPUS_TOKENS / 1e12:g}T tokens uses a vocabulary of {CORPUS_VOCAB:,} tokens. `save_tokens` "
        "writes the ids in the smallest unsigned dtype that holds them. How large is the file? Answer in TB "
        "(1 TB = 1e12 bytes).",
        "TB",
        _corpus_tb,
        "Find the largest id, pick the smallest unsigned integer type it fits in, and multiply.",
        units=_TB,
        mistakes=(
            Mistake(lambda tb: tb / 2, "the largest id does not fit in 16 bits."),
            Mistake(lambda tb: tb * 2, "that is torch's default int64: on disk the smallest type that fits will do."),
            unit_mixup("TiB", "TB"),
        ),
    ),
    2: Problem(
        2,
        "a checkpoint's write time",
        f"A {CKPT_PARAMS / 1e9:g}B-parameter model trains in fp32 with AdamW. Each checkpoint saves the weights and "
        f"the optimizer state (the gradients are recomputed every step, so they are not saved) to a disk that "
        f"writes {DISK_BYTES_PER_S / 1e9:g} GB/s (1 GB = 1e9 bytes). How long does one save take? Answer in seconds.",
        "seconds",
        _write_seconds,
        "Bytes per parameter of what is saved, times the parameters, divided by the disk's rate.",
        units=_SECONDS,
        mistakes=(
            Mistake(lambda s: s * plain_recipe(AdamW).total / _saved_bytes_per_param(), "the gradients are not saved."),
            Mistake(
                lambda s: s * 4 / _saved_bytes_per_param(), "resuming needs AdamW's moments as well as the weights."
            ),
            Mistake(
                lambda s: s * 8 / _saved_bytes_per_param(),
                "count every tensor a resume needs: the weights and both of AdamW's moments, m and v.",
            ),
        ),
    ),
    3: Problem(
        3,
        "the learning rate at a step",
        f"A run warms up linearly to a peak of {MAX_LR:.1e} over {WARMUP} steps, then follows a cosine down to "
        f"{MIN_LR:.1e} at step {CYCLE:,} (the assignment's schedule, T_w = {WARMUP}, T_c = {CYCLE:,}). What is the "
        f"learning rate at step {AT_STEP:,}? Answer with the number, e.g. 1.5e-5.",
        "",
        _rate_at_step,
        "Measure the cosine's progress from the end of the warm-up, and let it fall to the floor, not to 0.",
        mistakes=(
            Mistake(
                lambda _: get_lr_cosine_schedule(AT_STEP, MAX_LR, 0.0, WARMUP, CYCLE),
                "the cosine ends at the floor, not at 0.",
            ),
            Mistake(
                lambda _: get_lr_cosine_schedule(AT_STEP, MAX_LR, MIN_LR, 0, CYCLE),
                "the cosine starts where the warm-up ends, not at step 0.",
            ),
        ),
    ),
    4: Problem(
        4,
        "steps for one pass",
        f"A corpus holds {PASS_TOKENS / 1e9:g}B tokens. Each step draws a batch of {BATCH} windows of "
        f"context_length {CONTEXT:,} with `get_batch`. How many steps does it take to train on as many target "
        "tokens as the corpus holds? Answer with a whole number of steps.",
        "steps",
        _one_pass,
        "Count the target tokens one step trains on, divide, and round so that the steps cover the corpus.",
        rel_tol=0.0,
        close_tol=0.01,
        mistakes=(
            # One hint for one step off either way: it must not say which way.
            Mistake(lambda _: math.floor(PASS_TOKENS / (BATCH * CONTEXT)), _ROUNDING),
            Mistake(lambda n: n + 1, _ROUNDING),
            Mistake(lambda _: PASS_TOKENS / CONTEXT, "each step draws a whole batch of windows, not one."),
            Mistake(lambda _: PASS_TOKENS / BATCH, "each window holds a whole context of targets."),
        ),
    ),
    5: Problem(
        5,
        "how much of the corpus one pass sees",
        "`get_batch` picks each window's start uniformly at random, independently of every other window. After "
        "the steps of problem 4, what percentage of the corpus's tokens have been a target at least once? "
        "Answer in percent.",
        "percent",
        _coverage,
        "For one position, find the chance that a single random window misses it; then every window must miss.",
        units={"%": 1.0},
        mistakes=(
            Mistake(lambda _: 100.0, "random starts overlap: some stretches are drawn twice, others never."),
            percent_as_fraction(),
        ),
    ),
}
