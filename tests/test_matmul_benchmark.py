import json
from dataclasses import replace

import matplotlib.pyplot as plt
import pytest
import torch

import lecture_utils.matmul_benchmark as bench
import lecture_utils.peaks as peaks
from lecture_utils.cpu import parse_cpuinfo
from lecture_utils.figures.flops import plot_throughput
from lecture_utils.matmul_benchmark import (
    benchmark_matmul,
    cases_for,
    copy_bandwidth,
    float32_matmul_mode,
    format_results,
    run_benchmark,
)
from lecture_utils.matmul_reference import describe_reference, load_reference, main, reference_record
from lecture_utils.peaks import Peak, cpu_peak_estimate


def test_fp32_matmul_on_cpu_is_measured_against_a_labelled_estimate():
    result = benchmark_matmul(64, torch.float32, "cpu", warmup=1, trials=3)
    assert result.flops == 2 * 64**3 and result.precision == "fp32" and result.dtype == "float32"
    assert result.seconds > 0
    if result.peak_flops_per_s is None:  # only when this CPU beats its own estimate
        assert "beats the estimate" in result.peak_source and result.mfu is None
    else:
        assert result.peak_estimate and result.peak_source.startswith("estimate:")
        assert 0 < result.mfu <= 1
        assert "est." in format_results([result]) and f"~{result.mfu:.3f}" in format_results([result])


def test_bf16_on_a_cpu_without_avx512_bf16_has_no_peak_rather_than_a_fake_one(monkeypatch):
    avx2 = parse_cpuinfo("vendor_id : GenuineIntel\ncpu family : 6\nmodel : 158\ncpu MHz : 3000\nflags : avx fma avx2")
    monkeypatch.setattr(peaks, "read_cpuinfo", lambda: avx2)
    result = benchmark_matmul(32, torch.bfloat16, "cpu", warmup=1, trials=2)
    assert result.peak_flops_per_s is None and result.mfu is None and not result.peak_estimate
    assert "no AVX512_BF16" in result.peak_source


def test_an_estimate_the_cpu_beats_is_dropped_not_reported_as_mfu_above_1(monkeypatch):
    monkeypatch.setattr(bench, "peak_flops", lambda device, dtype: Peak(1e3, "estimate: far too low", True))
    result = benchmark_matmul(32, torch.float32, "cpu", warmup=1, trials=2)
    assert result.mfu is None and "beats the estimate (estimate: far too low)" in result.peak_source


def test_a_datasheet_peak_the_measurement_beats_is_dropped_with_the_reason(monkeypatch):
    fake = Peak(1e3, "H100 SXM dense fp32, NVIDIA H100 Tensor Core GPU datasheet", False)
    monkeypatch.setattr(bench, "peak_flops", lambda device, dtype: fake)
    result = benchmark_matmul(32, torch.float32, "cpu", warmup=1, trials=2)
    assert result.peak_flops_per_s is None and result.mfu is None and not result.peak_estimate
    assert result.peak_source.endswith(
        "beats the H100 SXM dense fp32, NVIDIA H100 Tensor Core GPU datasheet (1000): wrong card or row?"
    )
    assert "none*" in format_results([result])  # the table shows it instead of raising on MFU > 1


def test_a_datasheet_peak_the_measurement_stays_under_is_kept(monkeypatch):
    fake = Peak(1e18, "Exa card dense fp32, made-up datasheet", False)
    monkeypatch.setattr(bench, "peak_flops", lambda device, dtype: fake)
    result = benchmark_matmul(32, torch.float32, "cpu", warmup=1, trials=2)
    assert result.peak_flops_per_s == 1e18 and result.peak_source == fake.source and 0 < result.mfu < 1e-3


def test_a_result_above_a_datasheet_peak_is_an_error(h100_bf16):
    assert h100_bf16.mfu == pytest.approx(0.8034, abs=1e-4)
    with pytest.raises(ValueError, match=r"MFU 1\.61 > 1"):
        _ = replace(h100_bf16, seconds=h100_bf16.seconds / 2).mfu


def test_the_float32_matmul_mode_is_restored_even_after_an_error():
    previous = torch.get_float32_matmul_precision()
    with pytest.raises(ValueError, match=r"TF32 .* CUDA tensor-core mode only"):
        benchmark_matmul(16, torch.float32, "cpu", float32_mode="high")
    assert torch.get_float32_matmul_precision() == previous
    with float32_matmul_mode("high"):
        assert torch.get_float32_matmul_precision() == "high"
    assert torch.get_float32_matmul_precision() == previous


def test_only_float_dtypes_with_a_datasheet_row_are_benchmarked():
    with pytest.raises(ValueError, match=r"cannot benchmark dtype torch\.int32"):
        benchmark_matmul(8, torch.int32, "cpu")


