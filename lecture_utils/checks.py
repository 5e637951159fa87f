"""Value rules that a type alone cannot state: a size is positive, an MFU is a fraction of peak.

Annotate a parameter with one of these and the package's import hook (lecture_utils/__init__.py)
checks it at every call, naming the parameter and the rule it broke. A helper raises by hand only
where the message teaches something the rule cannot say (an MFU above 1, an unknown GPU).
"""

import math
from typing import Annotated

from beartype.vale import Is

PositiveInt = Annotated[int, Is[lambda n: n > 0]]
NonNegativeInt = Annotated[int, Is[lambda n: n >= 0]]
PositiveFloat = Annotated[float, Is[lambda x: 0 < x < math.inf]]
NonNegativeFloat = Annotated[float, Is[lambda x: 0 <= x < math.inf]]
Fraction = Annotated[float, Is[lambda x: 0 < x <= 1]]  # a share of something, such as MFU of peak

# TRANSITIONAL (issue 11): the old hand checks, removed once no module calls them.
import math


def check_int(name: str, value: object, minimum: int = 1) -> None:
    """Raise TypeError unless `value` is an int (not a bool), ValueError if it is below `minimum`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        bound = {0: "cannot be negative", 1: "must be positive"}.get(minimum, f"must be >= {minimum}")
        raise ValueError(f"{name} {bound}, got {value}")


def check_dims(**dims: object) -> None:
    """Raise unless every named dimension is a positive int (the message names the bad one)."""
    for name, value in dims.items():
        check_int(name, value)


def check_positive(**values: object) -> None:
    """Raise TypeError unless each named value is a real number, ValueError unless positive and finite."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a number, got {type(value).__name__}")
        if not value > 0 or math.isinf(value):
            raise ValueError(f"{name} must be positive and finite, got {value}")
