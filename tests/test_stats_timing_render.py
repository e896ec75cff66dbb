"""Timing aggregation, the timed loop and the text renderers."""

import json

import pandas as pd

from gpuprof.derive.stats import timing_stats
from gpuprof.model.units import human, parse_number, split_value_unit, to_base
from gpuprof.render import emit
from gpuprof.workloads.timing import time_calls


def test_timing_stats_by_hand():
    s = timing_stats([4.0, 1.0, 3.0, 2.0, 100.0])
    assert s.median == 3.0 and s.minimum == 1.0 and s.maximum == 100.0
    # inclusive quartiles of 1,2,3,4,100 are 2 and 4 -> IQR 2 -> spread 2/3
    assert abs(s.spread - 2 / 3) < 1e-12 and not s.stable
    assert timing_stats([1.0, 1.0, 1.0, 1.0]).stable


def test_time_calls_rotates_and_counts():
    seen = []
    calls = [lambda i=i: seen.append(i) for i in range(3)]
    times = time_calls(calls, warmup=2, repeat=4)
    assert len(times) == 4 and all(t >= 0 for t in times)
    assert seen == [0, 1, 2, 0, 1, 2]


def test_units():
    assert to_base(1.5, "Kbyte") == (1500.0, "byte")
    assert to_base(865.08, "MB/s") == (865.08e6, "byte/second")
    assert to_base(1.096, "cycle/nsecond") == (1.096e9, "hertz")
    assert to_base(3, "usecond") == (3e-6, "second")
    assert to_base(2, "KiB") == (2048, "byte")
    assert to_base(7, "furlong") == (7, "furlong")
    assert parse_number("5,323,503,232.00") == 5323503232.0
    assert parse_number("28.053379%") == 28.053379
    assert parse_number("n/a") is None
    assert split_value_unit("1.5910GB/s") == (1.591, "GB/s")
    assert human(0.00512, "second") == "5.12 ms"
    assert human(3.9e11, "FLOP/second") == "390 GFLOP/s"


def test_renderers_escape_and_parse_back():
    frame = pd.DataFrame({"kernel": ["void f<float>(T*) <script>", "=HYPERLINK(1)"], "t": [1.5, 2.0]})
    md = emit(frame, "markdown")
    assert "<script>" not in md and "&lt;script&gt;" in md
    csv_text = emit(frame, "csv")
    assert '\n"\'=HYPERLINK(1)",' in csv_text
    assert json.loads(emit(frame, "json"))[0] == {"kernel": "void f<float>(T*) <script>", "t": 1.5}
    table = emit(frame, "table").splitlines()
    assert table[0].split() == ["kernel", "t"] and table[2].startswith("void f<float>(T*) <script>")
    assert "(no rows)" in emit(frame.iloc[0:0], "table")
