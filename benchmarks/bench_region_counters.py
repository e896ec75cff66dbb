"""The cost of counting per region: a loop with a recorded region per iteration, counted and not.

Four variants of a loop of ~``--period`` s iterations (benchmarks/_region_loop.py: interleaved,
rotated rounds; min of medians): no region (the baseline), a region per iteration recorded to a
regions file, the same with the counter hook reading a perf_event_open group at every begin and end,
and with the replay stand-in. Printed: each variant's ratio to the baseline (target <= 1.01 at one
region per 10 ms), the rounds' spread, and one empty counted region's cost measured directly.

Events: ``--events`` (default the mix set's generic events); where the machine has no PMU the
kernel's software events (task-clock, page-faults, context-switches) go through the same system
call and group read, and the output says so. About 25 s with the defaults on an idle core. Not part
of the test suite: ``python benchmarks/bench_region_counters.py [--period 0.01] [--rounds 15]``.
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

from _region_loop import ITERATIONS, Loop, empty_cost, interleaved, no_setup, ratios

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
    parser.add_argument("--rounds", type=int, default=15)
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
            "no region": (False, no_setup),
            "recorded, no counters": (True, no_setup),
            f"recorded, {backend.name if backend else 'no backend'}": (True, _hooked(backend) if backend else no_setup),
            "recorded, replay stand-in": (True, _hooked(stand_in)),
        }
        medians = interleaved(loop, variants, args.rounds)
        costs = {}
        for name, (_, setup) in list(variants.items())[1:]:
            with setup():
                costs[name] = empty_cost(EMPTY)
        regions.record_to(None)
    print(
        f"loop: {ITERATIONS} iterations of ~{min(medians['no region'][0]) * 1e3:.2f} ms work (fastest round's median), "
        f"{args.rounds} interleaved rounds; events: {', '.join(events)}"
    )
    for name, floor, cpu_floor, middle, low, high in ratios(medians, "no region"):
        print(
            f"  {name:<26} ratio {floor:.4f} wall, {cpu_floor:.4f} CPU (min of medians; target <= 1.01); "
            f"rounds' wall ratios median {middle:.4f}, {low:.4f}-{high:.4f}"
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
