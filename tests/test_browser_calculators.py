"""The what-if calculators as an instructor drives them: JupyterLab in headless Chromium.

A notebook that shows the three calculators (lecture_utils.calculators) is written to a temporary
directory and served from there by the lab `make lab` starts (same config file, another root).
After Run All the test moves each kind of control the way a person does: arrow keys on a slider
handle, a choice in a dropdown, a value typed into a slider's readout and into a number box. After
each move it reads the numbers the page shows and compares them with the calculator's pure
function for the inputs the page reports, computed here, in the test's own process. It also
checks the text sizes at 150% zoom on a 1080p projector and saves a screenshot of each calculator
there, into a temporary directory whose path it prints.

Needs Debian's chromium and chromium-driver (`make browser`). Without them the test is skipped,
unless REQUIRE_BROWSER_TEST=1 (set by .ci/run), where it fails instead.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from browser_session import lab_in_chromium, opening_notebook, require_browser, show_on
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from lecture_utils.calculators.memory import memory_per_gpu
from lecture_utils.calculators.roofline import roofline_point
from lecture_utils.calculators.training_time import training_estimate
from lecture_utils.figures.style import MIN_FONT_PT, STORED_DPI

PROJECTOR = (1920, 1080), 1.5  # device pixels, browser zoom: the CSS viewport is 1280 x 720

require_browser()

CELLS = [
    "The calculators, each starting from its notebook's question.",
    "from lecture_utils.calculators.layout import show_calculator\n"
    "from lecture_utils.calculators.memory import memory_calculator\n"
    "from lecture_utils.calculators.roofline import roofline_calculator\n"
    "from lecture_utils.calculators.training_time import training_calculator",
    "show_calculator(training_calculator())",
    # notebook 09's fp32 runs of its 7,312-parameter model, as bytes per rank
    "measured = {('ddp', 2): 16 * 7312, ('fsdp2', 8): 2 * 7312}\n"
    "show_calculator(memory_calculator(measured=measured, measured_params=7312))",
    "show_calculator(roofline_calculator())",
]

OPEN_AND_RUN_ALL = opening_notebook("""
  await app.commands.execute('notebook:run-all-cells');
  const cells = panel.content.widgets.filter(cell => cell.model.type === 'code');
  done(cells.map(cell => cell.model.outputs.toJSON().map(o => ({type: o.output_type, name: o.name || ''}))));""")


@pytest.fixture(scope="module")
def page():
    """(driver, screenshot folder) with the calculators' notebook open and run in the lab."""
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell(CELLS[0]), *map(nbformat.v4.new_code_cell, CELLS[1:])],
        # a notebook without a kernelspec makes JupyterLab ask for a kernel
        metadata={"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}},
    )
    shots = Path(tempfile.mkdtemp(prefix="calculator-screenshots-"))
    with tempfile.TemporaryDirectory(prefix="calculators-") as root:
        nbformat.write(notebook, Path(root) / "calculators.ipynb")
        with lab_in_chromium(f"--ServerApp.root_dir={root}", script_timeout=120) as (driver, _):
            outputs = driver.execute_async_script(OPEN_AND_RUN_ALL, "calculators.ipynb")
            assert "error" not in outputs, outputs
            for cell in outputs:  # no error and nothing on stderr
                assert all(o["type"] != "error" and o["name"] != "stderr" for o in cell), outputs
            for name in ("training", "memory", "roofline"):
                wait_for(driver, f".calc-{name} .calc-out")
            yield driver, shots
    print(f"\ncalculator screenshots at 150% zoom: {shots}")


