"""Aggregation of repeated timings: median, minimum, spread and a stability flag."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

# A run whose interquartile range exceeds this share of its median is flagged unstable.
UNSTABLE_SPREAD = 0.10


@dataclass(frozen=True)
class TimingStats:
    count: int
    median: float
    minimum: float
    maximum: float
    mean: float
    spread: float  # interquartile range / median (0 for fewer than 4 samples: max-min / median)
    stable: bool


def timing_stats(times: list[float]) -> TimingStats:
    """Summary of repeat times in seconds; ValueError on an empty list."""
    if not times:
        raise ValueError("no timings")
    ordered = sorted(times)
    median = statistics.median(ordered)
    if len(ordered) >= 4:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
        width = q3 - q1
    else:
        width = ordered[-1] - ordered[0]
    spread = width / median if median > 0 else 0.0
    return TimingStats(
        len(ordered), median, ordered[0], ordered[-1], statistics.fmean(ordered), spread, spread <= UNSTABLE_SPREAD
    )
