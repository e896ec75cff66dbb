"""How fast and how lean the Nsight Compute details-CSV reader is, against pandas.read_csv.

Builds a details CSV of ``--rows`` rows (default 1,000,000) in a temporary directory by repeating
the rows of launch 0 of each of three real fixtures (one launch ID per repetition): the A100
roofline capture, 15 metrics per launch with thousands separators in every value (every 15th row
starts a launch); the V100 default-sections capture, 50 metrics per launch; and the B200
``--set full`` capture in the 2023+ layout, 50 metrics per launch plus rule rows and string-valued
metrics. Then it times ``gpuprof.readers.ncu_csv.read`` and ``pandas.read_csv`` on it (best of
three) and measures each one's peak memory: the Python heap's with tracemalloc plus the peak of
pyarrow's memory pool, where pyarrow parses or holds pandas' strings (each engine in its own
subprocess, so one does not inflate the other; the two peaks are added, an upper bound). The
reader parses clean files with pyarrow's CSV reader when pyarrow is installed, else with pandas'
C parser; it also converts every value to base units and builds the launch and metric tables,
which pandas does not.

Targets: reader rows/s >= 0.5 x pandas rows/s; reader peak memory <= 2 x file size.
Not part of the test suite: run it by hand, ``python benchmarks/bench_ncu_csv_parse.py``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "profiler-outputs"
SOURCES = {
    "A100 roofline, 15 metrics/launch": FIXTURES / "ncu_csv_details_a100_roofline_printfp.csv",
    "V100 default sections, 50 metrics/launch": FIXTURES / "ncu_csv_details_v100_2020_kernel_time_col.log",
    "B200 --set full, 50 metrics + 8 rule rows/launch": FIXTURES / "ncu_csv_details_b200_setfull_with_rule_columns.log",
}


def build(path: Path, rows: int, fixture: Path) -> int:
    """Write a details CSV with ``rows`` rows from ``fixture``'s first launch; return its size."""
    lines = fixture.read_text().splitlines(keepends=True)
    header = next(line for line in lines if line.startswith('"ID",'))
    body = [line for line in lines if line.startswith('"0",')]
    with open(path, "w") as out:
        out.write(header)
        written, launch = 0, 0
        while written < rows:
            prefix = f'"{launch}",'
            for line in body[: rows - written]:
                out.write(prefix + line[4:])
            written += min(len(body), rows - written)
            launch += 1
    return path.stat().st_size


def measure(engine: str, path: str) -> dict[str, float]:
    """Time one parse and its tracemalloc peak (run in a child process)."""
    if engine == "gpuprof":
        from gpuprof.readers import ncu_csv

        def parse() -> object:
            return ncu_csv.read(Path(path))

        def count(run: object) -> int:  # metric rows (rule rows become launch attributes)
            return sum(len(launch.metrics) for launch in run.launches)  # type: ignore[attr-defined]
    else:
        import pandas as pd

        def parse() -> object:
            return pd.read_csv(path)

        def count(frame: object) -> int:
            return len(frame)  # type: ignore[arg-type]

    seconds = float("inf")
    for _ in range(3):  # best of three: the machine is shared and timings wander
        start = time.perf_counter()
        result = parse()
        seconds = min(seconds, time.perf_counter() - start)
        rows = count(result)
        del result  # freed outside the timed region
    tracemalloc.start()
    parse()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    try:  # pyarrow's buffers (its CSV reader's, pandas' string columns) are outside tracemalloc's view
        import pyarrow

        peak += pyarrow.default_memory_pool().max_memory() or 0
    except ImportError:
        pass
    return {"rows": rows, "seconds": seconds, "peak_bytes": peak}


def run_child(engine: str, path: Path) -> dict[str, float]:
    argv = [sys.executable, __file__, "--child", engine, str(path)]
    return json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--child", nargs=2, metavar=("ENGINE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(*args.child)))
        return
    for label, fixture in SOURCES.items():
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "details.csv"
            size = build(path, args.rows, fixture)
            ours, theirs = run_child("gpuprof", path), run_child("pandas", path)
        assert theirs["rows"] == args.rows and ours["rows"] <= args.rows, (ours, theirs)
        ratio = theirs["seconds"] / ours["seconds"]  # rows/s over rows/s of the same rows
        print(f"{label}: {args.rows:,} rows ({ours['rows']:,} metric rows), {size / 1e6:.1f} MB")
        for name, result in (("gpuprof ncu_csv", ours), ("pandas.read_csv", theirs)):
            print(
                f"  {name:16s} {result['seconds']:6.2f} s  {args.rows / result['seconds']:12,.0f} rows/s  "
                f"peak {result['peak_bytes'] / 1e6:8.1f} MB ({result['peak_bytes'] / size:.2f} x file)"
            )
        print(f"  rows/s ratio gpuprof/pandas: {ratio:.2f} (target >= 0.5)")
        print(f"  gpuprof peak memory / file size: {ours['peak_bytes'] / size:.2f} (target <= 2)")


if __name__ == "__main__":
    main()
