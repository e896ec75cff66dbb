"""Portable run files survive a writer killed mid-line; the long metric table goes out as Parquet or CSV."""

import pandas as pd
import pytest
from click.testing import CliRunner
from fixture_paths import A100, V100

import gpuprof
from gpuprof.cli import main
from gpuprof.model import Launch, Metric, Run
from gpuprof.store import open_store
from gpuprof.store import runfile as export


def test_append_load_and_partial_line(tmp_path):
    path = tmp_path / "runs.jsonl"
    first = Run(
        "run",
        "cpu-numpy",
        "gpuprof run",
        {"name": "cpu"},
        {"op": "add"},
        {},
        [Launch("numpy:add", 0, "cpu", 1, {}, [Metric("wall_time", 0.5, "second", "kernel_duration", "timed")])],
    )
    second = Run("import", "x", "f", {}, None, {}, [])
    export.append(path, first)
    export.append(path, second)
    with open(path, "a") as handle:
        handle.write('{"kind": "run", "format": "cpu-nu')  # a writer killed mid-line
    runs, notes = export.load(path)
    assert runs == [first, second]
    assert len(notes) == 1 and ":3: skipped" in notes[0]


def _store_with_imports(tmp_path):
    store = tmp_path / "s.sqlite"
    with open_store(store) as opened:
        for path in (A100, V100):
            opened.add(gpuprof.read(path))
    return store


def test_parquet_and_csv_export_are_the_metrics_table(tmp_path):
    """`gpuprof export --format parquet|csv` writes gpuprof.metrics()'s long table, read back whole
    by pandas (and polars where installed)."""
    pytest.importorskip("pyarrow", reason="Parquet needs the parquet extra (pyarrow)")
    store = _store_with_imports(tmp_path)
    expected = gpuprof.metrics(store)
    assert {"run_id", "device", "kernel", "launch", "unit", "origin"} <= set(expected.columns)
    assert expected["unit"].notna().all() and expected["origin"].notna().all()
    assert expected["run_id"].nunique() == 2 and expected["kernel"].nunique() > 1
    for fmt in ("parquet", "csv"):
        out = tmp_path / f"m.{fmt}"
        result = CliRunner().invoke(main, ["export", str(out), "--format", fmt, "--store", str(store)])
        assert result.exit_code == 0, result.output
        back = pd.read_parquet(out) if fmt == "parquet" else pd.read_csv(out)
        assert list(back.columns) == list(expected.columns)
        assert len(back) == len(expected) > 1000
        for column in ("run_id", "device", "kernel", "metric", "unit", "origin"):
            assert (
                back[column].astype(object).fillna("").astype(str).tolist() == expected[column].astype(str).tolist()
            ), column
        pd.testing.assert_series_equal(back["value"], expected["value"], check_exact=fmt == "parquet", rtol=1e-15)
        assert back["launch"].tolist() == expected["launch"].tolist()
    polars = pytest.importorskip("polars", reason="polars is not installed (optional reader check)")
    frame = polars.read_parquet(tmp_path / "m.parquet")
    assert frame.columns == list(expected.columns) and frame.height == len(expected)
    assert frame["value"].sum() == pytest.approx(expected["value"].sum())
    # the per-launch table names the same runs, devices and kernels, so the two join
    launches = gpuprof.launches(gpuprof.runs(store))
    assert set(zip(launches["run_id"], launches["kernel"], launches["index"])) == set(
        zip(expected["run_id"], expected["kernel"], expected["launch"])
    )


def test_table_export_refuses_append_and_keeps_the_file(tmp_path):
    store = _store_with_imports(tmp_path)
    out = tmp_path / "m.csv"
    out.write_text("kept\n")
    result = CliRunner().invoke(main, ["export", str(out), "--format", "csv", "--append", "--store", str(store)])
    assert result.exit_code != 0 and "--append" in result.output and "Traceback" not in result.output
    assert out.read_text() == "kept\n"
