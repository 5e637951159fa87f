"""How long presenting each notebook's slides takes, estimated from what the slides show.

    python tools/slide_time.py [NOTEBOOK ...]   # default: every notebooks/NN_*.ipynb
    python tools/slide_time.py --slides notebooks/04_flops_and_mfu.ipynb   # one line per slide

It prints two totals per notebook and overall: the full path, every slide, and the short path, without
the slides an instructor may drop to fit the time. Such a slide has a cell tagged "optional-slide"
(`metadata.tags`; tag the slide's first cell, though any of its cells marks the whole slide), and its
speaker notes begin "Optional:" to tell the presenter so.

The slideshow is the cells whose `metadata.slideshow.slide_type` is "slide", "subslide",
"fragment" or "-"; "slide" and "subslide" start a new slide, "skip" cells stay out, "notes" cells
are the speaker's notes for the slide before them. A notebook with a cell that has no slide type
(or an unknown one) is an error: the script names the cells and exits with status 2.

The model, per slide (a rough guide to check against a rehearsal, not a measurement):
- BASE_S to bring the slide up and say what it is about;
- the words it shows (markdown, without markup, link targets or collapsed <details> bodies) and
  the words of its speaker notes, at SPEAKING_WPM: the presenter says about as much as is written;
- per code cell, RUN_S to run it live and point at its result, plus CODE_LINE_S per line of code
  read aloud and TEXT_LINE_S per line of printed output (error tracebacks included);
- FIGURE_S per figure (an image in the output or in the markdown) to explain it;
- WIDGET_S per interactive widget (a calculator) to move a control or two.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

SLIDE_TYPES = {"slide", "subslide", "fragment", "-", "skip", "notes"}
NEW_SLIDE = {"slide", "subslide"}
OPTIONAL_TAG = "optional-slide"

BASE_S = 15.0
SPEAKING_WPM = 150.0
RUN_S = 10.0
CODE_LINE_S = 2.0
TEXT_LINE_S = 1.0
FIGURE_S = 30.0
WIDGET_S = 60.0

# The lecture plan: minutes per notebook (80 in all), keyed by the notebook's number. The full path
# may run to LECTURE_MINUTES' upper end; the optional slides are what an instructor drops to run short.
LECTURE_MINUTES = (75.0, 85.0)
TARGET_MINUTES = {"00": 10, "01": 12, "02": 6, "03": 6, "04": 15, "05": 8, "06": 8, "07": 6, "08": 6, "09": 3}

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
_DETAILS_BODY = re.compile(r"(<summary>.*?</summary>).*?</details>", re.S | re.I)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)|<img\b[^>]*>", re.I)
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_TAG = re.compile(r"<[^>]+>")
_WORD = re.compile(r"[A-Za-z0-9][\w'.,/%-]*")


class SlideMetadataError(ValueError):
    """A notebook whose cells do not all carry a known slide type."""


@dataclass
class Slide:
    """What one slide shows and says, counted; `seconds` applies the model."""

    title: str
    words: int = 0  # shown, markdown
    note_words: int = 0
    code_cells: int = 0
    code_lines: int = 0
    text_lines: int = 0
    figures: int = 0
    widgets: int = 0
    optional: bool = False  # a cell of it is tagged OPTIONAL_TAG: an instructor may drop it
    cells: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # its speaker notes' sources

    @property
    def seconds(self) -> float:
        return (
            BASE_S
            + (self.words + self.note_words) * 60.0 / SPEAKING_WPM
            + self.code_cells * RUN_S
            + self.code_lines * CODE_LINE_S
            + self.text_lines * TEXT_LINE_S
            + self.figures * FIGURE_S
            + self.widgets * WIDGET_S
        )


def slide_type(cell: dict) -> str | None:
    """The cell's slide type, or None when it has none."""
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type")


def check_metadata(cells: list[dict], name: str) -> None:
    """Raise SlideMetadataError naming the cells without a known slide type."""
    missing = [i for i, cell in enumerate(cells) if slide_type(cell) is None]
    unknown = [(i, slide_type(cell)) for i, cell in enumerate(cells) if slide_type(cell) not in SLIDE_TYPES | {None}]
    problems = []
    if missing:
        shown = ", ".join(map(str, missing[:12])) + (" ..." if len(missing) > 12 else "")
        problems.append(f"{len(missing)} of {len(cells)} cells have no metadata.slideshow.slide_type (cells {shown})")
    if unknown:
        problems.append(f"unknown slide types {unknown} (known: {sorted(SLIDE_TYPES)})")
    if problems:
        raise SlideMetadataError(f"{name}: " + "; ".join(problems))


