"""Measure how close large matmuls get to the device's peak (FLOP/s and MFU), and record a reference run.

    python -m lecture_utils.matmul_benchmark --out notebooks/data/matmul_reference_h100.json

runs bf16, fp32 ("highest") and, on CUDA, TF32 ("high") matmuls of large square sizes and writes
device, torch version, date, sizes, dtypes, FLOP/s, MFU and each peak's source as JSON.
Notebook 04 calls the same functions for its local measurement.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

import torch

from lecture_utils.checks import check_int
from lecture_utils.device import device_name, pick_device, sized, torch_threads
from lecture_utils.flops import matmul_flops, mfu
from lecture_utils.hardware import matmul_precision, peak_flops
from lecture_utils.timing import time_fn

# label -> (dtype, torch.set_float32_matmul_precision mode); the mode only matters for float32.
CASES: dict[str, tuple[torch.dtype, str]] = {
    "bf16": (torch.bfloat16, "highest"),
    "fp32": (torch.float32, "highest"),
    "tf32": (torch.float32, "high"),
}
_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
_MODES = ("highest", "high")


@dataclass(frozen=True)
class MatmulResult:
    """One timed (n x n) @ (n x n) matmul: what ran, how long it took, and the peak it is measured against."""

    n: int
    dtype: str  # "bfloat16"
    precision: str  # the datasheet row that bounds it: "bf16", "fp32", "tf32"
    flops: int
    seconds: float  # fastest trial, per matmul
    peak_flops_per_s: float | None
    peak_source: str  # where the peak comes from, or why there is none
    peak_estimate: bool

    @property
    def flops_per_s(self) -> float:
        """Achieved FLOP/s."""
        return self.flops / self.seconds

    @property
    def mfu(self) -> float | None:
        """Achieved / peak FLOP/s, or None where no honest peak is known."""
        if self.peak_flops_per_s is None:
            return None
        return mfu(self.flops, self.seconds, self.peak_flops_per_s)


@contextmanager
def float32_matmul_precision(mode: str) -> Iterator[None]:
    """Set torch's fp32 matmul precision ('highest' = true fp32, 'high' = TF32 on CUDA) inside the block."""
    if mode not in _MODES:
        raise ValueError(f"unknown float32 matmul precision {mode!r}; expected one of {_MODES}")
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(mode)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(previous)


def cases_for(device: torch.device | str) -> list[str]:
    """The CASES labels that make sense on a device: TF32 is a CUDA tensor-core mode, so not on a CPU."""
    return sized(device, cpu=["fp32", "bf16"], cuda=["bf16", "fp32", "tf32"])


def reference_sizes(device: torch.device | str) -> tuple[int, ...]:
    """Square sizes for the recorded benchmark: large enough to approach the peak on a GPU."""
    return sized(device, cpu=(512, 1024), cuda=(4096, 8192, 16384))


