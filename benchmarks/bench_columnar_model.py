"""The columnar result model at the scale of real profiles (issues #20 and #33), against baselines
measured in the same run.

On 1,000,000-row Nsight Compute details CSVs of the three real layouts that
``bench_ncu_csv_parse.py`` builds (A100 roofline: 66,667 launches of 15 metrics; V100 default
sections: 20,000 launches of 50; B200 ``--set full``: 17,242 launches of 50 plus rule rows):

- ``gpuprof import FILE --format json`` end to end (parse, derive, store, render; the command's
  own code, called in-process after its imports; the parser it used is printed first) against
  ``pandas.read_csv`` of the same file:
  rows/s ratio (target >= 1.0, issue 33) and the command's peak resident memory / file size;
- a large V100-layout file (``--large-rows``, 13,000,000 rows is about 2 GB, 64,500,000 rows
  10 GB) imported by ``gpuprof import`` in a fresh process: its peak resident memory, and the same
  at a quarter of the rows, extrapolated linearly to a 10 GB file (target <= 2 GB; at 64,500,000
  rows the 10 GB file itself is measured);
- the per-kernel table of 40,000 launches (target <= 0.3 s), storing 1,000,000 metric rows
  (target <= 1 s) and reading that run back from the store (target <= 1 s), each with what it
  costs to build the same size of plain pandas frame for scale;
- ``gpuprof.read(report.ncu-rep)`` against NVIDIA's ``ncu_report`` reading every value of the same
  report into a pandas long frame (ratio target <= 1.1), on the real RTX 3080 fixture and any
  reports given with ``--report``: both cold, each a fresh interpreter timed from its start to its
  exit (imports, the read, the frame), in turns, best of seven.

Each measurement runs in its own child process (best of three), so one does not inflate another;
the import and pandas children run in turns, three times each, the best of each kept.
Not part of the test suite: ``python benchmarks/bench_columnar_model.py [--rows N] [--only PART]
[--layout A100]``; ``--only import --layout A100`` (one layout) takes about a minute on a quiet 2-core
machine, ``--only reports`` half a minute, ``--only large --large-rows 6500000`` (a 1 GB file and a
quarter of it) about three, ``--only large --large-rows 64500000`` (10 GB and 2.5 GB files, 13 GB of
free disk in the temporary folder for the larger file, its spill and its store) about fifteen.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from operator import itemgetter
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
    """``gpuprof import PATH --format json`` in-process (fresh store each time)."""
    from gpuprof.cli import main

    stores = iter(range(100))

    def once() -> None:
        store = Path(store_dir) / f"s{next(stores)}.sqlite"
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            main(["import", path, "--format", "json", "--store", str(store)], standalone_mode=False)

    once()  # imports and caches warmed, as in a second command
    return {"seconds": _best(once)}


def large_import(path: str, store_dir: str, as_over_arrow_limit: str = "") -> dict[str, float]:
    """One ``gpuprof import PATH --format json`` in this fresh process: seconds and peak resident
    memory (the process's own, imports included). With ``as_over_arrow_limit``, the file is read
    the way a file over ``ARROW_MAX_BYTES`` (a 10 GB one) is: pandas' chunks."""
    from gpuprof import importing
    from gpuprof.readers import _ncu_csv_bulk

    if as_over_arrow_limit:  # pandas' chunks, and straight into the store chunk by chunk
        _ncu_csv_bulk.ARROW_MAX_BYTES = importing.STREAM_MIN_BYTES = 0
    import pandas  # noqa: F401 - the libraries loaded first: their memory is not the file's

    with contextlib.suppress(ImportError):  # without pyarrow, pandas parses
        from pyarrow import compute, csv  # noqa: F401

    from gpuprof.cli import main

    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(
            ["import", path, "--format", "json", "--store", str(Path(store_dir) / "large.sqlite")],
            standalone_mode=False,
        )
    return {
        "seconds": time.perf_counter() - start,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "loaded_rss_bytes": loaded,
    }


def large_file(rows: int, fixture: Path) -> None:
    """Peak memory of importing ``rows`` and ``rows // 4`` rows, and the line through them at 10 GB
    (both read as a file over ``ARROW_MAX_BYTES`` is, as a 10 GB file would be)."""
    points = []
    for count in (rows // 4, rows):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "large.csv"
            size = build(path, count, fixture)
            result = child("large_import", str(path), tmp, "yes")
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


# A fresh interpreter reading every value of a report with ncu_report into a pandas long frame
# (launch, metric, unit, value): the baseline of the cold .ncu-rep read.
NCU_REPORT_COLD = """
import sys
import ncu_report
import pandas as pd

report = ncu_report.load_report(sys.argv[1])
string = ncu_report.IMetric.ValueKind_STRING
launch, names, units, values = [], [], [], []
for r in range(report.num_ranges()):
    profiled = report.range_by_idx(r)
    for a in range(profiled.num_actions()):
        action = profiled.action_by_idx(a)
        for name in action.metric_names():
            metric = action.metric_by_name(name)
            if metric is not None and metric.has_value():
                launch.append(a)
                names.append(name)
                units.append(metric.unit())
                values.append(metric.as_string() if metric.kind() == string else metric.as_double())
frame = pd.DataFrame({"launch": launch, "metric": names, "unit": units, "value": values})
"""
# The same in gpuprof: a fresh interpreter's gpuprof.read (the report read in its crash-containing
# child, the long metric table and the launch table built, the notes).
GPUPROF_COLD = "import sys, gpuprof; gpuprof.read(sys.argv[1])"


def cold(code: str, path: str) -> float:
    """Wall time of a fresh interpreter running ``code`` on ``path``, from its start to its exit.
    Bytecode is cached as an installed package has it (PYTHONDONTWRITEBYTECODE would make every
    process compile gpuprof's sources again, while the libraries' came compiled)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, path], check=True, capture_output=True, env=env)
    return time.perf_counter() - start


# Import and pandas each time in a child of its own (best of three there), in turns this many times.
ROUNDS = 3

CHILDREN = {f.__name__: f for f in (import_command, large_import, pandas_read, model_parts)}


def child(name: str, *args: str) -> dict[str, float]:
    argv = [sys.executable, __file__, "--child", name, *args]
    return json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)


def parser_used() -> str:
    """Which parser a details CSV up to 1 GB goes to in this installation (the first one present)."""
    from gpuprof.readers import _ncu_csv_bulk

    if _ncu_csv_bulk._ncu_csv_native is not None:
        return f"gpuprof's C scanner, on {len(os.sched_getaffinity(0))} threads"
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return "pandas (neither the C scanner nor pyarrow is installed)"
    return "pyarrow (the C scanner was not built)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument(
        "--large-rows", type=int, default=13_000_000, help="rows of the large-file memory check (0: skip it)"
    )
    parser.add_argument("--report", action="append", default=[], help="another .ncu-rep to time")
    parser.add_argument(
        "--only", action="append", choices=["import", "large", "reports"], help="run only these parts (repeatable)"
    )
    parser.add_argument("--layout", default="", help="only the layouts whose label holds this (A100, V100, B200)")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child[0]](*args.child[1:])))
        return
    parts = set(args.only or ["import", "large", "reports"])
    layouts = {label: fixture for label, fixture in SOURCES.items() if args.layout in label}
    if "import" in parts:
        print(f"details parser: {parser_used()}")
    for label, fixture in (layouts if "import" in parts else {}).items():
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "details.csv"
            size = build(path, args.rows, fixture)
            ours, theirs = {"seconds": float("inf")}, {"seconds": float("inf")}
            for _ in range(ROUNDS):  # in turns: a slow spell of the machine's meets both alike
                ours = min(ours, child("import_command", str(path), tmp), key=itemgetter("seconds"))
                theirs = min(theirs, child("pandas_read", str(path)), key=itemgetter("seconds"))
            memory = child("large_import", str(path), tmp)
            model = child("model_parts", str(path), tmp)
        print(f"{label}: {args.rows:,} rows, {size / 1e6:.1f} MB")
        print(f"  gpuprof import --format json  {ours['seconds']:6.2f} s   pandas.read_csv {theirs['seconds']:6.2f} s")
        print(f"  rows/s ratio import/pandas: {theirs['seconds'] / ours['seconds']:.2f} (target >= 1.0)")
        rise = memory["peak_rss_bytes"] - memory["loaded_rss_bytes"]
        print(
            f"  import peak memory / file size: {rise / size:.2f} (target <= 2; resident memory of a fresh "
            f"process, its rise over the {memory['loaded_rss_bytes'] / 1e6:.0f} MB of the libraries loaded)"
        )
        print(f"  per-kernel table, {model['launches_in_table']:,} launches: {model['table_s']:.3f} s (target <= 0.3)")
        print(
            f"  store {model['rows']:,} metric rows: {model['store_s']:.3f} s (target <= 1); "
            f"read back: {model['read_s']:.3f} s (target <= 1)"
        )
    if args.large_rows and "large" in parts:
        large_file(args.large_rows, list(SOURCES.values())[1])
    for report in (REPORT, *map(Path, args.report)) if "reports" in parts else ():
        times: dict[str, list[float]] = {"direct": [], "ours": []}
        cold(GPUPROF_COLD, str(report))  # bytecode written once, as installing does
        for _ in range(7):  # in turns, best of seven: the machine's load moves both alike
            times["direct"].append(cold(NCU_REPORT_COLD, str(report)))
            times["ours"].append(cold(GPUPROF_COLD, str(report)))
        direct, ours = min(times["direct"]), min(times["ours"])
        print(
            f"{report.name}, cold in a fresh process: ncu_report every value into a pandas frame "
            f"{direct * 1e3:.0f} ms, gpuprof.read {ours * 1e3:.0f} ms, ratio {ours / direct:.2f} (target <= 1.1)"
        )


if __name__ == "__main__":
    main()
