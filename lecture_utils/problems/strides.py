"""Practice for notebook 02: where an element sits, which operations copy, what copies cost in bytes and time.

The expressions in the questions are the very strings the worked answers run (with `eval` on this
module's own constants), so a question and its answer cannot disagree.
"""

import math

import torch

from lecture_utils.hardware import ACCELERATORS
from lecture_utils.memory import storage_bytes, tensor_bytes
from lecture_utils.practice import Mistake, Problem, Worked
from lecture_utils.problems import itemsize_slip
from lecture_utils.strides import shares_storage, storage_index

H100 = ACCELERATORS["h100-sxm"]

# 1: an element of a view of a view
SHAPE, VIEW, INDEX = (8, 16, 32), "x.transpose(0, 2)[1:, ::2]", (2, 3, 4)
# 2: which of these allocate new storage (x = torch.randn(4, 6))
CHOICES = {
    "a": "x.T",
    "b": "x.view(6, 4)",
    "c": "x.T.reshape(24)",
    "d": "x[:, ::2]",
    "e": "x[[0, 2]]",
    "f": "x[x > 0]",
    "g": "x.reshape(2, 12)",
    "h": "x.T.contiguous()",
    "i": "x.contiguous()",
    "j": "x.unsqueeze(0).expand(3, 4, 6)",
}
# 3: three results, in order, from x = torch.zeros(SIDE, SIDE)
SIDE = 2048
CHAIN = {"y": "x.T.contiguous()", "z": "y.view(-1)[:1_000_000]", "w": "z * 2"}
# 4: attention's head transpose made contiguous, on an H100
HEADS_SHAPE = (8, 4096, 32, 128)  # batch, seq, heads, head_dim


def _position() -> Worked:
    x = torch.arange(math.prod(SHAPE)).view(SHAPE)
    y = eval(VIEW, {"x": x})
    at = storage_index(INDEX, y.stride(), y.storage_offset())
    terms = " + ".join(f"{i} x {s}" for i, s in zip(INDEX, y.stride(), strict=True))
    steps = (
        f"x: shape {tuple(x.shape)}, stride {x.stride()}",
        f"y = {VIEW}: shape {tuple(y.shape)}, stride {y.stride()}, offset {y.storage_offset()}",
        f"y[{', '.join(map(str, INDEX))}] sits at {y.storage_offset()} + {terms} = {at}",
    )
    return Worked(steps, at, f"{at}")


def _copies() -> Worked:
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(0))
    steps, copies = [], set()
    for letter, code in CHOICES.items():
        result = eval(code, {"x": x})
        if result is x:  # .contiguous() on a contiguous tensor has nothing to do
            steps.append(f"({letter}) {code:32s} x itself: already contiguous, no new tensor")
        elif shares_storage(result, x):
            steps.append(f"({letter}) {code:32s} a view: x's storage, stride {result.stride()}")
        else:
            copies.add(letter)
            steps.append(f"({letter}) {code:32s} a copy: new storage of {storage_bytes(result)} B")
    return Worked(tuple(steps), frozenset(copies), ", ".join(sorted(copies)))


def _new_bytes() -> Worked:
    names = {"x": torch.zeros(SIDE, SIDE)}
    seen, steps, total = {names["x"].untyped_storage().data_ptr()}, [], 0
    for name, code in CHAIN.items():
        names[name] = result = eval(code, dict(names))
        pointer = result.untyped_storage().data_ptr()
        new = 0 if pointer in seen else storage_bytes(result)
        seen.add(pointer)
        total += new
        kind = "a view of storage already there" if not new else f"new storage of {new:,} B"
        steps.append(f"{name} = {code:24s} {kind}")
    steps.append(f"new storage in all: {total:,} B")
    return Worked(tuple(steps), total, f"{total:,} bytes")


