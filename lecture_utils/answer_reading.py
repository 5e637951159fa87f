"""Reading a practice answer (notebooks 00-09): a number with its unit and the precision it was written to, or letters.

lecture_utils.practice judges what this module reads. A number comes as a Python or numpy number, a
one-element tensor, or a string: "2.5e12", "1,400", "40 GB", or as the worked answers write it,
"37.6B parameters", "5.63 trillion tokens", "4.4 TFLOPs" (a scale word or an SI prefix before a unit
the problem knows; case, spaces and a plural s do not matter). Its precision, the significant figures
written, lets a sensibly rounded answer count as right.
"""

import math
import numbers
import re
from collections.abc import Collection
from dataclasses import dataclass

import torch

# "40." as Python writes it: a trailing point says the zero before it counts as a figure.
NUMBER = re.compile(r"[-+]?(?:\d[\d,_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_QUANTITY = re.compile(rf"\s*({NUMBER.pattern})\s*(.*?)\s*")


@dataclass(frozen=True)
class Reading:
    """A numeric answer as read (notebooks 00-09): its value in the question's unit, and how precisely it was written.

    `figures` counts the significant figures written ("2.4" has 2, "0.940" 3, "960" 2: a whole number's
    trailing zeros are not counted); `half_step` is half a unit of the last one, in the question's unit,
    so the values that round to what was written lie within `half_step` of `value`.
    """

    value: float
    figures: int
    half_step: float

    def rounds_from(self, exact: float) -> bool:
        """Whether `exact`, rounded to the figures written, gives this answer (two figures at least)."""
        slack = 1e-9 * max(abs(exact), abs(self.value))  # 0.9375 written as 0.938 sits on the band's edge
        return self.figures >= 2 and abs(exact - self.value) <= self.half_step + slack


def read_number(answer: object, unit: str, units: dict[str, float] | None = None) -> float:
    """An answer in `unit`: a number, a one-element tensor, or a string, "2.5e12" or "40 GB" (notebooks 00-09)."""
    return read_quantity(answer, unit, units).value


def read_quantity(answer: object, unit: str, units: dict[str, float] | None = None) -> Reading:
    """An answer in `unit`, with the precision it was written to (notebooks 00-09); see `read_number`."""
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real | torch.Tensor | str):
        kind = type(answer).__name__
        raise TypeError(f"answer with {a_number(unit)} (or a string such as '12.5 {unit}'), not a {kind}")
    if isinstance(answer, torch.Tensor):
        if answer.numel() != 1:
            raise TypeError(f"answer with one number, not a tensor of shape {tuple(answer.shape)}")
        answer = answer.item()
    if isinstance(answer, str):
        number, size = _parse_quantity(answer, unit, units or {})
    else:  # a number's shortest repr is what was typed or computed: 0.94 -> "0.94", 1e22 -> "1e+22"
        number, size = (repr(int(answer)) if isinstance(answer, numbers.Integral) else repr(float(answer))), 1.0
    value = float(number) * size
    if not math.isfinite(value):
        raise ValueError(f"answer with {a_number(unit)}, not {value}")
    figures, half_step = _precision(number)
    return Reading(value, figures, half_step * abs(size))


def _precision(number: str) -> tuple[int, float]:
    """Significant figures of a numeral, and half a unit of its last one: "2.40e3" -> (3, 5.0)."""
    mantissa, _, exponent = number.lower().lstrip("+-").partition("e")
    power = int(exponent) if exponent else 0
    if not mantissa.replace(".", "").isdigit():  # inf, nan: no precision to speak of
        return 0, 0.0
    if "." in mantissa:
        whole, fraction = mantissa.split(".")
        return len((whole + fraction).lstrip("0")), 0.5 * 10.0 ** (power - len(fraction))
    significant = mantissa.rstrip("0")
    return len(significant.lstrip("0")), 0.5 * 10.0 ** (power + len(mantissa) - len(significant))


# Words and SI prefixes that scale a unit the problem knows: "5.63 trillion tokens", "4.4 TFLOPs".
_SCALE_WORDS = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_PREFIXES = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "B": 1e9, "T": 1e12, "P": 1e15, "E": 1e18, "Z": 1e21}


def _fold(name: str) -> str:
    """A unit's name with case, spacing and a plural s ironed out: "FLOPs" and "flop", "days" and "day"."""
    name = " ".join(name.casefold().split())
    return name[:-1] if len(name) > 3 and name.endswith("s") else name


def _unit_size(text: str, unit: str, units: dict[str, float]) -> float | None:
    """The size in `unit`s of the unit `text` names, or None when the problem does not know it."""
    known = {"": 1.0, unit: 1.0, **units}
    if text in known:
        return known[text]
    folded = {_fold(name): size for name, size in known.items() if name}
    if _fold(text) in folded:
        return folded[_fold(text)]
    for word, scale in _SCALE_WORDS.items():
        rest = text.casefold().removeprefix(word)
        if rest != text.casefold() and rest.strip() and _fold(rest) in folded:
            return scale * folded[_fold(rest)]
    if len(text) > 1 and text[0] in _PREFIXES and _fold(text[1:]) in folded:
        return _PREFIXES[text[0]] * folded[_fold(text[1:])]
    return None


def _parse_quantity(text: str, unit: str, units: dict[str, float]) -> tuple[str, float]:
    """'1.4e12', '1,400', '40 GB', '37.6B parameters': the numeral as written, and its unit's size in `unit`s."""
    match = _QUANTITY.fullmatch(text)
    size = None if match is None else _unit_size(match.group(2), unit, units)
    if match is None or size is None:
        accepted = ", ".join(repr(name) for name in {unit: 1.0, **units} if name)
        then = f", optionally followed by a unit ({accepted})" if accepted else " with no unit"
        raise ValueError(f"cannot read {text!r}: write a number{then}")
    return match.group(1).replace(",", "").replace("_", ""), size


def read_choices(answer: object, options: str) -> frozenset[str]:
    """The letters picked: "ace", "a, c, e" or a collection of letters, each one of `options` (notebooks 02, 03)."""
    if isinstance(answer, str):
        picked = re.split(r"[\s,;]+", answer.strip()) if re.search(r"[\s,;]", answer.strip()) else list(answer)
    elif isinstance(answer, Collection) and all(isinstance(item, str) for item in answer):
        picked = list(answer)
    else:
        raise TypeError(f"answer with the letters you pick, e.g. 'ac' or {{'a', 'c'}}, not {type(answer).__name__}")
    letters = frozenset(item.strip().casefold() for item in picked if item.strip())
    unknown = sorted(letters - set(options))
    if unknown:
        raise ValueError(f"no option {', '.join(unknown)}: the options are {', '.join(options)}")
    return letters


def a_number(unit: str) -> str:
    """How a message names the answer wanted: "a number in GB", or "a number" (notebooks 00-09)."""
    return f"a number in {unit}" if unit else "a number"
