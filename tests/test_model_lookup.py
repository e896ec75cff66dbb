"""tables.lookup (the pivot every derivation reads) finds what Launch.metric finds, launch by launch,
whether a launch has a key once (a details CSV) or twice (two tool names of one canonical counter),
in C (gpuprof/model/_lookup_native.c, where it was built) and in NumPy alike."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fixture_paths import A100, B200, K40C, SRAD, V100

from gpuprof import read
from gpuprof.model import Launch, Metric, from_launches, tables

KEYS = ["cycles", "sm__cycles_elapsed.avg", "dram__bytes.sum", "occupancy", "absent"]


def _launches(twice: bool) -> list[Launch]:
    """Three launches; with ``twice`` the second has the canonical 'cycles' under two tool names
    (the first row counts) and 'occupancy' twice (a text first: NaN, and its unit)."""
    second = [
        Metric("dram__bytes.sum", 2048.0, "byte"),
        Metric("sm__cycles_elapsed.avg", 900.0, "cycle", canonical="cycles"),
    ]
    if twice:
        second += [
            Metric("smsp__cycles_elapsed.avg", 300.0, "cycle", canonical="cycles"),
            Metric("occupancy", "n/a", "%"),
            Metric("occupancy", 50.0, "%"),
        ]
    return [
        Launch("k", 0, metrics=[Metric("sm__cycles_elapsed.avg", 100.0, "cycle", canonical="cycles")]),
        Launch("k", 1, metrics=second),
        Launch("k", 2, metrics=[Metric("occupancy", 75.0, "%"), Metric("dram__bytes.sum", 1.0, "kilobyte")]),
    ]


@pytest.fixture(params=["C", "NumPy"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test once per pass: C's (skipped where the extension was not built) and NumPy's."""
    if request.param == "C" and tables._native_fill is None:
        pytest.skip("the C pivot was not built (no compiler)")
    if request.param == "NumPy":
        monkeypatch.setattr(tables, "_native_fill", None)
    return request.param


@pytest.mark.parametrize("twice", [False, True])
def test_lookup_is_launch_metric_launch_by_launch(twice: bool, path: str) -> None:
    launches = _launches(twice)
    launch_table, metric_table = from_launches(launches)
    values, units = tables.lookup(metric_table, len(launches), KEYS)
    for row, launch in enumerate(launches):
        for column, key in enumerate(KEYS):
            found = launch.metric(key)
            expected = found.value if found is not None and isinstance(found.value, float) else math.nan
            assert values[row, column] == expected or (math.isnan(expected) and math.isnan(values[row, column]))
    # a canonical match hides the tool name; the first row of a launch's two counts; a text is no number
    assert values[0].tolist()[:2] == [100.0, 100.0] and values[1, 0] == 900.0
    assert math.isnan(values[1, 3]) and values[2, 3] == 75.0 and values[2, 2] == 1.0
    # each key's unit is that of its first row; None for a key no row has
    assert units == ["cycle", "cycle", "byte", "%", None]
    assert np.isnan(values[:, 4]).all()


@pytest.mark.parametrize("fixture", [A100, B200, V100, K40C, SRAD], ids=lambda p: p.name[:24])
def test_c_and_numpy_pivot_real_files_alike(fixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every tool and canonical name of a real file (and one no row has), by both passes: the same
    values, NaNs in the same cells, the same units."""
    if tables._native_fill is None:
        pytest.skip("the C pivot was not built (no compiler)")
    run = read(fixture)
    metrics = run.metric_table
    keys = [*metrics["metric"].cat.categories, *metrics["canonical"].cat.categories, "absent"]
    keys = list(dict.fromkeys(keys))
    c_values, c_units = tables.lookup(metrics, len(run.launch_table), keys)
    monkeypatch.setattr(tables, "_native_fill", None)
    values, units = tables.lookup(metrics, len(run.launch_table), keys)
    assert np.array_equal(c_values, values, equal_nan=True) and c_units == units
    assert c_values.flags.f_contiguous and np.isfinite(values).sum() > len(run.launch_table)
    assert units[-1] is None


def test_c_pivot_refuses_arrays_unlike_a_metric_table() -> None:
    """A launch past the output array, or a float where codes go: a ValueError, no write outside."""
    native = pytest.importorskip("gpuprof.model._lookup_native", reason="the C pivot was not built (no compiler)")
    out = np.full(4, np.nan)
    codes, to_key = np.zeros(3, dtype=np.int8), np.array([0, -1], dtype=np.int32)
    with pytest.raises(ValueError, match="outside the output array"):
        native.fill(out, 2, np.array([0, 1, 5], dtype=np.int32), np.ones(3), codes, to_key, codes, to_key)
    with pytest.raises(ValueError, match="other types or lengths"):
        native.fill(out, 2, np.ones(3), np.ones(3), codes, to_key, codes, to_key)