def shown_words(markdown: str) -> int:
    """Words a markdown cell shows: collapsed <details> bodies, markup and link targets left out."""
    text = _DETAILS_BODY.sub(r"\1", markdown)
    text = _IMAGE.sub(" ", text)
    text = _LINK_TARGET.sub("]", text)
    text = _TAG.sub(" ", text)
    return len(_WORD.findall(text))


def _text(value: str | list[str]) -> str:
    return value if isinstance(value, str) else "".join(value)


def _count_outputs(outputs: list[dict], slide: Slide) -> None:
    for output in outputs:
        data = output.get("data", {})
        if output.get("output_type") == "error":
            slide.text_lines += len(output.get("traceback", []))
        elif WIDGET_MIME in data:
            slide.widgets += 1
        elif any(mime.startswith("image/") for mime in data):
            slide.figures += 1
        elif output.get("output_type") == "stream":
            slide.text_lines += _text(output.get("text", "")).rstrip("\n").count("\n") + 1
        elif "text/plain" in data:
            slide.text_lines += _text(data["text/plain"]).rstrip("\n").count("\n") + 1


def _title(cell: dict, index: int) -> str:
    for line in _text(cell.get("source", "")).splitlines():
        if line.strip():
            return line.strip().lstrip("#").strip()[:60]
    return f"cell {index}"


def slides(notebook: dict, name: str = "notebook") -> list[Slide]:
    """The notebook's slides in order, each with what it shows counted."""
    cells = notebook.get("cells", [])
    check_metadata(cells, name)
    result: list[Slide] = []
    for index, cell in enumerate(cells):
        kind = slide_type(cell)
        if kind == "skip":
            continue
        if kind in NEW_SLIDE or not result:
            result.append(Slide(_title(cell, index)))
        slide = result[-1]
        slide.cells.append(index)
        slide.optional |= OPTIONAL_TAG in cell.get("metadata", {}).get("tags", [])
        source = _text(cell.get("source", ""))
        if kind == "notes":
            slide.note_words += shown_words(source)
            slide.notes.append(source)
        elif cell.get("cell_type") == "markdown":
            slide.words += shown_words(source)
            slide.figures += len(_IMAGE.findall(source))
        elif cell.get("cell_type") == "code":
            slide.code_cells += 1
            slide.code_lines += sum(1 for line in source.splitlines() if line.strip())
            _count_outputs(cell.get("outputs", []), slide)
    return result


def notebook_minutes(path: Path) -> tuple[list[Slide], float]:
    """(slides, estimated minutes of the full path) of the notebook at `path`."""
    found = slides(json.loads(path.read_text()), path.name)
    return found, sum(s.seconds for s in found) / 60


def short_minutes(found: list[Slide]) -> float:
    """Estimated minutes of the short path: the slides without the optional ones."""
    return sum(s.seconds for s in found if not s.optional) / 60


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--slides", action="store_true", help="also print each slide's estimate")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    total, short_total, target, failed = 0.0, 0.0, 0.0, []
    print(f"{'':<34} {'':>10} {'full':>10} {'short':>10}")
    for path in paths:
        try:
            found, minutes = notebook_minutes(path)
        except SlideMetadataError as error:
            failed.append(path.name)
            print(f"error: {error}")
            continue
        goal = TARGET_MINUTES.get(path.name[:2])
        short = short_minutes(found)
        total += minutes
        short_total += short
        target += goal or 0
        aim = f"(target {goal})" if goal is not None else ""
        print(f"{path.name:<34} {len(found):>3} slides {minutes:6.1f} min {short:6.1f} min {aim}")
        if args.slides:
            for number, slide in enumerate(found, 1):
                mark = " (optional)" if slide.optional else ""
                cells = f"cells {slide.cells[0]}-{slide.cells[-1]}"
                print(f"    {number:>3}. {slide.seconds:5.0f} s  {cells}  {slide.title}{mark}")
    lecture = "" if args.notebooks else ", the lecture {:g}-{:g}".format(*LECTURE_MINUTES)
    print(f"{'total':<34} {'':>10} {total:6.1f} min {short_total:6.1f} min (target {target:g}{lecture})")
    if failed:
        print(f"error: no estimate for {', '.join(failed)}: every cell needs a slide type", file=sys.stderr)
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
