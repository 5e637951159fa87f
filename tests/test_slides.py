"""Every notebook's slideshow as the room sees it: jupyterlab-rise in headless Chromium.

The presenting screen is a 1080p projector at 150% browser zoom (the README's advice), so the page,
and a slide with it, is 1280 x 720 CSS pixels. RISE's own scaling is left off (its width and
height stay 100%): browser zoom enlarges text, widgets and figures alike and keeps mouse and
keyboard positions exact, which scaled slides do not for code editors.

Per notebook the test opens /rise/<notebook>, runs the code up to each calculator on a slide
(a code cell whose stored output is an ipywidget), and then walks every slide and fragment with
the space bar, as a presenter does. On each step it checks that the slide's content fits the
slide area (no part below, above or beside it, nothing that scrolls sideways, no printed line
wrapped), that its math is typeset, that no error shows (no error output outside cells tagged
raises-exception, nothing on stderr, no widget that failed to display, no path of this checkout),
and on a calculator's slide that dragging a slider changes the result and the figure it shows,
with no copy of the old result beside it. One screenshot per slide, taken with all its fragments
shown, goes to a temporary folder whose path the test prints.

Every cell of every notebook carries a slide type (tests/test_notebook_hygiene.py checks it
without a browser); a notebook without them fails here too.

Needs Debian's chromium and chromium-driver (`make browser`). Without them the test is skipped,
unless REQUIRE_BROWSER_TEST=1 (set by .ci/run), where it fails instead.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from pathlib import Path

import pytest
from browser_session import lab_in_chromium, require_browser, show_on
from lab_server import ROOT
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
PROJECTOR = (1920, 1080), 1.5  # device pixels, browser zoom: the CSS viewport is 1280 x 720
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
RAISES = {"raises-exception", "nbval-raises-exception"}

require_browser()

# Markdown cells on the slides whose source holds TeX ($...$, not an escaped \\$) but that show no MathJax.
UNRENDERED_MATH = """
const unrenderedMath = panel => panel.content.widgets.map((cell, index) => ({cell, index})).filter(({cell}) =>
  cell.model.type === 'markdown' && (cell.model.getMetadata('slideshow') || {}).slide_type !== 'skip'
  && /(^|[^\\\\])\\$[^$\\n]+\\$/.test(cell.model.sharedModel.getSource())
  && !cell.node.querySelector('mjx-container')).map(({index}) => index);
"""

# The slide page is up: its app (exposed by the tests' hook), the notebook's kernel, reveal.js, and the math.
READY = (
    UNRENDERED_MATH
    + """
const done = arguments[arguments.length - 1];
(async () => {
  for (let i = 0; i < 600 && !(window.jupyterapp && document.querySelector('.reveal.ready')); i++) {
    await new Promise(resolve => setTimeout(resolve, 100));
  }
  const panel = window.jupyterapp.shell.currentWidget;
  await panel.context.ready;
  await panel.sessionContext.ready;
  // MathJax typesets after the markdown renders: give it up to 10 s
  for (let i = 0; i < 100 && unrenderedMath(panel).length; i++) {
    await new Promise(resolve => setTimeout(resolve, 100));
  }
  done({cells: panel.content.widgets.length});
})().catch(error => done({error: String(error.stack || error)}));
"""
)

# Run the code cells 0..arguments[0] as the presenter's Shift+Enter does; report errors in any.
RUN_UP_TO = """
const [last, done] = [arguments[0], arguments[arguments.length - 1]];
(async () => {
  const app = window.jupyterapp;
  const notebook = app.shell.currentWidget.content;
  const failed = [];
  for (let i = 0; i <= last; i++) {
    const cell = notebook.widgets[i];
    if (cell.model.type !== 'code') continue;
    notebook.activeCellIndex = i;
    await app.commands.execute('notebook:run-cell');
    const tags = cell.model.getMetadata('tags') || [];
    for (const output of cell.model.outputs.toJSON()) {
      if (output.output_type === 'error' && !tags.some(tag => tag.endsWith('raises-exception'))) {
        failed.push(`cell ${i}: ${output.ename}: ${output.evalue}`);
      }
    }
  }
  await app.commands.execute('RISE:firstSlide');
  done({failed});
})().catch(error => done({error: String(error.stack || error)}));
"""

# What the current slide shows, and what is wrong with it at this zoom.
LOOK = (
    UNRENDERED_MATH
    + """
const root = arguments[0];
const area = document.querySelector('.reveal .slides').getBoundingClientRect();
const stack = document.querySelectorAll('.reveal .slides section.present');
const slide = stack[stack.length - 1];
const panel = window.jupyterapp.shell.currentWidget;
const problems = [];
const box = slide.getBoundingClientRect();
if (box.top < area.top - 1 || box.bottom > area.bottom + 1) {
  problems.push(`content ${Math.round(box.height)} px tall, the slide area ${Math.round(area.height)} px`);
}
const named = el => el.tagName.toLowerCase() + (el.className && typeof el.className === 'string'
  ? '.' + el.className.trim().split(/\\s+/).slice(0, 2).join('.') : '');