def _transpose_copy_us() -> Worked:
    q = torch.empty(HEADS_SHAPE, dtype=torch.bfloat16, device="meta")  # shapes only: no memory
    copy = q.transpose(1, 2).contiguous()
    moved, rate = tensor_bytes(q) + tensor_bytes(copy), H100.bandwidth_bytes_per_s
    steps = (
        f"q: {q.numel():,} elements x 2 B = {tensor_bytes(q):,} B, read once; the copy writes as many",
        f"{moved:,} B / {rate:.3g} B/s ({H100.name} HBM, its datasheet) = {moved / rate * 1e6:.1f} us",
    )
    return Worked(steps, moved / rate * 1e6, f"{moved / rate * 1e6:.0f} microseconds")


_OFFSET = "check the storage offset: where in x's storage does y[0, 0, 0] sit?"
_BYTES = {"B": 1.0, "kB": 1e3, "KiB": 2**10, "MB": 1e6, "MiB": 2**20, "GB": 1e9}

PROBLEMS: dict[int, Problem] = {
    1: Problem(
        1,
        "where does it sit?",
        f"`x = torch.arange({' * '.join(map(str, SHAPE))}).view{SHAPE}` and `y = {VIEW}`. Which position of "
        f"x's storage holds `y[{', '.join(map(str, INDEX))}]`? Answer with the index into the storage, counting "
        "from 0. (Work it out from strides before you run anything.)",
        "",
        _position,
        "Write down x's strides; transpose swaps two of them, a slice that starts later moves the offset, "
        "and a step multiplies a stride.",
        rel_tol=0.0,
        close_tol=0.0,
        # one hint for one off either way: it must not say which way
        mistakes=tuple(Mistake(lambda at, d=d: at + d, _OFFSET) for d in (-1, 1)),
    ),
    2: Problem(
        2,
        "which of these copy?",
        "`x = torch.randn(4, 6)`. Which of these allocate new storage rather than return a view of x? "
        'Answer with the letters, e.g. "bdj".\n\n' + "\n".join(f"- ({k}) `{v}`" for k, v in CHOICES.items()),
        "",
        _copies,
        "A view can only change the shape, strides and offset: can one stride per axis walk the result's "
        "elements in x's storage?",
        options="".join(CHOICES),
    ),
    3: Problem(
        3,
        "bytes of new storage",
        f"`x = torch.zeros({SIDE}, {SIDE})` (fp32), then, in order, "
        + ", ".join(f"`{name} = {code}`" for name, code in CHAIN.items())
        + ". How many bytes of new storage do "
        + ", ".join(CHAIN)
        + ' allocate together? Answer in bytes (a unit such as "3 KiB" works too).',
        "bytes",
        _new_bytes,
        "Decide for each line whether it is a view or allocates; a view of a view shares the same storage.",
        units=_BYTES,
        mistakes=(
            Mistake(lambda _: SIDE * SIDE * 4, "an element-wise op such as `z * 2` allocates its result."),
            Mistake(lambda b: b + 4e6, "slicing a view gives a view: z shares y's storage."),
            Mistake(lambda b: b - SIDE * SIDE * 4, "`.contiguous()` on a transpose has to copy."),
        ),
    ),
    4: Problem(
        4,
        "a transpose made contiguous, on an H100",
        f"`q` is a bf16 tensor of shape {HEADS_SHAPE} (batch, seq, heads, head_dim). `q.transpose(1, 2)"
        ".contiguous()` reads every element once and writes it once. At the H100 SXM's datasheet memory "
        "bandwidth, how long does that copy take at best? Answer in microseconds.",
        "microseconds",
        _transpose_copy_us,
        "Bytes read plus bytes written, divided by the memory bandwidth in `lecture_utils.hardware`.",
        units={"us": 1.0, "µs": 1.0, "ms": 1e3, "s": 1e6},
        mistakes=(
            Mistake(lambda us: us / 2, "a copy reads every byte and writes it again: count both."),
            itemsize_slip("bf16", 4, 2),
        ),
    ),
}
