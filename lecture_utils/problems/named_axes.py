"""Practice for notebook 03: the FLOPs of an einsum, the order of a three-operand one, strides after
rearrange, and which calls a jaxtyping check rejects.

The patterns and shapes in the questions are the ones the worked answers run, so a question and
its answer cannot disagree.
"""

import torch
from einops import einsum
from jaxtyping import Float, TypeCheckError
from torch import Tensor

from lecture_utils.flops import matmul_flops
from lecture_utils.practice import Mistake, Problem, Worked
from lecture_utils.problems import bytes_for_elements
from lecture_utils.strides import contiguous_strides

# 1: attention scores of one layer
B, H, S, D = 4, 32, 2048, 128  # batch, heads, seq, head_dim
SCORES = "b h s d, b h t d -> b h s t"
# 2: one token through two weight matrices
TOKENS, D_MODEL, D_FF = 1, 8192, 28672
# 3: heads split out of the hidden axis
X_SHAPE, SPLIT, N_HEADS = (2, 1024, 4096), "b s (heads d) -> b heads s d", 32
# 4: calls to a checked function: (shape of q, shape of k, dtype of both)
CALLS = {
    "a": ((2, 3, 4), (2, 5, 4), torch.float32),
    "b": ((2, 3, 4), (1, 5, 4), torch.float32),
    "c": ((2, 3, 4), (2, 5, 6), torch.float32),
    "d": ((2, 3, 4), (2, 3, 4), torch.float32),
    "e": ((3, 4), (5, 4), torch.float32),
    "f": ((2, 3, 4), (2, 5, 4), torch.bfloat16),
    "g": ((2, 3, 4), (2, 5, 4), torch.int64),
}
PATTERN = "batch seq1 d, batch seq2 d -> batch seq1 seq2"


def checked_scores(
    q: Float[Tensor, "batch seq1 d"], k: Float[Tensor, "batch seq2 d"]
) -> Float[Tensor, "batch seq1 seq2"]:
    """The function of problem 4 (notebook 03): like every function of the package, its annotations are checked."""
    return einsum(q, k, PATTERN)


def _scores_gflop() -> Worked:
    flops = matmul_flops((B, H, S, D), (B, H, D, S))
    steps = (
        f"einsum '{SCORES}' is a batched matmul:",
        f"  {B} x {H} products of ({S} x {D}) @ ({D} x {S}) matrices",
        f"each of the {B} x {H} x {S} x {S} outputs sums {D} products: {D} multiplies + {D} adds",
        f"2 x {B} x {H} x {S} x {S} x {D} = {flops:,} FLOPs = {flops / 1e9:.1f} GFLOP",
    )
    return Worked(steps, flops / 1e9, f"{flops / 1e9:.1f} GFLOP")


def _orders() -> tuple[int, int]:
    """FLOPs of (x W1) W2 and of x (W1 W2)."""
    cheap = matmul_flops((TOKENS, D_MODEL), (D_MODEL, D_FF)) + matmul_flops((TOKENS, D_FF), (D_FF, D_MODEL))
    costly = matmul_flops((D_MODEL, D_FF), (D_FF, D_MODEL)) + matmul_flops((TOKENS, D_MODEL), (D_MODEL, D_MODEL))
    return cheap, costly


def _order_ratio() -> Worked:
    cheap, costly = _orders()
    steps = (
        f"(x W1) W2: 2 x {TOKENS} x {D_MODEL} x {D_FF} + 2 x {TOKENS} x {D_FF} x {D_MODEL} = {cheap:,} FLOPs",
        f"x (W1 W2): 2 x {D_MODEL} x {D_FF} x {D_MODEL} + 2 x {TOKENS} x {D_MODEL} x {D_MODEL} = {costly:,} FLOPs",
        f"ratio = {costly:,} / {cheap:,} = {costly / cheap:,.1f}",
    )
    return Worked(steps, costly / cheap, f"{costly / cheap:,.0f} times")


