"""Each slide stands on its own: someone who sees only the slides follows the lecture.

The slideshow is the cells whose `metadata.slideshow.slide_type` is not "skip"; "notes" cells are the
presenter's, read beside the slide they follow. A slide runs from a "slide" or "subslide" cell to the
next one. Every notebook holds to four rules (CONVENTIONS.md, "Presenting"):

(a) No shown code cell reads a name that, at that point, only skipped code cells have defined, unless
    a slide says what it is: one of the slide's shown markdown cells, or of an earlier slide's,
    names it in backticks (`scores`, `model.blocks[0]`) or sets it equal to something ("L = 2").
    Set-up is fine: names that skipped cells define before the first shown code cell count as
    shown. A name is defined by an assignment (plain, augmented, annotated, walrus), a for or with
    target, an import, a def or a class at the top level of a cell; it is read when the cell loads
    it before defining it (inside a function of the cell too). Builtins and IPython's own names do
    not count; IPython magics (`%...`, `!...`) are left out.
(b) No shown markdown cell, speaker notes included, points at a skipped cell: a pointer ("the next
    cell", "the cell below", "Below, ...", "the times below are", "(the load follows)"; "the cell
    above", "the previous cell", "the block above kept") whose cell is skipped, the cell being the
    next (or previous) cell in notebook order that is not a speaker note. A pointer that names no
    cell ("a cell below", "further down", "a later cell") points at every cell up to the next
    slide (or back to its slide's start), so one skipped cell there is enough. "below the ridge",
    "above 1" and "the gap above 1" compare values and point at nothing.
(c) No shown heading carries a section number (`## 4.`, `## 1 Parameters`) unless the numbered
    headings the slides show read 1, 2, 3, ... in order (sub-numbers 4.1, 4.2 under their 4).
(d) The first cell is a slide: the title opens the slideshow.

Rules (a) and (b) hold on the full path and on the short path, where the slides an instructor may
drop (a cell of theirs tagged "optional-slide", as tools/slide_time.py counts them) are skipped too.

A violation is reported with the notebook, the cell's id and the offending name or phrase.
"""

from __future__ import annotations

import ast
import builtins
import copy
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
NOT_SHOWN = {"skip", "notes"}
NEW_SLIDE = {"slide", "subslide"}
OPTIONAL_TAG = "optional-slide"
# Names a kernel has without any cell defining them.
KNOWN = set(dir(builtins)) | {"display", "get_ipython", "In", "Out", "_", "__", "___", "exit", "quit"}
MAGIC = re.compile(r"^\s*[%!]")
BACKTICKS = re.compile(r"`([^`\n]+)`")
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
SAID_EQUAL = re.compile(r"(?<![\w.\\])([A-Za-z_]\w*)\s*=(?!=)")  # "L = 2", "$T = 326$"
HEADING_NUMBER = re.compile(r"^#{2,6}[ \t]+(\d{1,2}(?:\.\d{1,2})*)\.?[ \t]+\S.*", re.M)

# (b): what a pointer at a cell reads like. A verb right after "below"/"above" makes a noun phrase
# ("the times below are"); a number, "it", "the", "that" after it makes a comparison ("below 2^-8").
_VERB = (
    r"(?:is|are|was|were|shows?|showed|measures?|measured|runs?|ran|prints?|printed|checks?|checked"
    r"|gives?|gave|draws?|drew|plots?|plotted|compares?|compared|does|did|has|had|computes?|computed"
    r"|counts?|counted|kept|keeps|adds?|added|uses?|used|defines?|defined|builds?|built|times?|timed)"
)
_STARTS = r"(?:^|(?<=[.!?:]\s)|(?<=\())"  # the start of a line, a sentence or a parenthesis
_NOT_GAP = r"(?<!\bgap )"  # "the gap above 1": the spacing of floating-point numbers, not a cell
FORWARD = re.compile(
    "|".join(
        [
            r"\bthe\s+(?:next|following)\s+(?:code\s+|markdown\s+)?cells?\b",
            r"\bthe\s+(?:code\s+)?cells?\s+below\b",
            _STARTS + r"below\s*[,:]",
            _NOT_GAP + r"\bbelow\s*(?::|\)|$|\.(?:\s|$))",
            r"\b(?:the|this|these|each)\s+(?:[\w-]+\s+){1,3}" + _NOT_GAP + r"below\s+" + _VERB + r"\b",
            r"\bas\s+follows\b",
            r"\bfollows?\s*(?=[:)]|\.(?:\s|$)|$)",
        ]
    ),
    re.I | re.M,
)
BACKWARD = re.compile(
    "|".join(
        [
            r"\bthe\s+(?:previous|preceding|last)\s+(?:code\s+|markdown\s+)?cells?\b",
            r"\bthe\s+(?:code\s+)?cells?\s+above\b",
            _STARTS + r"above\s*[,:]",
            _NOT_GAP + r"\babove\s*(?::|\)|$|\.(?:\s|$))",
            r"\b(?:the|this|these|each)\s+(?:[\w-]+\s+){1,3}" + _NOT_GAP + r"above\s+" + _VERB + r"\b",
        ]
    ),
    re.I | re.M,
)
# "a cell below adds it" names no cell: it points at any cell between it and the next slide (or,
# looking back, since its slide began), so one skipped cell there is enough.
SOMEWHERE_BELOW = re.compile(
    r"\b(?:a|one)\s+(?:code\s+)?cell\s+(?:below|further\s+down)\b|\ba\s+(?:later|following)\s+(?:code\s+)?cell\b"
    r"|\bfurther\s+down\b|\blater\s+in\s+(?:the|this)\s+notebook\b",
    re.I,
)
SOMEWHERE_ABOVE = re.compile(
    r"\b(?:a|one)\s+(?:code\s+)?cell\s+(?:above|further\s+up)\b|\ban\s+earlier\s+(?:code\s+)?cell\b"
    r"|\bfurther\s+up\b|\bearlier\s+in\s+(?:the|this)\s+notebook\b",
    re.I,
)


