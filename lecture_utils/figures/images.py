"""The figures stored under images/, each drawn by the function the notebooks call, and redrawing them all."""

from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from lecture_utils.figures.floats import draw_float_formats, draw_float_spacing
from lecture_utils.figures.flops import draw_linear_layer_matmuls
from lecture_utils.figures.memory import draw_host_to_gpu, draw_strides
from lecture_utils.figures.napkin import draw_training_days
from lecture_utils.figures.style import save_figure, use_style

# images/<name>.png -> the function that draws it with its default arguments
IMAGES: dict[str, Callable[[], Figure]] = {
    "training_days": draw_training_days,
    "float_formats": draw_float_formats,
    "float_spacing": draw_float_spacing,
    "host_to_gpu": draw_host_to_gpu,
    "strides": draw_strides,
    "linear_layer_matmuls": draw_linear_layer_matmuls,
}


def draw_all(out_dir: str | Path, names: Sequence[str] | None = None) -> list[Path]:
    """Draw the named images (default: all) into out_dir as PNGs; return their paths (notebooks 00 to 05 show them)."""
    names = list(IMAGES) if names is None else list(names)
    unknown = sorted(set(names) - set(IMAGES))
    if unknown:
        raise ValueError(f"unknown image(s) {unknown}; known: {sorted(IMAGES)}")
    use_style()
    paths = []
    for name in names:
        fig = IMAGES[name]()
        paths.append(save_figure(fig, Path(out_dir) / f"{name}.png"))
        plt.close(fig)
    return paths
