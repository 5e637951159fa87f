"""Practice problems: judge a student's answer against one the package computes, never showing it (notebooks 00-09).

Each notebook ends with a Practice section whose problems live in a module of lecture_utils.problems
(one per notebook, `PROBLEMS = {1: Problem(...), ...}`). A problem's `work` function computes the
worked answer with the package's own functions and returns it as a `Worked`: the steps, each with
its numbers, and the value. The student's cell calls `problem.check(answer)`, which compares the
answer with that same value and prints a verdict: right (within `rel_tol` of it), close (within
`close_tol`) or wrong, with a hint that never holds the answer. The worked answer's cell, which
JupyterLab opens collapsed, ends with `problem.work()`, shown as a closed <details> block.

A verdict must not let an answer be found by trial and error. So a wrong numeric answer is not
told which way it is off (a "too high" on every run would bisect an integer in a dozen runs);
only a close answer to a problem with a tolerance hears "too high" or "too low", and a close
answer to an exact problem (rel_tol 0) hears only "not exact". A choice answer hears right,
close (one letter off, added or missing, without saying which) or wrong, never how many.

lecture_utils.answer_reading reads what a student types. A numeric answer is a number in the unit
the question names (`Problem.unit`), or a string that may name another unit the problem accepts
(`Problem.units`), such as "2 GiB" where the question asks for GB, or as the worked answers write
it: "37.6B parameters", "5.63 trillion tokens", "4.4 TFLOPs". An answer rounded sensibly is right,
as a teacher grades it: one of two significant figures or more is right when the worked value
rounds to it ("2.4%" for 2.43%), unless a known mistake's value rounds to it too. A problem with
rel_tol 0 (a count, an index) wants the exact value.

A choice answer ("which of these copy?") is a string or a collection of option letters:
"ace", "a, c, e" or {"a", "c", "e"}.
"""

import html
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from lecture_utils.answer_reading import NUMBER, Reading, a_number, read_choices, read_quantity
from lecture_utils.checks import NonNegativeFloat, PositiveInt

Grade = Literal["not answered", "right", "close", "wrong"]
Answer = float | frozenset[str]

# Factors between common units (k, M, G, T and their binary cousins): an answer off by one of them
# has the right digits in the wrong unit.
_UNIT_SLIPS = (1e3, 1e6, 1e9, 1e12, 2.0**10, 2.0**20, 2.0**30, 2.0**40)
_SUMMARY = "Worked answer (click to open, again to close)"  # true open or closed, one row


@dataclass(frozen=True)
class Worked:
    """A worked answer (notebooks 00-09): its steps, each with the numbers computed, and the value `check` uses.

    In a notebook it shows as a closed <details> block: JupyterLab shows a cell's output again each
    time the cell runs, whatever its collapse metadata says, so the answer hides in its own output.
    """

    steps: tuple[str, ...]
    value: Answer
    answer: str  # the value as the question asks for it, e.g. "65.1 days"
    notes: tuple[str, ...] = ()  # what a second route found, shown after the answer

    def noting(self, *lines: str) -> "Worked":
        """The same worked answer with `lines` added after it."""
        return replace(self, notes=(*self.notes, *lines))

    def __str__(self) -> str:
        return "\n".join([*self.steps, f"answer: {self.answer}", *self.notes])

    def __repr__(self) -> str:
        return f"worked answer:\n{self}"

    def _repr_html_(self) -> str:
        return f"<details><summary>{_SUMMARY}</summary><pre>{html.escape(str(self))}</pre></details>"


@dataclass(frozen=True)
class Mistake:
    """A known wrong route to a numeric answer (notebooks 00-09): the value it gives, and the hint for it.

    `value` gets the problem's worked value and returns what the wrong route gives, in the question's unit.
    """

    value: Callable[[float], float]
    hint: str


@dataclass(frozen=True)
class Verdict:
    """What `check_answer` decided (notebooks 00-09): the grade, and the message the student reads."""

    grade: Grade
    message: str


@dataclass(frozen=True)
class Problem:
    """One practice problem (notebooks 00-09): the question, its worked answer, and how near counts as right.

    `units` maps each other unit a typed string may use to its size in `unit`s, e.g. {"GiB": 2**30 / 1e9}
    where the question asks for GB. A choice problem lists its `options` ("abcdef") and its work
    returns the letters that are right. rel_tol 0 asks for the exact value (a count, an index).
    """

    number: PositiveInt
    title: str
    question: str  # markdown; it names the unit of the answer
    unit: str
    work: Callable[[], Worked]
    hint: str
    rel_tol: NonNegativeFloat = 0.01
    close_tol: NonNegativeFloat = 0.1
    units: dict[str, float] = field(default_factory=dict)
    mistakes: tuple[Mistake, ...] = ()
    options: str = ""

    def __post_init__(self) -> None:
        if self.close_tol < self.rel_tol:
            raise ValueError(f"problem {self.number}: close_tol {self.close_tol} is below rel_tol {self.rel_tol}")

    def markdown(self) -> str:
        """The problem's cell in the notebook: a heading, then the question."""
        return f"### Problem {self.number}: {self.title}\n\n{self.question}"

    def expected(self) -> Answer:
        """The worked answer's value, the one an answer is judged against."""
        return self.work().value

    def check(self, answer: object) -> None:
        """Print the verdict on `answer` (None: not answered yet)."""
        print(check_answer(self, answer).message)


