"""The package's shape, which issue 11 set: small modules, each helper pointing at its notebook."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted((ROOT / "lecture_utils").rglob("*.py"))
NOTEBOOK_NUMBERS = {p.name[:2] for p in (ROOT / "notebooks").glob("*.ipynb")}
MAX_LINES = 250


def name(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", MODULES, ids=name)
def test_a_module_reads_in_one_sitting(path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{name(path)} has {lines} lines; split it by job"


@pytest.mark.parametrize("path", MODULES, ids=name)
def test_annotations_are_real_objects(path):
    # jaxtyping's advice: stringified annotations and runtime type checking do not mix.
    assert "from __future__ import annotations" not in path.read_text(), name(path)


@pytest.mark.parametrize("path", MODULES, ids=name)
def test_every_public_helper_names_the_notebook_that_teaches_it(path):
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and not node.name.startswith("_") and node.name != "main":
            cited = set(re.findall(r"notebooks? (\d\d)", ast.get_docstring(node) or ""))
            assert cited, f"{name(path)}: the docstring of {node.name} names no notebook, e.g. '(notebook 04)'"
            assert cited <= NOTEBOOK_NUMBERS, f"{name(path)}: {node.name} cites notebooks {sorted(cited)}"


@pytest.mark.parametrize("path", sorted((ROOT / "lecture_utils" / "figures").glob("*.py")), ids=name)
def test_figures_draw_without_the_calculators(path):
    # The calculators show figures; a figure module importing a calculator would run the layers upward.
    imported = [
        node.module
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module
    ]
    assert not [m for m in imported if m.startswith("lecture_utils.calculators")], name(path)
