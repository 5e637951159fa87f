"""The memory calculator of notebook 09: parameters, recipe, ZeRO stage, GPUs, card memory -> bytes per GPU.

The bytes come from lecture_utils.accounting's recipes and lecture_utils.sharding (per_gpu_bytes,
largest_params, and SHARDED_FROM, the stage from which each component is split over the GPUs): the
functions notebook 09 holds to real sharded runs byte for byte. Its figure
(lecture_utils.figures.calculators.draw_memory) can mark those measurements, as bytes per parameter on each rank.
"""

from dataclasses import dataclass

from lecture_utils.accounting import RECIPES
from lecture_utils.calculators.controls import dropdown, log_slider, number_box, power_of_two_slider
from lecture_utils.calculators.layout import (
    Calculator,
    ResultRow,
    build_calculator,
    result_html,
    result_text,
)
from lecture_utils.checks import PositiveFloat, PositiveInt
from lecture_utils.figures.calculators import Measured, draw_memory, figure_output
from lecture_utils.figures.style import count_label
from lecture_utils.hardware import ACCELERATORS
from lecture_utils.memory import format_bytes
from lecture_utils.sharding import APPROACHES, SHARDED_FROM, STAGES, Stage, largest_params, per_gpu_bytes

MAX_GPUS_LOG2 = 12  # the slider's range: 1 to 4,096 GPUs
NOTE = "Training state only: activations, buffers and the CUDA context need memory too."


@dataclass(frozen=True)
class MemoryEstimate:
    """Training-state bytes on one GPU, by accounting component, and the largest model that fits (notebook 09)."""

    components: dict[str, float]  # lecture_utils.accounting's COMPONENTS the recipe keeps
    total: float
    largest_params: float  # parameters whose training state fits in the card's memory (an upper bound)


def memory_per_gpu(
    params: PositiveFloat, recipe_name: str, stage: Stage, gpus: PositiveInt, card_memory_bytes: PositiveFloat
) -> MemoryEstimate:
    """Bytes per GPU of each component at a ZeRO stage, and the largest model that fits the card (notebook 09).

    A component is split over the GPUs from the stage SHARDED_FROM names (optimizer state at 1,
    gradients at 2, parameters at 3), as lecture_utils.sharding's exact per-rank predictions split it.
    """
    if recipe_name not in RECIPES:
        raise ValueError(f"no recipe {recipe_name!r}; lecture_utils.accounting has {list(RECIPES)}")
    recipe = RECIPES[recipe_name]
    components = {
        name: size * params / (gpus if stage >= SHARDED_FROM.get(name, 1) else 1)
        for name, size in recipe.bytes_per_param().items()
    }
    total = per_gpu_bytes(params, gpus, stage, recipe)
    return MemoryEstimate(components, total, largest_params(card_memory_bytes, gpus, stage, recipe))


def _result(params: float, recipe: str, stage: int, gpus: int, memory_gb: float) -> tuple:
    """(title, rows) for one set of inputs."""
    est = memory_per_gpu(params, recipe, stage, gpus, memory_gb * 1e9)
    split = " + ".join(map(str, RECIPES[recipe].zero_split()))
    title = f"{count_label(params)} params, {recipe} ({split} B), {STAGES[stage]} on {gpus:,} GPUs"
    rows = [
        ResultRow(name.replace("_", " "), name.replace("_", "-"), format_bytes(n, binary=False), n)
        for name, n in est.components.items()
    ]
    share = est.total / (memory_gb * 1e9)
    verdict = f"yes, {share:.0%} of it" if share <= 1 else f"no, {share:.1f} x the card"
    rows += [
        ResultRow("total per GPU", "total", format_bytes(est.total, binary=False), est.total),
        ResultRow(f"fits in {memory_gb:g} GB?", "fits", verdict, share),
        ResultRow(
            "largest model that fits", "largest", f"{count_label(est.largest_params)} params", est.largest_params
        ),
    ]
    return title, rows


def _inputs(values: dict) -> dict:
    """What the result depends on: the card only fills in its memory."""
    return {name: values[name] for name in ("params", "recipe", "stage", "gpus", "memory_gb")}


def _describe(values: dict) -> str:
    return result_text(*_result(**_inputs(values)), note=NOTE)


def memory_calculator(
    params: PositiveFloat = 40e9,
    recipe: str = "fp32",
    stage: Stage = 3,
    gpus: PositiveInt = 8,
    card: str = "h100-sxm",
    *,
    measured: Measured | None = None,
    measured_params: PositiveInt = 1,
    measured_recipe: str = "fp32",
) -> Calculator:
    """The memory widget, starting from 40B parameters on 8 H100s, fully sharded (notebook 09).

    `measured` maps (approach, ranks) to the bytes the ZeRO accounting counts on one rank (a
    sharding_measure.RankReport's `zero_bytes`), averaged over the ranks, for a model of
    `measured_params` parameters trained with the recipe `measured_recipe`; approach is a key of
    lecture_utils.sharding.APPROACHES ('ddp', 'zero1', 'zero2', 'fsdp2', ...). The figure marks
    each at bytes / measured_params when the chosen recipe is `measured_recipe`.
    """
    measured = dict(measured or {})
    unknown = sorted(a for a, _ in measured if a not in APPROACHES)
    if unknown:
        raise ValueError(f"measured approaches {unknown} are not in {list(APPROACHES)}")
    memory_gb = number_box("GB per GPU", ACCELERATORS[card].memory_bytes / 1e9, 1, 2000)
    card_options = [(f"{acc.name} ({acc.memory_bytes / 1e9:g} GB)", key) for key, acc in ACCELERATORS.items()]
    controls = {
        "params": log_slider("parameters", params, 8, 13),
        "recipe": dropdown("recipe", [(name, name) for name in RECIPES], recipe),
        "stage": dropdown("sharding", [(f"{name} (stage {s})", s) for s, name in STAGES.items()], stage),
        "gpus": power_of_two_slider("GPUs", 0, MAX_GPUS_LOG2, gpus),
        "card": dropdown("card", card_options, card),
        "memory_gb": memory_gb,
    }

    def fill_memory(change: dict) -> None:
        if change["new"] is not None:  # None: a typed size that is no card's
            memory_gb.value = ACCELERATORS[change["new"]].memory_bytes / 1e9

    def forget_card(change: dict) -> None:
        chosen = controls["card"].value
        if chosen is not None and ACCELERATORS[chosen].memory_bytes != change["new"] * 1e9:
            controls["card"].value = None

    def update(calc: Calculator) -> None:
        v = _inputs(calc.values())
        calc.result.value = result_html(*_result(**v), v, note=NOTE)
        marks = measured if v["recipe"] == measured_recipe else {}
        fig = draw_memory(
            v["params"], v["recipe"], v["stage"], v["gpus"], v["memory_gb"] * 1e9, marks, measured_params,
            max_gpus=2**MAX_GPUS_LOG2,
        )  # fmt: skip
        calc.plot.outputs = (figure_output(fig),)

    controls["card"].observe(fill_memory, names="value")
    memory_gb.observe(forget_card, names="value")
    return build_calculator("memory", controls, update, _describe, helpers=("card",))
