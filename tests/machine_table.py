"""The machines students run the notes on, as their OS and torch show them (tests/test_machine_table.py).

Each CPU row: the /proc/cpuinfo text the OS shows (the lines the parser reads, one block per
logical CPU; None on macOS, which has none), cpufreq's cpuinfo_max_freq (None where the OS exposes
no cpufreq), whether torch's BLAS keeps to its thread count (MKL on x86 wheels), and what the part
really reaches: its maximum single-core clock and the fp32 FLOP/cycle of its FMA pipes. Each GPU
row: the name torch.cuda.get_device_name() returns, the datasheet table key it must resolve to
(None: refused), its L2 size, and whether it runs bf16 and fp8 matmuls natively. Every figure
names its source; the text blocks follow the reports named beside them, trimmed to the fields
lecture_utils.cpu reads plus the model name.
"""

from dataclasses import dataclass

_X86_COMMON = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht"
_AVX2 = (
    f"{_X86_COMMON} syscall nx lm constant_tsc pni pclmulqdq ssse3 fma cx16 sse4_1 sse4_2 movbe popcnt aes"
    " xsave avx f16c rdrand bmi1 avx2 bmi2"
)
_AVX512 = f"{_AVX2} avx512f avx512dq avx512cd avx512bw avx512vl"


def _x86(vendor: str, family: int, model: int, name: str, mhz: str, flags: str, cores: int, threads: int) -> str:
    """/proc/cpuinfo as Linux writes it on x86: one block per logical CPU, siblings sharing a core id."""
    per_core = threads // cores
    return "\n".join(
        f"processor\t: {i}\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\n"
        f"model name\t: {name}\ncpu MHz\t\t: {mhz}\nphysical id\t: 0\nsiblings\t: {threads}\n"
        f"core id\t\t: {i // per_core}\ncpu cores\t: {cores}\nflags\t\t: {flags}\n"
        for i in range(threads)
    )


def _arm(implementer: str, part: str, features: str, cpus: int) -> str:
    """/proc/cpuinfo as Linux writes it on arm64: no MHz, no model name, one block per CPU."""
    return "\n".join(
        f"processor\t: {i}\nBogoMIPS\t: {'2100.00' if implementer == '0x41' else '48.00'}\nFeatures\t: {features}\n"
        f"CPU implementer\t: {implementer}\nCPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: {part}\n"
        for i in range(cpus)
    )


@dataclass(frozen=True)
class CpuRow:
    """One CPU machine: what its OS shows and what the part really does."""

    name: str
    cpuinfo: str | None  # None: no /proc/cpuinfo (macOS)
    max_khz: float | None  # cpufreq's cpuinfo_max_freq; None: no cpufreq
    mkl: bool  # torch's BLAS keeps to torch's thread count
    boost_hz: float  # the fastest one core runs, per its maker
    fp32_per_cycle: int  # fp32 FLOP/cycle of one core's FMA pipes
    source: str


