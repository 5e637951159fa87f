"""Checks whose truth depends on the machine: each a function of (measurement, machine facts) (notebook 04).

A measured lesson is checked on the machine at hand, and students have many (tests/machine_table.py
lists them). Each function here states the model it checks and returns a `Check`: asserted where
that model predicts the outcome on every machine of its kind, printed with its reason where it
cannot (a peak that is a guess, a GeForce card that may beat its row, a slice of a card). A
notebook prints the check and asserts `check.ok`, which fails only for an asserted check that
does not hold.
"""

from dataclasses import dataclass

import torch

from lecture_utils.checks import NonNegativeFloat, PositiveFloat, PositiveInt
from lecture_utils.cpu import CpuInfo, clock_hz, flops_per_cycle, read_cpuinfo, read_max_khz
from lecture_utils.hardware import Accelerator
from lecture_utils.matmul_benchmark import MatmulResult

# The fastest clock a shipping x86 core reaches: Intel Core i9-14900KS, max turbo 6.2 GHz (Intel
# ARK). AMD's fastest, the Ryzen 9 9950X, boosts to 5.7 GHz (AMD's product page).
MAX_CORE_CLOCK_HZ = 6.2e9


@dataclass(frozen=True)
class Check:
    """One machine-dependent check: whether it holds, whether it is asserted here, and why (notebook 04)."""

    holds: bool
    asserted: bool
    text: str

    @property
    def ok(self) -> bool:
        """False only for an asserted check that failed: what a notebook asserts."""
        return self.holds or not self.asserted

    def __str__(self) -> str:
        verdict = "holds" if self.holds else "does not hold"
        return f"{self.text} [{verdict}; {'checked' if self.asserted else 'printed, not checked'}]"


@dataclass(frozen=True)
class CpuFacts:
    """What the OS tells about a CPU: /proc/cpuinfo (None on macOS), cpufreq's max clock, the BLAS (notebook 04)."""

    info: CpuInfo | None
    max_khz: float | None
    mkl: bool  # MKL keeps to torch's thread count; Accelerate or a pthreads OpenBLAS may not


def this_cpu() -> CpuFacts:
    """This machine's CpuFacts: its /proc/cpuinfo (None on macOS), cpufreq's max clock, its BLAS (notebook 04)."""
    try:
        info = read_cpuinfo()
    except ValueError:  # macOS, Windows: no /proc/cpuinfo
        info = None
    return CpuFacts(info, read_max_khz(), torch.backends.mkl.is_available())


def cpu_estimate_check(achieved: PositiveFloat, dtype: torch.dtype, threads: PositiveInt, facts: CpuFacts) -> Check:
    """The measured FLOP/s beside the CPU's estimated peak, never asserted against it (notebook 04).

    The estimate is cores x clock x FLOP/cycle, and the clock is a guess: without cpufreq (WSL2,
    Docker, most VMs) the reported base clock times an assumed boost, and even cpufreq's max is not
    the boost on AMD laptops under acpi-cpufreq (it shows the base P-state) nor on Intel's Turbo
    Boost Max cores (they run above cpu0's max). So the MFU against it is labelled a guess.
    """
    if facts.info is None:
        return Check(True, False, "no estimate on macOS (no /proc/cpuinfo): achieved FLOP/s only")
    try:
        per_cycle, _ = flops_per_cycle(dtype, facts.info)
        clock, clock_note = clock_hz(facts.info, facts.max_khz)
    except ValueError as error:  # pipes or clock unreadable, or a dtype with no estimate
        return Check(True, False, str(error) if str(error).startswith("no ") else f"no estimate: {error}")
    cores = min(threads, facts.info.cores)
    estimate = cores * clock * per_cycle
    text = (
        f"{achieved / 1e9:.1f} GFLOP/s measured; estimate {estimate / 1e9:.1f} GFLOP/s "
        f"({cores} x {clock / 1e9:.2f} GHz x {per_cycle}; clock: {clock_note}), "
        f"MFU against it ~{achieved / estimate:.2f}, a guess"
    )
    if achieved > estimate:  # what a low guess looks like: not a fault of the measurement
        text += "; beaten, so the clock assumed is below this core's"
    return Check(True, False, text)


