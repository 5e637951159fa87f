"""The practice problems at the end of each notebook, one module per notebook (lecture_utils.practice).

Each module holds `PROBLEMS`, a dict from problem number (1, 2, ...) to `lecture_utils.practice.Problem`:
the question as the notebook shows it, the function that works the answer out with the package, and
the hints. napkin (notebook 00), dtypes (01), strides (02), named_axes (03), flops (04),
gradient_flops (05), optimizers (06), training_loop (07), mixed_precision (08), sharded_training (09).
Where a notebook's numbers and worked answers outgrow one module, they sit beside its questions:
flops_answers (04), gradient_flops_answers (05), mixed_precision_answers (08); those hold no PROBLEMS.

A notebook's "## Practice" section, after its takeaways, is: a markdown intro; a code cell that
imports PROBLEMS; then for each problem, three cells: the markdown `problem.markdown()`; the
student's cell, `answer_N = None  # your answer, in <unit>` and `PROBLEMS[N].check(answer_N)`; and
the worked answer, whose cell metadata is {"jupyter": {"source_hidden": true, "outputs_hidden":
true}}, starting `# Worked answer N` / `worked = PROBLEMS[N].work()`, asserting a second route where
there is one, and ending with `worked`. tests/test_practice.py holds every section to that shape.

The slips many problems share (a percent written as a fraction, MB for MiB, bf16 at 4 bytes, a
count in bytes for one in elements) get their Mistake from a builder here, so a student meets the
same hint for the same slip in every notebook.
"""

from collections.abc import Callable

from lecture_utils.practice import Mistake

# Sizes of the byte units a question may ask for, and how a hint names each without a number (a
# number in a hint could sit near some problem's answer).
_BYTES = {"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KiB": 2.0**10, "MiB": 2.0**20, "GiB": 2.0**30, "TiB": 2.0**40}
_DECIMAL = {"KB": "a thousand bytes", "MB": "a million bytes", "GB": "a billion bytes", "TB": "a trillion bytes"}


def _unit_words(unit: str) -> str:
    return f"{unit}, {_DECIMAL[unit]}" if unit in _DECIMAL else f"{unit}, a binary unit (powers of two)"


def percent_as_fraction() -> Mistake:
    """A percent written as a fraction of one, 0.45 for 45% (notebooks 04-08)."""
    return Mistake(lambda percent: percent / 100, "that is a fraction of one: the question asks for percent.")


def unit_mixup(written: str, asked: str) -> Mistake:
    """Bytes given in the unit `written` where the question asks for `asked`, e.g. MB for MiB (notebooks 01-09)."""
    if written not in _BYTES or asked not in _BYTES or written == asked:
        raise ValueError(f"units {written!r} and {asked!r}: two different ones of {list(_BYTES)}")
    ratio = _BYTES[asked] / _BYTES[written]
    return Mistake(
        lambda value: value * ratio, f"that is in {_unit_words(written)}: the question asks for {_unit_words(asked)}."
    )


def itemsize_slip(dtype: str, used: int, right: int, per: str = "element") -> Mistake:
    """Bytes counted at `used` per element where `dtype` takes `right`, e.g. bf16 at 4 (notebooks 01-04)."""
    if used == right or min(used, right) <= 0:
        raise ValueError(f"itemsizes {used} and {right}: two different positive byte counts")
    return Mistake(_scaled(used / right), f"that is {used} bytes per {per}: {dtype} takes {right}.")


def bytes_for_elements(dtype: str, itemsize: int) -> Mistake:
    """A count in bytes where the question counts elements, e.g. a stride (notebooks 02, 03)."""
    if itemsize <= 1:
        raise ValueError(f"itemsize {itemsize}: bytes and elements differ only above 1 byte")
    return Mistake(
        _scaled(itemsize), f"that is in bytes: the question counts elements (one {dtype} element is {itemsize} bytes)."
    )


def _scaled(factor: float) -> Callable[[float], float]:
    return lambda value: value * factor
