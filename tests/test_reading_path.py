"""The main path a student reads: one idea per markdown cell, and no test tooling in sight.

The main path is every markdown cell before a notebook's "## Practice" heading, minus its collapsed
<details> blocks (caveats only some readers need; they open on a click). Each such cell holds at most
MAX_WORDS words, counted as whitespace-separated tokens of the cell's source. Nowhere a student reads
(markdown, code, stored outputs) names the test tooling, and no code line is wider than a projector
shows.
"""

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
MAX_WORDS = 150
DETAILS = re.compile(r"<details>.*?</details>", re.DOTALL)
TOOLING = re.compile(r"nbval|sanitiz|fixture", re.IGNORECASE)
# The widest code line that reads on a 1080p projector at 150% zoom with the file browser hidden.
MAX_CODE_CHARS = 95


def cells(path: Path) -> list[nbformat.NotebookNode]:
    return nbformat.read(path, as_version=4).cells


def main_path(path: Path) -> list[tuple[int, str]]:
    """(index, text outside <details>) of each markdown cell before the Practice section."""
    shown = []
    for index, cell in enumerate(cells(path)):
        if cell.cell_type == "markdown" and cell.source.startswith("## Practice"):
            break
        if cell.cell_type == "markdown":
            shown.append((index, DETAILS.sub("", cell.source)))
    return shown


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_one_idea_per_markdown_cell(path):
    long = {index: len(text.split()) for index, text in main_path(path) if len(text.split()) > MAX_WORDS}
    assert not long, f"{path.name}: markdown cells (index: words) over {MAX_WORDS} words: {long}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_details_blocks_are_whole(path):
    for index, cell in enumerate(cells(path)):
        if cell.cell_type != "markdown" or "<details" not in cell.source:
            continue
        opened, closed = cell.source.count("<details>"), cell.source.count("</details>")
        assert opened == closed == len(DETAILS.findall(cell.source)), f"{path.name} [{index}]: unbalanced <details>"
        for block in DETAILS.findall(cell.source):
            assert block.startswith("<details><summary>") and "</summary>" in block, (
                f"{path.name} [{index}]: a <details> block opens with its <summary>, the line a reader clicks"
            )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_test_tooling_words_where_students_read(path):
    for index, cell in enumerate(cells(path)):
        outputs = "".join(
            str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in cell.get("outputs", [])
        )
        found = TOOLING.search(cell.source + outputs)
        assert found is None, f"{path.name} [{index}]: {found.group(0)!r} in what students read"


def test_the_word_count_sees_what_it_should():
    sample = "one two three\n\n<details><summary>more</summary>\n\nfour five\n\n</details>\nsix"
    assert len(DETAILS.sub("", sample).split()) == 4


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_code_reads_on_a_projector_without_scrolling(path):
    wide = [
        (index, len(line))
        for index, cell in enumerate(cells(path))
        if cell.cell_type == "code"
        for line in cell.source.splitlines()
        if len(line) > MAX_CODE_CHARS
    ]
    assert not wide, f"code lines over {MAX_CODE_CHARS} characters (cell, width): {wide}"
