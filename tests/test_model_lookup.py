"""tables.lookup (the pivot every derivation reads) finds what Launch.metric finds, launch by launch,
whether a launch has a key once (a details CSV) or twice (two tool names of one canonical counter)."""

from __future__ import annotations

import math

import numpy as np
import pytest

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


@pytest.mark.parametrize("twice", [False, True])
def test_lookup_is_launch_metric_launch_by_launch(twice: bool) -> None:
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
