"""lecture_utils.calculators: the what-if numbers against hand routes and the package's helpers, and the widgets'
observers against the pure functions."""

import base64
import html
import json
import re
import struct

import matplotlib.pyplot as plt
import pytest

from lecture_utils.accounting import RECIPES
from lecture_utils.calculators.controls import log_slider, parse_count, power_of_two_slider
from lecture_utils.calculators.layout import MAX_WIDTH_PX, missing_peak, show_calculator
from lecture_utils.calculators.memory import memory_calculator, memory_per_gpu
from lecture_utils.calculators.roofline import roofline_calculator, roofline_point
from lecture_utils.calculators.training_time import training_calculator, training_estimate
from lecture_utils.figures.calculators import draw_memory, draw_roofline_point, draw_training_time
from lecture_utils.figures.style import STORED_DPI, count_label, too_small_texts
from lecture_utils.napkin import training_days, training_flops
from lecture_utils.sharding import (
    APPROACHES,
    make_model,
    per_gpu_bytes,
    predicted_gathered_bytes,
    predicted_rank_bytes,
)


def shown(calc) -> dict[str, str]:
    """class key -> data-value of every number the widget's result shows."""
    return dict(re.findall(r'class="calc-number calc-([\w-]+)" data-value="([^"]*)"', calc.result.value))


def shown_inputs(calc) -> dict:
    return json.loads(html.unescape(re.search(r'data-inputs="([^"]*)"', calc.result.value).group(1)))


def message(calc) -> str:
    found = re.search(r'class="calc-message">([^<]*)<', calc.result.value)
    return html.unescape(found.group(1)) if found else ""


def plotted_png(calc) -> bytes:
    (output,) = calc.plot.outputs
    return base64.b64decode(output["data"]["image/png"])


# The training-time calculator (notebook 00)


def test_seventy_b_on_1024_h100s_by_hand():
    est = training_estimate(70e9, 15e12, 1024, "h100-sxm", "bf16", 0.5)
    assert est.total_flops == pytest.approx(6 * 70e9 * 15e12)
    assert est.peak_flops_per_gpu == 1979e12 / 2  # the datasheet's sparse headline, halved
    # by hand: 6.3e24 / (989.5e12 x 0.5 x 1024 x 86,400 s) = 143.9 days, notebook 00's answer
    assert est.days == pytest.approx(6.3e24 / (989.5e12 * 0.5 * 1024 * 86_400))
    assert round(est.days, 1) == 143.9
    assert est.gpu_hours == pytest.approx(est.days * 24 * 1024)


def test_training_estimate_is_the_napkin_helpers():
    est = training_estimate(13e9, 2e12, 4096, "a100-sxm-80gb", "tf32", 0.3)
    flops = training_flops(13e9, 2e12)
    assert est.total_flops == flops
    assert est.days == training_days(flops, 4096, 156e12, 0.3)  # A100 datasheet: 156 TFLOP/s dense TF32
    # a card accepts its table key or the name torch reports
    assert training_estimate(13e9, 2e12, 4096, "NVIDIA A100-SXM4-80GB", "tf32", 0.3) == est


@pytest.mark.parametrize(("card", "precision"), [("a100-sxm-80gb", "fp8"), ("t4", "bf16"), ("v100-sxm2-16gb", "tf32")])
def test_a_missing_datasheet_row_is_a_message_not_a_crash(card, precision):
    with pytest.raises(ValueError, match=f"no dense {precision} figure"):
        training_estimate(70e9, 15e12, 1024, card, precision, 0.5)
    calc = training_calculator(card=card, precision=precision)
    assert f"no dense {precision} figure" in message(calc)
    assert calc.plot.outputs == ()  # no stale figure of other inputs
    assert shown(calc) == {"flops": repr(training_flops(70e9, 15e12))}


def test_moving_training_controls_updates_the_result():
    calc = training_calculator()
    assert float(shown(calc)["days"]) == training_estimate(70e9, 15e12, 1024, "h100-sxm", "bf16", 0.5).days
    for name, value in (("gpus", 4096), ("mfu", 0.3), ("params", 13e9), ("card", "h200-sxm"), ("precision", "fp8")):
        calc.controls[name].value = value
    expected = training_estimate(13e9, 15e12, 4096, "h200-sxm", "fp8", 0.3)
    values = shown(calc)
    assert float(values["days"]) == expected.days
    assert float(values["peak"]) == 1979e12  # H200 dense fp8, the H100 SXM's compute
    assert float(values["flops"]) == training_flops(13e9, 15e12)
    assert shown_inputs(calc) == {
        "params": 13e9, "tokens": 15e12, "gpus": 4096, "card": "h200-sxm", "precision": "fp8", "mfu": 0.3
    }  # fmt: skip
    assert plotted_png(calc).startswith(b"\x89PNG")
    # and back from a missing row: the message goes, the figure returns
    calc.controls["card"].value = "a100-sxm-80gb"
    assert message(calc) and calc.plot.outputs == ()
    calc.controls["precision"].value = "bf16"
    assert not message(calc) and len(calc.plot.outputs) == 1


