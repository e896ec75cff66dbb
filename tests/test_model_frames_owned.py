"""The metric table and the launch frame are built on their column arrays without pandas' copy
(tables.owned): each column must still be the frame's own, editable, sharing memory with no other
column and with nothing the caller or a run's counter cache holds."""

from __future__ import annotations

import numpy as np
from fixture_paths import A100

from gpuprof.derive import kernels
from gpuprof.importing import read_file
from gpuprof.model import tables


def test_metric_table_columns_are_its_own() -> None:
    values = np.frombuffer(np.array([1.0, 2.0, 3.0]).tobytes())  # read-only, as a parser's buffer
    bounds = np.array([0.5, 1.5])
    frame = tables.metric_table([0, 0, 1], ["a", "b", "a"], [None] * 3, values, None, ["", "", ""], "measured")
    frame.loc[0, "value"] = 10.0
    frame.loc[1, "minimum"] = 5.0  # minimum and maximum start as NaN: two arrays, not one
    assert values.tolist() == [1.0, 2.0, 3.0]
    assert frame["value"].tolist() == [10.0, 2.0, 3.0] and np.isnan(frame["maximum"]).all()
    same = tables.metric_table([0, 1], ["a", "a"], [None] * 2, [1.0, 2.0], None, ["", ""], "measured", bounds, bounds)
    same.loc[0, "minimum"] = -1.0  # one array given for both: each column its own
    assert same["maximum"].tolist() == [0.5, 1.5] and bounds.tolist() == [0.5, 1.5]


def test_launch_frame_edits_touch_nothing_else() -> None:
    run = read_file(A100)
    frame = kernels.launch_frame(run)
    check, time = frame["dram_check_bytes"].tolist(), frame["time"].tolist()
    frame.loc[0, "dram_bytes"] = -1.0  # dram_check_bytes is the same array in the derivation
    frame.loc[0, "time"] = -1.0
    assert frame["dram_check_bytes"].tolist() == check
    again = kernels.launch_frame(run)  # the run's cached counters are untouched
    assert again["time"].tolist() == time and again["dram_bytes"].iloc[0] != -1.0
