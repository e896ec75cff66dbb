"""The timed loop: warm-up calls, then repeats, each timed on its own with ``perf_counter_ns``.

``calls`` holds one prepared call per buffer set. Warm mode passes one set, so after warm-up the
operands are as cache-resident as their size allows; cold mode passes several sets whose total is
larger than the last-level cache, and the loop rotates through them so each repeat starts with its
operands evicted. ``around`` (hardware counters, energy meters) is entered for the timed repeats only. ``progress``
hears about each call between calls, never inside the timed part.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack

Progress = Callable[[str, int, int], None]  # ("warm-up" or "repeat", calls done, calls in all)


def time_calls(
    calls: Sequence[Callable[[], object]],
    warmup: int,
    repeat: int,
    around: Sequence[AbstractContextManager[object]] = (),
    progress: Progress | None = None,
) -> list[float]:
    """Seconds taken by each of ``repeat`` timed calls, after ``warmup`` untimed ones."""
    count = len(calls)
    for i in range(warmup):
        calls[i % count]()
        if progress:
            progress("warm-up", i + 1, warmup)
    times: list[float] = []
    clock = time.perf_counter_ns
    with ExitStack() as stack:
        for context in around:
            stack.enter_context(context)
        for i in range(repeat):
            call = calls[(warmup + i) % count]
            start = clock()
            call()
            times.append((clock() - start) * 1e-9)
            if progress:
                progress("repeat", i + 1, repeat)
    return times