CPU_ROWS: list[CpuRow] = [
    CpuRow(
        "WSL2 on an Intel laptop (i5-8250U)",
        # WSL2 shows the TSC clock and no cpufreq (FINDINGS F; a WSL2 i5-1335U report shows 2496 MHz
        # on every core, "min/max: N/A").
        _x86("GenuineIntel", 6, 142, "Intel(R) Core(TM) i5-8250U CPU @ 1.60GHz", "1599.999", _AVX2, 4, 8),
        None,
        True,
        3.4e9,
        32,  # Skylake-derived core: two 256-bit FMA units (Intel optimization manual)
        "Intel ARK i5-8250U: 4 cores, base 1.6 GHz, max turbo 3.4 GHz",
    ),
    CpuRow(
        "bare-metal Linux on an Intel laptop (i7-1165G7, intel_pstate)",
        # intel_pstate's cpuinfo_max_freq is the max turbo; "cpu MHz" is the current clock
        _x86("GenuineIntel", 6, 140, "11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz", "1386.214", _AVX512, 4, 8),
        4_700_000.0,
        True,
        4.7e9,
        32,  # client Tiger Lake: one 512-bit FMA unit (ports 0+1 fused), so AVX-512 gives no more
        "Intel ARK i7-1165G7: 4 cores, base 2.8 GHz, max turbo 4.7 GHz",
    ),
    CpuRow(
        "AMD Zen 3 laptop (Ryzen 7 5800U, acpi-cpufreq)",
        # acpi-cpufreq lists P-states up to the base clock; the boost is not among them
        _x86("AuthenticAMD", 25, 80, "AMD Ryzen 7 5800U with Radeon Graphics", "1397.325", _AVX2, 8, 16),
        1_900_000.0,
        True,
        4.4e9,
        32,  # Zen 3: two 256-bit FMA pipes (AMD Software Optimization Guide for Family 19h)
        "AMD product page Ryzen 7 5800U: 8 cores, base 1.9 GHz, max boost 4.4 GHz",
    ),
    CpuRow(
        "AMD Zen 4 cloud VM (EPYC 9004, this machine)",
        _x86("AuthenticAMD", 25, 17, "AMD EPYC", "2596.152", f"{_AVX512} avx512_bf16 avx512_vnni hypervisor", 2, 2),
        None,
        True,
        3.7e9,
        32,  # Zen 4 runs AVX-512 on two 256-bit pipes (AMD Family 19h optimization guide)
        "AMD EPYC 9654 page: max boost 3.7 GHz (a cloud VM does not name its SKU)",
    ),
    CpuRow(
        "Intel Sapphire Rapids VM (Xeon Platinum 8488C, AVX-512, AMX)",
        _x86(
            "GenuineIntel",
            6,
            143,
            "Intel(R) Xeon(R) Platinum 8488C",
            "2400.000",
            f"{_AVX512} avx512_bf16 avx512_fp16 amx_bf16 amx_tile amx_int8 hypervisor",
            4,
            8,
        ),
        None,
        True,
        3.8e9,
        64,  # Xeon Platinum: two 512-bit FMA units (Intel optimization manual)
        "AWS m7i page: Xeon 8488C, up to 3.8 GHz turbo (3.2 GHz all-core)",
    ),
    CpuRow(
        "AWS Graviton3 (arm64 Linux, no MHz)",
        _arm("0x41", "0xd40", "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp asimddp sve bf16", 4),
        None,
        False,
        2.6e9,
        32,  # Neoverse V1: four 128-bit FP/SIMD pipes (Arm Neoverse V1 Software Optimization Guide)
        "AWS c7g page: Graviton3 at 2.6 GHz",
    ),
    CpuRow(
        "Docker on Apple Silicon (M2, arm64 Linux VM)",
        # the VM hides the part: implementer 0x61 (or 0x00), part 0x000 (docker/for-mac#6512,
        # pavel-odintsov/fastnetmon#1015)
        _arm("0x61", "0x000", "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp asimddp", 4),
        None,
        False,
        3.49e9,
        32,  # four 128-bit FMA pipes per performance core (Dougall Johnson's Firestorm measurements)
        "Apple M2: performance cores at 3.49 GHz",
    ),
    CpuRow(
        "macOS on Apple Silicon (M2, Accelerate)",
        None,
        None,
        False,
        3.49e9,
        32,
        "Apple M2: performance cores at 3.49 GHz; macOS has no /proc/cpuinfo",
    ),
]


@dataclass(frozen=True)
class GpuRow:
    """One GPU as torch names it: the table row it must resolve to, its L2, its native dtypes."""

    torch_name: str
    key: str | None  # lecture_utils.hardware table key; None: refused (no datasheet, or a slice)
    l2_bytes: float
    bf16: bool  # compute capability 8.0 or newer
    fp8: bool  # compute capability 8.9 or newer
    source: str
    memory_bytes_per_s: float  # the datasheet's bandwidth; a MIG slice: its share of it
    host_link_bytes_per_s: float  # host to GPU, one direction, at its spec rate


