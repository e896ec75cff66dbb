"""Is a change between two sets of measurements real? Mann–Whitney U, a bootstrap interval of the
ratio, and the runs' own spread, in NumPy (no SciPy dependency).

Repeat times and per-launch counter values are rarely normal (a few slow outliers, discrete clock
steps), so the test is on ranks: Mann–Whitney U, two-sided, exact when both sides are small and
free of ties, else the normal approximation with tie and continuity corrections. A test on
within-run repeats cannot see run-to-run drift (another process, a clock step between the runs),
so a change must also exceed the smaller of the two runs' spread (interquartile range over the
median), as nvbench's compare script calls a change within the smaller noise "SAME". The size of
a change comes with a percentile-bootstrap 95 % interval of the ratio of the two statistics
(medians per kernel, means for totals), from a fixed seed so the same inputs print the same
interval. Pure functions: no files, no printing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

ALPHA = 0.05  # two-sided significance level of the Mann–Whitney test
CONFIDENCE = 0.95  # of the bootstrap interval
RESAMPLES = 2000  # bootstrap resamples per side
SEED = 0  # the bootstrap's generator seed: identical inputs give identical intervals
EXACT_LIMIT = 30  # exact U distribution up to this many values a side (without ties)
BOOTSTRAP_ROWS = 1000  # rows per side the bootstrap resamples; a larger side is subsampled first
_CHUNK = 4_000_000  # elements per resampling step, to bound memory on long profiles


def spread(values: np.ndarray) -> float:
    """Interquartile range / median, as :func:`gpuprof.derive.stats.timing_stats` computes it
    ((max - min) / median below 4 values); NaN for no values or a zero median."""
    values = np.asarray(values, dtype=float)
    if not len(values):
        return math.nan
    median = float(np.median(values))
    if len(values) >= 4:
        q1, q3 = np.percentile(values, [25, 75])  # linear interpolation = statistics' "inclusive"
        width = q3 - q1
    else:
        width = float(values.max() - values.min())
    return abs(width / median) if median else math.nan


def _ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Average ranks (1-based, ties share their mean rank) and the size of each tie group."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    first = np.r_[True, ordered[1:] != ordered[:-1]]
    starts = np.flatnonzero(first)
    sizes = np.diff(np.r_[starts, len(values)])
    ranks = np.empty(len(values))
    ranks[order] = (starts + (sizes + 1) / 2.0)[np.cumsum(first) - 1]
    return ranks, sizes


def _u_counts(m: int, n: int) -> np.ndarray:
    """How many of the C(m+n, m) orderings give each U from 0 to m·n: the coefficients of the
    Gaussian binomial [m+n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i)."""
    counts = np.zeros(m * n + 1)
    counts[0] = 1.0
    for i in range(1, m + 1):
        shifted = counts.copy()
        shifted[n + i :] -= counts[: len(counts) - n - i]  # times (1 - q^(n+i))
        for start in range(i):  # divided by (1 - q^i)
            shifted[start::i] = np.cumsum(shifted[start::i])
        counts = shifted
    return counts


@dataclass(frozen=True)
class RankTest:
    u: float
    p: float
    method: str  # "exact" or "normal approximation"


def mann_whitney(a: np.ndarray, b: np.ndarray) -> RankTest:
    """Two-sided Mann–Whitney U test of ``a`` against ``b`` (each at least one value)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    m, n = len(a), len(b)
    ranks, ties = _ranks(np.concatenate([a, b]))
    u = float(ranks[:m].sum() - m * (m + 1) / 2.0)
    if max(m, n) <= EXACT_LIMIT and (ties == 1).all():
        counts = _u_counts(m, n)
        cumulative = np.cumsum(counts) / counts.sum()
        low = cumulative[int(round(u))]
        high = 1.0 - (cumulative[int(round(u)) - 1] if u >= 1 else 0.0)
        return RankTest(u, min(1.0, 2.0 * min(low, high)), "exact")
    total = m + n
    variance = m * n / 12.0 * ((total + 1) - float((ties**3 - ties).sum()) / (total * (total - 1)))
    if variance <= 0:  # every value tied: nothing distinguishes the sides
        return RankTest(u, 1.0, "normal approximation")
    z = max(abs(u - m * n / 2.0) - 0.5, 0.0) / math.sqrt(variance)
    return RankTest(u, math.erfc(z / math.sqrt(2.0)), "normal approximation")