def wait_for(driver, css: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while not (found := driver.find_elements(By.CSS_SELECTOR, css)):
        assert time.monotonic() < deadline, f"nothing matches {css!r} after {timeout} s"
        time.sleep(0.1)
    return found[0]


def control(driver, calculator: str, label: str):
    """The control of a calculator whose description reads `label`."""
    for widget in driver.find_elements(By.CSS_SELECTOR, f".calc-{calculator} .widget-inline-hbox"):
        labels = widget.find_elements(By.CSS_SELECTOR, ".widget-label")
        if labels and labels[0].text.strip() == label:
            return widget
    raise AssertionError(f"no control labelled {label!r} in the {calculator} calculator")


READ_RESULT = """
const out = document.querySelector(arguments[0]);
if (!out) return null;
const key = cell => Array.from(cell.classList).find(c => c.startsWith('calc-') && c !== 'calc-number').slice(5);
const message = out.querySelector('.calc-message');
return {
  inputs: JSON.parse(out.dataset.inputs),
  numbers: Object.fromEntries(Array.from(out.querySelectorAll('.calc-number'),
                                         cell => [key(cell), [cell.dataset.value, cell.textContent]])),
  message: message ? message.textContent : '',
};
"""


def result(driver, calculator: str, changed_from: dict | None = None) -> tuple[dict, dict, str]:
    """(inputs the result was computed from, class key -> (data-value, text), message), once they moved on.

    Read in one script, so the widget cannot redraw between the reads.
    """
    deadline = time.monotonic() + 20
    while True:
        shown = driver.execute_script(READ_RESULT, f".calc-{calculator} .calc-out")
        if shown and shown["inputs"] != changed_from:
            return shown["inputs"], shown["numbers"], shown["message"]
        assert time.monotonic() < deadline, f"the {calculator} result did not change from {changed_from}"
        time.sleep(0.1)


def press(driver, calculator: str, label: str, key: str) -> None:
    handle = control(driver, calculator, label).find_element(By.CSS_SELECTOR, ".noUi-handle")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", handle)
    handle.send_keys(key)


def choose(driver, calculator: str, label: str, option: str) -> None:
    Select(control(driver, calculator, label).find_element(By.TAG_NAME, "select")).select_by_visible_text(option)


def type_into(driver, calculator: str, label: str, text: str) -> None:
    """Replace what a number box or a slider's readout holds with `text`, then press Enter.

    A count slider's readout is a text box beside the slider, in the box that holds both.
    """
    widget = control(driver, calculator, label)
    fields = [
        *widget.find_elements(By.TAG_NAME, "input"),
        *widget.find_elements(By.CSS_SELECTOR, ".widget-readout"),
        *widget.find_elements(By.XPATH, "../*[contains(@class, 'widget-text')]//input"),
    ]
    field = next(f for f in fields if f.is_displayed())
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", field)
    field.click()
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(text, Keys.ENTER)


def has_figure(driver, calculator: str) -> bool:
    return bool(driver.find_elements(By.CSS_SELECTOR, f".calc-{calculator} .jp-OutputArea-output img"))


def test_calculators_read_at_150_percent_on_a_projector(page):
    driver, shots = page
    driver.execute_script("window.jupyterapp.shell.collapseLeft()")  # Ctrl+B, as the README advises for a projector
    show_on(driver, *PROJECTOR)
    body_px = float(driver.execute_script(
        "return getComputedStyle(document.querySelector('.jp-RenderedMarkdown p')).fontSize"
    ).removesuffix("px"))  # fmt: skip
    for name in ("training", "memory", "roofline"):
        root = driver.find_element(By.CSS_SELECTOR, f".calc-{name}")
        sizes = driver.execute_script(
            "return Array.from(arguments[0].querySelectorAll('.widget-label, .widget-readout, select, input, td'))"
            ".filter(e => e.offsetParent && e.textContent + e.value)"
            ".map(e => parseFloat(getComputedStyle(e).fontSize))",
            root,
        )
        assert sizes and min(sizes) >= body_px, f"{name}: text at {min(sizes)} px, body text {body_px} px"
        assert root.size["width"] <= 900
        # with the file browser hidden there is room for the result beside the controls
        controls, shown = root.find_elements(By.CSS_SELECTOR, ":scope > .widget-hbox > *")[:2]
        assert shown.location["x"] >= controls.location["x"] + controls.size["width"], f"{name}: result wrapped"
        for img in root.find_elements(By.TAG_NAME, "img"):
            scale = img.size["width"] / driver.execute_script("return arguments[0].naturalWidth", img)
            assert MIN_FONT_PT / 72 * STORED_DPI * scale >= body_px, f"{name}: figure text below body text"
        driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", root)
        driver.save_screenshot(str(shots / f"{name}.png"))


def test_training_calculator_follows_its_controls(page):
    driver, _ = page
    inputs, numbers, _ = result(driver, "training")
    expected = training_estimate(**inputs)
    assert float(numbers["days"][0]) == expected.days and numbers["days"][1] == "143.9 days"

    press(driver, "training", "GPUs", Keys.ARROW_RIGHT)  # 1,024 -> 2,048
    inputs, numbers, _ = result(driver, "training", inputs)
    assert inputs["gpus"] == 2048
    assert control(driver, "training", "GPUs").find_element(By.CSS_SELECTOR, ".widget-readout").text == "2,048"
    assert float(numbers["days"][0]) == training_estimate(**inputs).days
    assert numbers["days"][1] == f"{training_estimate(**inputs).days:,.1f} days"

    choose(driver, "training", "card", "A100 SXM 80GB")
    inputs, numbers, _ = result(driver, "training", inputs)
    assert inputs["card"] == "a100-sxm-80gb"
    assert float(numbers["peak"][0]) == training_estimate(**inputs).peak_flops_per_gpu == 312e12

    type_into(driver, "training", "MFU", "0.3")
    inputs, numbers, _ = result(driver, "training", inputs)
    assert inputs["mfu"] == 0.3
    expected = training_estimate(**inputs)
    assert float(numbers["days"][0]) == expected.days
    assert numbers["days"][1] == f"{expected.days:,.1f} days"
    assert has_figure(driver, "training")

    choose(driver, "training", "dtype (peak row)", "fp8")  # the A100 has no fp8 tensor cores
    inputs, numbers, message = result(driver, "training", inputs)
    with pytest.raises(ValueError, match="no dense fp8 figure"):
        training_estimate(**inputs)
    assert message.startswith("No estimate: the A100 SXM 80GB datasheet gives no dense fp8 figure (it lists bf16, ")
    assert set(numbers) == {"flops"} and not has_figure(driver, "training")


def test_memory_calculator_follows_its_controls(page):
    driver, _ = page

    def expected(inputs: dict):
        return memory_per_gpu(inputs["params"], inputs["recipe"], inputs["stage"], inputs["gpus"],
                              inputs["memory_gb"] * 1e9)  # fmt: skip

    inputs, numbers, _ = result(driver, "memory")
    assert float(numbers["total"][0]) == expected(inputs).total and numbers["total"][1] == "80.0 GB"

    type_into(driver, "memory", "GB per GPU", "40")
    inputs, numbers, _ = result(driver, "memory", inputs)
    assert inputs["memory_gb"] == 40
    assert float(numbers["largest"][0]) == expected(inputs).largest_params == 20e9

    choose(driver, "memory", "sharding", "ZeRO-2 (stage 2)")
    inputs, numbers, _ = result(driver, "memory", inputs)
    press(driver, "memory", "GPUs", Keys.ARROW_RIGHT)  # 8 -> 16
    inputs, numbers, _ = result(driver, "memory", inputs)
    assert (inputs["stage"], inputs["gpus"]) == (2, 16)
    estimate = expected(inputs)
    assert float(numbers["gradients"][0]) == estimate.components["gradients"] == 4 * 40e9 / 16
    assert float(numbers["total"][0]) == estimate.total

    type_into(driver, "memory", "parameters", "7e9")
    inputs, numbers, _ = result(driver, "memory", inputs)
    assert inputs["params"] == 7e9
    readout = control(driver, "memory", "parameters").find_element(By.XPATH, "..//input")
    assert readout.get_attribute("value") == "7B"  # as people write it
    assert float(numbers["total"][0]) == expected(inputs).total
    assert numbers["fits"][1].startswith("yes")

    choose(driver, "memory", "card", "H200 SXM (141 GB)")  # fills in the card's memory
    inputs, numbers, _ = result(driver, "memory", inputs)
    assert inputs["memory_gb"] == 141
    assert float(numbers["largest"][0]) == expected(inputs).largest_params
    assert has_figure(driver, "memory")


def test_roofline_explorer_follows_its_controls(page):
    driver, _ = page

    def expected(inputs: dict):
        return roofline_point(inputs["m"], inputs["n"], inputs["p"], inputs["card"], inputs["dtype"])

    inputs, numbers, _ = result(driver, "roofline")
    assert numbers["bound"] == ["compute", "compute"]
    for _ in range(8):  # 4,096 rows -> 16
        press(driver, "roofline", "m (rows, tokens)", Keys.ARROW_LEFT)
        inputs, numbers, _ = result(driver, "roofline", inputs)
    type_into(driver, "roofline", "n (inner)", "11008")
    inputs, numbers, _ = result(driver, "roofline", inputs)
    assert (inputs["m"], inputs["n"]) == (16, 11008)
    point = expected(inputs)
    assert float(numbers["intensity"][0]) == point.intensity
    assert float(numbers["attainable"][0]) == point.attainable_flops
    assert numbers["bound"][1] == point.bound == "memory"

    choose(driver, "roofline", "dtype", "fp16")
    inputs, numbers, _ = result(driver, "roofline", inputs)
    choose(driver, "roofline", "card", "T4")
    inputs, numbers, _ = result(driver, "roofline", inputs)
    assert float(numbers["attainable"][0]) == expected(inputs).attainable_flops
    choose(driver, "roofline", "dtype", "bf16")  # the T4 (Turing) has no bf16 tensor cores
    inputs, numbers, message = result(driver, "roofline", inputs)
    assert "no dense bf16 figure" in message and not numbers and not has_figure(driver, "roofline")
