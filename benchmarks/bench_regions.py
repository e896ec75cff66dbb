"""The cost of regions on a tight loop: the same loop with and without a region per iteration.

Pairs of ~``--period`` s iterations, one with a region and one without, back to back in alternating
order (benchmarks/_region_loop.py): a region while nothing records, and a region recorded to a regions
file (as under ``gpuprof profile``). Printed: the median of the pairs' ratios (target <= 1.01 at one
region per 10 ms) with its quartiles, and the cost of one region measured directly on empty regions
(what the ratio should be: 1 + cost / period).

Recording goes to a temporary file (its header; this process's lines go to a segment beside it),
removed at the end. About 45 s with the defaults on an idle core. Not part of the test suite:
``python benchmarks/bench_regions.py [--period 0.01] [--pairs 1000]``.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from _region_loop import PAIRS, Loop, empty_cost, no_setup, paired

from gpuprof import regions
from gpuprof.readers import regions as region_reader

EMPTY = 20_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--period", type=float, default=0.01, help="seconds of work per iteration (one region each)")
    parser.add_argument("--pairs", type=int, default=PAIRS)
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

        found = {"not recording": paired(loop, no_setup, args.pairs), "recording": paired(loop, recording, args.pairs)}
        with recording():
            recording_cost = empty_cost(EMPTY)
        lines = sum(one.read_bytes().count(b"\n") for one in [path, *region_reader.segments(path)])
    print(
        f"loop: {args.pairs:,} pairs of iterations of {found['not recording'].seconds * 1e3:.2f} ms work (median), "
        f"with and without a region, in alternating order; {lines:,} lines recorded"
    )
    costs = {"not recording": idle_cost, "recording": recording_cost}
    for name, pairs in found.items():
        low, middle, high = pairs.quartiles()
        _, cpu_middle, _ = pairs.quartiles("cpu")
        wall, cpu = costs[name]
        print(
            f"  region per iteration, {name:>13}: ratio {middle:.4f} wall, {cpu_middle:.4f} CPU (median of pairs; "
            f"target <= 1.01); quartiles {low:.4f}-{high:.4f}"
        )
        print(
            f"    one empty region: {wall * 1e6:.2f} us wall, {cpu * 1e6:.2f} us CPU; at one region per "
            f"{args.period * 1e3:g} ms: 1 + wall/period = {1 + wall / args.period:.5f}"
        )


if __name__ == "__main__":
    main()
