"""The tight loop both region benchmarks time (bench_regions.py, bench_region_counters.py), made robust
to load from other processes.

The loop's body is fixed work of about ``period`` seconds (NumPy sums, calibrated on the fastest of
five batches). Each iteration is timed on its own, region enter and exit included, on two clocks:
wall time (``perf_counter``) and this thread's CPU time (``thread_time``, which leaves out the time
other processes hold the core, so it stays near the quiet machine's figure under load). Variants run
in interleaved rounds, in a rotated order each round, so drift and bursts of load hit them alike; a
round keeps each variant's median iteration. Load only ever adds time, so the ratio reported is the
minimum over rounds of a variant's medians over the baseline's (the "min of medians": the loop as the
machine runs it when nothing else interferes); the median of the rounds' own wall ratios and their
range are printed beside it to show the noise.
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

    def run(self, with_regions: bool) -> tuple[list[float], list[float]]:
        """Wall and thread CPU seconds per iteration, each with its region's begin and end when
        ``with_regions``."""
        walls, cpus = [], []
        wall, cpu = time.perf_counter, time.thread_time
        for i in range(ITERATIONS):
            start, used = wall(), cpu()
            if with_regions:
                with regions.region("step", index=i):
                    self._work()
            else:
                self._work()
            cpus.append(cpu() - used)
            walls.append(wall() - start)
        return walls, cpus


Setup = Callable[[], AbstractContextManager[object]]


Medians = dict[str, tuple[list[float], list[float]]]


def interleaved(loop: Loop, variants: dict[str, tuple[bool, Setup]], rounds: int) -> Medians:
    """Per variant (name -> (with regions, set-up around its loop)), its median iteration of each
    round, wall and CPU; every round runs every variant once, in a rotated order."""
    names = list(variants)
    medians: Medians = {name: ([], []) for name in names}
    for number in range(rounds):
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            with_regions, setup = variants[name]
            with setup():
                walls, cpus = loop.run(with_regions)
            medians[name][0].append(statistics.median(walls))
            medians[name][1].append(statistics.median(cpus))
    return medians


def no_setup() -> AbstractContextManager[object]:
    return nullcontext()


def ratios(medians: Medians, base: str) -> Iterator[tuple[str, float, float, float, float, float]]:
    """Per variant but the baseline: (name, min of medians wall ratio, the same on CPU time, median
    of the rounds' wall ratios, lowest, highest)."""
    walls, cpus = medians[base]
    for name, (found, used) in medians.items():
        if name == base:
            continue
        rounds = [value / reference for value, reference in zip(found, walls, strict=True)]
        yield name, min(found) / min(walls), min(used) / min(cpus), statistics.median(rounds), min(rounds), max(rounds)


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