@dataclass(frozen=True)
class Violation:
    notebook: str
    cell_id: str
    what: str

    def __str__(self) -> str:
        return f"{self.notebook} cell {self.cell_id}: {self.what}"


def slide_type(cell: dict) -> str | None:
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type")


def shown(cell: dict) -> bool:
    return slide_type(cell) not in NOT_SHOWN


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


# (a) names ---------------------------------------------------------------------------------------


def _scope_names(node: ast.AST) -> set[str]:
    """Every name a function, lambda, class or comprehension binds inside itself (its locals)."""
    names: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store | ast.Del):
            names.add(sub.id)
        elif isinstance(sub, ast.arg):
            names.add(sub.arg)
        elif isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and sub is not node:
            names.add(sub.name)
        elif isinstance(sub, ast.Import | ast.ImportFrom):
            names |= {alias.asname or alias.name.split(".")[0] for alias in sub.names}
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            names.add(sub.name)
    return names


class _Names(ast.NodeVisitor):
    """The names one cell reads before defining them, and those it defines at its top level."""

    def __init__(self) -> None:
        self.defined: set[str] = set()
        self.read: list[str] = []
        self._locals: list[set[str]] = []

    def _load(self, name: str) -> None:
        if any(name in scope for scope in self._locals) or name in self.defined:
            return
        if name not in self.read:
            self.read.append(name)

    def _bind(self, name: str) -> None:
        if not self._locals:
            self.defined.add(name)

    def _nested(self, node: ast.AST, body: list[ast.AST]) -> None:
        self._locals.append(_scope_names(node))
        for child in body:
            self.visit(child)
        self._locals.pop()

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self._load(node.id)
        else:
            self._bind(node.id)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for target in node.targets:
            self.visit(target)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.visit(node.annotation)
        if node.value is not None:
            self.visit(node.value)
        self.visit(node.target)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        if isinstance(node.target, ast.Name):
            self._load(node.target.id)
        self.visit(node.target)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        self.visit(node.target)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        self.visit(node.target)
        for child in node.body + node.orelse:
            self.visit(child)

    visit_AsyncFor = visit_For

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self.visit(item.optional_vars)
        for child in node.body:
            self.visit(child)

    visit_AsyncWith = visit_With

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            self._bind(alias.asname or alias.name.split(".")[0])

    visit_ImportFrom = visit_Import

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.visit(node.type)
        if node.name:
            self._bind(node.name)
        for child in node.body:
            self.visit(child)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for expr in [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]:
            if expr is not None:
                self.visit(expr)
        for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
            if arg.annotation is not None:
                self.visit(arg.annotation)
        if node.returns is not None:
            self.visit(node.returns)
        self._bind(node.name)
        self._nested(node, node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for expr in [*node.args.defaults, *node.args.kw_defaults]:
            if expr is not None:
                self.visit(expr)
        self._nested(node, [node.body])

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expr in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.visit(expr)
        self._bind(node.name)
        self._nested(node, node.body)

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        self.visit(node.generators[0].iter)  # the first iterable is read in the enclosing scope
        parts = [*node.generators[0].ifs, *node.generators[1:]]
        parts += [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        self._locals.append({n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)})
        for part in parts:
            self.visit(part)
        self._locals.pop()

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self.visit(node.iter)
        for cond in node.ifs:
            self.visit(cond)


def cell_names(source: str) -> tuple[set[str], list[str]]:
    """(names the code defines at its top level, names it reads before defining them), in order.

    IPython magic and shell lines are left out; a cell Python cannot parse reads and defines nothing.
    """
    code = "\n".join("" if MAGIC.match(line) else line for line in source.splitlines())
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set(), []
    names = _Names()
    names.visit(tree)
    return names.defined, [name for name in names.read if name not in KNOWN]


def _slides(cells: list[dict]) -> list[int]:
    """For each cell, the index of the slide it belongs to (-1 before the first)."""
    slide, result = -1, []
    for index, cell in enumerate(cells):
        if slide_type(cell) in NEW_SLIDE:
            slide = index
        result.append(slide)
    return result


def names_said(markdown: str) -> set[str]:
    """The names a markdown cell says what they are: in backticks, or set equal to something (L = 2)."""
    spans = BACKTICKS.findall(markdown)
    return {word for span in spans for word in IDENTIFIER.findall(span)} | set(SAID_EQUAL.findall(markdown))


def names_from_skipped_cells(cells: list[dict], notebook: str = "notebook") -> list[Violation]:
    """Rule (a): each shown code cell's reads of names that only skipped code cells have defined."""
    slide_of = _slides(cells)
    explained: dict[int, set[str]] = {}
    for index, cell in enumerate(cells):
        if cell.get("cell_type") == "markdown" and shown(cell):
            explained.setdefault(slide_of[index], set()).update(names_said(_source(cell)))
    on_slides: set[str] = set()
    skipped_only: set[str] = set()
    seen_shown_code = False
    found = []
    for index, cell in enumerate(cells):
        if cell.get("cell_type") == "markdown" and shown(cell):  # said on a slide: the room knows it now
            on_slides |= names_said(_source(cell))
            skipped_only -= on_slides
        if cell.get("cell_type") != "code":
            continue
        defined, read = cell_names(_source(cell))
        if not shown(cell):
            if seen_shown_code:
                skipped_only |= defined - on_slides
            else:  # set-up before the first shown code
                on_slides |= defined
            continue
        seen_shown_code = True
        said = explained.get(slide_of[index], set())
        for name in read:
            if name in skipped_only and name not in said:
                what = f"`{name}` is defined only in skipped cells"
                found.append(Violation(notebook, cell.get("id", str(index)), what))
        on_slides |= defined
        skipped_only -= defined
    return found


# (b) pointers -------------------------------------------------------------------------------------


def _neighbour(cells: list[dict], index: int, step: int) -> dict | None:
    index += step
    while 0 <= index < len(cells) and slide_type(cells[index]) == "notes":
        index += step
    return cells[index] if 0 <= index < len(cells) else None


def _skipped_on_the_way(cells: list[dict], index: int, step: int) -> bool:
    """Whether a skipped cell lies between cell `index` and the next slide (step 1) or its own slide's start."""
    while 0 <= index + step < len(cells):
        if step > 0 and slide_type(cells[index + step]) in NEW_SLIDE:
            return False
        index += step
        if slide_type(cells[index]) == "skip":
            return True
        if step < 0 and slide_type(cells[index]) in NEW_SLIDE:
            return False
    return False


def pointers_at_skipped_cells(cells: list[dict], notebook: str = "notebook") -> list[Violation]:
    """Rule (b): pointers in shown markdown (notes included) at a cell that is skipped."""
    found = []
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "markdown" or slide_type(cell) == "skip":
            continue
        text = _source(cell)
        checks = []
        for pattern, step, where in ((FORWARD, 1, "next"), (BACKWARD, -1, "previous")):
            neighbour = _neighbour(cells, index, step)
            checks.append((pattern, neighbour is not None and not shown(neighbour), f"the skipped {where} cell"))
        checks.append((SOMEWHERE_BELOW, _skipped_on_the_way(cells, index, 1), "a skipped cell below"))
        checks.append((SOMEWHERE_ABOVE, _skipped_on_the_way(cells, index, -1), "a skipped cell above"))
        for pattern, skipped, what in checks:
            for match in pattern.finditer(text) if skipped else ():
                quote = " ".join(text[max(0, match.start() - 40) : match.end() + 20].split())
                found.append(Violation(notebook, cell.get("id", str(index)), f"points at {what}: {quote!r}"))
    return found


# (c) section numbers and (d) the title ------------------------------------------------------------


def _follows(previous: tuple[int, ...] | None, number: tuple[int, ...]) -> bool:
    """Whether a section numbered `number` may come right after one numbered `previous`."""
    if previous is None:
        return number in {(0,), (1,)}
    if len(number) > len(previous):
        return number == (*previous, 1)
    return number == (*previous[: len(number) - 1], previous[len(number) - 1] + 1)


def section_numbers(cells: list[dict], notebook: str = "notebook") -> list[Violation]:
    """Rule (c): shown numbered headings that do not read 1, 2, 3, ... in order."""
    found, previous = [], None
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "markdown" or not shown(cell):
            continue
        for match in HEADING_NUMBER.finditer(_source(cell)):
            number = tuple(int(part) for part in match.group(1).split("."))
            if not _follows(previous, number):
                heading = match.group(0).split("\n")[0]
                after = "the first shown" if previous is None else ".".join(map(str, previous))
                found.append(Violation(notebook, cell.get("id", str(index)), f"{heading!r} follows {after} heading"))
            previous = number
    return found


def first_cell(cells: list[dict], notebook: str = "notebook") -> list[Violation]:
    """Rule (d): the first cell is a slide."""
    if cells and slide_type(cells[0]) == "slide":
        return []
    first = cells[0].get("id", "0") if cells else "-"
    return [Violation(notebook, first, f"the first cell is {slide_type(cells[0]) if cells else None!r}, not a slide")]


RULES = {
    "names": names_from_skipped_cells,
    "pointers": pointers_at_skipped_cells,
    "section_numbers": section_numbers,
    "first_cell": first_cell,
}
ON_BOTH_PATHS = {"names", "pointers"}


def short_path(cells: list[dict]) -> list[dict]:
    """The cells with every cell of an optional slide (one of its cells tagged OPTIONAL_TAG) skipped."""
    slide_of = _slides(cells)
    optional = {slide_of[i] for i, cell in enumerate(cells) if OPTIONAL_TAG in cell.get("metadata", {}).get("tags", [])}
    short = []
    for index, cell in enumerate(cells):
        if slide_of[index] in optional and slide_type(cell) != "skip":
            cell = copy.deepcopy(cell)
            cell["metadata"]["slideshow"] = {"slide_type": "skip"}
        short.append(cell)
    return short


def violations(cells: list[dict], notebook: str, rule: str) -> list[Violation]:
    """What one rule finds on the full path, then what it finds only on the short path."""
    found = RULES[rule](cells, notebook)
    if rule in ON_BOTH_PATHS:
        short = [v for v in RULES[rule](short_path(cells), notebook) if v not in found]
        found += [Violation(v.notebook, v.cell_id, f"{v.what} (on the short path)") for v in short]
    return found


def _cells(path: Path) -> list[dict]:
    return nbformat.read(path, as_version=4).cells


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_each_slide_stands_on_its_own(path, rule):
    found = violations(_cells(path), path.name, rule)
    assert not found, f"{len(found)} slide(s) that do not stand on their own:\n" + "\n".join(map(str, found))


# The rules themselves, on small notebooks built here ----------------------------------------------


def md(source: str, kind: str = "-") -> dict:
    return nbformat.v4.new_markdown_cell(source, metadata={"slideshow": {"slide_type": kind}})


def code(source: str, kind: str = "-") -> dict:
    return nbformat.v4.new_code_cell(source, metadata={"slideshow": {"slide_type": kind}})


def whats(found: list[Violation]) -> list[str]:
    return [v.what for v in found]


def test_a_name_only_a_skipped_cell_defines_is_caught():
    use = code("z = scores(x)")
    cells = [md("# T", "slide"), code("x = 1"), code("def scores(a): return a", "skip"), md("## Use", "slide"), use]
    found = names_from_skipped_cells(cells)
    assert whats(found) == ["`scores` is defined only in skipped cells"]
    assert found[0].cell_id == use.id


def test_a_name_the_slide_names_set_up_or_defined_on_a_slide_passes():
    set_up = [md("# T", "slide"), code("import torch\nh100 = 1", "skip"), code("print(h100)")]
    assert names_from_skipped_cells(set_up) == []
    named = [md("# T", "slide"), code("x = 1"), code("scores = 2", "skip"), md("`scores(x)` is ..."), code("scores")]
    assert names_from_skipped_cells(named) == []
    redefined = [md("# T", "slide"), code("x = 1"), code("y = 2", "skip"), code("y = 3\nprint(y)")]
    assert names_from_skipped_cells(redefined) == []
    # named in the speaker notes or on a later slide does not count
    elsewhere = [md("# T", "slide"), code("x = 1"), code("y = 2", "skip"), md("## S", "slide"), md("`y`", "notes")]
    elsewhere += [code("y"), md("## U", "slide"), md("`y` is ...")]
    assert whats(names_from_skipped_cells(elsewhere)) == ["`y` is defined only in skipped cells"]


def test_a_name_an_earlier_slide_said_passes_and_an_optional_slide_counts_on_the_full_path_only():
    said = [md("# T", "slide"), code("x = 1"), code("N, L = 8, 2", "skip"), md("## A model: N = 8, L = 2", "slide")]
    later = [md("## Next", "slide"), code("print(6 * N * L)")]
    assert names_from_skipped_cells([*said, *later]) == []
    said[3].metadata["tags"] = [OPTIONAL_TAG]
    found = violations([*said, *later], "nb", "names")
    assert whats(found) == [f"`{n}` is defined only in skipped cells (on the short path)" for n in ("N", "L")]
    assert all(v.cell_id == later[1].id for v in found)


def test_what_a_cell_reads_and_defines():
    defined, read = cell_names(
        "%xmode Minimal\n"
        "import numpy as np\n"
        "for i in range(n):\n    total += i\n"
        "with open(p) as f:\n    data = f.read()\n"
        "def f2(a, b=default):\n    c = a + b + outer\n    return [c * k for k in ks]\n"
        "class K(Base):\n    attr = 1\n"
        "y = y + 1\n"
        "print(lambda q: q + w)\n"
    )
    assert defined == {"np", "i", "total", "f", "data", "f2", "K", "y"}
    assert read == ["n", "total", "p", "default", "outer", "ks", "Base", "y", "w"]


def test_a_pointer_at_a_skipped_cell_is_caught():
    cells = [md("# T", "slide"), md("Its error is larger (the next cell measures it)."), code("err()", "skip")]
    assert len(pointers_at_skipped_cells(cells)) == 1
    notes = [md("# T", "slide"), md("a cell below adds it", "notes"), md("x", "skip")]
    assert len(pointers_at_skipped_cells(notes)) == 1
    somewhere = [md("# T", "slide"), md("a cell below adds it", "notes"), code("y"), code("adds()", "skip")]
    assert whats(pointers_at_skipped_cells(somewhere)) == ["points at a skipped cell below: 'a cell below adds it'"]
    next_slide = [md("# T", "slide"), md("a cell below adds it"), code("adds()"), md("## U", "slide")]
    next_slide.append(code("z", "skip"))
    assert pointers_at_skipped_cells(next_slide) == []
    for prose in ["Below, a process is killed.", "The save (the load follows):", "the times below are quoted"]:
        assert len(pointers_at_skipped_cells([md(prose, "slide"), code("x", "skip")])) == 1, prose
    back = [md("# T", "slide"), code("x", "skip"), md("Checkpointing each block above kept only its input.")]
    assert len(pointers_at_skipped_cells(back)) == 1


def test_prose_that_compares_or_points_at_a_shown_cell_passes():
    comparisons = [
        "a few hundred times below the ridge",
        "MFU above 1 is a bug",
        "At w = 1, bf16's gap above is eps = 2^-7, so any increase below 2^-8 vanishes",
        "tiny adds fall far below it",
        "Below that n, even a matmul is memory-bound",
        "The previous checkpoint is unchanged",
        "the loss follows the curve",
    ]
    for prose in comparisons:
        cells = [code("x", "skip"), md(prose, "slide"), code("y", "skip")]
        assert pointers_at_skipped_cells(cells) == [], prose
    shown_next = [md("# T", "slide"), md("The next cell measures it."), md("note", "notes"), code("x")]
    assert pointers_at_skipped_cells(shown_next) == []


def test_section_numbers_only_in_order():
    gap = [md("# 07 Title", "slide"), md("## 1. A", "skip"), md("## 4. The loop", "slide")]
    assert whats(section_numbers(gap)) == ["'## 4. The loop' follows the first shown heading"]
    skipped_two = [md("## 1 A", "slide"), md("## 2 B", "skip"), md("## 3 C", "slide")]
    assert whats(section_numbers(skipped_two)) == ["'## 3 C' follows 1 heading"]
    in_order = [md("# 06 Title", "slide"), md("## 1 A", "slide"), md("### 1.1 a\n## 2. B", "slide"), md("## 3 C")]
    assert section_numbers(in_order) == []
    assert section_numbers([md("## 2025 and 2026", "slide"), md("## 8 H100s", "skip")]) == []


def test_the_first_cell_is_a_slide():
    assert first_cell([md("# T", "slide")]) == []
    assert whats(first_cell([md("# T", "skip")])) == ["the first cell is 'skip', not a slide"]
