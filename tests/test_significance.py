"""The statistics behind ``gpuprof diff``'s verdicts, on small tables whose answers are known:
exact Mann–Whitney p-values, SciPy's implementation where the test extra installs it, the project's
spread, a reproducible bootstrap."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpuprof.derive import significance as sig
from gpuprof.derive.stats import timing_stats


def test_exact_p_for_complete_separation_is_two_over_the_number_of_orderings() -> None:
    # Three values a side, every B above every A: U = 0 is 1 of C(6, 3) = 20 orderings, two-sided 2/20.
    test = sig.mann_whitney(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]))
    assert (test.u, test.method) == (0.0, "exact")
    assert test.p == pytest.approx(0.1)


def test_u_distribution_counts_every_ordering_once() -> None:
    counts = sig._u_counts(4, 5)
    assert counts.sum() == math.comb(9, 4)
    assert counts.tolist() == counts[::-1].tolist()  # symmetric about m·n/2


@pytest.mark.parametrize(
    "m,n,shift", [(3, 3, 0.0), (10, 10, 0.05), (5, 12, 0.1), (30, 30, 0.08), (40, 7, 0.02), (200, 300, 0.01)]
)
def test_mann_whitney_agrees_with_scipy(m: int, n: int, shift: float) -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(m * n)
    a, b = rng.normal(1, 0.1, m), rng.normal(1 + shift, 0.1, n)
    test = sig.mann_whitney(a, b)
    method = "exact" if test.method == "exact" else "asymptotic"
    reference = stats.mannwhitneyu(a, b, alternative="two-sided", method=method, use_continuity=True)
    assert test.u == reference.statistic
    assert test.p == pytest.approx(reference.pvalue, rel=1e-9)


def test_ties_use_the_normal_approximation_with_the_tie_correction() -> None:
    stats = pytest.importorskip("scipy.stats")
    a, b = np.array([1, 1, 2, 3, 3, 3, 4.0]), np.array([2, 3, 4, 4, 5, 5, 6.0])
    test = sig.mann_whitney(a, b)
    assert test.method == "normal approximation"
    assert test.p == pytest.approx(stats.mannwhitneyu(a, b, method="asymptotic").pvalue, rel=1e-9)
    assert sig.mann_whitney(np.ones(4), np.ones(6)).p == 1.0  # all tied: nothing to tell apart


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5, 10, 11])
def test_spread_is_the_one_gpuprof_run_reports(count: int) -> None:
    values = list(np.random.default_rng(count).normal(1.0, 0.1, count))
    assert sig.spread(np.array(values)) == pytest.approx(timing_stats(values).spread, rel=1e-12)


def test_bootstrap_interval_is_reproducible_and_covers_the_ratio() -> None:
    rng = np.random.default_rng(7)
    a, b = rng.normal(1.0, 0.02, 20), rng.normal(1.2, 0.02, 20)
    first, again = sig.median_ratio_interval(a, b), sig.median_ratio_interval(a, b)
    assert first == again  # fixed seed: the same inputs print the same interval
    assert first[0] < np.median(b) / np.median(a) < first[1]
    assert 1.15 < first[0] and first[1] < 1.25


def test_a_long_side_is_subsampled_and_resampled_in_chunks() -> None:
    rng = np.random.default_rng(3)
    big = rng.normal(2.0, 0.1, 50_000)
    medians = sig.resample(big, lambda x: np.median(x, axis=1), np.random.default_rng(0), resamples=300)
    assert medians.shape == (300,)
    assert abs(np.median(medians) - 2.0) < 0.01


def test_compare_needs_two_values_a_side_for_a_test() -> None:
    single = sig.compare(np.array([1.0]), np.array([1.1, 1.2, 1.3]))
    assert single.single and single.test is None and single.b == pytest.approx(1.2)
    equal = sig.compare(np.full(5, 3.0), np.full(5, 3.0))
    assert equal.test is None and not equal.single and equal.ratio == 1.0


def test_a_change_within_the_smaller_spread_is_not_significant() -> None:
    rng = np.random.default_rng(11)
    wide = rng.normal(1.0, 0.2, 400)
    change = sig.compare(wide, wide * 1.05)
    assert change.test.p < sig.ALPHA  # the shift is real for the rank test ...
    assert change.noise > 0.05 and not change.significant  # ... but within the runs' own spread
    clear = sig.compare(wide, wide * 1.5)
    assert clear.significant and clear.ci[0] > 1.3
