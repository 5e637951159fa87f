"""A memory prediction set against a measurement, entry by entry: relative errors and a table (notebook 06).

Both sides are lecture_utils.accounting.MemoryBudget objects: a Recipe's `predict` and
`measure_memory`'s reading of one real step. Every (component, dtype) either side has is compared.
"""

import torch

from lecture_utils.accounting import COMPONENTS, MemoryBudget
from lecture_utils.memory import format_bytes


def _relative_error(predicted: int, measured: int) -> float:
    """|measured - predicted| / predicted; 0 when both are 0, inf when only the prediction is."""
    if predicted:
        return abs(measured - predicted) / predicted
    return 0.0 if measured == 0 else float("inf")


def relative_errors(predicted: MemoryBudget, measured: MemoryBudget) -> dict[tuple[str, torch.dtype], float]:
    """|measured - predicted| / predicted for every (component, dtype) either one has (notebook 06)."""
    p, m = predicted.entries(), measured.entries()
    keys = sorted(p.keys() | m.keys(), key=lambda k: (COMPONENTS.index(k[0]), str(k[1])))
    return {key: _relative_error(p.get(key, 0), m.get(key, 0)) for key in keys}


def compare_table(predicted: MemoryBudget, measured: MemoryBudget) -> str:
    """A text table: each (component, dtype) with predicted bytes, measured bytes and relative error (notebook 06)."""
    p, m = predicted.entries(), measured.entries()
    errors = relative_errors(predicted, measured)
    w = max([16, *(len(name) for name, _ in errors)])  # the component column fits the longest name shown
    rows = [f"{'component':{w}s} {'dtype':9s} {'predicted':>12s} {'measured':>12s} {'error':>7s}"]
    for (name, dtype), err in errors.items():
        dtype_name = str(dtype).removeprefix("torch.")
        rows.append(
            f"{name:{w}s} {dtype_name:9s} {p.get((name, dtype), 0):>12,d} {m.get((name, dtype), 0):>12,d} {err:>7.2%}"
        )
    total_err = _relative_error(predicted.total, measured.total)
    totals = f"{predicted.total:>12,d} {measured.total:>12,d} {total_err:>7.2%}"
    rows.append(f"{'total':{w + 10}s} {totals}   ({format_bytes(measured.total)})")
    return "\n".join(rows)