def implied_clock_check(achieved: PositiveFloat, dtype: torch.dtype, threads: PositiveInt, facts: CpuFacts) -> Check:
    """The clock `threads` cores must run at to do `achieved` FLOP/s is one a core can reach (notebook 04).

    Model: FLOP/s <= cores x clock x FLOP/cycle. Where the FLOP/cycle assumed is at least the
    core's (every x86 family lecture_utils.cpu knows, and the Arm parts it names), the implied clock
    is at most the real one, so above MAX_CORE_CLOCK_HZ means a FLOP count or a core count is wrong.
    Asserted there, under a BLAS that keeps to torch's threads; printed elsewhere.
    """
    if facts.info is None:
        return Check(True, False, "no /proc/cpuinfo (macOS): FLOP/cycle unknown, no implied clock")
    try:
        per_cycle, pipes = flops_per_cycle(dtype, facts.info)
    except ValueError as error:
        return Check(True, False, f"no implied clock ({error})")
    needed = achieved / (threads * per_cycle)
    floor = "assumed" not in pipes or not facts.info.arm  # an Arm part not named may have more pipes
    text = (
        f"{achieved / 1e9:.1f} GFLOP/s on {threads} core(s) at {per_cycle} FLOP/cycle needs "
        f">= {needed / 1e9:.2f} GHz; no core runs above {MAX_CORE_CLOCK_HZ / 1e9:.1f} GHz"
    )
    return Check(needed <= MAX_CORE_CLOCK_HZ, floor and facts.mkl, text)


def one_core_check(busy_cores: NonNegativeFloat, threads: PositiveInt, mkl: bool) -> Check:
    """CPU time over wall time during a run is at most its threads, plus a margin for the timer (notebook 04)."""
    text = f"CPU time / wall time: {busy_cores:.2f} cores busy on {threads} thread(s)"
    if not mkl:
        text += " (this build's matmul library may choose its own threads)"
    return Check(busy_cores < threads + 0.3, mkl, text)


def datasheet_peak_check(achieved: PositiveFloat, peak: PositiveFloat, beatable: bool, source: str) -> Check:
    """A GPU's measured FLOP/s is at most its datasheet row, where that row is the card's ceiling (notebook 04).

    A data-centre row is computed at the maximum boost clock NVIDIA gives for that kind of math (the
    H100 SXM: 1,830 MHz on tensor cores, 1,980 MHz otherwise; H100 whitepaper, Table 3), so no run
    beats it. A GeForce card runs above the spec boost clock its row assumes (GPU Boost): printed.
    """
    text = f"{achieved / 1e12:.1f} TFLOP/s measured against {peak / 1e12:.1f} TFLOP/s ({source})"
    if beatable:
        text += "; a GeForce card may run above the spec boost clock this row assumes"
    return Check(achieved <= peak, not beatable, text)


def matmul_peak_check(result: MatmulResult, card: Accelerator | None) -> Check:
    """datasheet_peak_check for a benchmarked GPU matmul against its card's row (notebook 04).

    A card not in the table, or a MIG slice (`card` None), has no row: nothing to check.
    """
    if card is None:
        return Check(True, False, f"{result.precision}: no datasheet row for this card, achieved FLOP/s only")
    try:
        peak = card.peak(result.precision)
    except ValueError as error:
        return Check(True, False, f"{result.precision}: {error}")
    check = datasheet_peak_check(result.flops_per_s, peak, card.beatable, f"{card.name} dense {result.precision}")
    return Check(check.holds, check.asserted, f"{result.precision}: {check.text}")


