"""The calculators' controls (notebooks 00, 04, 09): sliders, dropdowns and number boxes in one column.

Counts read as people write them (70B, 15T) and are typed the same way or as 7e9; every control
is CONTROL_WIDTH_PX wide with room for its label, for a projector at 150% browser zoom.
"""

import math
import re
from collections.abc import Sequence

import ipywidgets as widgets
import traitlets

from lecture_utils.checks import NonNegativeInt
from lecture_utils.figures.style import count_label

CONTROL_WIDTH_PX = 460
READOUT_PX = 90  # a count slider's typed readout
_SCALES = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}


def parse_count(text: str) -> float:
    """A count as people type it: 70B, 1.5T, 350M, 7K, 7e9 or 70,000,000,000 (notebooks 00, 09)."""
    cleaned = re.sub(r"[\s,_]", "", text).upper()
    scale = _SCALES.get(cleaned[-1:], 1.0)
    number = cleaned[:-1] if scale != 1.0 else cleaned
    try:
        value = float(number) * scale
    except ValueError:
        raise ValueError(f"{text!r} is not a count: write 70B, 1.5T, 350M or 7e9") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{text!r} is not a positive count")
    return value


def power_of_two_slider(description: str, low: NonNegativeInt, high: NonNegativeInt, value: int) -> widgets.Widget:
    """A slider over 2**low ... 2**high: each arrow key doubles or halves the value (notebooks 00, 04, 09)."""
    options = [(f"{2**k:,}", 2**k) for k in range(low, high + 1)]
    if value not in dict(options).values():
        raise ValueError(f"{description}: {value} is not a power of two from {2**low:,} to {2**high:,}")
    return widgets.SelectionSlider(
        options=options, value=value, description=description, continuous_update=False, **_wide()
    )


class CountSlider(widgets.HBox):
    """A base-10 log slider whose readout reads as people write counts (70B) and takes typed ones (notebooks 00, 09).

    `value` is the count; setting it from Python moves the slider and the readout. A typed count
    outside the slider's range goes to the nearest end; text that is no count restores the readout.
    """

    value = traitlets.Float()

    def __init__(self, description: str, value: float, low_exp: float, high_exp: float) -> None:
        slider = widgets.FloatLogSlider(
            value=value, base=10, min=low_exp, max=high_exp, step=0.01, readout=False, description=description,
            continuous_update=False, **_wide(CONTROL_WIDTH_PX - READOUT_PX),
        )  # fmt: skip
        readout = widgets.Text(
            count_label(value), continuous_update=False, layout=widgets.Layout(width=f"{READOUT_PX}px")
        )
        super().__init__([slider, readout], layout=widgets.Layout(width=f"{CONTROL_WIDTH_PX}px"))
        self.slider, self.readout, self.limits = slider, readout, (10.0**low_exp, 10.0**high_exp)
        self.value = slider.value
        slider.observe(lambda change: setattr(self, "value", change["new"]), names="value")
        readout.observe(self._typed, names="value")
        self.observe(self._show, names="value")

    def _show(self, change: dict) -> None:
        self.slider.value = change["new"]
        self.readout.value = count_label(change["new"])

    def _typed(self, change: dict) -> None:
        try:
            typed = parse_count(change["new"])
        except ValueError:
            typed = self.value
        if count_label(typed) == count_label(self.value):
            self.readout.value = count_label(self.value)  # "70e9" reads "70B" again
        else:
            self.value = min(max(typed, self.limits[0]), self.limits[1])


def log_slider(description: str, value: float, low_exp: float, high_exp: float) -> CountSlider:
    """A count slider from 10**low_exp to 10**high_exp, read as 70B, typed as 7e9 or 405B (notebooks 00, 09)."""
    return CountSlider(description, value, low_exp, high_exp)


def dropdown(description: str, options: Sequence[tuple[str, object]], value: object) -> widgets.Widget:
    """A dropdown of (label, value) pairs (notebooks 00, 04, 09)."""
    return widgets.Dropdown(options=list(options), value=value, description=description, **_wide())


def fraction_slider(description: str, value: float, low: float = 0.05) -> widgets.Widget:
    """A slider from `low` to 1 in steps of 0.01; its readout takes a typed value (notebook 00)."""
    return widgets.FloatSlider(
        value=value, min=low, max=1.0, step=0.01, readout_format=".2f", description=description,
        continuous_update=False, **_wide(),
    )  # fmt: skip


def number_box(description: str, value: float, low: float, high: float, *, integer: bool = False) -> widgets.Widget:
    """A box to type a number into, held between `low` and `high` (notebooks 04, 09)."""
    box = widgets.BoundedIntText if integer else widgets.BoundedFloatText
    return box(value=value, min=low, max=high, description=description, **_wide(300))


def _wide(width_px: int = CONTROL_WIDTH_PX) -> dict:
    """Layout and style shared by every control: one column, labels wide enough to read whole."""
    return {"layout": widgets.Layout(width=f"{width_px}px"), "style": {"description_width": "150px"}}
