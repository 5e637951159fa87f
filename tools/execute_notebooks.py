"""Execute notebooks in fresh kernels and report how long each notebook and each slow cell took.

    python tools/execute_notebooks.py            # time every notebook, write nothing
    python tools/execute_notebooks.py --write    # also rewrite the committed outputs
    python tools/execute_notebooks.py notebooks/04_flops_and_mfu.ipynb --slow 1

`make outputs` runs it with --write and CUDA hidden, so committed outputs come from the CPU.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from datetime import datetime
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
# A traceback frame in a file (IPython colours it "File <path>:<line>"); a notebook cell's frame
# reads "Cell In[n]" instead.
LIBRARY_FRAME = re.compile(r"^(\x1b\[[0-9;]*m)*File ")
# What JupyterLab writes into a notebook it opens with the default Python kernel; committing it
# means opening a notebook does not mark it modified.
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def cell_seconds(cell: nbformat.NotebookNode) -> float:
    """Wall time of one executed cell, from the timestamps nbclient records."""
    timing = cell.get("metadata", {}).get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not (start and end):
        return 0.0
    parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))  # noqa: E731
    return (parse(end) - parse(start)).total_seconds()


def tidy_outputs(cell: nbformat.NotebookNode) -> None:
    """Make stored outputs stable and portable before they are committed.

    Consecutive stdout (or stderr) chunks are joined, since how prints were flushed varies run to
    run. An expected error keeps the notebook's own frames and the message, and drops the frames
    inside library files, which show this machine's absolute paths.
    """
    merged: list[nbformat.NotebookNode] = []
    for output in cell.get("outputs", []):
        if output.output_type == "error":
            output.traceback = [frame for frame in output.traceback if not LIBRARY_FRAME.search(frame)]
        last = merged[-1] if merged else None
        if last is not None and output.output_type == last.output_type == "stream" and output.name == last.name:
            last.text += output.text
        else:
            merged.append(output)
    cell.outputs = merged


def execute(path: Path, write: bool, slow: float, timeout: int) -> tuple[float, list[tuple[int, float]]]:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        record_timing=True,
        # The calculators' widget state is megabytes of model ids that change every run; JupyterLab
        # shows each calculator's printed fallback until its cell is run, with or without it.
        store_widget_state=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    client.execute()
    total = time.perf_counter() - start
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    slow_cells = [(c.execution_count, cell_seconds(c)) for c in code_cells if cell_seconds(c) >= slow]
    if write:
        nb.metadata["kernelspec"] = KERNELSPEC
        for cell in code_cells:  # timings change every run; keep them out of the committed file
            cell.metadata.pop("execution", None)
            tidy_outputs(cell)
        nbformat.write(nb, path)
    return total, slow_cells


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook in notebooks/")
    parser.add_argument("--write", action="store_true", help="rewrite each notebook with its fresh outputs")
    parser.add_argument("--slow", type=float, default=1.0, help="list cells slower than this (seconds)")
    # A live room waits for each cell: 3 s at most, except the first, which imports torch and the package.
    parser.add_argument("--limit", type=float, default=3.0, help="fail if a cell but the first is slower (s)")
    parser.add_argument("--total", type=float, default=15.0, help="fail if a whole notebook is slower (s)")
    parser.add_argument("--timeout", type=int, default=120, help="per-cell kernel timeout (seconds)")
    args = parser.parse_args()
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    over_limit = []
    for path in paths:
        total, slow_cells = execute(path, args.write, args.slow, args.timeout)
        flag = "  OVER LIMIT" if total > args.total else ""
        print(f"{path.name:40s} {total:6.1f} s{flag}")
        if total > args.total:
            over_limit.append((path.name, "whole notebook"))
        for count, seconds in slow_cells:
            over = seconds > args.limit and count != 1
            print(f"    cell [{count}] {seconds:5.2f} s{'  OVER LIMIT' if over else ''}")
            if over:
                over_limit.append((path.name, count))
    if over_limit:
        # Rewriting outputs (often on a busy machine) reports slow cells but does not fail on them.
        if args.write:
            return 0
        print(f"over the limits ({args.limit} s a cell after the first, {args.total} s a notebook): {over_limit}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