def streams_like_the_roof(bytes_per_s: PositiveFloat, roof_bytes_per_s: PositiveFloat, what: str) -> Check:
    """A memory-bound kernel streams within a wide factor of the roof's bandwidth (notebook 04).

    Model: bandwidth-bound. Not 3x above the roof (only a cache, or a quieter moment than the one
    the roof was measured at, lifts it) nor 8x below (a kernel streams slower than a plain copy;
    a busy core). On a GPU the roof is the datasheet's HBM bandwidth, which kernels reach 60-95% of.
    """
    ratio = bytes_per_s / roof_bytes_per_s
    text = f"{what}: {bytes_per_s / 1e9:.1f} GB/s, {ratio:.2f} x the roof's {roof_bytes_per_s / 1e9:.1f} GB/s"
    return Check(1 / 8 < ratio < 3, True, text)


def under_memory_roof(flops_per_s: PositiveFloat, intensity: PositiveFloat, roof_bytes_per_s: PositiveFloat) -> Check:
    """No kernel beats intensity x bandwidth by more than a cache can lift it: 3x (notebook 04).

    Independent of any peak: a compute-bound kernel is below its peak, which is below
    intensity x bandwidth right of the ridge, so only the memory slope matters.
    """
    ceiling = intensity * roof_bytes_per_s
    text = f"{flops_per_s / 1e9:.1f} GFLOP/s against the memory slope's {ceiling / 1e9:.1f} GFLOP/s"
    return Check(flops_per_s < 3 * ceiling, True, text)


def launch_check(launched_s: NonNegativeFloat, finished_s: PositiveFloat, on_gpu: bool) -> Check:
    """On a GPU a large matmul's call returns long before the work is done: a fifth of it at most (notebook 04).

    On a CPU the call returns when the work is done, so there is nothing to check.
    """
    text = f"call returned after {launched_s * 1e3:.3f} ms, work done after {finished_s * 1e3:.3f} ms"
    return Check(launched_s < 0.2 * finished_s, on_gpu, text)


def device_copy_check(gpu_copy_s: PositiveFloat, host_copy_s: PositiveFloat) -> Check:
    """A copy within the GPU beats a pinned host-to-GPU copy of the same bytes (notebook 01).

    Model: the GPU copy reads and writes memory, 2 bytes of traffic a byte, at the GPU's memory
    bandwidth; the host copy crosses the host link once. Every card in tests/machine_table.py
    has memory at least 8x as fast as its host link (a GH200's NVLink-C2C and a MIG slice's share
    included), so even at 60% of its memory bandwidth the GPU copy wins.
    """
    text = f"GPU -> GPU {gpu_copy_s * 1e3:.3f} ms, pinned host -> GPU {host_copy_s * 1e3:.3f} ms"
    return Check(gpu_copy_s < host_copy_s, True, text)


# The largest L2 in tests/machine_table.py: a B200's, as torch reports it.
LARGEST_L2_BYTES = 126 * 2**20


def gpu_l2_bytes(device: torch.device | str) -> int:
    """The GPU's L2 size as torch reports it; the largest known where this torch does not say (notebook 04)."""
    return getattr(torch.cuda.get_device_properties(device), "L2_cache_size", LARGEST_L2_BYTES)


# Llama 3 8B's and 70B's MLP weights (d_model, d_ff), from their published configurations.
LLAMA3_8B_MLP = (4096, 14336)
LLAMA3_70B_MLP = (8192, 28672)


def token_sweep_shape(l2_bytes: NonNegativeFloat, itemsize: PositiveInt) -> tuple[int, int]:
    """The (d, f) weight of the token sweep on a GPU: the 8B layer's, else the 70B's, > 2x the L2 (notebook 04).

    T = 1 is meant to read the weight from HBM. A weight twice the L2 keeps at most half of it
    in L2 between calls, so even an L2 several times faster than HBM cannot lift T = 1 far above
    one read at HBM speed. A B200's 126 MiB L2 holds the 8B layer's 112 MiB (117 MB) bf16 weight.
    """
    for d, f in (LLAMA3_8B_MLP, LLAMA3_70B_MLP):
        if d * f * itemsize > 2 * l2_bytes:
            return d, f
    raise ValueError(f"no sweep weight exceeds twice an L2 of {l2_bytes / 1e6:.0f} MB")
