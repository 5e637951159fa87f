import pytest
import torch

from lecture_utils.hardware import (
    ACCELERATORS,
    PRECISIONS,
    UnknownAcceleratorError,
    cpu_peak_estimate,
    lookup_accelerator,
    matmul_precision,
    peak_flops,
)


@pytest.mark.parametrize(
    "name, expected",
    [
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 SXM5 80GB", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA A100-SXM4-40GB", "A100 SXM 40GB"),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB"),
        ("NVIDIA B200", "B200"),
        ("h100-sxm", "H100 SXM"),
        ("  H200-SXM ", "H200 SXM"),
    ],
)
def test_lookup_by_device_name(name, expected):
    assert lookup_accelerator(name).name == expected


@pytest.mark.parametrize("name", ["NVIDIA H100 NVL", "NVIDIA A100 80GB PCIe", "Tesla T4", "NVIDIA H200 NVL", "NVIDIA GH200 480GB", "NVIDIA GB200", ""])
def test_unknown_or_different_variants_are_rejected(name):
    with pytest.raises(UnknownAcceleratorError, match="no datasheet figures"):
        lookup_accelerator(name)


def test_lookup_rejects_non_strings():
    with pytest.raises(TypeError):
        lookup_accelerator(100)


def test_datasheet_figures_from_the_syllabus():
    h100 = ACCELERATORS["h100-sxm"]
    assert h100.peak("bf16") == pytest.approx(989.5e12)
    assert h100.peak("bf16", sparse=True) == pytest.approx(1979e12)
    assert h100.peak("fp32") == pytest.approx(67e12)
    assert h100.peak("tf32") == pytest.approx(494.7e12)
    assert ACCELERATORS["h100-pcie"].peak("bf16") == pytest.approx(756.5e12)
    assert ACCELERATORS["a100-sxm-80gb"].peak("bf16") == pytest.approx(312e12)
    assert ACCELERATORS["h200-sxm"].bandwidth_bytes_per_s == pytest.approx(4.8e12)
    assert ACCELERATORS["b200"].peak("fp8") == pytest.approx(4500e12)


@pytest.mark.parametrize("accelerator", ACCELERATORS.values(), ids=lambda a: a.name)
def test_sparse_is_twice_dense_and_never_the_peak(accelerator):
    for precision, sparse in accelerator.sparse.items():
        dense = accelerator.peak(precision)
        assert sparse == pytest.approx(2 * dense, rel=0.001)
        assert dense < sparse
    assert set(accelerator.dense) <= set(PRECISIONS)


def test_missing_figures_and_unknown_precisions_are_errors():
    with pytest.raises(ValueError, match="no dense fp8"):
        ACCELERATORS["a100-sxm-80gb"].peak("fp8")
    with pytest.raises(ValueError, match="unknown precision"):
        ACCELERATORS["h100-sxm"].peak("int4")


def test_matmul_precision_follows_the_float32_setting():
    assert matmul_precision(torch.float32, "highest") == "fp32"
    assert matmul_precision(torch.float32, "high") == "tf32"
    assert matmul_precision(torch.float32, "medium") == "tf32"
    assert matmul_precision(torch.bfloat16) == "bf16"
    assert matmul_precision(torch.float8_e4m3fn) == "fp8"
    previous = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")
        assert matmul_precision(torch.float32) == "tf32"
    finally:
        torch.set_float32_matmul_precision(previous)
    with pytest.raises(ValueError, match="no peak is defined"):
        matmul_precision(torch.int32)
    with pytest.raises(ValueError, match="unknown float32 matmul precision"):
        matmul_precision(torch.float32, "fastest")


def test_cpu_peak_is_a_labelled_estimate():
    try:
        peak = cpu_peak_estimate(torch.float32, threads=2)
    except ValueError as error:  # a CPU whose vector width or clock cannot be read
        pytest.skip(str(error))
    assert peak.estimate
    assert peak.source.startswith("estimate:")
    # 2 threads at a plausible clock (0.5-6 GHz) and 8-64 fp32 FLOP/cycle.
    assert 2 * 0.5e9 * 8 <= peak.flops_per_s <= 2 * 6e9 * 64
    fp64 = cpu_peak_estimate(torch.float64, threads=2)
    assert fp64.flops_per_s == pytest.approx(peak.flops_per_s / 2)
    assert peak_flops("cpu").estimate


def test_cpu_peak_rejects_bad_input():
    with pytest.raises(ValueError, match="only float32 and float64"):
        cpu_peak_estimate(torch.bfloat16)
    with pytest.raises(ValueError, match="threads must be positive"):
        cpu_peak_estimate(torch.float32, threads=0)
    with pytest.raises(ValueError, match="device type"):
        peak_flops("meta")
