"""The tight loop both region benchmarks time (bench_regions.py, bench_region_counters.py), made robust
to load from other processes and to this VM's own jitter.

The loop's body is fixed work of about ``period`` seconds (NumPy sums, calibrated on the fastest of
five batches). Iterations come in pairs, back to back: one with a region around the work, one without,
their order alternating from pair to pair, each timed on two clocks: wall time (``perf_counter``) and
this thread's CPU time (``thread_time``). A pair's ratio compares two iterations milliseconds apart, so
drift and slow bursts of load cancel; the ratio reported is the median over all pairs (1,000 by default)
with its interquartile range. (Whole loops of 50 iterations compared round by round swung from 0.70 to
1.34 on a 2-core VM, too wide to see 1 %.)
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import numpy as np

from gpuprof import regions

PAIRS = 1000


class Loop:
    """Iterations of about ``period`` seconds of NumPy work each."""

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

    def once(self, with_region: bool, index: int) -> tuple[float, float]:
        """Wall and thread CPU seconds of one iteration, its region's begin and end included."""
        start, used = time.perf_counter(), time.thread_time()
        if with_region:
            with regions.region("step", index=index):
                self._work()
        else:
            self._work()
        return time.perf_counter() - start, time.thread_time() - used


Setup = Callable[[], AbstractContextManager[object]]


@dataclass
class Pairs:
    """Per pair, the iteration with a region over the one without, on the wall and the CPU clock."""

    wall: list[float]
    cpu: list[float]
    seconds: float  # the median iteration without a region

    def quartiles(self, clock: str = "wall") -> tuple[float, float, float]:
        low, middle, high = statistics.quantiles(getattr(self, clock), n=4)
        return low, middle, high


def paired(loop: Loop, setup: Setup, pairs: int = PAIRS) -> Pairs:
    """``pairs`` pairs of iterations under ``setup`` (e.g. recording to a regions file), alternating
    which of the two comes first."""
    walls, cpus, plain = [], [], []
    with setup():
        for index in range(pairs):
            order = (True, False) if index % 2 else (False, True)
            timed = {with_region: loop.once(with_region, index) for with_region in order}
            walls.append(timed[True][0] / timed[False][0])
            cpus.append(timed[True][1] / timed[False][1])
            plain.append(timed[False][0])
    return Pairs(walls, cpus, statistics.median(plain))


def no_setup() -> AbstractContextManager[object]:
    return nullcontext()


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
