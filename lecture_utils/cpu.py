"""What a CPU core can do per cycle, from /proc/cpuinfo: vector FLOP/cycle, clock, cores (notebook 04).

A CPU maker prints no "peak FLOP/s" for a laptop or a cloud VM, so lecture_utils.peaks builds one as
cores x clock x FLOP/cycle. FLOP/cycle is the width of the vector pipes the core really executes,
times the number of FMA pipes, times 2 (a fused multiply-add is two FLOPs). Decoding an instruction
set is not executing it at full width: AMD Zen 4 decodes AVX-512 but runs it on two 256-bit pipes.
Where a family spans parts with different pipes, the label says which one is assumed.
"""

from dataclasses import dataclass
from pathlib import Path

import torch

from lecture_utils.checks import PositiveFloat, PositiveInt

# The clock a VM's /proc/cpuinfo shows is the base (TSC) clock, and a core under load boosts above
# it; without a max clock from cpufreq the estimate assumes up to this factor. Server parts boost
# to about 1.5x base (AMD EPYC 9654: 2.4 GHz base, 3.7 GHz max boost); the factor leaves some room.
BOOST_OVER_REPORTED = 1.6


@dataclass(frozen=True)
class CpuInfo:
    """The fields of /proc/cpuinfo a FLOP/cycle estimate needs (notebook 04)."""

    vendor: str  # "AuthenticAMD", "GenuineIntel", "" on Arm
    family: int | None
    model: int | None
    flags: frozenset[str]
    mhz: float | None  # "cpu MHz": the base clock in a VM, the current one on bare metal
    cores: int  # physical cores: hyperthreads share one core's FMA pipes
    arm: bool
    arm_part: str = ""  # "0x41:0xd40": Arm's "CPU implementer" and "CPU part"; "" on x86


def parse_cpuinfo(text: str) -> CpuInfo:
    """Read the first processor's vendor, family, model, flags and clock, and count physical cores (notebook 04)."""
    first: dict[str, str] = {}
    cores: set[tuple[str, str]] = set()
    processors = 0
    physical = ""
    for line in text.splitlines():
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "processor":
            processors += 1
        elif key == "physical id":
            physical = value
        elif key == "core id":
            cores.add((physical, value))
        first.setdefault(key, value)
    flags = frozenset((first.get("flags") or first.get("Features") or "").split())
    mhz = first.get("cpu MHz")
    return CpuInfo(
        vendor=first.get("vendor_id", ""),
        family=int(first["cpu family"]) if first.get("cpu family", "").isdigit() else None,
        model=int(first["model"]) if first.get("model", "").isdigit() else None,
        flags=flags,
        mhz=float(mhz) if mhz else None,
        cores=len(cores) or max(processors, 1),
        arm="asimd" in flags or "CPU implementer" in first,
        arm_part=f"{first['CPU implementer']}:{first.get('CPU part', '')}" if "CPU implementer" in first else "",
    )


# Arm cores by (implementer, part), with their FP/SIMD pipes: 128-bit NEON pipes that each do a
# fused multiply-add, from Arm's Software Optimization Guides (Neoverse N1: V0-V1, two pipes;
# Neoverse V1 and V2: V0-V3, four). Docker on Apple Silicon shows part 0x000: not named here.
ARM_PARTS: dict[str, tuple[int, str]] = {
    "0x41:0xd0c": (16, "Arm Neoverse N1 (Graviton2): 2 x 128-bit FMA pipes"),
    "0x41:0xd40": (32, "Arm Neoverse V1 (Graviton3): 4 x 128-bit FMA pipes"),
    "0x41:0xd4f": (32, "Arm Neoverse V2 (Graviton4, Grace): 4 x 128-bit FMA pipes"),
}


