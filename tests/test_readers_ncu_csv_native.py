"""The C scanner of ncu details CSVs (gpuprof/readers/_ncu_csv_native.c): the same rows as
pyarrow's and pandas' parsers give, however the file is split across threads, every plain decimal
read to the double Python reads, and a refusal (a str) for every row it does not judge, which
the other parsers then read."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from fixture_paths import A100, B200, V100
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuprof.readers import _ncu_csv_bulk, ncu_csv


def test_the_scanner_is_built_where_a_c_compiler_is() -> None:
    """An install with a compiler builds it; a silent fallback would hide a broken build."""
    if shutil.which(sysconfig.get_config_var("CC").split()[0] if sysconfig.get_config_var("CC") else "cc") is None:
        pytest.skip("no C compiler here: the scanner is optional and pyarrow or pandas parse")
    from gpuprof.readers import _ncu_csv_native

    assert _ncu_csv_native.scan.__doc__.startswith("scan(fd, offset")


native = pytest.importorskip("gpuprof.readers._ncu_csv_native", reason="the C scanner was not built (no compiler)")


def _layout(path: Path) -> tuple[int, _ncu_csv_bulk.Layout]:
    with ncu_csv.open_text(path) as handle:
        header = ncu_csv._header(path, handle, ncu_csv.ToolLog("ncu"))
        skip = _ncu_csv_bulk.skip_for(path, handle, len(header))
    assert skip is not None
    return skip, ncu_csv._Table(header).layout()


def _scan(path: Path, threads: int = 1, part_bytes: int = 16 << 20) -> dict | str:
    skip, layout = _layout(path)
    return _ncu_csv_bulk.scan(path, skip, layout, threads, part_bytes)


def _launches(fixture: Path, path: Path, count: int) -> Path:
    """``count`` launches of ``fixture``'s launch 0 (new IDs, as bench_ncu_csv_parse builds them)."""
    lines = fixture.read_text().splitlines(keepends=True)
    header = next(line for line in lines if line.startswith('"ID",'))
    body = [line[4:] for line in lines if line.startswith('"0",')]
    path.write_text(header + "".join(f'"{k}",{line}' for k in range(count) for line in body))
    return path


def _rows_fields(rows: _ncu_csv_bulk.Rows) -> list[object]:
    return [
        rows.launch_ids,
        rows.kernels,
        rows.attributes,
        rows.bounds.tolist(),
        list(rows.names),
        list(rows.units),
        rows.values,
        None if rows.sections is None else list(rows.sections),
        list(zip(rows.rules.launches.tolist(), map(rows.rules.cells.__getitem__, rows.rules.codes.tolist()))),
        rows.numbers.tobytes(),
    ]


@pytest.mark.parametrize("fixture", [A100, B200, V100], ids=lambda p: p.name)
def test_the_same_rows_on_any_number_of_threads(fixture: Path, tmp_path: Path) -> None:
    """Parts of 1, 2, 7 and 16 KB on 2 to 16 threads: the launches on each border (one goes on
    across it, as the launch IDs repeat) are joined, codes renumbered in order of first sight."""
    path = _launches(fixture, tmp_path / "many.csv", 40)
    one = _scan(path)
    assert isinstance(one, dict) and one["metric_rows"] > 40 * 10
    for threads, part_bytes in [(2, 16_000), (7, 7_000), (16, 1_000)]:
        split = _scan(path, threads, part_bytes)
        assert split == one, (threads, part_bytes)


