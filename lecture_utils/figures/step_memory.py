"""Memory over one training step (notebooks 06 and 09): live bytes stacked by component, event by event.

The picture PyTorch's memory snapshots call the active memory timeline, drawn from a
lecture_utils.step_memory.StepTimeline: what is held at rest at the bottom (parameters,
optimizer state), then the gradients, then the activations on top, so the top edge is the total.
"""

from collections.abc import Mapping

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
_XLABEL = "event: each layer's forward, then each layer's gradients landing"
_UNITS = (("B", 1), ("KiB", 1024), ("MiB", 1024**2), ("GiB", 1024**3))


def _unit(largest: int) -> tuple[str, int]:
    """The largest binary unit that keeps `largest` at 1 or more, so the axis reads in small numbers."""
    return [(name, size) for name, size in _UNITS if largest >= size or size == 1][-1]


def _tops(timeline: StepTimeline, napkin: int | None) -> tuple[list[int], list[int] | None]:
    """Every height the drawing reaches, and the allocator curve moved to start where the stack does (None on a CPU)."""
    totals = timeline.totals
    allocated = [e.allocated for e in timeline.events]
    if None in allocated:
        return [*totals, napkin or 0], None
    moved = [a - allocated[0] + totals[0] for a in allocated]
    return [*totals, napkin or 0, *moved], moved


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
    title = title or "Memory over one training step"
    napkins = {title: napkin} if napkin is not None else None
    return draw_step_memories({title: timeline}, napkins=napkins, napkin_label=napkin_label)


def draw_step_memories(
    timelines: Mapping[str, StepTimeline],
    *,
    napkins: Mapping[str, PositiveInt] | None = None,
    napkin_label: str = "napkin",
) -> Figure:
    """draw_step_memory's picture for several steps side by side, one title each, on one scale (notebooks 06 and 09).

    `napkins`: the napkin's peak for some of the titles, drawn as a line in that panel. The panels
    share the y axis, so a step that holds less is visibly lower (notebook 09: DDP beside ZeRO-3).
    """
    if not 1 <= len(timelines) <= 2:
        raise ValueError(f"draw one or two steps side by side (legible at 7 inches), got {len(timelines)}")
    napkins = dict(napkins or {})
    if unknown := set(napkins) - set(timelines):
        raise ValueError(f"napkins for steps not drawn: {sorted(unknown)}")
    drawn = [(name, t, napkins.get(name), _tops(t, napkins.get(name))) for name, t in timelines.items()]
    highest = max(max(tops) for *_, (tops, _) in drawn)
    unit, size = _unit(highest)
    # Constrained layout makes room for the legend below the axes, where it hides nothing.
    fig, axes = plt.subplots(1, len(drawn), figsize=(7.0, 5.2), sharey=True, layout="constrained", squeeze=False)
    handles: dict[str, object] = {}
    for ax, (name, timeline, napkin, (_, allocated)) in zip(axes[0], drawn, strict=True):
        _draw(ax, timeline, napkin, napkin_label, allocated, size, _AXES_WIDTH_IN / len(drawn))
        ax.set_title(name)
        ax.set_xlabel("event of the step" if len(drawn) > 1 else _XLABEL)
        panel_handles, labels = ax.get_legend_handles_labels()
        handles |= dict(zip(labels, panel_handles, strict=True))
    axes[0][0].set_ylim(0, 1.3 * highest / size)  # headroom for the napkin's label and the phase names
    axes[0][0].set_ylabel(f"live memory ({unit})")
    # The stack's order, top band first, whichever panel showed a component.
    order = [c for c in (*_STACK_ORDER[::-1], "memory_allocated") if c in handles]
    fig.legend([handles[c] for c in order], order, loc="outside lower center", ncol=2 if len(drawn) == 1 else 3)
    return fig


def _draw(
    ax: plt.Axes,
    timeline: StepTimeline,
    napkin: int | None,
    napkin_label: str,
    allocated: list[int] | None,
    size: int,
    axes_width_in: float,
) -> None:
    """One step's stack, allocator curve, napkin line and peak marker on `ax`, in units of `size` bytes."""
    events = timeline.events
    x = list(range(len(events)))
    totals = timeline.totals
    shown = [c for c in _STACK_ORDER if any(timeline.series(c))]
    # step="mid": each reading is a plateau around its event, not a slope to the next one.
    ax.stackplot(
        x,
        [[v / size for v in timeline.series(c)] for c in shown],
        labels=shown,
        colors=[_COMPONENT_COLORS[c] for c in shown],
        step="mid",
        alpha=0.85,
    )
    if allocated is not None:
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
    _mark_phases(ax, timeline, axes_width_in)
    ax.set_xlim(-0.5, len(events) - 0.5)


def _mark_phases(ax: plt.Axes, timeline: StepTimeline, axes_width_in: float) -> None:
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
    inches_per_event = axes_width_in / len(timeline.events)
    labels = [name for _, name in loop]
    for k in range(1, len(loop)):
        if (loop[k][0] - loop[k - 1][0]) * inches_per_event < 1.0 and not labels[k - 1].startswith("\n"):
            labels[k] = "\n" + labels[k]
    ax.set_xticks([i for i, _ in loop], labels)
    ax.grid(axis="x", visible=False)
