"""One figure style for every notebook, and PNG saving that gives the same bytes on every run."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt

STYLE = {
    "figure.figsize": (7.0, 4.0),
    "figure.dpi": 100,
    "savefig.dpi": 120,
    "savefig.bbox": "tight",
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
    "svg.hashsalt": "lecture",
}

COLORS = {"fp32": "#1f77b4", "fp16": "#ff7f0e", "bf16": "#2ca02c", "fp8": "#d62728", "peak": "#444444"}


def use_style() -> None:
    """Apply the notes' figure style to every later matplotlib figure."""
    plt.rcParams.update(STYLE)


def save_figure(fig: plt.Figure, path: str | Path) -> Path:
    """Save a figure as PNG without the metadata (software version, date) that makes bytes differ."""
    path = Path(path)
    if path.suffix != ".png":
        raise ValueError(f"figures are saved as .png, got {path.name!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", metadata={"Software": None})
    return path
