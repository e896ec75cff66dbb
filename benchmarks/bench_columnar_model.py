"""The columnar result model at the scale of real profiles (issues #20 and #33), against baselines
measured in the same run.

On 1,000,000-row Nsight Compute details CSVs of the three real layouts that
``bench_ncu_csv_parse.py`` builds (A100 roofline: 66,667 launches of 15 metrics; V100 default
sections: 20,000 launches of 50; B200 ``--set full``: 17,242 launches of 50 plus rule rows):

- ``gpuprof import FILE --format json`` end to end (parse, derive, store, render; the command's
  own code, called in-process after its imports) against ``pandas.read_csv`` of the same file:
  rows/s ratio (target >= 1.0, issue 33) and the command's peak traced memory / file size;
- a large V100-layout file (``--large-rows``, 13,000,000 rows is about 2 GB) imported by
  ``gpuprof import`` in a fresh process: its peak resident memory, and the same at a quarter of the
  rows, extrapolated linearly to a 10 GB file (target <= 2 GB);
- the per-kernel table of 40,000 launches (target <= 0.3 s), storing 1,000,000 metric rows
  (target <= 1 s) and reading that run back from the store (target <= 1 s), each with what it
  costs to build the same size of plain pandas frame for scale;
- ``gpuprof.read(report.ncu-rep)`` against NVIDIA's ``ncu_report`` reading every value of the same
  report (ratio target <= 1.1), on the real RTX 3080 fixture and any reports given with
  ``--report``: each side reads the report once in a fresh process after its imports (best of five
  processes), as one ``gpuprof import`` does; a process that read reports before is larger, which
  makes the fork that guards against ncu_report's crashes dearer.

Each measurement runs in its own child process (best of three), so one does not inflate another.
Not part of the test suite: ``python benchmarks/bench_columnar_model.py [--rows N]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ncu_csv_parse import FIXTURES, SOURCES, build  # noqa: E402

REPORT = FIXTURES / "ncu_report_binary_2020_win_montecarlo_pi.ncu-rep"


def _best(work, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def import_command(path: str, store_dir: str) -> dict[str, float]:
    """``gpuprof import PATH --format json`` in-process (fresh store each time), and its peak memory."""
    from gpuprof.cli import main

    stores = iter(range(100))

    def once() -> None:
        store = Path(store_dir) / f"s{next(stores)}.sqlite"
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            main(["import", path, "--format", "json", "--store", str(store)], standalone_mode=False)

    once()  # imports and caches warmed, as in a second command
    seconds = _best(once)
    tracemalloc.start()
    once()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"seconds": seconds, "peak_bytes": peak}


def large_import(path: str, store_dir: str) -> dict[str, float]:
    """One ``gpuprof import PATH --format json`` in this fresh process: seconds and peak resident
    memory (the process's own, imports included)."""
    from gpuprof.cli import main

    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(
            ["import", path, "--format", "json", "--store", str(Path(store_dir) / "large.sqlite")],
            standalone_mode=False,
        )
    return {
        "seconds": time.perf_counter() - start,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def large_file(rows: int, fixture: Path) -> None:
    """Peak memory of importing ``rows`` and ``rows // 4`` rows, and the line through them at 10 GB."""
    points = []
    for count in (rows // 4, rows):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "large.csv"
            size = build(path, count, fixture)
            result = child("large_import", str(path), tmp)
        points.append((size, result["peak_rss_bytes"]))
        print(
            f"large file {count:,} rows, {size / 1e9:.2f} GB: import {result['seconds']:.1f} s, "
            f"peak resident memory {result['peak_rss_bytes'] / 1e9:.2f} GB"
        )
    (small, low), (big, high) = points
    per_byte = (high - low) / (big - small)
    at_10 = high + per_byte * (10e9 - big)
    print(
        f"  extrapolated to a 10 GB file: {at_10 / 1e9:.2f} GB peak ({per_byte:.3f} B per file byte "
        f"above {low / 1e9:.2f} GB at {small / 1e9:.2f} GB) (target <= 2 GB; measured up to {big / 1e9:.2f} GB)"
    )


def pandas_read(path: str) -> dict[str, float]:
    import pandas as pd

    return {"seconds": _best(lambda: pd.read_csv(path))}


def model_parts(path: str, store_dir: str) -> dict[str, float]:
    """Per-kernel table of the first 40,000 launches, store and read back the whole run."""
    from gpuprof.derive.kernel_table import kernel_table
    from gpuprof.model import Run
    from gpuprof.readers import ncu_csv
    from gpuprof.store import open_store

    run = ncu_csv.read(Path(path))
    first = run.launch_table.iloc[:40_000]
    subset = Run(
        kind="import",
        format=run.format,
        source=run.source,
        device=run.device,
        tables=(first, run.metric_table[run.metric_table["launch"] < 40_000]),
    )
    table = _best(lambda: kernel_table([subset]))
    stores = iter(range(100))

    def store_once() -> None:
        with open_store(Path(store_dir) / f"m{next(stores)}.sqlite") as store:
            store.add(run)

    write = _best(store_once)
    with open_store(Path(store_dir) / "m0.sqlite") as store:
        read = _best(lambda: store.get(run.run_id))
    return {
        "launches_in_table": len(first),
        "table_s": table,
        "rows": len(run.metric_table),
        "store_s": write,
        "read_s": read,
    }


def ncu_report_direct(path: str) -> dict[str, float]:
    """NVIDIA's module reading every value of every action, as gpuprof's reader must."""
    import ncu_report

    def every_value() -> None:
        report = ncu_report.load_report(path)
        string = ncu_report.IMetric.ValueKind_STRING
        for r in range(report.num_ranges()):
            profiled = report.range_by_idx(r)
            for a in range(profiled.num_actions()):
                action = profiled.action_by_idx(a)
                for name in action.metric_names():
                    metric = action.metric_by_name(name)
                    if metric is not None and metric.has_value():
                        metric.as_string() if metric.kind() == string else metric.as_double()
                        metric.unit()

    return {"seconds": _best(every_value, 1)}


def gpuprof_read(path: str) -> dict[str, float]:
    import ncu_report  # noqa: F401 - imported before timing, as on the other side
    import pandas  # noqa: F401

    import gpuprof
    from gpuprof import importing, readers

    readers.modules()  # gpuprof's own code loaded too (import time is not reading); no report touched yet
    importing.read_file  # noqa: B018

    return {"seconds": _best(lambda: gpuprof.read(path), 1)}


CHILDREN = {
    f.__name__: f for f in (import_command, large_import, pandas_read, model_parts, ncu_report_direct, gpuprof_read)
}


def child(name: str, *args: str) -> dict[str, float]:
    argv = [sys.executable, __file__, "--child", name, *args]
    return json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument(
        "--large-rows", type=int, default=13_000_000, help="rows of the large-file memory check (0: skip it)"
    )
    parser.add_argument("--report", action="append", default=[], help="another .ncu-rep to time")
    parser.add_argument("--reports-only", action="store_true", help="time only the .ncu-rep reads")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child[0]](*args.child[1:])))
        return
    for label, fixture in ({} if args.reports_only else SOURCES).items():
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "details.csv"
            size = build(path, args.rows, fixture)
            ours, theirs = child("import_command", str(path), tmp), child("pandas_read", str(path))
            parts = child("model_parts", str(path), tmp)
        print(f"{label}: {args.rows:,} rows, {size / 1e6:.1f} MB")
        print(f"  gpuprof import --format json  {ours['seconds']:6.2f} s   pandas.read_csv {theirs['seconds']:6.2f} s")
        print(f"  rows/s ratio import/pandas: {theirs['seconds'] / ours['seconds']:.2f} (target >= 1.0)")
        print(f"  import peak memory / file size: {ours['peak_bytes'] / size:.2f} (target <= 2)")
        print(f"  per-kernel table, {parts['launches_in_table']:,} launches: {parts['table_s']:.3f} s (target <= 0.3)")
        print(
            f"  store {parts['rows']:,} metric rows: {parts['store_s']:.3f} s (target <= 1); "
            f"read back: {parts['read_s']:.3f} s (target <= 1)"
        )
    if args.large_rows and not args.reports_only:
        large_file(args.large_rows, list(SOURCES.values())[1])
    for report in (REPORT, *map(Path, args.report)):
        direct = min(child("ncu_report_direct", str(report))["seconds"] for _ in range(5))
        ours = min(child("gpuprof_read", str(report))["seconds"] for _ in range(5))
        print(
            f"{report.name}: ncu_report every value {direct * 1e3:.1f} ms, gpuprof.read {ours * 1e3:.1f} ms, "
            f"ratio {ours / direct:.2f} (target <= 1.1)"
        )


if __name__ == "__main__":
    main()
