import os
import re
import shutil
import subprocess
import time

import pytest
import torch

import lecture_utils.peaks as peaks
from lecture_utils.cpu import (
    BOOST_OVER_REPORTED,
    clock_hz,
    flops_per_cycle,
    fp32_flops_per_cycle,
    implied_clock_hz,
    parse_cpuinfo,
    read_cpuinfo,
)

AVX2 = "fpu sse sse2 avx fma avx2"
AVX512 = f"{AVX2} avx512f avx512dq avx512bw avx512vl"


def x86(vendor: str, family: int, model: int, flags: str, *, cores: int = 2, threads_per_core: int = 1) -> str:
    """A /proc/cpuinfo as Linux writes it on x86: one block per logical CPU."""
    blocks = []
    for i in range(cores * threads_per_core):
        blocks.append(
            f"processor\t: {i}\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\n"
            f"cpu MHz\t\t: 2596.144\nphysical id\t: 0\ncore id\t\t: {i % cores}\nflags\t\t: {flags}\n"
        )
    return "\n".join(blocks)


ARM = "".join(
    f"processor\t: {i}\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes crc32\n"
    "CPU implementer\t: 0x41\nCPU part\t: 0xd0c\n\n"
    for i in range(4)
)

# (cpuinfo text, fp32 FLOP/cycle of one core, a word the label must contain): from each family's
# FMA pipes, 2 FLOPs per lane per pipe.
FAMILIES = {
    "zen4": (x86("AuthenticAMD", 25, 17, f"{AVX512} avx512_bf16"), 32, "256-bit"),  # this machine
    "zen3": (x86("AuthenticAMD", 25, 1, AVX2), 32, "Zen 3"),
    "zen2": (x86("AuthenticAMD", 23, 49, AVX2), 32, "Zen 2"),
    "zen1": (x86("AuthenticAMD", 23, 1, AVX2), 16, "128-bit"),
    "zen5": (x86("AuthenticAMD", 26, 68, f"{AVX512} avx512_bf16"), 64, "assumed"),
    "xeon-avx512": (x86("GenuineIntel", 6, 143, f"{AVX512} avx512_bf16 amx_bf16 amx_tile"), 64, "assumed"),
    "intel-avx2": (x86("GenuineIntel", 6, 158, AVX2), 32, "AVX2"),
    "arm": (ARM, 16, "Neoverse N1"),
    "arm-unnamed": (ARM.replace("0xd0c", "0x000").replace("0x41", "0x61"), 16, "NEON"),
}


@pytest.mark.parametrize("name", FAMILIES)
def test_fp32_flops_per_cycle_follows_the_family_pipes(name):
    text, expected, word = FAMILIES[name]
    per_cycle, label = fp32_flops_per_cycle(parse_cpuinfo(text))
    assert per_cycle == expected and word in label
    assert flops_per_cycle(torch.float64, parse_cpuinfo(text))[0] == expected // 2


def test_zen4_decodes_avx512_but_is_counted_at_its_256_bit_pipes():
    info = parse_cpuinfo(FAMILIES["zen4"][0])
    assert (info.vendor, info.family, info.model, info.cores) == ("AuthenticAMD", 25, 17, 2)
    assert "avx512f" in info.flags and info.mhz == pytest.approx(2596.144)
    assert flops_per_cycle(torch.float32, info)[0] == 32  # 8 fp32 lanes x 2 pipes x 2, not 64
    assert flops_per_cycle(torch.bfloat16, info)[0] == 64  # AVX512_BF16: 2 multiply-adds per lane


def test_bf16_is_estimated_only_with_avx512_bf16_and_never_past_amx():
    with pytest.raises(ValueError, match="no AVX512_BF16"):
        flops_per_cycle(torch.bfloat16, parse_cpuinfo(FAMILIES["intel-avx2"][0]))
    with pytest.raises(ValueError, match="AMX"):
        flops_per_cycle(torch.bfloat16, parse_cpuinfo(FAMILIES["xeon-avx512"][0]))
    with pytest.raises(ValueError, match="only float32, float64 and bfloat16"):
        flops_per_cycle(torch.float16, parse_cpuinfo(FAMILIES["zen4"][0]))


