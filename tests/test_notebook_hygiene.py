"""Static checks of the committed notebooks: what nbval's output comparison cannot see."""

import ast
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MACHINE_SPECIFIC = re.compile(r"(?<![\w.])/(?:[\w.-]+/){2,}[\w.-]+|\b0x[0-9a-fA-F]{8,}\b")
IMAGE_REF = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)|<img[^>]+src=\"([^\"]+)\"")
ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")
RAISES = {"raises-exception", "nbval-raises-exception"}
SLIDE_TYPES = {"slide", "subslide", "fragment", "-", "skip", "notes"}  # RISE's
FRAME = re.compile(r"\s*(File |Cell In\[|.*Traceback \(most recent call last\))")  # a traceback's frames


def code_cells(path: Path) -> list[nbformat.NotebookNode]:
    nb = nbformat.read(path, as_version=4)
    return [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]


def output_text(output: nbformat.NotebookNode) -> str:
    parts = [output.get("text", ""), output.get("data", {}).get("text/plain", ""), output.get("traceback", [])]
    return ANSI_COLOUR.sub("", "".join("".join(part) for part in parts))


def test_notebooks_exist_in_order():
    names = [p.name for p in NOTEBOOKS]
    assert names, "no notebooks found"
    assert [n[:2] for n in names] == [f"{i:02d}" for i in range(len(names))], names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_execution_counts_run_one_to_n(path):
    counts = [c.execution_count for c in code_cells(path)]
    assert counts == list(range(1, len(counts) + 1)), f"{path.name}: regenerate with `make outputs`"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_outputs_are_clean(path):
    for cell in code_cells(path):
        tags = set(cell.metadata.get("tags", []))
        for output in cell.outputs:
            where = f"{path.name} [{cell.execution_count}]"
            if output.output_type == "error":
                assert tags & RAISES, f"{where}: stored error {output.ename} in a cell not tagged raises-exception"
            assert output.get("name") != "stderr", f"{where}: stderr in stored output: {output_text(output)[:200]}"
            match = MACHINE_SPECIFIC.search(output_text(output))
            assert match is None, f"{where}: machine-specific string {match.group(0)!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_ignored_and_raising_cells_still_check_something(path):
    for cell in code_cells(path):
        tags = set(cell.metadata.get("tags", []))
        if "nbval-ignore-output" in tags:
            assert re.search(r"\bassert\b|assert_close", cell.source), (
                f"{path.name} [{cell.execution_count}]: an nbval-ignore-output cell must still assert its invariant"
            )
        if tags & RAISES:
            assert any(o.output_type == "error" for o in cell.outputs), (
                f"{path.name} [{cell.execution_count}]: tagged raises-exception but stores no error"
            )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_referenced_images_exist(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for a, b in IMAGE_REF.findall(cell.source):
            ref = a or b
            if ref.startswith(("http:", "https:", "data:", "attachment:")):
                continue
            assert (path.parent / ref).is_file(), f"{path.name}: image {ref} does not exist"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_unsafe_loads_or_stray_semicolons(path):
    for cell in code_cells(path):
        assert not re.search(r"torch\.load\((?![^)]*weights_only\s*=\s*True)", cell.source), (
            f"{path.name} [{cell.execution_count}]: torch.load without weights_only=True"
        )
        last = cell.source.rstrip().splitlines()[-1]
        assert last.lstrip().startswith("#") or not last.endswith(";"), (
            f"{path.name} [{cell.execution_count}]: a trailing ';' does not suppress output under nbval"
        )


def package_names() -> set[str]:
    """Every public function and class defined at the top of a lecture_utils module."""
    names = set()
    for module in (ROOT / "lecture_utils").rglob("*.py"):
        names |= {
            n.name
            for n in ast.parse(module.read_text()).body
            if isinstance(n, ast.FunctionDef | ast.ClassDef) and not n.name.startswith("_")
        }
    return names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_notebook_function_shadows_a_package_one(path):
    # A reader who meets `train(...)` in a cell should not have to ask which `train` it is.
    package = package_names()
    for cell in code_cells(path):
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:  # IPython magics; no notebook defines a helper in such a cell
            continue
        defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)}
        shadowed = sorted(defined & package)
        assert not shadowed, f"{path.name} [{cell.execution_count}] defines {shadowed}, as lecture_utils does"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_intended_errors_show_short(path):
    # What the room reads is the error itself: no frames (`%xmode Minimal` in the cell drops them)
    # and a message that fits a slide.
    for cell in code_cells(path):
        for output in cell.outputs:
            if output.output_type != "error":
                continue
            shown = ANSI_COLOUR.sub("", "\n".join(output.traceback)).splitlines()
            where = f"{path.name} [{cell.execution_count}] {output.ename}"
            frames = [line for line in shown if FRAME.match(line)]
            assert not frames, f"{where}: shows frames ({frames[0].strip()!r}); start the cell with %xmode Minimal"
            assert len(shown) <= 12, f"{where}: {len(shown)} lines of traceback"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_cell_has_a_slide_type(path):
    # The lecture path (README, "Presenting the lecture as slides"): RISE reads these; the first
    # cell, the title, opens the slideshow.
    cells = nbformat.read(path, as_version=4).cells
    kinds = [cell.metadata.get("slideshow", {}).get("slide_type") for cell in cells]
    missing = [i for i, kind in enumerate(kinds) if kind not in SLIDE_TYPES]
    assert not missing, f"{path.name}: cells {missing[:12]} have no known metadata.slideshow.slide_type"
    assert kinds[0] == "slide", f"{path.name}: the first cell is {kinds[0]!r}, not a slide"