def _heads_stride() -> Worked:
    # By hand from the strides, not from rearrange: the notebook checks this against rearrange.
    unsplit = (*X_SHAPE[:2], N_HEADS, X_SHAPE[2] // N_HEADS)
    b, s, heads, d = contiguous_strides(unsplit)
    moved = (b, heads, s, d)  # "b s heads d -> b heads s d" moves the strides with their axes
    steps = (
        f"x {X_SHAPE} has strides {contiguous_strides(X_SHAPE)}; splitting its last axis into (heads d) is a view",
        f"  of shape {unsplit} with strides {(b, s, heads, d)}",
        f"moving heads in front of s moves its stride with it: {moved}",
    )
    return Worked(steps, moved[1], f"{moved[1]} elements")


def _rejected() -> Worked:
    steps, rejected = [], set()
    for letter, (q_shape, k_shape, dtype) in CALLS.items():
        q, k = torch.ones(q_shape, dtype=dtype), torch.ones(k_shape, dtype=dtype)
        try:
            checked_scores(q, k)
            steps.append(f"({letter}) q {q_shape}, k {k_shape}, {dtype}: passes")
        except TypeCheckError as error:
            rejected.add(letter)
            blamed = next((line.split()[-1].rstrip(".") for line in str(error).splitlines() if "arose" in line), "?")
            steps.append(f"({letter}) q {q_shape}, k {k_shape}, {dtype}: rejected, at parameter {blamed}")
    return Worked(tuple(steps), frozenset(rejected), ", ".join(sorted(rejected)))


PROBLEMS: dict[int, Problem] = {
    1: Problem(
        1,
        "FLOPs of attention scores",
        f"`q` and `k` have shape (batch {B}, heads {H}, seq {S}, head_dim {D}). How many FLOPs does "
        f'`einsum(q, k, "{SCORES}")` cost? Answer in GFLOP (1 GFLOP = 1e9 FLOPs).',
        "GFLOP",
        _scores_gflop,
        "Name the output's axes and the summed one: each output is a dot product along the summed axis.",
        units={"GFLOPs": 1.0, "TFLOP": 1e3, "TFLOPs": 1e3, "FLOP": 1e-9, "FLOPs": 1e-9},
        mistakes=(Mistake(lambda g: g / 2, "each multiply comes with an add: count both."),),
    ),
    2: Problem(
        2,
        "the order of three operands",
        f"`x` holds one token, shape ({TOKENS}, {D_MODEL}); `W1` is ({D_MODEL}, {D_FF}) and `W2` is "
        f'({D_FF}, {D_MODEL}). `einsum(x, W1, W2, "t d, d f, f e -> t e")` can contract x with W1 first, '
        "(x W1) W2, or the two weights first, x (W1 W2). How many times more FLOPs does the second order "
        "cost than the first? Answer with the ratio.",
        "",
        _order_ratio,
        "Price each order as two matmuls, 2 x m x n x p each, and look at the shapes each one multiplies.",
        units={"x": 1.0, "times": 1.0},
        mistakes=(Mistake(lambda r: 1 / r, "that is the cheap order divided by the costly one."),),
    ),
    3: Problem(
        3,
        "strides after rearrange",
        f"`x` is a contiguous fp32 tensor of shape {X_SHAPE}, and "
        f'`h = rearrange(x, "{SPLIT}", heads={N_HEADS})`. What is `h.stride(1)`, the stride of the heads '
        "axis, in elements?",
        "",
        _heads_stride,
        "rearrange gives a view when it can: split x's last stride first, then move the axes.",
        rel_tol=0.0,
        close_tol=0.0,
        units={"elements": 1.0},
        mistakes=(
            Mistake(
                lambda _: contiguous_strides((X_SHAPE[0], N_HEADS, X_SHAPE[1], X_SHAPE[2] // N_HEADS))[1],
                "that is the stride a copy would have: rearrange returns a view of x here.",
            ),
            bytes_for_elements("fp32", 4),
        ),
    ),
    4: Problem(
        4,
        "which calls does the check reject?",
        "With annotations checked at each call, which of these calls of\n\n"
        "```python\n"
        'def checked_scores(q: Float[Tensor, "batch seq1 d"],\n'
        '                   k: Float[Tensor, "batch seq2 d"]) -> Float[Tensor, "batch seq1 seq2"]:\n'
        f'    return einsum(q, k, "{PATTERN}")\n'
        "```\n\n"
        "raise a type-check error? Each passes `q` and `k` of the shapes and dtype given. Answer with the "
        'letters, e.g. "ab".\n\n' + "\n".join(f"- ({k}) q {q}, k {v}, {d}" for k, (q, v, d) in CALLS.items()),
        "",
        _rejected,
        "A name must have one size in a call; an annotation fixes the number of axes; Float means any floating dtype.",
        options="".join(CALLS),
    ),
}
