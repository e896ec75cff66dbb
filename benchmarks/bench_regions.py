"""The cost of regions on a tight loop: the same loop with and without a region per iteration.

The loop's body is fixed work of about ``--period`` seconds (10 ms: NumPy sums, calibrated first).
Three variants run in interleaved rounds, so clock drift and load from other processes hit them
alike: no region (the baseline), a region per iteration while nothing records, and a region per
iteration recorded to a regions file (as under ``gpuprof profile``). Printed: each variant's time
over the baseline's (median of the rounds' ratios, target <= 1.01 at one region per 10 ms), and the
cost of one region measured directly on empty regions (what the ratio should be: 1 + cost / period).

Each variant runs in this one process; recording goes to a temporary file, removed at the end.
Not part of the test suite: ``python benchmarks/bench_regions.py [--period 0.01] [--rounds 15]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from gpuprof import regions

ITERATIONS = 20
EMPTY = 20_000


def _calibrate(period: float) -> tuple[np.ndarray, int]:
    """An array and a repeat count whose sums take about ``period`` seconds."""
    data = np.random.default_rng(0).random(50_000)
    per = float("inf")
    for _ in range(5):  # the fastest batch: the machine's own speed, not its load at that moment
        start = time.perf_counter()
        for _ in range(50):
            data.sum()
        per = min(per, (time.perf_counter() - start) / 50)
    return data, max(1, round(period / per))


def _work(data: np.ndarray, repeat: int) -> None:
    for _ in range(repeat):
        data.sum()


def _loop(data: np.ndarray, repeat: int, with_regions: bool) -> float:
    start = time.perf_counter()
    if with_regions:
        for i in range(ITERATIONS):
            with regions.region("step", index=i):
                _work(data, repeat)
    else:
        for _ in range(ITERATIONS):
            _work(data, repeat)
    return time.perf_counter() - start


def _empty_region_cost() -> tuple[float, float]:
    """Seconds per region (enter and exit, nothing inside), wall and this process's CPU time, the
    best of five batches (CPU time: what it costs when other processes share the cores)."""
    wall = cpu = float("inf")
    for _ in range(5):
        start, used = time.perf_counter(), time.process_time()
        for i in range(EMPTY):
            with regions.region("step", index=i):
                pass
        wall = min(wall, (time.perf_counter() - start) / EMPTY)
        cpu = min(cpu, (time.process_time() - used) / EMPTY)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--period", type=float, default=0.01, help="seconds of work per iteration (one region each)")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    data, repeat = _calibrate(args.period)
    idle_cost = _empty_region_cost()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "regions.jsonl"
        ratios: dict[str, list[float]] = {"not recording": [], "recording": []}
        base_times = []
        for _ in range(args.rounds):
            base = _loop(data, repeat, False)
            idle = _loop(data, repeat, True)
            regions.record_to(path, "bench")
            recorded = _loop(data, repeat, True)
            regions.record_to(None)
            base_times.append(base)
            ratios["not recording"].append(idle / base)
            ratios["recording"].append(recorded / base)
        regions.record_to(path, "bench")
        recording_cost = _empty_region_cost()
        regions.record_to(None)
        lines = sum(1 for _ in path.open())
    period = statistics.median(base_times) / ITERATIONS
    print(
        f"loop: {ITERATIONS} iterations of {period * 1e3:.2f} ms work, {args.rounds} interleaved rounds; "
        f"{lines:,} lines recorded"
    )
    for name, (wall, cpu) in (("not recording", idle_cost), ("recording", recording_cost)):
        found = ratios[name]
        print(
            f"  region per iteration, {name:>13}: ratio {statistics.median(found):.4f} "
            f"(rounds {min(found):.4f}-{max(found):.4f}; target <= 1.01)"
        )
        print(
            f"    one empty region: {wall * 1e6:.2f} us wall, {cpu * 1e6:.2f} us CPU; at one region per "
            f"{args.period * 1e3:g} ms: 1 + wall/period = {1 + wall / args.period:.5f}"
        )


if __name__ == "__main__":
    main()