def test_run_benchmark_covers_cases_and_sizes():
    assert cases_for("cpu") == ["fp32", "bf16"] and "tf32" in cases_for("cuda")
    results = run_benchmark("cpu", [16, 32], warmup=1, trials=2)
    assert [(r.precision, r.n) for r in results] == [("fp32", 16), ("fp32", 32), ("bf16", 16), ("bf16", 32)]


def test_run_benchmark_runs_on_the_threads_asked_for_and_restores_them():
    previous = torch.get_num_threads()
    (result,) = run_benchmark("cpu", [16], ["fp32"], warmup=0, trials=1, num_threads=1)
    assert torch.get_num_threads() == previous
    if result.peak_flops_per_s is not None:  # the CPU estimate counts the threads in effect during the run
        assert result.peak_flops_per_s == cpu_peak_estimate(torch.float32, threads=1).flops_per_s


def test_record_round_trips_and_tampering_is_caught(tmp_path, h100_bf16):
    results = [h100_bf16, replace(h100_bf16, peak_flops_per_s=None, peak_source="no peak", n=4096)]
    record = reference_record(results, "cpu", warmup=10, trials=50, min_trial_s=0.05)
    assert {"device", "torch", "date", "warmup", "trials", "min_trial_s"} <= set(record)
    path = tmp_path / "ref.json"
    path.write_text(json.dumps(record))
    meta, loaded = load_reference(path)
    assert loaded == results and meta["trials"] == 50 and "results" not in meta
    record["results"][0]["mfu"] = 0.95
    path.write_text(json.dumps(record))
    with pytest.raises(ValueError, match="does not follow"):
        load_reference(path)
    del record["results"][0]["seconds"]
    path.write_text(json.dumps(record))
    with pytest.raises(ValueError, match="lacks \\['seconds'\\]"):
        load_reference(path)
    path.write_text(json.dumps({"results": []}))
    with pytest.raises(
        ValueError, match="missing \\['cuda', 'date', 'device', 'min_trial_s', 'torch', 'trials', 'warmup'\\]"
    ):
        load_reference(path)


def test_format_results_shows_every_row_and_peak_source(h100_bf16):
    table = format_results([h100_bf16, replace(h100_bf16, peak_flops_per_s=None, peak_source="no peak known")])
    assert "795.0 TFLOP/s" in table and "989.5 TFLOP/s*" in table and " 0.803" in table
    assert "est." not in table and "~" not in table  # a datasheet peak is not an estimate
    assert "* H100 SXM dense bf16" in table and "** no peak known" in table
    source = "estimate: 2 cores x 4.15 GHz x 32 FLOP/cycle (AMD Zen 4: AVX-512 on 2 x 256-bit FMA pipes; boost assumed)"
    long_source = format_results([replace(h100_bf16, peak_source=source)])
    assert max(len(line) for line in long_source.splitlines()) <= 90  # legible on a projector
    assert " ".join(long_source.split()).endswith(f"* {source}")  # wrapped, not cut


def test_a_recorded_run_is_described_with_its_machine_and_settings(tmp_path, h100_bf16):
    path = tmp_path / "ref.json"
    record = reference_record([h100_bf16], "cpu", warmup=10, trials=50, min_trial_s=0.05)
    path.write_text(json.dumps({**record, "device": "NVIDIA H100 80GB HBM3", "cuda": "12.8"}))
    lines = describe_reference(path).splitlines()
    assert "another machine" in lines[0] and "NVIDIA H100 80GB HBM3" in lines[0] and "CUDA 12.8" in lines[0]
    assert [int(w) for w in lines[1].split() if w.isdigit()] == [10, 50] and "0.05 s" in lines[1]
    assert "\n".join(lines[2:]) == format_results([h100_bf16])


def test_command_line_writes_a_loadable_record(tmp_path, capsys):
    out = tmp_path / "sub" / "ref.json"
    args = ["--out", str(out), "--sizes", "16", "32", "--warmup", "1", "--trials", "2", "--min-trial-s", "0.001"]
    assert main(args) == 0
    meta, results = load_reference(out)
    assert meta["device"] == "cpu" and meta["torch"] == torch.__version__
    assert sorted({r.n for r in results}) == [16, 32] and {r.precision for r in results} == {"fp32", "bf16"}
    assert "wrote" in capsys.readouterr().out
    assert describe_reference(out).splitlines()[0].endswith(meta["date"])


def test_copy_bandwidth_is_positive():
    assert copy_bandwidth("cpu", 1 << 16, trials=3) > 0


def test_plots_draw_measurements_and_peaks(h100_bf16):
    results = [replace(h100_bf16, n=n, seconds=h100_bf16.seconds * (8192 / n) ** 2) for n in (2048, 4096, 8192)]
    fig = plot_throughput(results, "test")
    (ax,) = fig.axes
    assert len(ax.lines) == 2 and ax.lines[1].get_ydata()[0] == 989.5e12
    plt.close("all")
