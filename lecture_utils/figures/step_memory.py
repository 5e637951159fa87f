"""Memory over one training step (notebook 06): live bytes stacked by component, event by event.

The picture PyTorch's memory snapshots call the active memory timeline, drawn from a
lecture_utils.step_memory.StepTimeline: what is held at rest at the bottom (parameters,
optimizer state), then the gradients, then the activations on top, so the top edge is the total.
"""

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from lecture_utils.checks import PositiveInt
from lecture_utils.figures.style import COLORS
from lecture_utils.memory import format_bytes
from lecture_utils.step_memory import StepTimeline

# Every accounting.COMPONENTS name: what is held at rest first, then what comes and goes in a step,
# so the top edge of the stack moves with the last two.
_STACK_ORDER = ("parameters", "master_weights", "optimizer_state", "gradient_accumulator", "gradients", "activations")
_COMPONENT_COLORS = {
    "parameters": "#1f77b4",
    "master_weights": "#9467bd",
    "optimizer_state": "#8c564b",
    "gradient_accumulator": "#e377c2",
    "gradients": "#ff7f0e",
    "activations": "#2ca02c",
}
_AXES_WIDTH_IN = 6.0  # about what a 7-inch figure leaves the axes once its y labels are placed
_UNITS = (("B", 1), ("KiB", 1024), ("MiB", 1024**2), ("GiB", 1024**3))


def _unit(largest: int) -> tuple[str, int]:
    """The largest binary unit that keeps `largest` at 1 or more, so the axis reads in small numbers."""
    return [(name, size) for name, size in _UNITS if largest >= size or size == 1][-1]


def draw_step_memory(
    timeline: StepTimeline,
    *,
    napkin: PositiveInt | None = None,
    napkin_label: str = "napkin",
    title: str | None = None,
) -> Figure:
    """Stacked live bytes by component at every event of one step, the peak marked, the napkin as a line (notebook 06).

    On a GPU the allocator's memory_allocated is drawn too, moved to start where the tracked total
    starts (it also counts whatever else the process holds): the gap above the stack is the
    temporaries and workspaces that no saved tensor holds.
    """
    events = timeline.events
    x = list(range(len(events)))
    totals = timeline.totals
    allocated = [e.allocated for e in events]
    shown = [c for c in _STACK_ORDER if any(timeline.series(c))]
    tops = [*totals, napkin or 0]
    if None not in allocated:
        allocated = [a - allocated[0] + totals[0] for a in allocated]
        tops += allocated
    unit, size = _unit(max(tops))

    # Constrained layout makes room for the legend below the axes, where it hides nothing.
    fig, ax = plt.subplots(figsize=(7.0, 5.2), layout="constrained")
    # step="mid": each reading is a plateau around its event, not a slope to the next one.
    ax.stackplot(
        x,
        [[v / size for v in timeline.series(c)] for c in shown],
        labels=shown,
        colors=[_COMPONENT_COLORS[c] for c in shown],
        step="mid",
        alpha=0.85,
    )
    if None not in allocated:
        ax.step(x, [a / size for a in allocated], where="mid", color="black", lw=1.5, label="memory_allocated")
    if napkin is not None:
        ax.axhline(napkin / size, color=COLORS["peak"], ls="--", lw=1.5)
        ax.annotate(
            f"{napkin_label}: {format_bytes(napkin)}",
            (len(events) - 0.5, napkin / size),
            textcoords="offset points",
            xytext=(-2, 4),
            ha="right",
            va="bottom",
            color=COLORS["peak"],
        )
    peak = timeline.peak_index
    on_right = peak > len(events) / 2  # write the label on the side with room for it
    ax.plot([peak], [totals[peak] / size], "o", color="black", ms=8, zorder=5)
    ax.annotate(
        f"peak {format_bytes(totals[peak])}\nat {events[peak].label}",
        (peak, totals[peak] / size),
        textcoords="offset points",
        xytext=(-12 if on_right else 12, -8),
        ha="right" if on_right else "left",
        va="top",
        bbox={"boxstyle": "round,pad=0.3", "facecolor": "white", "alpha": 0.9, "edgecolor": "none"},
    )
    _mark_phases(ax, timeline)
    ax.set_xlim(-0.5, len(events) - 0.5)
    ax.set_ylim(0, 1.3 * max(tops) / size)  # headroom for the napkin's label and the phase names
    ax.set_ylabel(f"live memory ({unit})")
    ax.set_xlabel("event: each layer's forward, then each layer's gradients landing")
    ax.set_title(title or "Memory over one training step")
    fig.legend(loc="outside lower center", ncol=2, reverse=True)
    return fig


def _mark_phases(ax: plt.Axes, timeline: StepTimeline) -> None:
    """Shade the backward, name forward and backward above the curve, and tick the loop's own events."""
    phases = [e.phase for e in timeline.events]
    spans = {}
    for phase in ("forward", "backward"):
        where = [i for i, p in enumerate(phases) if p == phase]
        if where:
            spans[phase] = (where[0] - 0.5, where[-1] + 0.5)
    if "backward" in spans:
        ax.axvspan(*spans["backward"], color="#000000", alpha=0.06, lw=0, zorder=0)
    for phase, (left, right) in spans.items():
        ax.text((left + right) / 2, 0.97, phase, transform=ax.get_xaxis_transform(), ha="center", va="top")
    loop = [(i, e.label) for i, e in enumerate(timeline.events) if e.phase in ("start", "loss", "step", "zero_grad")]
    # A label closer than about an inch to the one before drops a line below it (step, then zero_grad).
    inches_per_event = _AXES_WIDTH_IN / len(timeline.events)
    labels = [name for _, name in loop]
    for k in range(1, len(loop)):
        if (loop[k][0] - loop[k - 1][0]) * inches_per_event < 1.0 and not labels[k - 1].startswith("\n"):
            labels[k] = "\n" + labels[k]
    ax.set_xticks([i for i, _ in loop], labels)
    ax.grid(axis="x", visible=False)
