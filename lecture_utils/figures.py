"""Every figure under images/, and the one command that redraws them all.

    python -m lecture_utils.figures images      # what `make figures` runs

Each entry names a function in a topic module that returns a matplotlib Figure; the
notebooks call the same functions, so a figure and its notebook cannot drift apart.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import ticker
from matplotlib.figure import Figure

from lecture_utils.checks import check_int, check_positive
from lecture_utils.hardware import ACCELERATORS
from lecture_utils.napkin import check_mfu, training_days, training_flops
from lecture_utils.plotting import COLORS, save_figure, use_style

FIGURES: dict[str, str] = {
    "training_days": "lecture_utils.figures:draw_training_days",
    "float_formats": "lecture_utils.dtypes:draw_float_formats",
    "float_spacing": "lecture_utils.dtypes:draw_float_spacing",
    "host_to_gpu": "lecture_utils.dtypes:draw_host_to_gpu",
    "strides": "lecture_utils.strides:draw_strides",
    "linear_layer_matmuls": "lecture_utils.transformer:draw_linear_layer_matmuls",
}


def draw_training_days(
    params: float = 70e9,
    tokens: float = 15e12,
    gpu_counts: Sequence[int] = (512, 1024, 2048, 4096),
    mfus: Sequence[float] = (0.3, 0.4, 0.5, 0.6),
    peak_flops_per_gpu: float = ACCELERATORS["h100-sxm"].peak("bf16"),
) -> Figure:
    """Days to train `params` on `tokens`: against MFU for several cluster sizes, and against GPU count."""
    if len(gpu_counts) == 0 or len(mfus) == 0:
        raise ValueError(f"need at least one GPU count and one MFU, got gpu_counts={gpu_counts!r}, mfus={mfus!r}")
    for count in gpu_counts:
        check_int("each GPU count", count)
    for m in mfus:
        check_mfu(m)
    check_positive(peak_flops_per_gpu=peak_flops_per_gpu)
    flops = training_flops(params, tokens)  # checks params and tokens
    # Stacked, not side by side: each panel keeps the full width of a notebook on a projector.
    fig, (by_mfu, by_gpus) = plt.subplots(2, 1, figsize=(7, 8))
    mfu_grid = np.linspace(min(mfus), max(mfus), 61)
    for count in gpu_counts:
        days = [training_days(flops, count, peak_flops_per_gpu, m) for m in mfu_grid]
        line, = by_mfu.plot(mfu_grid, days)
        by_mfu.annotate(f"{count} GPUs", (mfu_grid[-1], days[-1]), textcoords="offset points",
                        xytext=(4, 0), va="center", color=line.get_color())
    by_mfu.set(xlabel="MFU (fraction of peak FLOP/s)", ylabel="training time (days)", yscale="log",
               title="Days against MFU", xlim=(min(mfus), max(mfus) + 0.09))
    gpu_grid = np.geomspace(min(gpu_counts), max(gpu_counts), 61)
    for m in mfus:
        days = [training_days(flops, g, peak_flops_per_gpu, m) for g in gpu_grid]
        by_gpus.plot(gpu_grid, days, label=f"MFU {m:.1f}")
    by_gpus.set(xlabel="number of GPUs", ylabel="training time (days)", xscale="log", yscale="log",
                title="Days against GPU count")
    by_gpus.set_xticks(list(gpu_counts), [str(c) for c in gpu_counts])
    by_gpus.legend()
    baseline = training_days(flops, 1024, peak_flops_per_gpu, 0.5)
    for ax, x in ((by_mfu, 0.5), (by_gpus, 1024)):
        ax.plot([x], [baseline], "o", color=COLORS["peak"])
        # Below and left of the point the plot is empty in both panels, so the label hides no line.
        ax.annotate(f"{baseline:.0f} days", (x, baseline), textcoords="offset points", xytext=(-8, -8),
                    ha="right", va="top")
        ax.yaxis.set_major_locator(ticker.LogLocator(base=2))
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda y, _: f"{y:g}"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    fig.suptitle(f"{params / 1e9:.0f}B parameters, {tokens / 1e12:.0f}T tokens, "
                 f"{peak_flops_per_gpu / 1e12:.1f} TFLOP/s dense per GPU")
    fig.tight_layout()
    return fig


def resolve(spec: str) -> Callable[[], Figure]:
    """The drawing function a FIGURES entry ('module:function') names."""
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def draw_all(out_dir: str | Path, names: Sequence[str] | None = None) -> list[Path]:
    """Draw the named figures (default: all) into out_dir as PNGs; return their paths."""
    names = list(FIGURES) if names is None else list(names)
    unknown = sorted(set(names) - set(FIGURES))
    if unknown:
        raise ValueError(f"unknown figure(s) {unknown}; known: {sorted(FIGURES)}")
    use_style()
    paths = []
    for name in names:
        fig = resolve(FIGURES[name])()
        paths.append(save_figure(fig, Path(out_dir) / f"{name}.png"))
        plt.close(fig)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description="Redraw the figures under images/.")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("names", nargs="*", help=f"default: all of {sorted(FIGURES)}")
    args = parser.parse_args()
    for path in draw_all(args.out_dir, args.names or None):
        print(path)


if __name__ == "__main__":
    main()
