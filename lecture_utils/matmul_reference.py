"""A recorded matmul benchmark run: write it as JSON, read it back checked, describe it (notebook 04).

    python -m lecture_utils.matmul_reference --out notebooks/data/matmul_reference_h100.json

runs lecture_utils.matmul_benchmark's cases at large square sizes and writes device, torch
version, date, settings, sizes, dtypes, FLOP/s, MFU and each peak's source. Notebook 04 shows a
committed record next to its own, local measurement.
"""

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

import torch

from lecture_utils.checks import NonNegativeFloat, NonNegativeInt, PositiveInt
from lecture_utils.device import device_name, per_device, pick_device
from lecture_utils.matmul_benchmark import MatmulResult, format_results, run_benchmark


def reference_sizes(device: torch.device | str) -> tuple[int, ...]:
    """Square sizes for the recorded benchmark: large enough to approach the peak on a GPU (notebook 04)."""
    return per_device(device, cpu=(512, 1024), cuda=(4096, 8192, 16384))


def reference_record(
    results: Sequence[MatmulResult],
    device: torch.device | str,
    *,
    warmup: NonNegativeInt,
    trials: PositiveInt,
    min_trial_s: NonNegativeFloat,
) -> dict:
    """What a reference run records: device, torch/CUDA versions, date, settings, and every result (notebook 04)."""
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
    """Read a recorded run: its metadata and results; stored FLOP/s and MFU must match recomputed ones (notebook 04)."""
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
            raise ValueError(
                f"{Path(path).name}: stored FLOP/s or MFU for n={result.n} {result.dtype} "
                "does not follow from its FLOPs, seconds and peak"
            )
        results.append(result)
    meta = {k: v for k, v in record.items() if k != "results"}
    return meta, results


def describe_reference(path: str | Path) -> str:
    """A recorded run as text: which machine and settings it came from, then its results table (notebook 04)."""
    meta, results = load_reference(path)
    header = (
        f"REFERENCE RUN (recorded on another machine, not this one): {meta['device']}, torch {meta['torch']}, "
        f"CUDA {meta['cuda']}, {meta['date']}\n"
        f"{meta['warmup']} warm-up calls, then the best of {meta['trials']} trials "
        f"of at least {meta['min_trial_s']} s each"
    )
    return f"{header}\n{format_results(results)}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark large matmuls and record FLOP/s and MFU as JSON.")
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--sizes", type=int, nargs="+", help="square sizes (default: by device)")
    parser.add_argument("--warmup", type=int, default=None, help="untimed calls first (default: by device)")
    parser.add_argument("--trials", type=int, default=None, help="timed trials (default: by device)")
    parser.add_argument(
        "--min-trial-s", type=float, help="repeat a call until a trial lasts this long (default: by device)"
    )
    args = parser.parse_args(argv)
    device = pick_device()
    sizes = args.sizes or reference_sizes(device)
    warmup = args.warmup if args.warmup is not None else per_device(device, cpu=3, cuda=10)
    trials = args.trials if args.trials is not None else per_device(device, cpu=10, cuda=50)
    # Back-to-back calls in a trial hide launch gaps, so the GPU figure is sustained throughput.
    min_trial_s = args.min_trial_s if args.min_trial_s is not None else per_device(device, cpu=0.0, cuda=0.05)
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