def benchmark_matmul(
    n: int,
    dtype: torch.dtype,
    device: torch.device | str,
    *,
    float32_precision: str = "highest",
    warmup: int = 3,
    trials: int = 10,
    min_trial_s: float = 0.0,
    seed: int = 0,
) -> MatmulResult:
    """Time an (n x n) @ (n x n) matmul in `dtype` on random normal inputs into a preallocated output.

    The result keeps the fastest trial: throughput is what the hardware can do, and on a machine
    shared with other processes the fastest trial is the one they disturbed least. A peak the
    measurement beats (a low CPU estimate, or a datasheet row of another card or dtype) is dropped
    with the reason, so the result has no MFU rather than one above 1.
    """
    check_int("n", n)
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype, got {type(dtype).__name__}")
    if dtype not in _DTYPES:
        raise ValueError(f"cannot benchmark dtype {dtype}; expected one of {_DTYPES}")
    device = torch.device(device)
    with float32_matmul_precision(float32_precision):
        precision = matmul_precision(dtype)
        if device.type == "cpu" and precision == "tf32":
            raise ValueError("TF32 ('high') is benchmarked as a CUDA tensor-core mode only: most CPUs run 'high' "
                             "as plain fp32, and no CPU datasheet gives a TF32 peak to hold it to")
        # Drawn on the device: the values only need to be random (zeros draw less power and run faster).
        generator = torch.Generator(device=device).manual_seed(seed)
        a = torch.randn(n, n, generator=generator, device=device, dtype=dtype)
        b = torch.randn(n, n, generator=generator, device=device, dtype=dtype)
        out = torch.empty(n, n, device=device, dtype=dtype)
        timing = time_fn(lambda: torch.matmul(a, b, out=out), device,
                         warmup=warmup, trials=trials, min_trial_s=min_trial_s)
        why = ""
        try:
            peak = peak_flops(device, dtype)
        except ValueError as err:  # unknown accelerator, or no CPU estimate for this dtype
            peak, why = None, str(err)
    flops = matmul_flops(a.shape, b.shape)
    achieved = flops / timing.min_s
    # A measurement above its peak is never reported as MFU > 1: the peak is what is wrong.
    if peak is not None and achieved > peak.flops_per_s:
        if peak.estimate:
            why = f"achieved {achieved:.3g} FLOP/s beats the estimate ({peak.source}), so it is too low for this CPU"
        else:
            why = f"achieved {achieved:.3g} FLOP/s beats the {peak.source} ({peak.flops_per_s:.4g}): wrong card or row?"
        peak = None
    return MatmulResult(
        n=n, dtype=str(dtype).removeprefix("torch."), precision=precision, flops=flops, seconds=timing.min_s,
        peak_flops_per_s=peak.flops_per_s if peak else None,
        peak_source=peak.source if peak else why,
        peak_estimate=peak.estimate if peak else False,
    )


def run_benchmark(
    device: torch.device | str,
    sizes: Sequence[int],
    cases: Sequence[str] | None = None,
    *,
    warmup: int = 3,
    trials: int = 10,
    min_trial_s: float = 0.0,
    num_threads: int | None = None,
) -> list[MatmulResult]:
    """benchmark_matmul for every case label (default: cases_for(device)) at every size.

    `num_threads` sets torch's CPU threads for the run (and so the threads a CPU peak estimate
    counts). One thread gives steady CPU figures on a busy machine: a multi-threaded matmul waits
    for its slowest thread, so one thread descheduled by another process stalls the whole call.
    """
    if num_threads is not None:
        check_int("num_threads", num_threads, 1)
    cases = cases_for(device) if cases is None else list(cases)
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        raise ValueError(f"unknown case(s) {unknown}; expected labels from {list(CASES)}")
    if not sizes:
        raise ValueError("no sizes to benchmark; pass at least one matrix size")
    with torch_threads(num_threads):
        return [
            benchmark_matmul(n, CASES[case][0], device, float32_precision=CASES[case][1],
                             warmup=warmup, trials=trials, min_trial_s=min_trial_s)
            for case in cases for n in sizes
        ]


def copy_bandwidth(device: torch.device | str, numel: int, *, trials: int = 5) -> float:
    """Measured bytes/s of copying `numel` random fp32 values into another buffer (one read + one write each)."""
    check_int("numel", numel)
    generator = torch.Generator(device=device).manual_seed(0)
    src = torch.rand(numel, generator=generator, device=device)
    dst = torch.empty_like(src)
    timing = time_fn(lambda: dst.copy_(src), device, warmup=2, trials=trials)
    return 2 * src.nbytes / timing.min_s  # the fastest trial: the bandwidth other processes left alone


def _si(value: float, unit: str) -> str:
    """A value with an SI prefix, e.g. 67.0 TFLOP/s."""
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M")):
        if value >= factor:
            return f"{value / factor:.1f} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def format_results(results: Sequence[MatmulResult]) -> str:
    """A table of results (size, dtype, time, achieved and peak FLOP/s, MFU) with each peak's source below.

    A peak that is an estimate (a CPU's) says "est." and its MFU carries a "~", so neither reads as a datasheet figure.
    """
    if not results:
        raise ValueError("no results to format")
    lines = [f"{'n':>6}  {'dtype':9}{'row':5}{'ms/matmul':>10}  {'achieved':>14}  {'peak':>20}  {'MFU':>6}"]
    sources: list[str] = []
    for r in results:
        if r.peak_source not in sources:
            sources.append(r.peak_source)
        mark = "*" * (sources.index(r.peak_source) + 1)
        estimate = " est." if r.peak_estimate else ""
        peak = "none" if r.peak_flops_per_s is None else _si(r.peak_flops_per_s, "FLOP/s") + estimate
        mfu_text = "-" if r.mfu is None else ("~" if r.peak_estimate else "") + f"{r.mfu:.3f}"
        lines.append(f"{r.n:>6}  {r.dtype:9}{r.precision:5}{r.seconds * 1e3:>10.3f}  "
                     f"{_si(r.flops_per_s, 'FLOP/s'):>14}  {peak:>17}{mark:<3}  {mfu_text:>6}")
    lines += [f"{'*' * (i + 1)} {source}" for i, source in enumerate(sources)]
    return "\n".join(lines)