# Host links, one direction: PCIe 3.0/4.0/5.0 x16 after 128b/130b coding (PCI-SIG specs); the
# GH200's NVLink-C2C, 900 GB/s both directions together (GH200 datasheet).
_GEN3, _GEN4, _GEN5, _C2C = 15.75e9, 31.5e9, 63e9, 450e9


# The whitepapers' "MB" of L2 are binary: torch's L2_cache_size reads 40 MiB on an A100 and
# 50 MiB on an H100, the units every row here uses.
_MB = 2**20
GPU_ROWS: list[GpuRow] = [
    GpuRow("Tesla T4", "t4", 4 * 2**20, False, False, "Turing whitepaper, TU104: 4 MB L2; sm_75", 3e11, _GEN3),
    GpuRow("NVIDIA L4", "l4", 48 * 2**20, True, True, "Ada whitepaper, AD104: 48 MB L2; sm_89", 3e11, _GEN4),
    GpuRow("NVIDIA A10G", None, 6 * 2**20, True, False, "AWS prints no datasheet; GA102: 6 MB L2; sm_86", 6e11, _GEN4),
    GpuRow(
        "NVIDIA GeForce RTX 3090",
        "rtx-3090",
        6 * 2**20,
        True,
        False,
        "GA102 whitepaper: 6 MB L2; sm_86",
        9.36e11,
        _GEN4,
    ),
    GpuRow(
        "NVIDIA GeForce RTX 4090",
        "rtx-4090",
        72 * 2**20,
        True,
        True,
        "Ada whitepaper: 72 MB L2; sm_89",
        1.008e12,
        _GEN4,
    ),
    GpuRow(
        "NVIDIA A100-SXM4-40GB",
        "a100-sxm-40gb",
        40 * _MB,
        True,
        False,
        "A100 whitepaper: 40 MB L2; sm_80",
        1.555e12,
        _GEN4,
    ),
    GpuRow(
        "NVIDIA A100-SXM4-80GB",
        "a100-sxm-80gb",
        40 * _MB,
        True,
        False,
        "A100 whitepaper: 40 MB L2; sm_80",
        2.039e12,
        _GEN4,
    ),
    GpuRow(
        "NVIDIA A100-PCIE-40GB", "a100-pcie-40gb", 40 * _MB, True, False, "A100 whitepaper: 40 MB L2", 1.555e12, _GEN4
    ),
    # a 1g.10gb slice has 1/7 of the compute and 1/8 of the memory (NVIDIA MIG user guide)
    GpuRow(
        "NVIDIA A100-SXM4-80GB MIG 1g.10gb",
        None,
        40 * _MB,
        True,
        False,
        "NVIDIA MIG user guide: A100 profiles",
        2039e9 / 8,
        _GEN4,
    ),
    GpuRow(
        "NVIDIA H100 80GB HBM3", "h100-sxm", 50 * _MB, True, True, "H100 whitepaper: 50 MB L2; sm_90", 3.35e12, _GEN5
    ),
    GpuRow("NVIDIA H100 PCIe", "h100-pcie", 50 * _MB, True, True, "H100 whitepaper: 50 MB L2; sm_90", 2e12, _GEN5),
    GpuRow("NVIDIA H100 NVL", "h100-nvl", 50 * _MB, True, True, "H100 whitepaper (GH100): 50 MB L2", 3.9e12, _GEN5),
    GpuRow("NVIDIA H200", "h200-sxm", 50 * _MB, True, True, "H200: the H100's GH100 die, 50 MB L2", 4.8e12, _GEN5),
    GpuRow("NVIDIA GH200 480GB", "gh200-96gb", 50 * _MB, True, True, "GH200: the GH100 die, 50 MB L2", 4e12, _C2C),
    # torch reports a 126 MB L2 on a B200 (FINDINGS F); no NVIDIA sheet prints it
    GpuRow("NVIDIA B200", "b200", 126 * 2**20, True, True, "torch L2_cache_size on a B200; sm_100", 7.7e12, _GEN5),
]