def test_training_figure_marks_the_chosen_cluster():
    fig = draw_training_time(70e9, 15e12, 2048, 989.5e12, 0.4)
    ax = fig.axes[0]
    (point,) = [line for line in ax.lines if line.get_marker() == "o"]
    assert point.get_xdata()[0] == 2048
    assert point.get_ydata()[0] == pytest.approx(training_days(6.3e24, 2048, 989.5e12, 0.4))
    assert "2,048" in [t.get_text() for t in ax.get_xticklabels()]
    assert not too_small_texts(fig) and fig.get_figwidth() * 100 <= MAX_WIDTH_PX


# The memory calculator (notebook 09)


def test_zero_paper_figure_one():
    # Rajbhandari et al. 2019, Fig. 1: 7.5B parameters on 64 GPUs, 2 + 2 + 12 bytes each
    gb = [memory_per_gpu(7.5e9, "bf16 + fp32 master", s, 64, 80e9).total / 1e9 for s in range(4)]
    assert [round(x, 1) for x in gb] == [120.0, 31.4, 16.6, 1.9]


def test_largest_model_on_eight_h100s():
    # notebook 00 by hand: 80 GB over 16, 8 + 8/8, 4 + 12/8 and 16/8 bytes per parameter
    largest = [memory_per_gpu(40e9, "fp32", s, 8, 80e9).largest_params for s in range(4)]
    assert largest == pytest.approx([80e9 / 16, 80e9 / 9, 80e9 / 5.5, 80e9 / 2])
    assert memory_per_gpu(40e9, "fp32", 3, 8, 80e9).total == pytest.approx(80e9)  # exactly fills the card


@pytest.mark.parametrize("recipe", list(RECIPES))
@pytest.mark.parametrize("stage", range(4))
def test_components_add_up_to_the_zero_formula(recipe, stage):
    est = memory_per_gpu(70e9, recipe, stage, 16, 80e9)
    assert set(est.components) == set(RECIPES[recipe].bytes_per_param())
    assert sum(est.components.values()) == pytest.approx(est.total)
    assert est.total == per_gpu_bytes(70e9, 16, stage, RECIPES[recipe])


@pytest.mark.parametrize("approach", list(APPROACHES))
@pytest.mark.parametrize("ranks", [2, 8])
def test_components_match_the_exact_per_rank_bytes(approach, ranks):
    # Another route: the exact shards PyTorch's engines give each rank (which notebook 09 measures),
    # averaged over the ranks, component by component. FSDP2's ZeRO-2 holds full parameters from
    # the forward to the backward: those are the parameters its stage counts.
    model = make_model()
    psi = sum(p.numel() for p in model.parameters())
    per_rank = [predicted_rank_bytes(model, approach, ranks, rank) for rank in range(ranks)]
    mean = {name: sum(r.get(name, 0) for r in per_rank) / ranks for name in per_rank[0]}
    after_forward = predicted_gathered_bytes(model, approach)[-1:]  # full parameters alive into the backward
    mean["parameters"] = max([mean["parameters"], *after_forward])
    est = memory_per_gpu(psi, "fp32", APPROACHES[approach], ranks, 80e9)
    assert est.components == pytest.approx(mean)


def test_unknown_recipe_names_the_known_ones():
    with pytest.raises(ValueError, match="fp32"):
        memory_per_gpu(1e9, "fp4", 0, 8, 80e9)


