"""Run nbval on the notebooks that assert on timings, several times, while busy processes load every core.

    python tools/nbval_under_load.py --runs 5        # what `make load-test` runs

A timing assert belongs in the notes only if it holds on a shared machine (CI shares its cores,
students run other programs). This is the check: one busy-looping process per core for the
whole run, then nbval on each notebook whose code times something, --runs times over.
Prints one line per run and a summary; exits non-zero if any run failed. Leaves nothing behind.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
# Code that measures wall time: these notebooks' asserts could depend on a quiet machine.
TIMES_SOMETHING = re.compile(r"perf_counter|time\.time\(|lecture_utils\.timing|benchmark|best_of|time_it")


def timing_notebooks() -> list[Path]:
    chosen = []
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        code = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
        if TIMES_SOMETHING.search(code):
            chosen.append(path)
    return chosen


def spin() -> None:
    while True:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--load", type=int, default=os.cpu_count() or 2, help="busy processes (default: one per core)")
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook that times something")
    args = parser.parse_args()
    if args.runs < 1 or args.load < 0:
        parser.error("--runs must be at least 1 and --load at least 0")
    notebooks = [str(p) for p in (args.notebooks or timing_notebooks())]
    print(f"notebooks: {[Path(n).name for n in notebooks]}; {args.load} busy processes; {args.runs} runs")
    load = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.load)]
    for process in load:
        process.start()
    failed = 0
    try:
        for run in range(1, args.runs + 1):
            start = time.perf_counter()
            result = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", *notebooks],
                cwd=ROOT,
                env=os.environ | {"CUDA_VISIBLE_DEVICES": ""},
                capture_output=True,
                text=True,
            )
            summary = (result.stdout.strip().splitlines() or ["(no output)"])[-1]
            print(
                f"run {run}: {'PASS' if result.returncode == 0 else 'FAIL'} in {time.perf_counter() - start:.0f} s: "
                f"{summary}",
                flush=True,
            )
            if result.returncode != 0:
                failed += 1
                print("\n".join(line for line in result.stdout.splitlines() if line.startswith(("FAILED", "E "))))
    finally:
        for process in load:
            process.terminate()
            process.join()
    print(f"{args.runs - failed} of {args.runs} runs passed under load")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
