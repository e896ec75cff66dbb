"""The cost of counting per region: a loop with a recorded region per iteration, counted and not.

The loop's body is fixed work of about ``--period`` seconds (NumPy sums, calibrated first). Four
variants run in interleaved rounds (so load from other processes hits them alike): no region (the
baseline), a region per iteration recorded to a regions file, the same with the counter hook reading
a perf_event_open group at every begin and end, and with the replay stand-in. Printed: each
variant's time over the baseline's (median of the rounds' ratios; target <= 1.01 at one region per
10 ms) and one empty counted region's cost measured directly.

Events: ``--events`` (default the mix set's generic events); where the machine has no PMU the
kernel's software events (task-clock, page-faults, context-switches) go through the same system
call and group read, and the output says so. Not part of the test suite:
``python benchmarks/bench_region_counters.py [--period 0.01] [--rounds 11]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from gpuprof import counting, regions

ITERATIONS = 20
EMPTY = 5_000
HARDWARE = ["instructions", "cycles", "branches", "l1-dcache-loads", "l1-dcache-stores"]
SOFTWARE = ["task-clock", "page-faults", "context-switches"]


def _calibrate(period: float) -> tuple[np.ndarray, int]:
    data = np.random.default_rng(0).random(50_000)
    per = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(50):
            data.sum()
        per = min(per, (time.perf_counter() - start) / 50)
    return data, max(1, round(period / per))


def _loop(data: np.ndarray, repeat: int, region: bool) -> float:
    start = time.perf_counter()
    for i in range(ITERATIONS):
        if region:
            with regions.region("step", index=i):
                for _ in range(repeat):
                    data.sum()
        else:
            for _ in range(repeat):
                data.sum()
    return time.perf_counter() - start


def _empty() -> float:
    start = time.perf_counter()
    for _ in range(EMPTY):
        with regions.region("empty"):
            pass
    return (time.perf_counter() - start) / EMPTY


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--period", type=float, default=0.01)
    parser.add_argument("--rounds", type=int, default=11)
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
    data, repeat = _calibrate(args.period)
    with tempfile.TemporaryDirectory() as tmp:
        replay = Path(tmp) / "replay.json"
        replay.write_text(json.dumps({"events": events, "readings": [[float(i)] * len(events) for i in range(10)]}))
        stand_in = counting.Replay(events, str(replay))
        regions.record_to(Path(tmp) / "regions.jsonl", "bench")
        hooks = {
            "recorded, no counters": None,
            f"recorded, {backend.name if backend else 'no backend'}": backend,
            "recorded, replay stand-in": stand_in,
        }
        ratios: dict[str, list[float]] = {name: [] for name in hooks}
        costs: dict[str, float] = {}
        for _ in range(args.rounds):
            base = _loop(data, repeat, region=False)
            for name, source in hooks.items():
                hook = counting.CounterHook(source) if source is not None else None
                if hook is not None:
                    regions.add_hook(hook)
                ratios[name].append(_loop(data, repeat, region=True) / base)
                if hook is not None:
                    regions.remove_hook(hook)
        for name, source in hooks.items():
            hook = counting.CounterHook(source) if source is not None else None
            if hook is not None:
                regions.add_hook(hook)
            costs[name] = _empty()
            if hook is not None:
                regions.remove_hook(hook)
        regions.record_to(None)
    print(
        f"loop: {ITERATIONS} iterations of ~{base / ITERATIONS * 1e3:.2f} ms work, {args.rounds} interleaved rounds; "
        f"events: {', '.join(events)}"
    )
    for name in hooks:
        values = ratios[name]
        print(
            f"  {name:<34} ratio {statistics.median(values):.4f} (rounds {min(values):.4f}-{max(values):.4f}; "
            f"target <= 1.01)"
        )
        print(
            f"    one empty region: {costs[name] * 1e6:.2f} us; at one region per {args.period * 1e3:g} ms: "
            f"1 + cost/period = {1 + costs[name] / args.period:.5f}"
        )
    if backend is not None:
        backend.close()


if __name__ == "__main__":
    main()