def test_moving_memory_controls_updates_the_result():
    calc = memory_calculator()
    assert float(shown(calc)["total"]) == per_gpu_bytes(40e9, 8, 3)
    calc.controls["stage"].value = 2
    calc.controls["gpus"].value = 64
    calc.controls["recipe"].value = "bf16 + fp32 master"
    calc.controls["card"].value = "a100-sxm-40gb"  # fills in its memory
    assert calc.controls["memory_gb"].value == 40
    expected = memory_per_gpu(40e9, "bf16 + fp32 master", 2, 64, 40e9)
    values = shown(calc)
    assert float(values["total"]) == expected.total
    assert float(values["largest"]) == expected.largest_params
    assert float(values["master-weights"]) == expected.components["master_weights"]
    assert float(values["fits"]) == pytest.approx(expected.total / 40e9)
    calc.controls["memory_gb"].value = 50  # a typed size that is no card's
    assert calc.controls["card"].value is None
    assert float(shown(calc)["largest"]) == memory_per_gpu(40e9, "bf16 + fp32 master", 2, 64, 50e9).largest_params
    assert plotted_png(calc).startswith(b"\x89PNG")


def test_memory_figure_marks_measurements_on_their_lines():
    measured = {("ddp", 2): 16 * 7312.0, ("zero1", 8): 9 * 7312.0, ("zero2", 2): 10 * 7312.0, ("fsdp2", 8): 2 * 7312.0}
    fig = draw_memory(40e9, "fp32", 3, 8, 80e9, measured, 7312)
    ax = fig.axes[0]
    marks = {
        (line.get_xdata()[0], line.get_ydata()[0])
        for line in ax.lines
        if line.get_marker() == "x" and len(line.get_xdata())
    }
    assert marks == {(2, 16.0), (8, 9.0), (2, 10.0), (8, 2.0)}
    for (approach, ranks), held in measured.items():  # each sits on its stage's line
        assert held / 7312 == per_gpu_bytes(1.0, ranks, APPROACHES[approach])
    assert not too_small_texts(fig)
    with pytest.raises(ValueError, match="not in"):
        memory_calculator(measured={("zero4", 8): 1.0}, measured_params=10)


# The roofline explorer (notebook 04)


@pytest.mark.parametrize(("dtype", "itemsize"), [("fp32", 4), ("bf16", 2), ("fp8 (e4m3)", 1)])
def test_square_matmul_intensity_by_hand(dtype, itemsize):
    n = 4096
    pt = roofline_point(n, n, n, "h100-sxm", dtype)
    assert pt.flops == 2 * n**3
    assert pt.intensity == pytest.approx(2 * n / (3 * itemsize))  # notebook 04: 2n^3 / (3 n^2 b)


def test_h100_bf16_is_compute_bound_until_the_ridge():
    big, one_row = (
        roofline_point(4096, 4096, 4096, "h100-sxm", "bf16"),
        roofline_point(1, 4096, 4096, "h100-sxm", "bf16"),
    )
    assert round(big.ridge, 1) == 295.4  # 989.5 TFLOP/s / 3.35 TB/s
    assert big.bound == "compute" and big.attainable_flops == 989.5e12
    assert one_row.bound == "memory"
    # a matrix-vector product reads the whole 4096 x 4096 matrix for 2 FLOPs per element: about 1 FLOP/byte
    assert one_row.intensity == pytest.approx(2 * 4096 * 4096 / ((4096 + 4096 * 4096 + 4096) * 2))
    assert one_row.attainable_flops == pytest.approx(one_row.intensity * 3.35e12)


def test_fp32_as_tf32_uses_the_tf32_row():
    fp32, tf32 = (
        roofline_point(8192, 8192, 8192, "a100-sxm-80gb", "fp32"),
        roofline_point(8192, 8192, 8192, "a100-sxm-80gb", "fp32 as TF32"),
    )
    assert (fp32.peak_flops, tf32.peak_flops) == (19.5e12, 156e12)
    assert fp32.intensity == tf32.intensity  # the same fp32 bytes in memory


def test_moving_roofline_controls_updates_the_result():
    calc = roofline_calculator()
    calc.controls["m"].value = 16
    calc.controls["n"].value = 11008
    calc.controls["dtype"].value = "fp16"
    values, expected = shown(calc), roofline_point(16, 11008, 4096, "h100-sxm", "fp16")
    assert float(values["intensity"]) == expected.intensity
    assert float(values["attainable"]) == expected.attainable_flops
    assert values["bound"] == "memory"
    calc.controls["card"].value = "t4"
    calc.controls["dtype"].value = "bf16"
    assert "no dense bf16 figure" in message(calc) and calc.plot.outputs == ()
    fig = draw_roofline_point(expected.intensity, expected.peak_flops, expected.bandwidth_bytes_per_s, "t")
    assert not too_small_texts(fig)