def _subsample(rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if len(rows) <= BOOTSTRAP_ROWS:
        return rows
    return rows[rng.choice(len(rows), BOOTSTRAP_ROWS, replace=False)]


def _picks(n: int, width: int, rng: np.random.Generator, resamples: int) -> Iterator[np.ndarray]:
    """Chunks of bootstrap draws (resamples × n row indices), each at most :data:`_CHUNK` cells
    of ``width`` values, so memory stays bounded on long profiles."""
    step = max(1, _CHUNK // max(1, n * width))
    for start in range(0, resamples, step):
        yield rng.integers(0, n, size=(min(step, resamples - start), n))


def resample(
    rows: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    rng: np.random.Generator,
    resamples: int = RESAMPLES,
) -> np.ndarray:
    """``statistic`` of ``resamples`` bootstrap resamples of ``rows`` (n values, or n rows × k
    columns resampled together); ``statistic`` reduces axis 1 of (resamples, n[, k]) arrays."""
    rows = _subsample(np.asarray(rows, dtype=float), rng)
    width = int(np.prod(rows.shape[1:], dtype=int)) if rows.ndim > 1 else 1
    return np.concatenate([statistic(rows[picks]) for picks in _picks(len(rows), width, rng, resamples)])


def resample_means(
    values: np.ndarray, weights: np.ndarray, rng: np.random.Generator, resamples: int = RESAMPLES
) -> np.ndarray:
    """Weighted means of ``resamples`` bootstrap resamples of the rows of ``values`` (n × k,
    NaN where a row lacks a column), the rows drawn together: (resamples × k). Each resample is
    a count per row, so the sums are one matrix product instead of a (resamples × n × k) gather."""
    rows = _subsample(np.column_stack([values, weights]), rng)
    values, weights = rows[:, :-1], rows[:, -1]
    known = ~np.isnan(values)
    weighted = np.where(known, values, 0.0) * weights[:, None]
    present = known * weights[:, None]
    parts = []
    n = len(rows)
    for picks in _picks(n, 1, rng, resamples):
        cells = (picks + n * np.arange(len(picks))[:, None]).ravel()
        counts = np.bincount(cells, minlength=len(picks) * n).reshape(len(picks), n).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            parts.append((counts @ weighted) / (counts @ present))
    return np.concatenate(parts)


def interval(ratios: np.ndarray) -> tuple[float, float]:
    """The central :data:`CONFIDENCE` percentile interval of bootstrap ratios (NaN-free)."""
    finite = ratios[np.isfinite(ratios)]
    if not len(finite):
        return math.nan, math.nan
    tail = 50.0 * (1.0 - CONFIDENCE)
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return float(low), float(high)


def median_ratio_interval(a: np.ndarray, b: np.ndarray, seed: int = SEED) -> tuple[float, float]:
    """Bootstrap 95 % interval of median(b) / median(a), each side resampled on its own."""
    rng = np.random.default_rng(seed)
    if np.ptp(a) == 0 and np.ptp(b) == 0:  # constant sides: every resample gives the same ratio
        return float(b[0] / a[0]), float(b[0] / a[0])
    medians_a = resample(a, lambda x: np.median(x, axis=1), rng)
    medians_b = resample(b, lambda x: np.median(x, axis=1), rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        return interval(medians_b / medians_a)


@dataclass(frozen=True)
class Change:
    """Two sets of values compared: medians, ratio, test, interval and the noise floor."""

    a: float
    b: float
    n_a: int
    n_b: int
    test: RankTest | None = None
    ci: tuple[float, float] | None = None  # of the ratio b / a
    noise: float | None = None  # the smaller side's spread

    @property
    def ratio(self) -> float:
        return self.b / self.a if self.a else math.nan

    @property
    def single(self) -> bool:
        return min(self.n_a, self.n_b) < 2

    @property
    def significant(self) -> bool:
        """p < ALPHA and the change exceeds the smaller side's spread."""
        if self.test is None or self.test.p >= ALPHA or not math.isfinite(self.ratio):
            return False
        return abs(self.ratio - 1.0) > (self.noise or 0.0)


def compare(a: np.ndarray, b: np.ndarray, seed: int = SEED) -> Change:
    """Medians of ``a`` and ``b`` (NaNs dropped, each side at least one value) and, with two or
    more values a side that are not the same values, the rank test, the interval and the noise floor."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    change = Change(float(np.median(a)), float(np.median(b)), len(a), len(b))
    constant = np.ptp(a) == 0 and np.ptp(b) == 0 and a[0] == b[0]
    if change.single or constant or (len(a) == len(b) and np.array_equal(np.sort(a), np.sort(b))):
        return change  # one value a side, or the very same values: nothing to test
    floor = np.nanmin([spread(a), spread(b)])
    return Change(
        change.a,
        change.b,
        len(a),
        len(b),
        mann_whitney(a, b),
        median_ratio_interval(a, b, seed),
        float(floor) if math.isfinite(floor) else None,
    )