def reference_record(
    results: Sequence[MatmulResult], device: torch.device | str, *, warmup: int, trials: int, min_trial_s: float
) -> dict:
    """What a reference run records: device, torch/CUDA versions, date, settings, and every result."""
    return {
        "device": device_name(device),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu_threads": torch.get_num_threads(),
        "warmup": warmup,
        "trials": trials,
        "min_trial_s": min_trial_s,
        "results": [{**asdict(r), "flops_per_s": r.flops_per_s, "mfu": r.mfu} for r in results],
    }


def load_reference(path: str | Path) -> tuple[dict, list[MatmulResult]]:
    """Read a recorded run: its metadata and results (stored FLOP/s and MFU must match the recomputed ones)."""
    record = json.loads(Path(path).read_text())
    missing = {"device", "torch", "cuda", "date", "warmup", "trials", "min_trial_s", "results"} - set(record)
    if missing:
        raise ValueError(f"{Path(path).name} is not a matmul reference record: missing {sorted(missing)}")
    fields = set(MatmulResult.__dataclass_fields__)
    results = []
    for row in record["results"]:
        missing = (fields | {"flops_per_s", "mfu"}) - set(row)
        if missing:
            raise ValueError(f"{Path(path).name}: a result lacks {sorted(missing)}")
        result = MatmulResult(**{k: row[k] for k in fields})
        if abs(result.flops_per_s - row["flops_per_s"]) > 1e-9 * row["flops_per_s"] or result.mfu != row["mfu"]:
            raise ValueError(f"{Path(path).name}: stored FLOP/s or MFU for n={result.n} {result.dtype} "
                             "does not follow from its FLOPs, seconds and peak")
        results.append(result)
    meta = {k: v for k, v in record.items() if k != "results"}
    return meta, results


def describe_reference(path: str | Path) -> str:
    """A recorded run as text: which machine and settings it came from, then its results table."""
    meta, results = load_reference(path)
    header = (f"REFERENCE RUN (recorded on another machine, not this one): {meta['device']}, torch {meta['torch']}, "
              f"CUDA {meta['cuda']}, {meta['date']}\n"
              f"{meta['warmup']} warm-up calls, then the best of {meta['trials']} trials "
              f"of at least {meta['min_trial_s']} s each")
    return f"{header}\n{format_results(results)}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark large matmuls and record FLOP/s and MFU as JSON.")
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--sizes", type=int, nargs="+", help="square sizes (default: by device)")
    parser.add_argument("--warmup", type=int, default=None, help="untimed calls first (default: by device)")
    parser.add_argument("--trials", type=int, default=None, help="timed trials (default: by device)")
    parser.add_argument("--min-trial-s", type=float, default=None,
                        help="repeat a call within a trial until it lasts this long (default: by device)")
    args = parser.parse_args(argv)
    device = pick_device()
    sizes = args.sizes or reference_sizes(device)
    warmup = args.warmup if args.warmup is not None else sized(device, cpu=3, cuda=10)
    trials = args.trials if args.trials is not None else sized(device, cpu=10, cuda=50)
    # Back-to-back calls in a trial hide launch gaps, so the GPU figure is sustained throughput.
    min_trial_s = args.min_trial_s if args.min_trial_s is not None else sized(device, cpu=0.0, cuda=0.05)
    results = run_benchmark(device, sizes, warmup=warmup, trials=trials, min_trial_s=min_trial_s)
    record = reference_record(results, device, warmup=warmup, trials=trials, min_trial_s=min_trial_s)
    print(f"{record['device']}, torch {record['torch']}, {record['date']}")
    print(format_results(results))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