@pytest.mark.parametrize("m", [1, 4096])
def test_roofline_figure_puts_the_matmul_where_roofline_point_does(m):
    pt = roofline_point(m, 4096, 4096, "h100-sxm", "bf16")
    ax = draw_roofline_point(pt.intensity, pt.peak_flops, pt.bandwidth_bytes_per_s, "t").axes[0]
    (dot,) = [line for line in ax.lines if line.get_marker() == "o"]
    assert (dot.get_xdata()[0], dot.get_ydata()[0]) == pytest.approx((pt.intensity, pt.attainable_flops))
    assert f"{pt.bound}-bound" in [t.get_text() for t in ax.texts]
    assert ax.lines[1].get_xdata()[0] == pytest.approx(pt.ridge)  # the dotted ridge


# What the three share


def test_show_gives_one_output_the_widget_with_its_starting_result_as_text(monkeypatch):
    shown_bundles = []
    monkeypatch.setattr("lecture_utils.calculators.layout.display", lambda obj, raw: shown_bundles.append(obj))
    calc = training_calculator()
    show_calculator(calc)
    show_calculator(memory_calculator(measured={("ddp", 2): 16 * 7312.0}, measured_params=7312))
    show_calculator(roofline_calculator(card="t4", dtype="bf16"))
    training, memory, roofline = (bundle["text/plain"] for bundle in shown_bundles)
    assert "training time                  143.9 days" in training
    assert "largest model that fits  40B params" in memory
    assert "No roofline: the T4 datasheet gives no dense bf16 figure (it lists " in roofline
    assert all(b["application/vnd.jupyter.widget-view+json"]["model_id"] for b in shown_bundles)
    # the text is the starting result, whatever the widget shows later
    calc.controls["gpus"].value = 2048
    assert calc.describe(calc.values()) != training == calc.describe({**calc.values(), "gpus": 1024})


def test_figures_are_stored_sharp_and_shown_at_display_size():
    png = plotted_png(training_calculator())
    width, height = struct.unpack(">II", png[16:24])
    output = training_calculator().plot.outputs[0]
    shown_width = output["metadata"]["image/png"]["width"]
    # Twice the pixels it is shown at; a tight bounding box can make the stored width odd.
    assert 0 <= width - shown_width * STORED_DPI // 100 < STORED_DPI // 100
    assert shown_width <= MAX_WIDTH_PX and height > 0


def test_updates_leave_no_pyplot_figures():
    before = plt.get_fignums()
    calc = memory_calculator()
    calc.controls["gpus"].value = 16
    assert plt.get_fignums() == before


def test_helpers():
    assert [count_label(x) for x in (70e9, 15e12, 350e6, 7312, 12)] == ["70B", "15T", "350M", "7.31K", "12"]
    typed = ("70B", "1.5 T", "350m", "7K", "7e9", "70,000,000,000", "12")
    assert [parse_count(t) for t in typed] == [70e9, 1.5e12, 350e6, 7e3, 7e9, 70e9, 12.0]
    for bad in ("", "B", "seventy", "-5B", "inf"):
        with pytest.raises(ValueError, match="count"):
            parse_count(bad)
    assert missing_peak("h100-sxm", "bf16") == ""
    assert missing_peak("a100-sxm-80gb", "fp8").startswith("the A100 SXM 80GB datasheet gives no dense fp8 figure")
    assert "[" not in missing_peak("a100-sxm-80gb", "fp8")  # a sentence, not a Python list
    with pytest.raises(ValueError, match="not a power of two"):
        power_of_two_slider("GPUs", 0, 12, 1000)


def test_a_count_slider_reads_and_takes_counts_as_people_write_them():
    slider = log_slider("parameters", 70e9, 8, 13)
    assert (slider.value, slider.readout.value) == (70e9, "70B")
    slider.slider.value = 13e9  # dragged
    assert (slider.value, slider.readout.value) == (13e9, "13B")
    slider.readout.value = "405B"  # typed
    assert (slider.value, slider.slider.value, slider.readout.value) == (405e9, 405e9, "405B")
    slider.readout.value = "4.05e11"  # the same count written otherwise: normalised, the value kept
    assert (slider.value, slider.readout.value) == (405e9, "405B")
    slider.readout.value = "lots"  # no count: the readout comes back
    assert (slider.value, slider.readout.value) == (405e9, "405B")
    slider.readout.value = "1e20"  # beyond the slider: its end
    assert (slider.value, slider.readout.value) == (1e13, "10T")
    slider.value = 7e9  # from Python
    assert (slider.slider.value, slider.readout.value) == (7e9, "7B")
