"""What the calculators share: the result table, the layout, and display (notebooks 00, 04, 09).

Sized for a projector at 150% browser zoom: widget text a little larger than the notebook's body
text, at most 900 CSS pixels wide. Every number the widget shows also sits in a `data-value`
attribute of an element with a stable class (`calc-<key>`), and the inputs it was computed from in
the result's `data-inputs`, so a test in the browser can compare what it reads with the helper.
The controls are lecture_utils.calculators.controls; the figures under them are drawn by
lecture_utils.figures.calculators.
"""

import html
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import ipywidgets as widgets
from IPython.display import display

from lecture_utils.calculators.controls import CONTROL_WIDTH_PX
from lecture_utils.hardware import lookup_accelerator

MAX_WIDTH_PX = 900
FONT_PX = 16  # JupyterLab's body text is 14 px; widgets default to 13 px
# Custom properties inherit, so setting ipywidgets' own variables on the calculator's root resizes
# every control inside it and nothing outside.
_CSS = f"""<style>
.calc-root {{ --jp-widgets-font-size: {FONT_PX}px; --jp-widgets-inline-height: 34px;
  --jp-widgets-inline-width-tiny: 100px; max-width: {MAX_WIDTH_PX}px; }}
.calc-root .calc-out {{ font-size: {FONT_PX}px; line-height: 1.45; }}
.calc-root .calc-out td {{ padding: 1px 10px 1px 0; }}
.calc-root .calc-out td.calc-number {{ font-weight: bold; text-align: right; }}
.calc-root .calc-title {{ font-weight: bold; margin: 0 0 4px 0; }}
.calc-root .calc-message {{ color: #a33; font-weight: bold; }}
.calc-root .calc-note {{ color: #555; margin: 4px 0 0 0; }}
</style>"""


@dataclass(frozen=True)
class ResultRow:
    """One line of a calculator's result: a label, the number as shown, and the number itself (notebooks 00, 04, 09).

    `key` names the element (class `calc-<key>`) that holds it, for tests in the browser.
    """

    label: str
    key: str
    text: str
    value: float | str


@dataclass(frozen=True)
class Calculator:
    """A calculator's widgets: the whole box, its controls by name, the result text, the figure (notebooks 00, 04, 09).

    Setting a control's value (in the browser or from Python) recomputes the result and redraws the figure.
    """

    box: widgets.VBox
    controls: dict[str, widgets.Widget]
    result: widgets.HTML
    plot: widgets.Output
    describe: Callable[[dict[str, object]], str]  # the controls' values -> the result as plain text

    def values(self) -> dict[str, object]:
        """Each control's current value, by name."""
        return {name: control.value for name, control in self.controls.items()}


def result_html(
    title: str, rows: Sequence[ResultRow], inputs: Mapping[str, object], message: str = "", note: str = ""
) -> str:
    """The result as a title and an HTML table, with the inputs it came from in `data-inputs` (notebooks 00, 04, 09)."""
    lines = [
        f'<tr><td>{html.escape(r.label)}</td><td class="calc-number calc-{r.key}" '
        f'data-value="{html.escape(str(r.value))}">{html.escape(r.text)}</td></tr>'
        for r in rows
    ]
    tail = f'<p class="calc-message">{html.escape(message)}</p>' if message else ""
    tail += f'<p class="calc-note">{html.escape(note)}</p>' if note else ""
    data = html.escape(json.dumps(dict(inputs)))
    head = f'<p class="calc-title">{html.escape(title)}</p>'
    return f'<div class="calc-out" data-inputs="{data}">{head}<table>{"".join(lines)}</table>{tail}</div>'


def result_text(title: str, rows: Sequence[ResultRow], message: str = "", note: str = "") -> str:
    """The same result as plain text: a title, one aligned line per row, the message and note (notebooks 00, 04, 09)."""
    width = max((len(r.label) for r in rows), default=0)
    lines = [title, *(f"  {r.label:<{width}}  {r.text}" for r in rows)]
    return "\n".join(lines + [f"  {text}" for text in (message, note) if text])


def missing_peak(card: str, precision: str) -> str:
    """Why no estimate: the card's datasheet has no dense `precision` row, in words; '' if it has (notebooks 00, 04)."""
    accelerator = lookup_accelerator(card)
    if precision in accelerator.dense:
        return ""
    rows = ", ".join(sorted(accelerator.dense)) or "none"
    return f"the {accelerator.name} datasheet gives no dense {precision} figure (it lists {rows})"


def build_calculator(
    name: str,
    controls: dict[str, widgets.Widget],
    update: Callable[[Calculator], None],
    describe: Callable[[dict[str, object]], str],
    helpers: Sequence[str] = (),
) -> Calculator:
    """Lay out controls beside the result, the figure below, and recompute on every change (notebooks 00, 04, 09).

    `describe(values)` gives the result as plain text, what show_calculator prints. `helpers` name
    controls that only set other controls (a card that fills in its memory): they are shown but not
    observed, so one choice recomputes once.
    """
    result = widgets.HTML(layout=widgets.Layout(width=f"{MAX_WIDTH_PX - CONTROL_WIDTH_PX - 20}px"))
    plot = widgets.Output(layout=widgets.Layout(max_width=f"{MAX_WIDTH_PX}px"))
    # Side by side where the notebook is wide enough, the result under the controls where it is not.
    top = widgets.HBox([widgets.VBox(list(controls.values())), result], layout=widgets.Layout(flex_flow="row wrap"))
    box = widgets.VBox([widgets.HTML(_CSS), top, plot])
    box.add_class("calc-root")
    box.add_class(f"calc-{name}")
    calculator = Calculator(box, controls, result, plot, describe)
    for key, control in controls.items():
        if key in helpers:
            continue
        control.observe(lambda _change: update(calculator), names="value")
    update(calculator)
    return calculator


def refresh(calc: Calculator, result: Callable[..., tuple], draw: Callable[[dict], dict]) -> None:
    """Recompute the result from the controls' values; redraw the figure, or clear it (notebooks 00, 04).

    `result(**values)` gives (title, rows, message): a message (no datasheet row for that dtype, say)
    leaves no figure. `draw(values)` gives the figure's output, lecture_utils.figures.calculators'
    figure_output.
    """
    values = calc.values()
    title, rows, message = result(**values)
    # The figure first: the browser applies updates in order, so a new result never shows beside
    # the figure of the old inputs.
    calc.plot.outputs = () if message else (draw(values),)
    calc.result.value = result_html(title, rows, values, message)


def show_calculator(calculator: Calculator) -> None:
    """Show the live widget, with its starting result as the plain text behind it (notebooks 00, 04, 09).

    One output, two forms: where the widget runs, the widget (so no copy of an old result sits
    beside it once a control moves); where widgets do not run (a static page), the result for the
    starting values as text, the same on every run. The widget's own form carries a model id that
    changes every run.
    """
    bundle = calculator.box._repr_mimebundle_()
    bundle["text/plain"] = calculator.describe(calculator.values())
    display(bundle, raw=True)
