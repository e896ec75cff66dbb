"""The tight loop both region benchmarks time (bench_regions.py, bench_region_counters.py), made robust
to load from other processes.

The loop's body is fixed work of about ``period`` seconds (NumPy sums, calibrated on the fastest of
five batches). Each iteration is timed on its own, region enter and exit included. Variants run in
interleaved rounds, in a rotated order each round, so drift and bursts of load hit them alike; a
round keeps each variant's median iteration. Load only ever adds time, so the ratio reported is the
minimum over rounds of a variant's medians over the baseline's (the "min of medians": the loop as the
machine runs it when nothing else interferes); the median of the rounds' own ratios and their range
are printed beside it to show the noise.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext

import numpy as np

from gpuprof import regions

ITERATIONS = 20


class Loop:
    """``ITERATIONS`` iterations of about ``period`` seconds of NumPy work each."""

    def __init__(self, period: float) -> None:
        self.data = np.random.default_rng(0).random(50_000)
        per = float("inf")
        for _ in range(5):  # the fastest batch: the machine's own speed, not its load at that moment
            start = time.perf_counter()
            for _ in range(50):
                self.data.sum()
            per = min(per, (time.perf_counter() - start) / 50)
        self.repeat = max(1, round(period / per))

    def _work(self) -> None:
        for _ in range(self.repeat):
            self.data.sum()

    def run(self, with_regions: bool) -> list[float]:
        """Seconds per iteration, each with its region's begin and end when ``with_regions``."""
        times = []
        clock = time.perf_counter
        if with_regions:
            for i in range(ITERATIONS):
                start = clock()
                with regions.region("step", index=i):
                    self._work()
                times.append(clock() - start)
        else:
            for _ in range(ITERATIONS):
                start = clock()
                self._work()
                times.append(clock() - start)
        return times


Setup = Callable[[], AbstractContextManager[object]]


def interleaved(loop: Loop, variants: dict[str, tuple[bool, Setup]], rounds: int) -> dict[str, list[float]]:
    """Per variant (name -> (with regions, set-up around its loop)), its median iteration of each
    round; every round runs every variant once, in a rotated order."""
    names = list(variants)
    medians: dict[str, list[float]] = {name: [] for name in names}
    for number in range(rounds):
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            with_regions, setup = variants[name]
            with setup():
                medians[name].append(statistics.median(loop.run(with_regions)))
    return medians


def no_setup() -> AbstractContextManager[object]:
    return nullcontext()


def ratios(medians: dict[str, list[float]], base: str) -> Iterator[tuple[str, float, float, float, float]]:
    """Per variant but the baseline: (name, min of medians ratio, median of round ratios, lowest, highest)."""
    floor = min(medians[base])
    for name, found in medians.items():
        if name == base:
            continue
        rounds = [value / reference for value, reference in zip(found, medians[base], strict=True)]
        yield name, min(found) / floor, statistics.median(rounds), min(rounds), max(rounds)


def empty_cost(count: int, batches: int = 5) -> tuple[float, float]:
    """Seconds per empty region (enter and exit, nothing inside), wall and this process's CPU time,
    each the best of ``batches`` batches (CPU time: what it costs when other processes share the cores)."""
    wall = cpu = float("inf")
    for _ in range(batches):
        start, used = time.perf_counter(), time.process_time()
        for i in range(count):
            with regions.region("step", index=i):
                pass
        wall = min(wall, (time.perf_counter() - start) / count)
        cpu = min(cpu, (time.process_time() - used) / count)
    return wall, cpu
