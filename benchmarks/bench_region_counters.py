"""The cost of counting per region: a loop with a recorded region per iteration, counted and not.

Pairs of ~``--period`` s iterations, one with a recorded region and one without, back to back in
alternating order (benchmarks/_region_loop.py): the region without counters, with the counter hook
reading a perf_event_open group at every begin and end, and with the replay stand-in. Printed: the
median of the pairs' ratios (target <= 1.01 at one region per 10 ms) with its quartiles, and one
empty counted region's cost measured directly.

Events: ``--events`` (default the mix set's generic events); where the machine has no PMU the
kernel's software events (task-clock, page-faults, context-switches) go through the same system
call and group read, and the output says so. About 70 s with the defaults on an idle core. Not part
of the test suite: ``python benchmarks/bench_region_counters.py [--period 0.01] [--pairs 1000]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from _region_loop import PAIRS, Loop, empty_cost, no_setup, paired

from gpuprof import counting, regions

EMPTY = 5_000
HARDWARE = ["instructions", "cycles", "branches", "l1-dcache-loads", "l1-dcache-stores"]
SOFTWARE = ["task-clock", "page-faults", "context-switches"]


def _hooked(source: Any) -> Callable[[], AbstractContextManager[object]]:
    @contextlib.contextmanager
    def setup() -> Iterator[None]:
        hook = counting.CounterHook(source)
        regions.add_hook(hook)
        try:
            yield
        finally:
            regions.remove_hook(hook)

    return setup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--period", type=float, default=0.01)
    parser.add_argument("--pairs", type=int, default=PAIRS)
    parser.add_argument("--events", default=",".join(HARDWARE))
    args = parser.parse_args()
    events = args.events.split(",")
    backend, reasons = counting.choose(events)
    if backend is None:
        backend, more = counting.choose(SOFTWARE)
        reasons += [f"fallback to the kernel's software events {SOFTWARE}: {line}" for line in more]
        events = SOFTWARE
    for line in reasons:
        print(f"backend {line}")
    loop = Loop(args.period)
    with tempfile.TemporaryDirectory() as tmp:
        replay = Path(tmp) / "replay.json"
        replay.write_text(json.dumps({"events": events, "readings": [[float(i)] * len(events) for i in range(10)]}))
        stand_in = counting.Replay(events, str(replay))
        regions.record_to(Path(tmp) / "regions.jsonl", "bench")
        variants = {
            "recorded, no counters": no_setup,
            f"recorded, {backend.name if backend else 'no backend'}": _hooked(backend) if backend else no_setup,
            "recorded, replay stand-in": _hooked(stand_in),
        }
        found = {name: paired(loop, setup, args.pairs) for name, setup in variants.items()}
        costs = {}
        for name, setup in variants.items():
            with setup():
                costs[name] = empty_cost(EMPTY)
        regions.record_to(None)
    seconds = found["recorded, no counters"].seconds
    print(
        f"loop: {args.pairs:,} pairs of iterations of ~{seconds * 1e3:.2f} ms work (median), with and without a "
        f"region, in alternating order; events: {', '.join(events)}"
    )
    for name, pairs in found.items():
        low, middle, high = pairs.quartiles()
        _, cpu_middle, _ = pairs.quartiles("cpu")
        print(
            f"  {name:<26} ratio {middle:.4f} wall, {cpu_middle:.4f} CPU (median of pairs; target <= 1.01); "
            f"quartiles {low:.4f}-{high:.4f}"
        )
        wall, cpu = costs[name]
        print(
            f"    one empty region: {wall * 1e6:.2f} us wall, {cpu * 1e6:.2f} us CPU; at one region per "
            f"{args.period * 1e3:g} ms: 1 + wall/period = {1 + wall / args.period:.5f}"
        )
    if backend is not None:
        backend.close()


if __name__ == "__main__":
    main()