// Content past the right edge: text (the extent of the text itself, not of its box, whose padding may
// reach the edge harmlessly) and pictures or controls.
const cut = [];
const walker = document.createTreeWalker(slide, NodeFilter.SHOW_TEXT);
const range = document.createRange();
for (let node = walker.nextNode(); node && cut.length < 2; node = walker.nextNode()) {
  if (!node.textContent.trim()) continue;
  range.selectNodeContents(node);
  const r = range.getBoundingClientRect();
  if (r.width > 0 && r.right > area.right + 1) cut.push(`text ${JSON.stringify(node.textContent.trim().slice(0, 40))}`);
}
for (const el of slide.querySelectorAll('img, svg, canvas, input, select, .noUi-target')) {
  const r = el.getBoundingClientRect();
  if (r.width > 0 && r.right > area.right + 1 && cut.length < 3) cut.push(named(el));
}
for (const what of cut) problems.push(`${what} reaches past the slide's right edge`);
let sideways = 0;
for (const el of slide.querySelectorAll('*')) {
  if (sideways >= 2) break;
  const style = getComputedStyle(el);
  if (['auto', 'scroll'].includes(style.overflowX) && el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0) {
    problems.push(`${named(el)} scrolls sideways (${el.scrollWidth} px in ${el.clientWidth})`);
    sideways++;
  }
}
for (const pre of slide.querySelectorAll('.jp-OutputArea-output pre')) {
  const lines = pre.textContent.replace(/\\n$/, '').split('\\n');
  const height = parseFloat(getComputedStyle(pre).lineHeight);
  if (pre.getBoundingClientRect().height > (lines.length + 0.5) * height) {
    const longest = lines.reduce((a, b) => (b.length > a.length ? b : a), '');
    problems.push(`a printed line wraps: ${JSON.stringify(longest.slice(0, 70))}`);
  }
}
const cells = panel.content.widgets.map((cell, index) => ({cell, index}))
  .filter(({cell}) => slide.contains(cell.node));
for (const {cell, index} of cells) {
  if (cell.model.type !== 'code') continue;
  const tags = cell.model.getMetadata('tags') || [];
  for (const output of cell.model.outputs.toJSON()) {
    if (output.output_type === 'error' && !tags.some(tag => tag.endsWith('raises-exception'))) {
      problems.push(`cell ${index} shows an error: ${output.ename}`);
    }
    if (output.output_type === 'stream' && output.name === 'stderr') {
      problems.push(`cell ${index} shows stderr: ${JSON.stringify(String(output.text).slice(0, 80))}`);
    }
  }
}
for (const index of unrenderedMath(panel)) {
  if (cells.some(c => c.index === index)) problems.push(`cell ${index}: its math shows as TeX, not typeset`);
}
const text = slide.innerText;
if (text.includes('Error displaying widget')) problems.push('a widget failed to display');
if (text.includes(root)) problems.push(`the checkout's path ${root} shows`);
const fragments = slide.querySelectorAll('.fragment');
const lastOf = section => Array.from(section.parentElement.querySelectorAll(':scope > section')).pop() === section;
return {
  id: slide.id,
  last: Array.from(stack).every(lastOf) && slide.querySelectorAll('.fragment:not(.visible)').length === 0,
  cells: cells.map(c => c.index),
  fragments: fragments.length,
  shown: slide.querySelectorAll('.fragment.visible').length,
  calculator: !!slide.querySelector('.calc-root .calc-out'),
  problems,
};
"""
)

NOW = """
const stack = document.querySelectorAll('.reveal .slides section.present');
const slide = stack[stack.length - 1];
return [slide.id, slide.querySelectorAll('.fragment.visible').length];
"""

READ_CALCULATOR = """
const stack = document.querySelectorAll('.reveal .slides section.present');
const out = stack[stack.length - 1].querySelector('.calc-root .calc-out');
if (!out) return null;
// the rest of the calculator cell's output: where a stale copy of the result would show
const outputs = out.closest('.jp-Cell').querySelector('.jp-OutputArea').cloneNode(true);
outputs.querySelectorAll('.calc-root').forEach(node => node.remove());
const img = out.closest('.calc-root').querySelector('img');
return {inputs: out.dataset.inputs, beside: outputs.textContent,
        figure: img ? img.src.length + ':' + img.src.slice(-300) : '',
        numbers: Array.from(out.querySelectorAll('.calc-number'), cell => cell.textContent)};