@pytest.mark.parametrize("fixture", [A100, B200, V100], ids=lambda p: p.name)
def test_the_rows_are_the_ones_pyarrow_gives(fixture: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pyarrow", reason="the parquet extra (pyarrow) is not installed")
    path = _launches(fixture, tmp_path / "many.csv", 30)
    skip, layout = _layout(path)
    monkeypatch.setattr(_ncu_csv_bulk, "SCAN_THREADS", 5)
    monkeypatch.setattr(_ncu_csv_bulk, "SCAN_PART_BYTES", 3_000)
    (ours,) = _ncu_csv_bulk._native_chunks(path, skip, layout)
    (arrow,) = _ncu_csv_bulk._arrow_chunks(path, skip, layout)
    assert _rows_fields(ours) == _rows_fields(arrow)
    assert len(ours.launch_ids) == 30 and ours.launch_ids[-1] == "29"
    if fixture == B200:  # its rule rows, and the cells that are no decimal (PolicySpread), kept as text
        assert len(ours.rules) == 30 * 8 and ours.launch_ids[ours.rules.launches[-1]] == "29"
        assert len(ours.rules.cells) == 8 and ours.rules.cells[0][0] == "SOLBottleneck"
        assert "PolicySpread" in ours.values.values()


def _values_file(tmp_path: Path, cells: list[str]) -> Path:
    header = '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
    rows = "".join(f'"0","k","m{i}","","{cell}"\n' for i, cell in enumerate(cells))
    path = tmp_path / "values.csv"
    path.write_text(header + rows)
    return path


_DIGITS = st.text("0123456789", min_size=1, max_size=24)


@st.composite
def _decimals(draw: st.DrawFn) -> str:
    """Decimals as profilers print them: signs, thousands separators (and stray ones anywhere,
    which Python's reading drops too), fractions, exponents, and mantissas of up to 24 digits
    (past 2^53, where the exact fast path gives way to strtod)."""
    whole = draw(_DIGITS)
    if draw(st.booleans()):
        whole = f"{int(whole):,}"
    text = ("-" if draw(st.booleans()) else "") + whole
    if draw(st.booleans()):
        text += "." + draw(_DIGITS)
    if draw(st.booleans()):
        text += draw(st.sampled_from("eE")) + draw(st.sampled_from(["", "+", "-"])) + str(draw(st.integers(0, 330)))
    for at in draw(st.lists(st.integers(0, len(text)), max_size=3)):  # separators anywhere: dropped alike
        text = text[:at] + "," + text[at:]
    return text


@settings(max_examples=60, deadline=None)
@given(cells=st.lists(_decimals(), min_size=1, max_size=30))
def test_every_plain_decimal_is_the_double_python_reads(cells: list[str], tmp_path_factory) -> None:
    path = _values_file(tmp_path_factory.mktemp("values"), cells)
    scanned = _scan(path)
    numbers = np.frombuffer(scanned["numbers"], dtype=np.float64)
    others = dict(np.frombuffer(scanned["others"], dtype=np.int64).reshape(-1, 2).tolist())
    for row, cell in enumerate(cells):
        expected = float(cell.replace(",", ""))
        if np.isfinite(expected):
            assert row not in others, cell
            assert numbers[row].tobytes() == np.float64(expected).tobytes(), cell
        else:  # 1e999: left to Python, which keeps the text of what is no finite number
            assert scanned["texts"][others[row]] == cell


def test_what_is_no_plain_decimal_goes_to_python_once_per_distinct_text(tmp_path: Path) -> None:
    cells = ["28.05%", "n/a", "PolicySpread", "28.05%", "1.5", "+2", ".5", "nan", "inf", "1_000"]
    scanned = _scan(_values_file(tmp_path, cells))
    others = np.frombuffer(scanned["others"], dtype=np.int64).reshape(-1, 2)
    assert others[:, 0].tolist() == [0, 1, 2, 3, 5, 6, 7, 8, 9]
    assert scanned["texts"] == ["28.05%", "n/a", "PolicySpread", "+2", ".5", "nan", "inf", "1_000"]
    assert np.frombuffer(scanned["numbers"], dtype=np.float64)[4] == 1.5


_REFUSED = [
    ("a quoted line break", '"0","k\n2","m","","1"\n', "a row this scanner does not split"),
    ("a quote in an unquoted field", '"0",k"2,"m","","1"\n', "a row this scanner does not split"),
    ("text after a closing quote", '"0","k"x,"m","","1"\n', "a row this scanner does not split"),
    ("a short row", '"0","k","m",""\n', "a row of another length"),
    ("a long row", '"0","k","m","","1","x"\n', "a row this scanner does not split"),
    ("no metric name", '"0","k","","","1"\n', "a metric row without a metric name"),
    ("no value", '"0","k","m","",""\n', "a metric row without a value"),
]


@pytest.mark.parametrize("name, row, why", _REFUSED, ids=[case[0] for case in _REFUSED])
def test_rows_it_does_not_judge_are_refused_with_the_reason(name: str, row: str, why: str, tmp_path: Path) -> None:
    path = _values_file(tmp_path, ["1.0", "2.0"])
    path.write_text(path.read_text() + row + '"0","k","m9","","3"\n')
    assert _scan(path) == why


def test_a_field_that_is_no_utf8_is_refused(tmp_path: Path) -> None:
    path = _values_file(tmp_path, ["1.0"])
    path.write_bytes(path.read_bytes().replace(b'"k"', b'"k\xff"'))
    assert _scan(path) == "a field that is no UTF-8"


def test_doubled_quotes_and_crlf_line_ends_are_read_as_pandas_reads_them(tmp_path: Path) -> None:
    path = _values_file(tmp_path, ["1.0", "2.0"])
    path.write_bytes(path.read_bytes().replace(b'"k"', b'"k ""quoted"" <T>"').replace(b"\n", b"\r\n"))
    scanned = _scan(path)
    assert scanned["strings"][1] == ['k "quoted" <T>']
    assert np.frombuffer(scanned["numbers"], dtype=np.float64).tolist() == [1.0, 2.0]
