"""The training-time calculator of notebook 00: parameters, tokens, GPUs, card, dtype, MFU -> FLOPs and days.

The numbers come from lecture_utils.napkin (6ND, FLOPs per cluster-day, days) and the dense
datasheet peaks of lecture_utils.hardware, the functions notebook 00's cells call; its figure is
lecture_utils.figures.calculators.draw_training_time.
"""

from dataclasses import dataclass

from lecture_utils.calculators.controls import dropdown, fraction_slider, log_slider, power_of_two_slider
from lecture_utils.calculators.layout import (
    Calculator,
    ResultRow,
    build_calculator,
    missing_peak,
    refresh,
    result_text,
)
from lecture_utils.checks import Fraction, PositiveFloat, PositiveInt
from lecture_utils.figures.calculators import draw_training_time, figure_output
from lecture_utils.figures.style import count_label
from lecture_utils.hardware import ACCELERATORS, Precision, lookup_accelerator
from lecture_utils.napkin import cluster_flops_per_day, training_days, training_flops

# The datasheet rows a training run's matmuls run in (fp64 trains no language model).
TRAINING_PRECISIONS: tuple[Precision, ...] = ("bf16", "fp16", "fp8", "tf32", "fp32")
MAX_GPUS_LOG2 = 16  # the slider's range: 1 to 65,536 GPUs


@dataclass(frozen=True)
class TrainingEstimate:
    """Compute and time of one training run on one cluster (notebook 00)."""

    total_flops: float  # 6 N D
    peak_flops_per_gpu: float  # the card's dense datasheet peak in the chosen precision
    flops_per_day: float  # useful FLOPs the whole cluster delivers in a day at the MFU
    days: float
    gpu_hours: float


def training_estimate(
    params: PositiveFloat,
    tokens: PositiveFloat,
    gpus: PositiveInt,
    card: str,
    precision: Precision,
    mfu: Fraction,
) -> TrainingEstimate:
    """FLOPs and days to train `params` on `tokens` with `gpus` cards at an MFU (notebook 00).

    `card` is a lecture_utils.hardware table key ('h100-sxm') or a GPU name. Raises ValueError when
    the card's datasheet has no dense figure for `precision` (no fp8 on an A100, no bf16 on a T4).
    """
    peak = lookup_accelerator(card).peak(precision)
    flops = training_flops(params, tokens)
    days = training_days(flops, gpus, peak, mfu)
    return TrainingEstimate(flops, peak, cluster_flops_per_day(gpus, peak, mfu), days, days * 24 * gpus)


def _result(params: float, tokens: float, gpus: int, card: str, precision: str, mfu: float) -> tuple:
    """(title, rows, message) for one set of inputs; an unavailable peak becomes the message."""
    name = ACCELERATORS[card].name
    title = f"{count_label(params)} params x {count_label(tokens)} tokens, {gpus:,} {name}, {precision}, MFU {mfu:.2f}"
    flops = training_flops(params, tokens)
    rows = [ResultRow("training compute, 6ND", "flops", f"{flops:.3g} FLOPs", flops)]
    missing = missing_peak(card, precision)
    if missing:
        return title, rows, f"No estimate: {missing}."
    est = training_estimate(params, tokens, gpus, card, precision, mfu)
    rows += [
        ResultRow(f"dense {precision} peak, one GPU", "peak", f"{est.peak_flops_per_gpu / 1e12:,.1f} TFLOP/s",
              est.peak_flops_per_gpu),
        ResultRow("useful FLOPs per day, cluster", "per-day", f"{est.flops_per_day:.3g}", est.flops_per_day),
        ResultRow("training time", "days", f"{est.days:,.1f} days", est.days),
        ResultRow("GPU-hours", "gpu-hours", count_label(est.gpu_hours), est.gpu_hours),
    ]  # fmt: skip
    return title, rows, ""


def _draw(v: dict) -> dict:
    """Days against GPU count and MFU, for the controls' values `v`."""
    peak = lookup_accelerator(v["card"]).peak(v["precision"])
    fig = draw_training_time(v["params"], v["tokens"], v["gpus"], peak, v["mfu"], max_gpus=2**MAX_GPUS_LOG2)
    return figure_output(fig)


def _update(calc: Calculator) -> None:
    refresh(calc, _result, _draw)


def _describe(v: dict) -> str:
    return result_text(*_result(**v))


def training_calculator(
    params: PositiveFloat = 70e9,
    tokens: PositiveFloat = 15e12,
    gpus: PositiveInt = 1024,
    card: str = "h100-sxm",
    precision: Precision = "bf16",
    mfu: Fraction = 0.5,
) -> Calculator:
    """The training-time widget, starting from notebook 00's question: 70B x 15T on 1024 H100s (notebook 00)."""
    controls = {
        "params": log_slider("parameters", params, 8, 13),
        "tokens": log_slider("tokens", tokens, 9, 14),
        "gpus": power_of_two_slider("GPUs", 0, MAX_GPUS_LOG2, gpus),
        "card": dropdown("card", [(acc.name, key) for key, acc in ACCELERATORS.items()], card),
        "precision": dropdown("dtype (peak row)", [(p, p) for p in TRAINING_PRECISIONS], precision),
        "mfu": fraction_slider("MFU", mfu),
    }
    return build_calculator("training", controls, _update, _describe)