"""


def has_slide_metadata(path: Path) -> bool:
    cells = json.loads(path.read_text())["cells"]
    return all("slide_type" in cell.get("metadata", {}).get("slideshow", {}) for cell in cells)


def calculator_cells(path: Path) -> list[int]:
    """Code cells on a slide whose stored output is a widget: the calculators the presenter runs live."""
    cells = json.loads(path.read_text())["cells"]
    return [
        i
        for i, cell in enumerate(cells)
        if cell["cell_type"] == "code"
        and cell["metadata"]["slideshow"]["slide_type"] not in ("skip", "notes")
        and any(WIDGET_MIME in output.get("data", {}) for output in cell.get("outputs", []))
    ]


@pytest.fixture(scope="module")
def browser():
    shots = Path(tempfile.mkdtemp(prefix="slide-screenshots-"))
    with lab_in_chromium(script_timeout=300) as (driver, lab):
        show_on(driver, *PROJECTOR)
        yield driver, lab, shots
    print(f"\nslide screenshots (1080p at 150% zoom): {shots}")


def move_a_slider(driver) -> None:
    """Drag the first slider of the calculator on the current slide with the mouse, as a presenter does.

    (Arrow keys would move the slideshow too: reveal.js takes them from anything but a text field.)
    """
    stack = driver.find_elements("css selector", ".reveal .slides section.present")
    handle = stack[-1].find_element("css selector", ".calc-root .noUi-handle")
    before = driver.execute_script(READ_CALCULATOR)
    for offset in (60, -120):  # right, or left where it started at the right end
        ActionChains(driver).click_and_hold(handle).move_by_offset(offset, 0).release().perform()
        deadline = time.monotonic() + 20
        while (after := driver.execute_script(READ_CALCULATOR)) and after["inputs"] == before["inputs"]:
            if time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert after, "dragging the slider left the calculator's slide"
        if after["inputs"] != before["inputs"]:
            assert after["numbers"] != before["numbers"], f"the result stayed {before['numbers']} for {after['inputs']}"
            stale = [n for n in before["numbers"] if n not in after["numbers"] and n in after["beside"]]
            assert not stale, f"beside the moved calculator, a copy of its old result still shows {stale}"
            while before["figure"] and driver.execute_script(READ_CALCULATOR)["figure"] == before["figure"]:
                assert time.monotonic() < deadline, "the calculator's figure did not follow its slider"
                time.sleep(0.1)
            return
    raise AssertionError(f"the calculator's result did not answer its slider: {before}")


def walk(driver, lab, path: Path, shots: Path) -> tuple[int, int, list[str]]:
    """(slides, steps, problems) of the slideshow of `path`, walked from the first slide to the last."""
    driver.get(f"{lab.url}/rise/{path.relative_to(ROOT).as_posix()}?token={lab.token}")
    ready = driver.execute_async_script(READY)
    assert "error" not in ready, ready["error"]
    calculators = calculator_cells(path)
    if calculators:
        ran = driver.execute_async_script(RUN_UP_TO, max(calculators))
        assert "error" not in ran, ran["error"]
        assert not ran["failed"], f"running up to the calculators: {ran['failed']}"
    else:
        driver.execute_async_script("window.jupyterapp.commands.execute('RISE:firstSlide')"
                                    ".then(() => arguments[arguments.length - 1](true));")  # fmt: skip
    problems: list[str] = []
    seen: list[str] = []  # slide ids in the order shown
    reported, moved = set(), set()
    for steps in range(1, 1000):
        look = driver.execute_script(LOOK, str(ROOT))
        if look["id"] not in seen:
            seen.append(look["id"])
        where = f"slide {seen.index(look['id']) + 1} (cells {look['cells']}"
        where += f", fragment {look['shown']}/{look['fragments']})" if look["fragments"] else ")"
        for problem in look["problems"]:
            if (look["id"], problem) not in reported:
                reported.add((look["id"], problem))
                problems.append(f"{path.name} {where}: {problem}")
        if look["calculator"] and look["id"] not in moved:
            moved.add(look["id"])
            move_a_slider(driver)
        if look["shown"] == look["fragments"]:
            driver.save_screenshot(str(shots / f"{path.stem}-{len(seen):02d}.png"))
        if look["last"]:
            assert bool(moved) == bool(calculators), f"{path.name}: the calculators {calculators} showed on no slide"
            return len(seen), steps, problems
        state = [look["id"], look["shown"]]
        ActionChains(driver).send_keys(Keys.SPACE).perform()
        deadline = time.monotonic() + 10
        while driver.execute_script(NOW) == state:
            assert time.monotonic() < deadline, f"{path.name} {where}: the space bar did not move on"
            time.sleep(0.05)
        time.sleep(0.05)  # let the step's layout settle
    raise AssertionError(f"{path.name}: more than 1000 steps")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_every_slide_fits_and_shows_no_error(path, request, capsys):
    assert has_slide_metadata(path), f"{path.name}: every cell needs metadata.slideshow.slide_type"
    driver, lab, shots = request.getfixturevalue("browser")
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    start = time.monotonic()
    try:
        slides, steps, problems = walk(driver, lab, path, shots)
    finally:
        driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "window.jupyterapp.shell.currentWidget.sessionContext.shutdown().then(() => done(true));"
        )
    with capsys.disabled():
        print(f"\n{path.name}: {slides} slides, {steps} steps in {time.monotonic() - start:.1f} s", end="")
    assert not problems, "\n".join(problems)
    # running cells on the slides never saves the notebook (autosave is off in the lab's settings)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before, f"presenting rewrote {path.name}"