def fp32_flops_per_cycle(info: CpuInfo) -> tuple[int, str]:
    """fp32 FLOP/cycle of one core and the pipes it assumes, by vendor and family (notebook 04)."""
    amd, avx512 = info.vendor == "AuthenticAMD", "avx512f" in info.flags
    if amd and info.family == 23:  # Zen and Zen+ have 128-bit pipes; Zen 2 (model 0x30 on) 256-bit
        zen2 = (info.model or 0) >= 0x30
        return (32, "AMD Zen 2: 2 x 256-bit FMA pipes") if zen2 else (16, "AMD Zen/Zen+: 2 x 128-bit FMA pipes")
    if amd and info.family == 25:
        return 32, "AMD Zen 4: AVX-512 on 2 x 256-bit FMA pipes" if avx512 else "AMD Zen 3: 2 x 256-bit FMA pipes"
    if amd and info.family == 26:
        return 64, "AMD Zen 5: 2 x 512-bit FMA pipes assumed (desktop and server; mobile Zen 5 has 256-bit: half)"
    if avx512:
        return 64, "AVX-512: 2 x 512-bit FMA units assumed (Xeon Gold/Platinum; cores with one unit: half)"
    if "avx2" in info.flags and "fma" in info.flags:
        return 32, "AVX2: 2 x 256-bit FMA units assumed"
    if info.arm and info.arm_part in ARM_PARTS:
        return ARM_PARTS[info.arm_part]
    if info.arm:
        return 16, "Arm NEON: 2 x 128-bit FMA pipes assumed (Apple M-series and Neoverse V2 have 4: double)"
    raise ValueError("cannot tell this CPU's vector pipes (no AVX2+FMA, AVX-512 or NEON); report achieved FLOP/s only")


def flops_per_cycle(dtype: torch.dtype, info: CpuInfo) -> tuple[int, str]:
    """FLOP/cycle of one core in `dtype` (fp32, fp64, or bf16 with AVX512_BF16) and its assumption (notebook 04)."""
    fp32, what = fp32_flops_per_cycle(info)
    if dtype == torch.float32:
        return fp32, what
    if dtype == torch.float64:
        return fp32 // 2, f"{what}; fp64: half of fp32"
    if dtype == torch.bfloat16:
        if "amx_bf16" in info.flags:
            raise ValueError("no bfloat16 estimate for a CPU with AMX matrix units; report achieved FLOP/s only")
        if "avx512_bf16" not in info.flags:
            raise ValueError("no bfloat16 estimate: this CPU has no AVX512_BF16; report achieved FLOP/s only")
        # One VDPBF16PS does two bf16 multiply-adds into each fp32 lane, on the fp32 FMA pipes.
        return 2 * fp32, f"{what}; AVX512_BF16: twice fp32"
    raise ValueError(f"no CPU peak estimate for {dtype}; only float32, float64 and bfloat16 are estimated")


def clock_hz(info: CpuInfo, max_khz: float | None) -> tuple[float, str]:
    """The clock a peak estimate uses: cpufreq's max clock, else the reported clock x BOOST_OVER_REPORTED (notebook 04).

    /proc/cpuinfo's "cpu MHz" is the base clock in a VM and the current (often idle) clock on bare
    metal: neither is the boost clock a busy core runs at.
    """
    if max_khz:
        return max_khz * 1e3, "max clock from cpufreq"
    if info.mhz is None:
        raise ValueError("cannot read this CPU's clock; report achieved FLOP/s only")
    return (
        info.mhz * 1e6 * BOOST_OVER_REPORTED,
        f"{BOOST_OVER_REPORTED} x the reported {info.mhz / 1e3:.2f} GHz, boost assumed",
    )


def read_cpuinfo() -> CpuInfo:
    """This machine's /proc/cpuinfo, parsed; raises ValueError where there is none (macOS, Windows) (notebook 04)."""
    path = Path("/proc/cpuinfo")
    if not path.exists():
        raise ValueError("no /proc/cpuinfo on this system: no CPU peak estimate; report achieved FLOP/s only")
    return parse_cpuinfo(path.read_text())


def read_max_khz() -> float | None:
    """cpufreq's max clock of cpu0 in kHz, or None where the OS exposes none (most VMs) (notebook 04)."""
    path = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    return float(path.read_text()) if path.exists() else None


def implied_clock_hz(flops_per_s: PositiveFloat, dtype: torch.dtype, cores: PositiveInt, info: CpuInfo) -> float:
    """The clock `cores` cores of the CPU `info` describes must run at to do `flops_per_s` in `dtype` (notebook 04).

    A figure above any clock the core reaches means the FLOP/cycle assumed is too low, or more
    cores were busy than counted.
    """
    per_cycle, _ = flops_per_cycle(dtype, info)
    return flops_per_s / (cores * per_cycle)
