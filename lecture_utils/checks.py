"""Value rules that a type alone cannot state: a size is positive, an MFU is a fraction of peak.

Annotate a parameter with one of these and the package's import hook (lecture_utils/__init__.py)
checks it at every call, naming the parameter and the rule it broke. A helper raises by hand only
where the message teaches something the rule cannot say (an MFU above 1, an unknown GPU).
"""

import math
from collections.abc import Sequence
from typing import Annotated

from beartype.vale import Is

PositiveInt = Annotated[int, Is[lambda n: n > 0]]
NonNegativeInt = Annotated[int, Is[lambda n: n >= 0]]
PositiveFloat = Annotated[float, Is[lambda x: 0 < x < math.inf]]
NonNegativeFloat = Annotated[float, Is[lambda x: 0 <= x < math.inf]]
Fraction = Annotated[float, Is[lambda x: 0 < x <= 1]]  # a share of something, such as MFU of peak

# beartype checks one random item of a sequence per call, so `Sequence[PositiveInt]` would let a
# bad size through most of the time; these check the value of every item.
PositiveInts = Annotated[Sequence[int], Is[lambda items: all(n > 0 for n in items)]]
NonNegativeInts = Annotated[Sequence[int], Is[lambda items: all(n >= 0 for n in items)]]
NonNegativeFloats = Annotated[Sequence[float], Is[lambda items: all(0 <= x < math.inf for x in items)]]
Fractions = Annotated[Sequence[float], Is[lambda items: all(0 < x <= 1 for x in items)]]
