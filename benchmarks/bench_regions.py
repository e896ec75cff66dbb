"""The cost of regions on a tight loop: the same loop with and without a region per iteration.

Three variants of a loop of ~``--period`` s iterations (benchmarks/_region_loop.py: interleaved,
rotated rounds; min of medians): no region (the baseline), a region per iteration while nothing
records, and a region per iteration recorded to a regions file (as under ``gpuprof profile``).
Printed: each variant's ratio to the baseline (target <= 1.01 at one region per 10 ms), the rounds'
spread, and the cost of one region measured directly on empty regions (what the ratio should be:
1 + cost / period).

Recording goes to a temporary file, removed at the end. About 15 s with the defaults on an idle
core. Not part of the test suite: ``python benchmarks/bench_regions.py [--period 0.01] [--rounds 15]``.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from _region_loop import ITERATIONS, Loop, empty_cost, interleaved, no_setup, ratios

from gpuprof import regions

EMPTY = 20_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--period", type=float, default=0.01, help="seconds of work per iteration (one region each)")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    loop = Loop(args.period)
    idle_cost = empty_cost(EMPTY)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "regions.jsonl"

        @contextlib.contextmanager
        def recording() -> Iterator[None]:
            regions.record_to(path, "bench")
            try:
                yield
            finally:
                regions.record_to(None)

        medians = interleaved(
            loop,
            {"no region": (False, no_setup), "not recording": (True, no_setup), "recording": (True, recording)},
            args.rounds,
        )
        with recording():
            recording_cost = empty_cost(EMPTY)
        lines = sum(1 for _ in path.open())
    period = min(medians["no region"][0])
    print(
        f"loop: {ITERATIONS} iterations of {period * 1e3:.2f} ms work (fastest round's median), {args.rounds} "
        f"interleaved rounds; {lines:,} lines recorded"
    )
    costs = {"not recording": idle_cost, "recording": recording_cost}
    for name, floor, cpu_floor, middle, low, high in ratios(medians, "no region"):
        wall, cpu = costs[name]
        print(
            f"  region per iteration, {name:>13}: ratio {floor:.4f} wall, {cpu_floor:.4f} CPU (min of medians; "
            f"target <= 1.01); rounds' wall ratios median {middle:.4f}, {low:.4f}-{high:.4f}"
        )
        print(
            f"    one empty region: {wall * 1e6:.2f} us wall, {cpu * 1e6:.2f} us CPU; at one region per "
            f"{args.period * 1e3:g} ms: 1 + wall/period = {1 + wall / args.period:.5f}"
        )


if __name__ == "__main__":
    main()