def check_answer(problem: Problem, answer: object) -> Verdict:
    """Judge `answer` against the problem's worked value: right, close or wrong, with a hint (notebooks 00-09)."""
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        what = "your choice of letters" if problem.options else a_number(problem.unit)
        return Verdict("not answered", f"not answered yet: set answer_{problem.number} to {what}, then run the cell")
    expected = problem.expected()
    if isinstance(expected, frozenset):
        return _judge_choices(problem, expected, read_choices(answer, problem.options))
    return _judge_number(problem, expected, read_quantity(answer, problem.unit, problem.units))


def _percent(fraction: float) -> str:
    return f"{fraction * 100:g}%"


def _judge_number(problem: Problem, expected: float, reading: Reading) -> Verdict:
    value = reading.value
    error = abs(value - expected) / abs(expected) if expected else (0.0 if value == 0 else math.inf)
    if error <= problem.rel_tol:
        within = "exactly" if problem.rel_tol == 0 else f"within {_percent(problem.rel_tol)} of the worked answer"
        return Verdict("right", f"right ({within}). Compare your route with the worked answer below.")
    mistake = _matching_mistake(problem, expected, reading)
    # Rounded as written: right, unless a known mistake rounds to it as well (then it tells nothing).
    if problem.rel_tol > 0 and mistake is None and reading.rounds_from(expected):
        return Verdict("right", "right (the worked answer, rounded as you wrote it). Compare your route with it below.")
    hint = mistake.hint if mistake else _hint(problem, expected, value)
    if reveals(hint, expected, problem.rel_tol):  # an authoring slip, caught before a student sees it
        raise ValueError(f"problem {problem.number}: this hint gives the answer away; reword it: {hint}")
    if error > problem.close_tol:  # no direction: it would guide a search (see the module docstring)
        return Verdict("wrong", f"wrong. Hint: {hint}")
    if problem.rel_tol == 0:  # an exact answer is a few runs from the close band's edge: no direction
        return Verdict("close", f"close, but not exact. Hint: {hint}")
    direction = "too high" if value > expected else "too low"
    return Verdict("close", f"close, but {direction}: more than {_percent(problem.rel_tol)} off. Hint: {hint}")


def _matching_mistake(problem: Problem, expected: float, reading: Reading) -> Mistake | None:
    """The known mistake whose value the answer is, or rounds from; the nearest one if several are."""
    matches = []
    for mistake in problem.mistakes:
        slip = mistake.value(expected)
        gap = abs(reading.value - slip)
        if gap <= max(problem.rel_tol, 1e-9) * abs(slip) or reading.rounds_from(slip):
            matches.append((gap / abs(slip) if slip else gap, mistake))
    return min(matches, key=lambda match: match[0])[1] if matches else None


def _hint(problem: Problem, expected: float, value: float) -> str:
    """A unit slip's hint, else the problem's own (a known mistake's hint comes first: `_matching_mistake`)."""
    ratio = value / expected if expected and problem.unit else 0.0
    if any(math.isclose(ratio, f, rel_tol=0.01) for slip in _UNIT_SLIPS for f in (slip, 1 / slip)):
        return f"the digits look right but the unit does not: the question asks for {problem.unit}."
    return problem.hint


def _judge_choices(problem: Problem, expected: frozenset[str], picked: frozenset[str]) -> Verdict:
    off = len(picked ^ expected)  # letters added or missing; never shown, it would give the set away
    if not off:
        return Verdict("right", "right. Compare your reasons with the worked answer below.")
    if off == 1:
        return Verdict("close", f"close: one letter is off. Hint: {problem.hint}")
    return Verdict("wrong", f"wrong. Hint: {problem.hint}")


def reveals(text: str, expected: Answer, rel_tol: NonNegativeFloat = 0.01) -> bool:
    """Whether `text` gives a numeric answer away: holds a number the check would call right (notebooks 00-09).

    That is a number within `rel_tol` (at least 1%) of the answer, or one of two significant digits or
    more that is, times a power of 1000 or 1024: "3.76e10" gives away 37.6 (billion), while the 2 of
    "bf16 takes 2 bytes" does not give away 2,004 (MiB).
    """
    if isinstance(expected, frozenset) or expected == 0:
        return False
    tolerance = max(rel_tol, 0.01)
    for token in NUMBER.findall(text):
        number = float(token.replace(",", "").replace("_", ""))
        digits = re.sub(r"[eE].*|\D", "", token).strip("0")
        scales = (1.0, *_UNIT_SLIPS, *(1 / s for s in _UNIT_SLIPS)) if len(digits) >= 2 else (1.0,)
        if any(math.isclose(number * scale, expected, rel_tol=tolerance) for scale in scales):
            return True
    return False
