"""Figures of where bytes live: host to GPU memory (notebook 01), one storage seen through strides (notebook 02)."""

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from lecture_utils.checks import PositiveInt
from lecture_utils.figures.style import COLORS
from lecture_utils.hardware import ACCELERATORS, PCIE_GEN5_X16_BYTES_PER_S, PCIE_SOURCE
from lecture_utils.strides import contiguous_strides, storage_index


def _box(ax: plt.Axes, xy: tuple[float, float], w: float, h: float, text: str, color: str) -> None:
    """A rounded, labelled box at xy (lower left)."""
    ax.add_patch(
        FancyBboxPatch(
            xy, w, h, boxstyle="round,pad=0.02,rounding_size=0.15", facecolor=color, edgecolor="#555555", lw=1.2
        )
    )
    ax.text(xy[0] + w / 2, xy[1] + h / 2, text, ha="center", va="center", fontsize=12)


def _arrow(ax: plt.Axes, start: tuple[float, float], end: tuple[float, float], width: float, color: str) -> None:
    """An arrow whose line width (and head) stands for a bandwidth."""
    ax.add_patch(
        FancyArrowPatch(
            start, end, arrowstyle="-|>", mutation_scale=14 + 6 * width, lw=width, color=color, shrinkA=0, shrinkB=0
        )
    )


def draw_host_to_gpu() -> Figure:
    """Host RAM -> PCIe -> GPU HBM -> compute, with the bandwidths of H100 SXM and PCIe Gen5 x16 (notebook 01)."""
    h100 = ACCELERATORS["h100-sxm"]
    hbm = h100.bandwidth_bytes_per_s
    # 5.6 inches tall: the whole figure fits one projector screen at 150% zoom (about 600 CSS px).
    fig = plt.figure(figsize=(7, 5.6))
    ax = fig.add_axes((0, 0, 1, 1))  # data coordinates are inches from the bottom left
    # The host on top, the GPU below, the PCIe link between: each label has the full width.
    ax.add_patch(
        FancyBboxPatch((0.15, 4.0), 6.7, 1.5, boxstyle="round,pad=0.05", facecolor="#f2f2f2", edgecolor="#888888")
    )
    ax.text(3.5, 5.2, "host (CPU, DDR RAM)", ha="center", fontsize=13, fontweight="bold")
    _box(ax, (0.4, 4.1), 2.6, 0.9, "pageable memory\ntorch.randn(...)", "#ffffff")
    _box(ax, (4.0, 4.1), 2.6, 0.9, "pinned memory\nx.pin_memory()", "#fde3b5")
    _arrow(ax, (3.05, 4.55), (3.95, 4.55), 1.5, "#888888")
    ax.text(3.5, 4.65, "staging", ha="center", va="bottom", fontsize=11, color="#555555")

    _arrow(ax, (5.3, 3.95), (5.3, 2.75), 1.2, COLORS["fp16"])
    ax.text(4.9, 3.55, f"PCIe Gen5 x16: {PCIE_GEN5_X16_BYTES_PER_S / 1e9:.0f} GB/s", ha="right", fontsize=13,
            fontweight="bold")  # fmt: skip
    ax.text(4.9, 3.2, PCIE_SOURCE, ha="right", fontsize=11, color="#555555")
    ax.text(4.9, 2.8, "x.to('cuda', non_blocking=True)", ha="right", fontsize=11, family="monospace")

    ax.add_patch(
        FancyBboxPatch((0.15, 0.85), 6.7, 1.8, boxstyle="round,pad=0.05", facecolor="#eaf3e6", edgecolor="#888888")
    )
    ax.text(3.5, 2.35, f"GPU ({h100.name})", ha="center", fontsize=13, fontweight="bold")
    _box(ax, (0.4, 0.95), 2.0, 1.2, f"HBM3\n{h100.memory_bytes / 1e9:.0f} GB", "#ffffff")
    _box(ax, (4.6, 0.95), 2.0, 1.2, "SMs\n(tensor cores)", "#ffffff")
    _arrow(ax, (2.45, 1.55), (4.55, 1.55), 7, COLORS["bf16"])
    ax.text(3.5, 1.85, f"{hbm / 1e12:.2f} TB/s", ha="center", fontsize=13, fontweight="bold")
    ax.text(3.5, 1.25, "H100 SXM datasheet", ha="center", va="top", fontsize=11, color="#555555")
    ax.text(
        3.5,
        0.65,
        f"HBM feeds the SMs {hbm / PCIE_GEN5_X16_BYTES_PER_S:.0f}x faster than PCIe feeds the GPU:\n"
        "move data to the GPU once and keep it there.",
        ha="center",
        va="top",
        fontsize=12,
        style="italic",
    )
    ax.set_xlim(0, 7)
    ax.set_ylim(0, 5.6)
    ax.axis("off")
    return fig


