import base64
import re
from pathlib import Path

import matplotlib.pyplot as plt
import nbformat
import pytest
from matplotlib.figure import Figure

from lecture_utils.figures.images import IMAGES, draw_all
from lecture_utils.figures.style import (
    DISPLAY_DPI,
    MAX_WIDTH_IN,
    MIN_FONT_PT,
    STORED_DPI,
    save_figure,
    too_small_texts,
    use_style,
)


@pytest.mark.parametrize("name", sorted(IMAGES))
def test_every_image_draws(name):
    fig = IMAGES[name]()
    assert isinstance(fig, Figure)
    assert fig.axes, f"{name} drew no axes"
    plt.close(fig)


def test_every_committed_image_has_a_generator():
    images = {p.stem for p in (Path(__file__).resolve().parent.parent / "images").glob("*.png")}
    assert images <= set(IMAGES), f"images without a generator: {sorted(images - set(IMAGES))}"


def test_draw_all_writes_pngs_and_the_bytes_repeat(tmp_path):
    first = draw_all(tmp_path / "a", ["training_days"])
    second = draw_all(tmp_path / "b", ["training_days"])
    assert first[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert first[0].read_bytes() == second[0].read_bytes()


def test_bad_names_and_suffixes_are_rejected(tmp_path):
    with pytest.raises(ValueError, match="unknown image"):
        draw_all(tmp_path, ["no_such_figure"])
    fig = plt.figure()
    with pytest.raises(ValueError, match=r"\.png"):
        save_figure(fig, tmp_path / "figure.jpg")
    plt.close(fig)


@pytest.mark.parametrize("name", sorted(IMAGES))
def test_every_image_is_legible_on_a_projector(name):
    use_style()
    fig = IMAGES[name]()
    try:
        assert fig.get_size_inches()[0] <= MAX_WIDTH_IN + 1e-9, f"{name} is wider than {MAX_WIDTH_IN} in"
        assert too_small_texts(fig) == [], f"{name} has text below {MIN_FONT_PT} pt"
        columns = {round(ax.get_position().x0, 2) for ax in fig.axes if ax.get_visible()}
        assert len(columns) <= 2, f"{name} puts {len(columns)} panels side by side"
    finally:
        plt.close(fig)


SMALL_FONT = re.compile(
    r"\b(?:fontsize|labelsize|titlesize)\s*=\s*(?:(\d+(?:\.\d+)?)|[\"'](?:x-small|xx-small|small)[\"'])"
)
WIDE_GRID = re.compile(r"subplots\((?:\s*\d+\s*,\s*|[^)]*\bncols\s*=\s*)([3-9]|\d\d)\b")


def figure_code() -> list[tuple[str, str]]:
    """(where, source) for every package module and notebook code cell, where figures are drawn."""
    root = Path(__file__).resolve().parent.parent
    sources = [(str(p.relative_to(root)), p.read_text()) for p in sorted((root / "lecture_utils").rglob("*.py"))]
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        sources += [(f"{path.name} cell {i}", c.source) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    return sources


def test_no_figure_code_asks_for_small_text_or_three_panels_side_by_side():
    for where, source in figure_code():
        for match in SMALL_FONT.finditer(source):
            assert match.group(1) is not None and float(match.group(1)) >= MIN_FONT_PT, (
                f"{where}: {match.group(0)} is below the {MIN_FONT_PT} pt a projector needs"
            )
        match = WIDE_GRID.search(source)
        assert match is None, f"{where}: {match.group(0)} puts more than two panels side by side"


def test_only_the_figures_subpackage_draws():
    root = Path(__file__).resolve().parent.parent / "lecture_utils"
    # __init__.py imports pyplot only to load it before the type-check hook (its comment says why).
    drawing = [
        str(p.relative_to(root))
        for p in sorted(root.rglob("*.py"))
        if p.parent.name != "figures"
        and p.name != "__init__.py"
        and re.search(r"^\s*(import|from) matplotlib", p.read_text(), re.M)
    ]
    assert drawing == [], f"figure code outside lecture_utils/figures: {drawing}"


# Notebooks 00-03's figures, shown on slides: the stored image, at the notebook's display size, fits
# the part of a 1080p projector a slide leaves at 150% zoom (720 CSS px, about 600 of them free).
@pytest.mark.parametrize("name", ["training_days", "float_formats", "float_spacing", "host_to_gpu", "strides"])
def test_slide_figures_fit_one_projector_screen(name, tmp_path):
    (path,) = draw_all(tmp_path, [name])
    height_px = plt.imread(path).shape[0] * DISPLAY_DPI / STORED_DPI
    assert height_px <= 600, f"{name} shows {height_px:.0f} CSS px tall"


def shown_height_px(output: dict) -> float:
    """CSS pixels a notebook shows a stored PNG output at: its display metadata, else its pixels."""
    shown = output.get("metadata", {}).get("image/png", {})
    if "height" in shown:
        return float(shown["height"])
    png = base64.b64decode(output["data"]["image/png"])
    return int.from_bytes(png[20:24], "big") * DISPLAY_DPI / STORED_DPI  # IHDR height, stored at 2x


# Notebooks 05-09's figures on slides, as committed: each fits the part of a 1080p projector a slide
# leaves at 150% zoom (about 600 CSS px); their text sizes are tested with the drawing functions.
@pytest.mark.parametrize("notebook", ["05", "06", "07", "08", "09"])
def test_slide_figures_in_notebooks_fit_one_projector_screen(notebook):
    (path,) = (Path(__file__).resolve().parent.parent / "notebooks").glob(f"{notebook}_*.ipynb")
    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        if cell.metadata.get("slideshow", {}).get("slide_type") in ("skip", "notes", None):
            continue
        for output in cell.get("outputs", []):
            if "image/png" in output.get("data", {}):
                assert shown_height_px(output) <= 600, f"{path.name} cell {i}: taller than a slide"
