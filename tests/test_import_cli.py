"""``gpuprof import`` end to end: real fixtures in, runs read back from the SQLite store."""

from __future__ import annotations

import csv
import io
import json
import random
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fixture_paths import BABEL, FIXTURES, K40C, README, REP, SRAD

from gpuprof.cli import main
from gpuprof.derive.kernel_table import kernel_table
from gpuprof.importing import content_id, import_files
from gpuprof.store import open_store

FORMA = "__kernel___forma_kernel__0__(float*, int, int, int, int, int, int, float*)"


def invoke(store: Path, *args: object) -> Result:
    return CliRunner().invoke(main, ["import", "--store", str(store), *map(str, args)])


def stored_runs(store: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(store) as db:
        return db.execute("SELECT kind, format, source FROM runs ORDER BY rowid").fetchall()


def test_import_stores_each_file_as_one_run(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    result = invoke(store, K40C, SRAD, "--format", "json")
    assert result.exit_code == 0, result.output
    assert stored_runs(store) == [
        ("import", "nvprof-csv-metrics", str(K40C)),
        ("import", "nvprof-text-metrics", str(SRAD)),
    ]
    with open_store(store) as reopened:  # read back from the file, not from memory
        metrics_run, text_run = reopened.runs()
    kernel, invocations = metrics_run.launch_table.loc[0, ["kernel", "invocations"]]
    inst_issued = metrics_run.metric_table.set_index("metric").loc["inst_issued"]
    value, unit, lo, hi = inst_issued[["value", "unit", "minimum", "maximum"]]
    kernels = text_run.launch_table["kernel"].tolist()
    assert (kernel, invocations) == (FORMA, 3)
    assert (value, unit, lo, hi) == (3227173467, "", 3226322455, 3227709091)
    assert [k.split("(")[0] for k in kernels] == ["compress", "reduce", "srad2", "extract", "prepare", "srad"]
    # The library reads the same runs back.
    with open_store(store) as reopened:
        runs = reopened.runs()
    assert runs[0].launches[0].metric("flop_count_sp").value == 25264160800
    assert runs[0].device == {"name": "Tesla K40c", "index": 0}
    assert "imported" in result.stderr and str(K40C) in result.stderr


def test_json_table_per_kernel(tmp_path: Path) -> None:
    result = invoke(tmp_path / "s.sqlite", K40C, README, "--format", "json")
    rows = json.loads(result.stdout)
    forma = next(row for row in rows if row["kernel"] == FORMA)
    assert forma["launches"] == 3 and forma["device"] == "Tesla K40c"
    assert forma["flop_count_sp/launch (FLOP)"] == 25264160800
    assert forma["achieved_occupancy (%)"] == pytest.approx(99.7336)
    assert forma["origin"].startswith("measured by the profiler (nvprof-csv-metrics)")
    sessions = [row for row in rows if row["file"] == README.name and row["kernel"].startswith("vectorAdd")]
    assert [row["launches"] for row in sessions] == [1010, 1010, 1010, 110, 410]
    assert sessions[3]["session"] == "vector_add_profile_serial"
    assert sessions[0]["time total (s)"] == pytest.approx(1010 * 1813.1e-9)


def test_csv_and_markdown_tables(tmp_path: Path) -> None:
    result = invoke(tmp_path / "s.sqlite", BABEL, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    add = next(row for row in rows if row["kernel"].startswith("void add_kernel"))
    assert add["launches"] == "100" and float(add["time/launch (s)"]) == pytest.approx(1.8477e-3)
    assert float(add["time total (s)"]) == pytest.approx(184.77e-3)
    markdown = invoke(tmp_path / "s.sqlite", BABEL, "--format", "markdown").stdout
    assert "void add_kernel&lt;double&gt;(double const *, double const *, double*)" in markdown


def test_failing_file_stops_the_import_and_keeps_earlier_runs(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))  # no nsys: the .nsys-rep cannot be read
    store = tmp_path / "s.sqlite"
    result = invoke(store, BABEL, REP, K40C)
    assert result.exit_code == 3
    assert stored_runs(store) == [("import", "nvprof-text-summary", str(BABEL))]
    assert f"stored before the error: {BABEL}" in result.stderr
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(error_lines) == 1 and "nsys export --type sqlite" in error_lines[0]
    assert "Traceback" not in result.output


def _garbage(path: Path) -> Path:
    path.write_bytes(random.Random(7).randbytes(4096))
    return path


@pytest.mark.parametrize(
    "make, fragment",
    [
        (lambda d: d / "empty.csv", "the file is empty"),
        (lambda d: _garbage(d / "garbage.bin"), "not a profiler output gpuprof recognises"),
        (lambda d: d / "other-tool.csv", "not a profiler output gpuprof recognises"),
    ],
)
def test_unreadable_file_one_line_nothing_stored(tmp_path: Path, make, fragment: str) -> None:
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "other-tool.csv").write_text("timestamp,cpu_percent,rss_mb\n2024-01-01T00:00:00,12.5,300\n")
    store = tmp_path / "s.sqlite"
    result = invoke(store, make(tmp_path))
    assert result.exit_code == 3, result.output
    assert result.output.count("\n") == 1 and result.output.startswith("error:")
    assert fragment in result.output
    if "recognises" in fragment:
        assert "nvprof-csv-metrics" in result.output and "nsys-stats" in result.output
    assert not store.exists()  # a failed import creates no store: a store is created by its first write


def test_truncated_file_with_no_rows_is_an_error_and_not_stored(tmp_path: Path) -> None:
    cut = tmp_path / "cut.csv"
    cut.write_text(K40C.read_text()[:400])  # the ==PID== preamble, the header, part of row 1
    store = tmp_path / "s.sqlite"
    result = invoke(store, cut)
    assert result.exit_code == 3 and "no metric rows" in result.output
    assert not store.exists()  # a failed import creates no store: a store is created by its first write


def test_library_import_files_and_unknown_reader(tmp_path: Path) -> None:
    runs = import_files([SRAD], tmp_path / "s.sqlite")
    assert [run.format for run in runs] == ["nvprof-text-metrics"]
    frame = kernel_table(runs)
    assert list(frame["launches"]) == [1, 200, 100, 1, 100, 100]
    assert frame["dram_read_throughput (byte/second)"].iloc[1] == pytest.approx(23.557 * 2**30)
    result = invoke(tmp_path / "s.sqlite", SRAD, "--reader", "nope")
    assert result.exit_code == 3 and "unknown format 'nope'" in result.output


def test_importing_a_file_twice_stores_it_once(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    first = invoke(store, K40C)
    again = invoke(store, K40C, SRAD)
    assert first.exit_code == again.exit_code == 0
    assert stored_runs(store) == [
        ("import", "nvprof-csv-metrics", str(K40C)),
        ("import", "nvprof-text-metrics", str(SRAD)),
    ]
    assert f"{K40C} was already in the store" in again.stderr
    assert FORMA in invoke(store, K40C, "--wide").stdout  # still shown


def test_kernel_table_derives_rates_clock_and_both_efficiencies(tmp_path: Path) -> None:
    """RTX 3080 report: computeValue ran 7,597,056 ns and executed 70,000,000 FP32 FLOPs
    (ncu's fadd + fmul + 2·ffma, checked against ncu_report in test_readers_ncu_rep.py)."""
    pytest.importorskip("ncu_report")
    rep = FIXTURES / "ncu_report_binary_2020_win_montecarlo_pi.ncu-rep"
    frame = kernel_table(import_files([rep], tmp_path / "s.sqlite"))
    row = frame[frame["kernel"].str.startswith("void computeValue")].iloc[0]
    assert row["device"] == "GeForce RTX 3080"
    assert row["time/launch (s)"] == pytest.approx(7.597056e-3)
    assert row["flop_count_sp/launch (FLOP)"] == 70_000_000
    rate = 70_000_000 / 7.597056e-3
    assert row["FLOP/s sp"] == pytest.approx(rate)
    # datasheet FP32 peak in configs/devices.toml: 29,768 GFLOP/s (68 SM x 128 lanes x 2 x 1710 MHz)
    assert row["efficiency sp vs datasheet peak (%)"] == pytest.approx(100 * rate / 29768e9)
    assert row["efficiency sp at run clock (%)"] == pytest.approx(100 * rate / row["peak FLOP/s sp at run clock"])


def test_an_ncu_csv_without_its_gpus_name_says_to_give_gpu(tmp_path: Path) -> None:
    # NERSC's A100 roofline CSV has no device column: it imported without a word, and roofline and compare
    # then had no peaks for it
    path = FIXTURES / "ncu_csv_a100_nersc_roofline_metrics_with_duration_sgemm.csv"
    unnamed = invoke(tmp_path / "s.sqlite", path)
    assert unnamed.exit_code == 0, unnamed.output
    assert "note: the file does not name its GPU, so no efficiency can be computed for it" in unnamed.stderr
    assert "import it with --gpu NAME" in unnamed.stderr
    named = invoke(tmp_path / "s.sqlite", path, "--gpu", "a100-sxm4-40gb")
    assert named.exit_code == 0 and "--gpu NAME" not in named.stderr
    with open_store(tmp_path / "s.sqlite") as store:
        devices = sorted(run.device.get("name", "") for run in store.runs())
    assert devices == ["", "A100, SXM4 40 GB"]
    assert "--gpu NAME" not in invoke(tmp_path / "k.sqlite", K40C).stderr  # nvprof names its GPU


def test_on_ready_sees_each_run_as_it_is_stored_before_on_stored(tmp_path: Path) -> None:
    """The CLI derives one file's per-kernel table on a thread from the run on_ready hands over,
    while the file is hashed and the store writes it: that run is the one stored, its device
    already named; only its id, the file's hash, is set after."""
    events: list[tuple[str, object, str, int]] = []
    import_files(
        [K40C],
        tmp_path / "s.sqlite",
        on_ready=lambda run: events.append(("ready", run, run.device.get("name", ""), len(run.launch_table))),
        on_stored=lambda run, added: events.append(("stored", run, run.device.get("name", ""), len(run.launch_table))),
        gpu="K40",
    )
    (ready, stored) = events
    assert ready[0] == "ready" and stored[0] == "stored"
    assert ready[1] is stored[1] and ready[2:] == stored[2:] and "K40" in ready[2]
    assert stored[1].run_id == content_id(K40C, "nvprof-csv-metrics|gpu=k40")
