"""Every notebook as a student meets it: JupyterLab in headless Chromium, Run All, then look.

Asserts, per notebook: opening it does not mark it modified; Run All executes every code cell
with no error output except in cells tagged raises-exception, and nothing on stderr; every image
loads; every figure's text is displayed at least as large as the notebook's body text on a
laptop screen at 100% zoom and on a 1080p projector at 150% zoom. Records each notebook's Run
All time, and saves one screenshot per notebook at 150% zoom into a temporary directory whose
path it prints.

Needs Debian's chromium and chromium-driver (`make browser`). Without them the test is
skipped, unless REQUIRE_BROWSER_TEST=1 (set by .ci/run), where it fails instead.
"""

from __future__ import annotations

import base64
import hashlib
import struct
import tempfile
import urllib.parse
from pathlib import Path

import pytest
from browser_session import CLOSE, lab_in_chromium, opening_notebook, require_browser, show_on
from lab_server import ROOT

from lecture_utils.figures.style import MIN_FONT_PT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
RAISES = {"raises-exception", "nbval-raises-exception"}
# (what, screen width and height in device pixels, browser zoom): the CSS viewport is screen / zoom.
SCREENS = (("a laptop at 100% zoom", (1280, 800), 1.0), ("a 1080p projector at 150% zoom", (1920, 1080), 1.5))

require_browser()

OPEN_AND_RUN_ALL = opening_notebook("""
  const start = performance.now();
  // The command's promise settles early when a raises-exception cell fails, while the kernel
  // goes on with the queued cells: wait until every code cell ran, or the kernel has been idle 3 s.
  await app.commands.execute('notebook:run-all-cells').catch(() => false);
  const codeCells = panel.content.widgets.filter(cell => cell.model.type === 'code');
  let idleSince = null;
  for (;;) {
    const idle = panel.sessionContext.session.kernel.status === 'idle';
    if (idle && codeCells.every(cell => cell.model.executionCount !== null)) break;
    idleSince = idle ? (idleSince ?? performance.now()) : null;
    if (idleSince !== null && performance.now() - idleSince > 3000) break;
    await new Promise(resolve => setTimeout(resolve, 100));
  }
  const seconds = (performance.now() - start) / 1000;
  const cells = codeCells.map((cell, index) => ({
    index,
    source: cell.model.sharedModel.getSource().slice(0, 60),
    tags: cell.model.getMetadata('tags') || [],
    executed: cell.model.executionCount !== null,
    outputs: cell.model.outputs.toJSON().map(o => ({type: o.output_type, name: o.name || '',
      ename: o.ename || '', text: String(o.text || o.evalue || '').slice(0, 300)})),
  }));
  done({dirtyOnOpen, seconds, cells, id: panel.id});""")

IMAGES = """
const [id, done] = [arguments[0], arguments[arguments.length - 1]];
(async () => {
  const node = document.getElementById(id);
  const images = Array.from(node.querySelectorAll('.jp-Cell img'));
  for (const img of images) {
    img.scrollIntoView();
    try { await img.decode(); } catch (error) { /* a broken image: naturalWidth stays 0 */ }
  }
  const body = node.querySelector('.jp-RenderedMarkdown p');
  done({
    bodyPx: parseFloat(getComputedStyle(body).fontSize),
    images: images.map(img => ({src: img.src, natural: img.naturalWidth, shown: img.getBoundingClientRect().width})),
  });
})().catch(error => done({error: String(error.stack || error)}));
"""


def png_dpi(data: bytes) -> float:
    """Pixels per inch a PNG records (its pHYs chunk, which matplotlib always writes)."""
    at = data.find(b"pHYs")
    if at < 0:
        raise AssertionError("image records no resolution (no pHYs chunk)")
    x_per_unit, _, unit = struct.unpack(">IIB", data[at + 4 : at + 13])
    assert unit == 1, "pHYs unit is not the metre"
    return x_per_unit * 0.0254


def image_bytes(src: str) -> bytes:
    if src.startswith("data:"):
        return base64.b64decode(src.split(",", 1)[1])
    path = urllib.parse.urlparse(src).path
    assert path.startswith("/files/"), src
    return (ROOT / urllib.parse.unquote(path.removeprefix("/files/"))).read_bytes()


def smallest_text_px(driver, panel_id: str) -> tuple[float, list[str]]:
    """Body text size, and each image whose MIN_FONT_PT text shows smaller (or did not load)."""
    seen = driver.execute_async_script(IMAGES, panel_id)
    assert "error" not in seen, seen.get("error")
    problems = []
    for image in seen["images"]:
        name = image["src"][:60]
        if image["natural"] == 0:
            problems.append(f"{name}: did not load")
            continue
        px = MIN_FONT_PT / 72 * png_dpi(image_bytes(image["src"])) * image["shown"] / image["natural"]
        if px < seen["bodyPx"] - 0.05:
            problems.append(f"{name}: {MIN_FONT_PT:g} pt text shows at {px:.1f} px < body text {seen['bodyPx']:g} px")
    return seen["bodyPx"], problems


@pytest.fixture(scope="module")
def browser():
    shots = Path(tempfile.mkdtemp(prefix="notebook-screenshots-"))
    times: dict[str, float] = {}
    with lab_in_chromium(script_timeout=300) as (driver, _):
        yield driver, shots, times
    print(f"\nRun All in JupyterLab (headless Chromium): {times}\nscreenshots at 150% zoom: {shots}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_run_all_in_jupyterlab(browser, path, capsys):
    driver, shots, times = browser
    before = hashlib.sha256(path.read_bytes()).hexdigest()  # each notebook's own run: others may edit the rest
    show_on(driver, *SCREENS[0][1:])
    run = driver.execute_async_script(OPEN_AND_RUN_ALL, path.relative_to(ROOT).as_posix())
    assert "error" not in run, run.get("error")
    try:
        times[path.name] = round(run["seconds"], 1)
        assert run["dirtyOnOpen"] is False, "opening the notebook marked it modified"
        for cell in run["cells"]:
            where = f"{path.name} code cell {cell['index']} ({cell['source']!r})"
            assert cell["executed"], f"{where} did not run"
            for output in cell["outputs"]:
                if output["type"] == "error":
                    assert RAISES & set(cell["tags"]), f"{where}: {output['ename']}: {output['text']}"
                assert output["name"] != "stderr", f"{where} wrote to stderr: {output['text']}"
        for what, screen, zoom in SCREENS:  # ends on the projector, where the screenshot is taken
            show_on(driver, screen, zoom)
            _, problems = smallest_text_px(driver, run["id"])
            assert not problems, f"on {what}: {problems}"
        driver.execute_script(
            "const node = document.getElementById(arguments[0]);"
            "(node.querySelector('.jp-OutputArea-output img') || node).scrollIntoView();",
            run["id"],
        )
        shot = shots / f"{path.stem}.png"
        driver.save_screenshot(str(shot))
        with capsys.disabled():
            print(f"\n{path.name}: Run All {run['seconds']:.1f} s; screenshot at 150% zoom: {shot}", end="")
    finally:
        driver.execute_async_script(CLOSE, run["id"])
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before, f"running in the lab rewrote {path.name}"
