"""One figure style for every notebook, counts written as people say them, and PNG saving that gives the same
bytes on every run.

The notes are read on laptops and on projectors, so the style is sized for legibility: figures
at most 7 inches wide (they fit a notebook at 150% browser zoom without shrinking), no text
below MIN_FONT_PT, and images stored at twice the display resolution (sharp on high-DPI screens).
"""

from pathlib import Path

import matplotlib.pyplot as plt

MIN_FONT_PT = 11.0  # at 100 dpi this is 15 CSS px, above JupyterLab's 14 px body text
MAX_WIDTH_IN = 7.0
DISPLAY_DPI = 100  # one figure inch is this many CSS pixels in the notebook
STORED_DPI = 2 * DISPLAY_DPI  # pixels stored per inch: retina inline images and images/*.png

STYLE = {
    "figure.figsize": (MAX_WIDTH_IN, 4.0),
    "figure.dpi": DISPLAY_DPI,
    "savefig.dpi": STORED_DPI,
    "savefig.bbox": "tight",
    "font.size": 12,
    "axes.titlesize": 13,
    "axes.labelsize": 12,
    "xtick.labelsize": 12,
    "ytick.labelsize": 12,
    "legend.fontsize": 12,
    "legend.title_fontsize": 12,
    "figure.titlesize": 13,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
    "svg.hashsalt": "lecture",
}

COLORS = {"fp32": "#1f77b4", "fp16": "#ff7f0e", "bf16": "#2ca02c", "fp8": "#d62728", "peak": "#444444"}


def count_label(n: float) -> str:
    """A count as a room reads it aloud, for figures and widgets alike: 70B, 15T, 350M (notebooks 00, 09)."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= scale:
            return f"{n / scale:.3g}{suffix}"
    return f"{n:.3g}"


def use_style() -> None:
    """Apply the notes' figure style to later figures; in a notebook, also show them at high DPI (notebook 00 on)."""
    plt.rcParams.update(STYLE)
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: no inline figures to configure
        return
    if get_ipython() is not None:
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        # 'retina' stores STORED_DPI pixels per inch and tells the browser to show DISPLAY_DPI.
        set_matplotlib_formats("retina")


def save_figure(fig: plt.Figure, path: str | Path) -> Path:
    """Save a figure as PNG without the metadata that makes bytes differ (the images notebook 00 on shows)."""
    path = Path(path)
    if path.suffix != ".png":
        raise ValueError(f"figures are saved as .png, got {path.name!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", metadata={"Software": None})
    return path


def too_small_texts(fig: plt.Figure) -> list[str]:
    """Every visible text of a figure below MIN_FONT_PT, as 'size pt: text' (notebooks 08 and 09 assert it empty)."""
    fig.canvas.draw()  # tick labels exist only once drawn
    small = []
    for text in fig.findobj(lambda artist: isinstance(artist, plt.Text)):
        if text.get_visible() and text.get_text().strip() and text.get_fontsize() < MIN_FONT_PT:
            small.append(f"{text.get_fontsize():g} pt: {text.get_text()[:40]!r}")
    return small
