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


def _reference(metrics, launches: int, keys: list[str]) -> tuple[np.ndarray, list[str | None]]:
    """The pivot read off its definition, row by row: per launch and key the first row whose
    canonical name is the key, else the first whose tool name is; a key's unit that of the first
    row its canonical name gives a cell, else of the first its tool name gives one."""
    rows = list(zip(metrics["launch"], metrics["metric"], metrics["canonical"], metrics["value"], metrics["unit"]))
    out = np.full((launches, len(keys)), np.nan)
    units: list[str | None] = [None] * len(keys)
    for column, key in enumerate(keys):
        by_canonical = [row for row in rows if row[2] == key]
        by_name = [row for row in rows if row[1] == key and not any(r[0] == row[0] for r in by_canonical)]
        for found in (by_canonical, by_name):
            for launch in range(launches):
                first = next((row for row in found if row[0] == launch), None)
                if first is not None:
                    out[launch, column] = first[3]
            if found and units[column] is None:
                units[column] = found[0][4]
    return out, units


@pytest.mark.parametrize("seed", range(4))
def test_random_tables_pivot_as_row_by_row(seed: int, path: str) -> None:
    """Small random tables (a key twice in a launch, canonical names missing, a key no row has):
    the pivot of either pass is the row-by-row reading of its definition."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    names = [f"n{i}" for i in range(6)]
    for _ in range(60):
        rows, launches = int(rng.integers(1, 40)), int(rng.integers(1, 5))
        canonical = [None if rng.random() < 0.3 else names[i] for i in rng.integers(0, 6, rows)]
        metrics = pd.DataFrame(
            {
                "launch": np.sort(rng.integers(0, launches, rows)).astype(np.int32),
                "metric": pd.Categorical([names[i] for i in rng.integers(0, 6, rows)]),
                "canonical": pd.Categorical(canonical),
                "value": np.where(rng.random(rows) < 0.1, np.nan, rng.random(rows)),
                "unit": pd.Categorical([f"u{i}" for i in rng.integers(0, 3, rows)]),
            }
        )
        keys = list(dict.fromkeys(rng.choice([*names, "absent"], int(rng.integers(1, 6))).tolist()))
        values, units = tables.lookup(metrics, launches, keys)
        expected, expected_units = _reference(metrics, launches, keys)
        assert np.array_equal(values, expected, equal_nan=True) and units == expected_units


def test_no_launches_and_unsigned_launch_columns(path: str) -> None:
    """No launches: an empty pivot, not an error; a launch column of another integer type (what a
    caller's frame may hold): the same pivot as the table's own int32 one."""
    launch_table, metric_table = from_launches(_launches(True))
    values, units = tables.lookup(metric_table, 0, KEYS)
    assert values.shape == (0, len(KEYS)) and units == [None] * len(KEYS)
    expected = tables.lookup(metric_table, len(launch_table), KEYS)
    unsigned = metric_table.assign(launch=metric_table["launch"].astype(np.uint32))
    got = tables.lookup(unsigned, len(launch_table), KEYS)
    assert np.array_equal(got[0], expected[0], equal_nan=True) and got[1] == expected[1]