def test_hyperthreads_are_not_counted_as_cores():
    info = parse_cpuinfo(x86("GenuineIntel", 6, 158, AVX2, cores=4, threads_per_core=2))
    assert info.cores == 4
    assert parse_cpuinfo(ARM).cores == 4 and parse_cpuinfo(ARM).arm and parse_cpuinfo(ARM).mhz is None


def test_a_cpu_without_fma_or_vectors_is_refused():
    with pytest.raises(ValueError, match="report achieved FLOP/s only"):
        fp32_flops_per_cycle(parse_cpuinfo(x86("GenuineIntel", 6, 42, "fpu sse sse2 avx")))


def test_the_clock_is_cpufreq_max_else_the_reported_clock_with_the_assumed_boost():
    info = parse_cpuinfo(FAMILIES["zen4"][0])
    assert clock_hz(info, 3_700_000)[0] == pytest.approx(3.7e9)  # cpufreq gives kHz
    clock, note = clock_hz(info, None)
    assert clock == pytest.approx(2596.144e6 * BOOST_OVER_REPORTED) and "assumed" in note
    with pytest.raises(ValueError, match="clock"):
        clock_hz(parse_cpuinfo(ARM), None)


@pytest.mark.parametrize(("threads", "cores"), [(1, 1), (2, 2), (8, 2)])
def test_cpu_peak_estimate_is_cores_x_clock_x_flops_per_cycle(monkeypatch, threads, cores):
    monkeypatch.setattr(peaks, "read_cpuinfo", lambda: parse_cpuinfo(FAMILIES["zen4"][0]))
    monkeypatch.setattr(peaks, "read_max_khz", lambda: 3_700_000.0)
    fp32 = peaks.cpu_peak_estimate(torch.float32, threads=threads)
    assert fp32.flops_per_s == pytest.approx(cores * 3.7e9 * 32) and fp32.estimate
    assert fp32.source.startswith(f"estimate: {cores} core") and "256-bit" in fp32.source
    bf16 = peaks.cpu_peak_estimate(torch.bfloat16, threads=threads)
    assert bf16.flops_per_s == pytest.approx(2 * fp32.flops_per_s)


def test_this_machine_is_read_like_lscpu_reads_it():
    try:
        info = read_cpuinfo()
    except ValueError as error:  # no /proc/cpuinfo: not Linux
        pytest.skip(str(error))
    assert 1 <= info.cores <= os.cpu_count()
    lscpu_path = shutil.which("lscpu")
    if lscpu_path is None or info.arm:
        return
    lscpu = subprocess.run([lscpu_path], capture_output=True, text=True, check=True, env={"LC_ALL": "C"}).stdout
    fields = dict(re.findall(r"^([^:\n]+):\s*(.*)$", lscpu, re.MULTILINE))
    assert int(fields["CPU family"]) == info.family and int(fields["Model"]) == info.model
    physical = int(fields["Core(s) per socket"]) * int(fields["Socket(s)"])
    assert info.cores == physical


def test_a_measured_matmul_stays_below_the_estimate_and_needs_a_real_clock():
    try:
        peak = peaks.cpu_peak_estimate(torch.float32, threads=1)
    except ValueError as error:  # a CPU whose pipes or clock cannot be read
        pytest.skip(str(error))
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a, b = torch.randn(512, 512), torch.randn(512, 512)
        out = torch.empty(512, 512)
        torch.matmul(a, b, out=out)
        best = min(_seconds(lambda: torch.matmul(a, b, out=out)) for _ in range(5))
    finally:
        torch.set_num_threads(previous)
    achieved = 2 * 512**3 / best
    assert achieved < peak.flops_per_s
    assert 0.1e9 < implied_clock_hz(achieved, torch.float32, 1, read_cpuinfo()) < 6.5e9  # no core runs faster


def _seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
