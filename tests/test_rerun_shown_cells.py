"""A presenter re-runs cells: every shown code cell gives the same result when run again after Run All.

Each notebook runs top to bottom in a fresh kernel (CUDA hidden by conftest.py, the notebooks folder as
the working directory, as nbval runs it); then, in the same kernel, each code cell of the slideshow
(slide type other than "skip" and "notes") runs a second time, in order, and its text output is
compared with the first run's: printed text and the plain-text value, with nbval's sanitising rules
applied, figures and widgets left out. A cell tagged nbval-ignore-output (its output depends on the
machine) only has to run again without an error, and a cell tagged raises-exception has to raise
again. A cell whose second run differs usually reads a name that a later cell overwrote.
"""

from __future__ import annotations

import asyncio
import configparser
import copy
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
NOT_SHOWN = {"skip", "notes"}
RAISES = {"raises-exception", "nbval-raises-exception"}
IGNORED = {"nbval-ignore-output"}
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")
CELL_TIMEOUT_S = 120


def _sanitizers() -> list[tuple[re.Pattern[str], str]]:
    """The regex/replace pairs nbval applies before it compares (tests/nbval_sanitize.cfg)."""
    config = configparser.ConfigParser()
    config.read(ROOT / "tests" / "nbval_sanitize.cfg")
    return [(re.compile(config[s]["regex"]), config[s]["replace"]) for s in config.sections()]


SANITIZERS = _sanitizers()


def shown_code(cell: nbformat.NotebookNode) -> bool:
    kind = cell.metadata.get("slideshow", {}).get("slide_type")
    return cell.cell_type == "code" and kind not in NOT_SHOWN and bool(cell.source.strip())


def text_of(outputs: list[nbformat.NotebookNode]) -> str:
    """What a cell printed, showed as plain text and raised, sanitised; figures and widgets left out."""
    parts: list[str] = []
    for output in outputs:
        if output.output_type == "stream":
            parts.append(f"[{output.name}]\n{output.text}")
        elif output.output_type == "error":
            parts.append(f"[error] {output.ename}: {output.evalue}")
        else:
            data = output.get("data", {})
            if WIDGET_MIME in data or any(mime.startswith("image/") for mime in data):
                continue
            if "text/plain" in data:
                parts.append(f"[{output.output_type}]\n{data['text/plain']}")
    text = ANSI_COLOUR.sub("", "\n".join(parts))
    for pattern, replace in SANITIZERS:
        text = pattern.sub(replace, text)
    return text


def _joined_streams(outputs: list[nbformat.NotebookNode]) -> list[nbformat.NotebookNode]:
    """The outputs with consecutive chunks of one stream joined: how prints were cut varies run to run."""
    merged: list[nbformat.NotebookNode] = []
    for output in outputs:
        last = merged[-1] if merged else None
        if last is not None and output.output_type == last.output_type == "stream" and output.name == last.name:
            last.text += output.text
        else:
            merged.append(copy.deepcopy(output))
    return merged


def _difference(first: str, again: str) -> str:
    """The first line where two outputs part, both sides, shortened to fit a report."""
    a, b = first.splitlines(), again.splitlines()
    line = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    first, again = (lines[line][:100] if line < len(lines) else "<nothing>" for lines in (a, b))
    return f"line {line + 1}: first {first!r}, again {again!r}"


async def _run_twice(path: Path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        allow_errors=True,  # errors are checked below, cell by cell
        store_widget_state=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    problems: list[str] = []
    async with client.async_setup_kernel():
        for index, cell in enumerate(nb.cells):
            await client.async_execute_cell(cell, index)
            tags = set(cell.metadata.get("tags", []))
            errors = [o for o in cell.get("outputs", []) if o.output_type == "error"]
            if errors and not tags & RAISES:
                return [f"cell {cell.id}: the first run raised {errors[0].ename}: {errors[0].evalue}"]
        for index, cell in enumerate(nb.cells):
            if not shown_code(cell):
                continue
            again = copy.deepcopy(cell)
            await client.async_execute_cell(again, index)
            tags = set(cell.metadata.get("tags", []))
            where = f"cell {cell.id} ({cell.source.strip().splitlines()[0][:60]!r})"
            raised = [o for o in again.outputs if o.output_type == "error"]
            if tags & RAISES and not raised:
                problems.append(f"{where}: tagged raises-exception, but ran again without an error")
            elif raised and not tags & RAISES:
                problems.append(f"{where}: raised {raised[0].ename}: {raised[0].evalue} when run again")
            elif not tags & IGNORED:
                first, second = text_of(_joined_streams(cell.outputs)), text_of(_joined_streams(again.outputs))
                if first != second:
                    problems.append(f"{where}: another output when run again, {_difference(first, second)}")
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_shown_cells_give_the_same_result_when_run_again(path):
    problems = asyncio.run(_run_twice(path))
    assert not problems, f"{path.name}: shown cells that differ when run again after Run All:\n" + "\n".join(problems)


def test_the_comparison_sees_text_and_leaves_out_figures_and_widgets():
    new = nbformat.v4.new_output
    printed = [new("stream", name="stdout", text="a = 1\n"), new("stream", name="stdout", text="b = 0x7f3a\n")]
    figure = new("display_data", data={"image/png": "", "text/plain": "<Figure size 640x480 with 1 Axes>"})
    widget = new("display_data", data={WIDGET_MIME: {"model_id": "1"}, "text/plain": "IntSlider(value=3)"})
    value = new("execute_result", data={"text/plain": "tensor([1., 2.])"}, execution_count=3)
    first = text_of(_joined_streams([*printed, figure, widget, value]))
    assert first == "[stdout]\na = 1\nb = 0xADDRESS\n\n[execute_result]\ntensor([1., 2.])"
    # chunks cut elsewhere, another address, another figure or widget state: the same result
    again = [new("stream", name="stdout", text="a = 1\nb = 0x5ee\n"), new("execute_result", data=value.data)]
    assert text_of(_joined_streams(again)) == first
    changed = [new("stream", name="stdout", text="a = 2\nb = 0x1\n"), value]
    assert text_of(_joined_streams(changed)) != first
    assert _difference(first, text_of(_joined_streams(changed))) == "line 2: first 'a = 1', again 'a = 2'"
