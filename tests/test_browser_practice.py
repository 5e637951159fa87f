"""The practice as a student meets it: notebook 00 in JupyterLab, in headless Chromium.

A copy of the notebook, in a temporary directory served by the lab `make lab` starts (same config
file, another root), is opened and run. The test then checks what a student sees: every worked
answer opens collapsed, its code and its output both hidden. Unfolded with clicks (code, output,
then its <details> line), one shows the answer the package computes (computed here, in the test's
own process). After Run All, which shows every output again, each answer stays folded in its closed
<details> block, and one click on it shows the answer. Typing a right answer into the student's
cell and running it gives "right"; a wrong one gives "wrong" with a hint, and the answer appears
nowhere in the verdict. It saves a screenshot at 150% zoom on a 1080p projector into a temporary
directory whose path it prints, and checks that the committed notebook did not change.

Needs Debian's chromium and chromium-driver (`make browser`). Without them the test is skipped,
unless REQUIRE_BROWSER_TEST=1 (set by .ci/run), where it fails instead.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from browser_session import CLOSE, lab_in_chromium, opening_notebook, require_browser, show_on
from lab_server import ROOT
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from lecture_utils.problems.napkin import PROBLEMS

NOTEBOOK = ROOT / "notebooks" / "00_napkin_math.ipynb"
PROJECTOR = (1920, 1080), 1.5  # device pixels, browser zoom: the CSS viewport is 1280 x 720

require_browser()

OPEN = opening_notebook("  done({id: panel.id, dirty: dirtyOnOpen});")

RUN_ALL = """
const [id, done] = [arguments[0], arguments[arguments.length - 1]];
(async () => {
  const panel = window.jupyterapp.shell.widgets('main').find(w => w.id === id);
  await window.jupyterapp.commands.execute('notebook:run-all-cells');
  const code = panel.content.widgets.filter(cell => cell.model.type === 'code');
  while (!(panel.sessionContext.session.kernel.status === 'idle'
           && code.every(cell => cell.model.executionCount !== null))) {
    await new Promise(resolve => setTimeout(resolve, 100));
  }
  const errors = code.flatMap(cell => cell.model.outputs.toJSON())
    .filter(o => o.output_type === 'error' || o.name === 'stderr');
  done({errors: errors.map(o => String(o.evalue || o.text).slice(0, 200))});
})().catch(error => done({error: String(error.stack || error)}));
"""

# A cell's state: whether its code and its output are hidden, and its execution count.
CELL = """
const [id, index] = arguments;
const panel = window.jupyterapp.shell.widgets('main').find(w => w.id === id);
const cell = panel.content.widgets[index];
return {inputHidden: cell.inputHidden, outputHidden: !!cell.outputHidden, count: cell.model.executionCount ?? null};
"""

# A cell scrolled into view (the notebook renders only the cells near the view), and its node.
NODE = """
const [id, index, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]];
const panel = window.jupyterapp.shell.widgets('main').find(w => w.id === id);
panel.content.scrollToItem(index, 'center').then(() => {
  const cell = panel.content.widgets[index];
  cell.node.scrollIntoView({block: 'center'});
  requestAnimationFrame(() => done(cell.node));
});
"""


def wait_until(check, what: str, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while not (result := check()):
        assert time.monotonic() < deadline, f"{what}: not after {timeout} s"
        time.sleep(0.1)
    return result


def practice_cells() -> dict[int, tuple[int, int]]:
    """Problem number -> (index of the student's cell, index of the worked answer's cell)."""
    cells = nbformat.read(NOTEBOOK, as_version=4).cells
    found = {}
    for n in PROBLEMS:
        student = next(i for i, c in enumerate(cells) if c.source.startswith(f"answer_{n} = None"))
        worked = next(i for i, c in enumerate(cells) if c.source.startswith(f"# Worked answer {n}\n"))
        found[n] = (student, worked)
    return found


@pytest.fixture(scope="module")
def lab_page():
    """(driver, panel id, screenshot folder) with a copy of notebook 00 open in the lab, not yet run."""
    shots = Path(tempfile.mkdtemp(prefix="practice-screenshots-"))
    committed = hashlib.sha256(NOTEBOOK.read_bytes()).hexdigest()
    with tempfile.TemporaryDirectory(prefix="practice-") as root:
        (Path(root) / "notebooks").mkdir()
        shutil.copy(NOTEBOOK, Path(root) / "notebooks" / NOTEBOOK.name)
        with lab_in_chromium(f"--ServerApp.root_dir={root}", script_timeout=180) as (driver, _):
            show_on(driver, *PROJECTOR)
            opened = driver.execute_async_script(OPEN, f"notebooks/{NOTEBOOK.name}")
            assert "error" not in opened, opened
            assert opened["dirty"] is False, "opening the notebook marked it modified"
            yield driver, opened["id"], shots
            driver.execute_async_script(CLOSE, opened["id"])
    assert hashlib.sha256(NOTEBOOK.read_bytes()).hexdigest() == committed, "the committed notebook changed"
    print(f"\npractice screenshot at 150% zoom: {shots}")


def test_practice_as_a_student_meets_it(lab_page, capsys):
    driver, panel, shots = lab_page
    cells = practice_cells()
    for n, (_, worked) in cells.items():
        state = driver.execute_script(CELL, panel, worked)
        assert state["inputHidden"] and state["outputHidden"], f"worked answer {n} is not collapsed on open"

    # Before running: unfold the code, then the output, then open the answer's <details>.
    unfolded = PROBLEMS[2].work()
    cell = node(driver, panel, cells[2][1])
    assert unfolded.answer not in cell.text, "the collapsed cell shows the answer"
    cell.find_element(By.CSS_SELECTOR, ".jp-InputPlaceholder .jp-Placeholder-content").click()
    wait_until(lambda: not driver.execute_script(CELL, panel, cells[2][1])["inputHidden"], "the code unfolds")
    cell = node(driver, panel, cells[2][1])
    cell.find_element(By.CSS_SELECTOR, ".jp-OutputPlaceholder .jp-Placeholder-content").click()
    wait_until(lambda: not driver.execute_script(CELL, panel, cells[2][1])["outputHidden"], "the output unfolds")
    assert open_worked_answer(driver, panel, cells[2][1]).endswith(str(unfolded))

    # Run All shows every output again (JupyterLab does, whatever the metadata): each answer stays folded.
    run = driver.execute_async_script(RUN_ALL, panel)
    assert "error" not in run and not run["errors"], run
    for n, (student, worked) in cells.items():
        assert n == 2 or driver.execute_script(CELL, panel, worked)["inputHidden"], f"Run All unfolded {n}'s code"
        folded = node(driver, panel, worked).find_element(By.CSS_SELECTOR, ".jp-OutputArea details")
        assert folded.get_property("open") is False, f"Run All opened worked answer {n}"
        assert PROBLEMS[n].work().answer not in folded.text, f"worked answer {n} shows before it is opened"
        verdict = node(driver, panel, student).find_element(By.CSS_SELECTOR, ".jp-OutputArea")
        assert verdict.text.startswith("not answered yet"), verdict.text

    # Open the first worked answer with one click: the answer the package computes.
    student, worked = cells[1]
    expected = PROBLEMS[1].work()
    shown = open_worked_answer(driver, panel, worked)
    assert f"answer: {expected.answer}" in shown and str(expected).splitlines()[0] in shown, shown

    # Type answers into the student's cell and run it with Shift+Enter.
    right = f"{expected.value:.4g}"
    wrong = f"{3 * expected.value:.4g}"
    for typed, verdict_starts in ((right, "right"), (wrong, "wrong")):
        verdict = type_and_run(driver, panel, student, f"answer_1 = {typed}")
        assert verdict.startswith(verdict_starts), verdict
    assert "Hint: " in verdict
    assert not any(shown_digits in verdict for shown_digits in (right, f"{expected.value:.3g}", expected.answer))

    driver.execute_script("window.jupyterapp.shell.collapseLeft()")  # as on a projector: file browser hidden
    driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", node(driver, panel, student - 1))
    shot = shots / "00_practice.png"
    driver.save_screenshot(str(shot))
    with capsys.disabled():
        print(f"\npractice at 150% zoom: {shot}", end="")


def open_worked_answer(driver, panel: str, index: int) -> str:
    """Click a worked answer's summary line, as a student does; the text it then shows."""
    summary = node(driver, panel, index).find_element(By.CSS_SELECTOR, ".jp-OutputArea details > summary")
    assert summary.text == "Worked answer (click to open, again to close)", summary.text
    summary.click()
    details = node(driver, panel, index).find_element(By.CSS_SELECTOR, ".jp-OutputArea details")
    wait_until(lambda: details.get_property("open"), "the worked answer opens on a click")
    return details.text


def node(driver, panel: str, index: int):
    """The DOM node of cell `index`, scrolled into view."""
    return driver.execute_async_script(NODE, panel, index)


def type_and_run(driver, panel: str, index: int, first_line: str) -> str:
    """Replace the first line of a code cell by typing, run it with Shift+Enter, return its new output text."""
    count = driver.execute_script(CELL, panel, index)["count"]
    editor = node(driver, panel, index).find_element(By.CSS_SELECTOR, ".cm-content")
    editor.click()
    editor.send_keys(Keys.CONTROL, Keys.HOME)
    editor.send_keys(Keys.SHIFT, Keys.END)
    editor.send_keys(first_line)
    editor.send_keys(Keys.SHIFT, Keys.ENTER)
    wait_until(lambda: driver.execute_script(CELL, panel, index)["count"] != count, "the cell runs")
    area = node(driver, panel, index).find_element(By.CSS_SELECTOR, ".jp-OutputArea")
    return wait_until(lambda: (text := area.text) and not text.startswith("not answered") and text, "a verdict")
