"""What the results store costs `gpuprof run` and `gpuprof compare` as it grows.

`run` opens its store before measuring (a store that cannot be written fails first), looks up this
host's calibrated ceilings, and stores the run after: that store part is timed here (the measurement
itself does not depend on the store) on stores of 10, 1,000 and 10,000 runs, against an empty store
built in the same process and timed in turns with it. Target: at most 1.2x at 10,000 runs. `--resume`'s lookup of a sweep's done
points is timed the same way. `compare` (loading every run and building the comparison) is timed at
every size from 100 runs (the best of 3 up to 1,000 runs, one pass above), with its cost per run:
near-linear means about 10x the time for 10x the runs, the same milliseconds per run at every size.

    python benchmarks/bench_store_scaling.py                 # 10, 100, 1,000, 10,000 runs (about 10 min on 2 cores)
    python benchmarks/bench_store_scaling.py --sizes 10 100 1000 --repeats 3

The stored runs are copies of one real `gpuprof run --op add --size 64KB --device cpu` (new ids),
written into the store's tables directly so that building a 10,000-run store takes seconds.
"""

from __future__ import annotations

import argparse
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from gpuprof.compare import comparison
from gpuprof.measure import _calibrated_peaks
from gpuprof.merge import collect
from gpuprof.store import open_store
from gpuprof.sweep import stored_points


def template(folder: Path) -> Path:
    """A store holding one real CPU run."""
    path = folder / "template.sqlite"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuprof",
            "run",
            "--op",
            "add",
            "--size",
            "64KB",
            "--device",
            "cpu",
            "--repeat",
            "3",
            "--store",
            str(path),
            "--format",
            "json",
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return path


def grown(source: Path, path: Path, runs: int) -> Path:
    """A store of ``runs`` copies of the template's run (each its own id, half of them tagged as points
    of a sweep), written with SQL in one transaction."""
    path.write_bytes(source.read_bytes())
    db = sqlite3.connect(path)
    (run_id,) = db.execute("SELECT run_id FROM runs").fetchone()
    row = db.execute("SELECT * FROM runs WHERE run_id=?", (run_id,)).fetchone()
    columns = db.execute("SELECT tbl, name, encoding, data FROM columns WHERE run_id=?", (run_id,)).fetchall()
    workload = row[6]
    with db:
        db.execute("DELETE FROM runs")
        for number in range(runs):
            new = uuid.UUID(int=number + 1).hex
            tagged = (
                (
                    workload[:-1] + f', "sweep": {{"config": "scale", "point": "p{number}", "device": "cpu", '
                    f'"host": "{platform.node()}"}}}}'
                )
                if number % 2
                else workload
            )
            db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", (new, *row[1:6], tagged, *row[7:]))
            db.executemany("INSERT INTO columns VALUES (?,?,?,?,?)", [(new, *part) for part in columns])
    db.close()
    return path


def store_part_of_run(path: Path) -> float:
    """Seconds of what `gpuprof run` does with the store around its measurement, once."""
    with open_store(path) as store:
        run = store.get(store.run_ids(kind="run")[0])
    run.run_id = uuid.uuid4().hex
    start = time.perf_counter()
    open_store(path).close()  # cli/run.py: the store is writable
    _calibrated_peaks({"host": platform.node(), "name": run.device.get("name")}, str(path))
    with open_store(path) as store:  # api.measure_and_store
        store.add(run)
    return time.perf_counter() - start


def alternating(timed, base: Path, path: Path, repeats: int) -> tuple[float, float]:
    """Median seconds of ``timed`` on ``base`` and on ``path``, taken in turns so that load on the
    machine hits both alike."""
    pairs = [(timed(base), timed(path)) for _ in range(repeats)]
    return statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)


def resume_lookup(path: Path) -> float:
    start = time.perf_counter()
    with open_store(path) as store:
        stored_points(store.workloads('"sweep"'), "scale", "cpu", platform.node())
    return time.perf_counter() - start


def compare_time(path: Path, repeats: int) -> tuple[float, float]:
    """Best wall and CPU seconds of ``repeats`` passes of what `gpuprof compare` computes: every run
    decoded, the rows built. The CPU time is what to compare on a loaded machine (waiting for a core
    is not counted)."""
    wall = cpu = float("inf")
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        runs, _, _ = collect([path], [])
        comparison(runs)
        wall, cpu = min(wall, time.perf_counter() - start), min(cpu, time.process_time() - start_cpu)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1_000, 10_000])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-compare", action="store_true", help="time only the store part of run and --resume")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        source = template(folder)
        with open_store(source) as store:
            one = store.get(store.run_ids()[0])
        empty = folder / "empty.sqlite"
        open_store(empty).close()
        with open_store(empty) as store:  # the baseline: a store holding just the run being stored
            store.add(one)
        print(
            f"{'stored runs':>12} {'run: store part s':>18} {'empty s':>8} {'ratio':>7} "
            f"{'--resume lookup s':>18} {'empty s':>8} {'ratio':>7} {'compare s':>10} {'CPU s':>8} {'CPU ms/run':>11}"
        )
        compares = {}
        for size in args.sizes:
            path = grown(source, folder / f"runs{size}.sqlite", size)
            base_s, run_s = alternating(store_part_of_run, empty, path, args.repeats)
            base_r, resume_s = alternating(resume_lookup, empty, path, args.repeats)
            if size >= 100 and not args.no_compare:
                compares[size] = compare_time(path, 3 if size <= 1_000 else 1)
            wall, cpu = compares.get(size, (0, 0))
            cell = f"{wall:>10.2f} {cpu:>8.2f} {cpu * 1000 / size:>11.1f}" if size in compares else ""
            print(
                f"{size:>12,} {run_s:>18.4f} {base_s:>8.4f} {run_s / base_s:>7.2f} {resume_s:>18.4f} "
                f"{base_r:>8.4f} {resume_s / base_r:>7.2f} {cell}"
            )
        timed = sorted(compares)
        for small, large in zip(timed, timed[1:]):
            print(
                f"compare: {compares[large][1] / compares[small][1]:.1f}x the CPU time "
                f"({compares[large][0] / compares[small][0]:.1f}x the wall time) for {large / small:g}x the runs "
                f"({small:,} -> {large:,})"
            )


if __name__ == "__main__":
    main()
