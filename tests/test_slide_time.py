"""tools/slide_time.py on small notebooks built here, its model's terms checked one at a time."""

from __future__ import annotations

import importlib.util
import json
import sys

import nbformat
import pytest
from lab_server import ROOT

_spec = importlib.util.spec_from_file_location("slide_time", ROOT / "tools" / "slide_time.py")
slide_time = importlib.util.module_from_spec(_spec)
sys.modules["slide_time"] = slide_time  # dataclasses look their module up there
_spec.loader.exec_module(slide_time)


def markdown(source: str, kind: str) -> dict:
    cell = nbformat.v4.new_markdown_cell(source)
    cell.metadata["slideshow"] = {"slide_type": kind}
    return cell


def code(source: str, kind: str, outputs: list | None = None) -> dict:
    cell = nbformat.v4.new_code_cell(source, outputs=outputs or [])
    cell.metadata["slideshow"] = {"slide_type": kind}
    return cell


def notebook(*cells: dict) -> dict:
    return json.loads(nbformat.writes(nbformat.v4.new_notebook(cells=list(cells))))


def test_slides_start_at_slide_and_subslide_and_skip_stays_out():
    nb = notebook(
        markdown("# Title", "slide"),
        markdown("one two three", "-"),
        markdown("# Deep dive", "skip"),
        markdown("## Second", "subslide"),
        markdown("four", "fragment"),
    )
    found = slide_time.slides(nb)
    assert [s.title for s in found] == ["Title", "Second"]
    assert [s.cells for s in found] == [[0, 1], [3, 4]]
    assert [s.words for s in found] == [4, 2]


def test_each_term_of_the_model_counted_once():
    # One slide of each kind of content, so each term of the model shows on its own.
    figure = nbformat.v4.new_output("display_data", data={"image/png": "", "text/plain": "<Figure>"})
    widget = nbformat.v4.new_output(
        "display_data", data={slide_time.WIDGET_MIME: {"model_id": "x"}, "text/plain": "result"}
    )
    printed = nbformat.v4.new_output("stream", name="stdout", text="a\nb\nc\n")
    nb = notebook(
        markdown("# Words " + "w " * 149, "slide"),  # 150 words: one minute
        code("x = 1\n\n# why\ny = 2", "slide", [printed]),  # 3 lines of code, 3 printed
        code("plot()", "slide", [figure]),
        code("calculator()", "slide", [widget]),
        markdown("![a figure](../images/x.png)", "slide"),
        markdown("# Terse", "slide"),
        markdown("said " * 150, "notes"),
    )
    words, run, plot, calc, image, notes = slide_time.slides(nb)
    base = slide_time.BASE_S
    assert words.seconds == pytest.approx(base + 60)
    assert run.seconds == pytest.approx(
        base + slide_time.RUN_S + 3 * slide_time.CODE_LINE_S + 3 * slide_time.TEXT_LINE_S
    )
    assert plot.seconds == pytest.approx(base + slide_time.RUN_S + slide_time.CODE_LINE_S + slide_time.FIGURE_S)
    assert calc.seconds == pytest.approx(base + slide_time.RUN_S + slide_time.CODE_LINE_S + slide_time.WIDGET_S)
    assert (image.figures, image.words) == (1, 0)
    assert notes.note_words == 150 and notes.seconds == pytest.approx(base + 151 * 0.4)  # its one word and the notes


def test_collapsed_details_markup_and_link_targets_are_not_words():
    source = (
        "See [the paper](https://example.org/a/very/long/path) **now**.\n"
        "<details><summary>Why it holds</summary>many hidden words here</details>"
    )
    assert slide_time.shown_words(source) == 7  # See the paper now, Why it holds


def test_a_notebook_without_slide_metadata_is_an_error_naming_its_cells(tmp_path, capsys):
    cells = [markdown("# Title", "slide"), nbformat.v4.new_markdown_cell("no type")]
    with pytest.raises(slide_time.SlideMetadataError, match=r"1 of 2 cells .*\(cells 1\)"):
        slide_time.slides(notebook(*cells), "x.ipynb")
    with pytest.raises(slide_time.SlideMetadataError, match="unknown slide types"):
        slide_time.slides(notebook(markdown("# Title", "title-slide")))

    (tmp_path / "00_bare.ipynb").write_text(json.dumps(notebook(*cells)))
    (tmp_path / "01_fine.ipynb").write_text(json.dumps(notebook(markdown("# Fine", "slide"))))
    status = slide_time.main([str(tmp_path / "00_bare.ipynb"), str(tmp_path / "01_fine.ipynb")])
    out, err = capsys.readouterr()
    assert status == 2
    assert "00_bare.ipynb: 1 of 2 cells" in out and "no estimate for 00_bare.ipynb" in err
    assert "01_fine.ipynb" in out and "(target 12)" in out


def test_the_plan_adds_up_to_the_lecture():
    assert sum(slide_time.TARGET_MINUTES.values()) == 80
    numbers = {path.name[:2] for path in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")}
    assert numbers == set(slide_time.TARGET_MINUTES)


def optional(cell: dict) -> dict:
    cell.metadata["tags"] = [slide_time.OPTIONAL_TAG]
    return cell


def test_optional_slides_make_the_short_path(tmp_path, capsys):
    nb = notebook(
        markdown("# Title", "slide"),
        optional(markdown("## Deep dive " + "w " * 148, "slide")),  # 150 words: one minute
        markdown("Optional: the short path skips it.", "notes"),
        code("x = 1", "-"),
        markdown("## Last", "subslide"),
    )
    title, deep, last = found = slide_time.slides(nb)
    assert [s.optional for s in found] == [False, True, False]
    assert deep.notes == ["Optional: the short path skips it."] and deep.cells == [1, 2, 3]
    assert slide_time.short_minutes(found) == pytest.approx((title.seconds + last.seconds) / 60)

    (tmp_path / "06_x.ipynb").write_text(json.dumps(nb))
    assert slide_time.main([str(tmp_path / "06_x.ipynb"), "--slides"]) == 0
    out = capsys.readouterr().out
    full, short = sum(s.seconds for s in found) / 60, slide_time.short_minutes(found)
    assert f"3 slides {full:6.1f} min {short:6.1f} min (target 8)" in out
    assert "Deep dive w w" in out and "(optional)" in out


NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def test_the_full_path_fits_the_lecture():
    minutes = {path.name: slide_time.notebook_minutes(path)[1] for path in NOTEBOOKS}
    low, high = slide_time.LECTURE_MINUTES
    total = sum(minutes.values())
    per_notebook = ", ".join(f"{name[:2]} {m:.1f}" for name, m in minutes.items())
    assert low <= total <= high, (
        f"all slides take an estimated {total:.1f} min ({per_notebook}); the lecture is {low:g}-{high:g}: "
        "cut words and repeats, not results"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_an_optional_slide_says_so_in_its_speaker_notes(path):
    found, _ = slide_time.notebook_minutes(path)
    assert not found[0].optional, f"{path.name}: the title slide is tagged {slide_time.OPTIONAL_TAG}"
    unsaid = [s.title for s in found if s.optional and not (s.notes and s.notes[0].lstrip().startswith("Optional:"))]
    assert not unsaid, f"{path.name}: optional slides whose speaker notes do not begin 'Optional:': {unsaid}"