def _cell(ax: plt.Axes, x: float, y: float, k: int, n: int) -> None:
    """Storage element k of n as a unit square at (x, y), coloured so it matches its storage slot in every panel."""
    color = plt.cm.viridis(0.15 + 0.8 * k / max(n - 1, 1))
    ax.add_patch(Rectangle((x, y), 1, 1, facecolor=color, edgecolor="white", lw=2))
    text_color = "white" if k < 0.6 * n else "black"
    ax.text(x + 0.5, y + 0.5, str(k), ha="center", va="center", fontsize=14, color=text_color, fontweight="bold")


def _grid(ax: plt.Axes, x0: float, y0: float, rows: int, cols: int, stride: tuple[int, int], title: str) -> None:
    """Draw a rows x cols tensor whose cell (i, j) shows storage[i*stride0 + j*stride1]."""
    n = rows * cols
    for i in range(rows):
        for j in range(cols):
            _cell(ax, x0 + j, y0 - i, storage_index((i, j), stride), n)
        ax.text(x0 - 0.3, y0 - i + 0.5, str(i), ha="right", va="center", fontsize=11, color="#777777")
    for j in range(cols):
        ax.text(x0 + j + 0.5, y0 + 1.2, str(j), ha="center", va="bottom", fontsize=11, color="#777777")
    ax.text(x0 + cols / 2, y0 + 1.9, title, ha="center", va="bottom", fontsize=12, family="monospace")
    ax.text(
        x0 + cols / 2,
        y0 - rows + 0.6,
        f"row step +{stride[0]}, column step +{stride[1]}",
        ha="center",
        va="top",
        fontsize=11,
    )


def draw_strides(rows: PositiveInt = 3, cols: PositiveInt = 4) -> Figure:
    """One storage of rows x cols floats, read as a rows x cols tensor and through its transpose (notebook 02)."""
    stride = contiguous_strides((rows, cols))
    n = rows * cols
    fig, ax = plt.subplots(figsize=(7, 5))
    top = 5.0
    ax.text(-0.3, top + 0.5, "storage", ha="right", va="center", fontsize=13, fontweight="bold")
    for k in range(n):
        _cell(ax, k, top, k, n)
    ax.text(n / 2, top + 1.3, f"{n} floats in one flat block: torch.arange({n}.)", ha="center", fontsize=12)
    left = n / 2 - cols - 2.5
    _grid(
        ax, left, 0.5, rows, cols, stride, f"x = storage.view({rows}, {cols})\nshape ({rows}, {cols})\nstride {stride}"
    )
    _grid(
        ax,
        n / 2 + 2.0,
        0.5,
        cols,
        rows,
        stride[::-1],
        f"x.T: same storage\nshape ({cols}, {rows})\nstride {stride[::-1]}",
    )
    ax.text(
        n / 2,
        -cols + 0.2,
        "element (i, j) sits at\nstorage[offset + i x stride[0] + j x stride[1]]",
        ha="center",
        va="top",
        fontsize=12,
        style="italic",
    )
    ax.set_xlim(-2.5, n + 1.5)
    ax.set_ylim(-cols - 1.4, top + 1.8)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig
