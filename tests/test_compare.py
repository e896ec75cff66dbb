"""Comparison tables: the study's published rows, measured runs, imported kernels, CLI formats."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict

import pandas as pd
import pytest
from click.testing import CliRunner
from extras import NCU_REPORT
from fixture_paths import FIXTURES

from gpuprof.cli import main
from gpuprof.compare import comparison, short_name, study_table
from gpuprof.devices.peaks import Peaks
from gpuprof.importing import read_file
from gpuprof.model import TIMED, Launch, Metric, Run
from gpuprof.store import open_store
from gpuprof.workloads.ops import get_op

# A made-up CPU: 100 GFLOP/s float32 at 2 GHz, no bandwidth; a second ceiling with 50 GB/s.
THEORY = Peaks("Test CPU", {"float32": 100e9}, None, 2e9, "derived", "2 cores x 2 GHz x 25")
CALIBRATED = Peaks("Test CPU", {"float32": 80e9}, 50e9, None, "calibrated", "gpuprof calibrate")


def measured(
    op: str,
    shape: list[int],
    seconds: list[float],
    host: str = "h1",
    requested: str = "6MB",
    name: str = "Test(R) CPU @ 2.00GHz",
    created: str = "2026-01-01T00:00:00+00:00",
) -> Run:
    return Run(
        kind="run",
        format="cpu-numpy",
        source="test",
        created=created,
        device={"name": name, "kind": "cpu", "peaks": [asdict(THEORY), asdict(CALIBRATED)]},
        workload={
            "op": op,
            "dtype": "float32",
            "shape": shape,
            "size_bytes": 0,
            "requested": requested,
            "engine": "numpy",
        },
        environment={"host": host},
        launches=[
            Launch("numpy:" + op, i, metrics=[Metric("wall_time", t, "second", "kernel_duration", TIMED)])
            for i, t in enumerate(seconds)
        ],
    )


def test_reference_rows_are_the_published_numbers():
    frame = comparison([], reference=True).rows
    assert set(frame["device"]) == {"GT710M (paper)", "K40 (paper)", "GTX980 (paper)"}
    assert len(frame) == 135  # 45 rows of Table 2 + 90 of Table 3
    row = frame[(frame["device"] == "GTX980 (paper)") & (frame["op"] == "dot") & (frame["size_MB"] == 5)].iloc[0]
    assert row["MFLOP/s"] == 3533837.89 and row["Efic.%"] == 77.97


def test_reference_roofline_uses_the_analytic_intensity_and_table_bandwidth():
    frame = comparison([], reference=True).rows
    row = frame[(frame["device"] == "GT710M (paper)") & (frame["op"] == "add") & (frame["size_MB"] == 6)].iloc[0]
    # add moves 12 bytes per FLOP (two float32 inputs, one output); GT 710M: 14.4 GB/s (2 x 900 MHz x 64 bit / 8)
    assert row["roof.%"] == pytest.approx(100 * 979.11e6 * 12 / 14.4e9, rel=1e-3)
    assert row["bound"] == "memory"
    sigmoid = frame[(frame["op"] == "sigmoid") & (frame["device"] == "K40 (paper)")]
    assert sigmoid["roof.%"].isna().all()  # nvprof's FLOPs per element are not published


def test_measured_row_from_median_time_and_each_ceiling():
    run = measured("add", [1000, 1000], [2e-3, 1e-3, 3e-3])  # median 2 ms, 1e6 FLOPs, 12e6 bytes
    row = comparison([run]).rows.iloc[0]
    assert row["MFLOP/s"] == pytest.approx(500.0)
    assert row["GB/s"] == pytest.approx(6.0)
    assert row["Efic.%"] == pytest.approx(0.5)  # 0.5 GFLOP/s of the 100 GFLOP/s theoretical peak
    assert row["roof.%"] == pytest.approx(100 * 6 / 50)  # memory-bound under the calibrated 50 GB/s
    assert row["bound"] == "memory" and row["size_MB"] == 6.0
    assert row["device"] == "Test"  # "(R)", "CPU" and the clock dropped from the column header


def test_study_table_has_sizes_as_rows_and_devices_as_columns():
    runs = [measured("add", [1000, 1000], [2e-3]), measured("add", [1000, 1000], [1e-3], requested="12MB")]
    result = comparison(runs, reference=True, ops_wanted=["add"])
    table = study_table(result.rows, "add")
    assert list(table["size (MB)"]) == [6, 12, 24, 48, 96]
    name = short_name("Test(R) CPU @ 2.00GHz")
    assert list(table.columns[:5]) == [
        "size (MB)",
        f"{name} MFLOP/s",
        f"{name} Efic.%",
        f"{name} roof.%",
        f"{name} bound",
    ]
    assert table[f"{name} MFLOP/s"].iloc[:2].tolist() == pytest.approx([500.0, 1000.0])
    assert table["K40 (paper) MFLOP/s"].tolist() == [10502.79, 10717.41, 10752.33, 10726.04, 10726.58]


def test_same_device_on_two_hosts_and_reruns():
    runs = [
        measured("add", [1000, 1000], [2e-3], host="a", created="2026-01-01T00:00:00+00:00"),
        measured("add", [1000, 1000], [4e-3], host="a", created="2026-01-02T00:00:00+00:00"),
        measured("add", [1000, 1000], [1e-3], host="b"),
    ]
    result = comparison(runs)
    by_device = dict(zip(result.rows["device"], result.rows["MFLOP/s"]))
    name = short_name("Test(R) CPU @ 2.00GHz")
    assert by_device == pytest.approx({f"{name} @ a": 250.0, f"{name} @ b": 1000.0})  # the newer run of host a
    assert any("1 older run" in n for n in result.notes)


def test_imported_kernels_keep_the_files_device_and_counted_flops():
    run = read_file(FIXTURES / "nvprof_csv_metrics_k40c_flop_stall.csv")
    imported = comparison([run]).imported
    row = imported.iloc[0]
    assert row["device"] == "Tesla K40c" and row["launches"] == 3
    assert row["FLOPs/launch (float32)"] == 25264160800
    assert pd.isna(row["MFLOP/s"]) and pd.isna(row["time/launch (s)"])  # no kernel time in a metrics run


@NCU_REPORT
def test_imported_ncu_rep_gives_mflops_from_counted_flops_and_time():
    run = read_file(FIXTURES / "ncu_report_binary_2020_win_montecarlo_pi.ncu-rep")
    imported = comparison([run]).imported.set_index("kernel")
    row = imported.loc["void computeValue<float>(unsigned int*, curandStateXORWOW*, unsigned int)"]
    assert row["device"] == "GeForce RTX 3080"
    assert row["MFLOP/s"] == pytest.approx(row["FLOPs/launch (float32)"] / row["time/launch (s)"] / 1e6)
    assert row["MFLOP/s origin"].startswith("measured: counted FLOPs / kernel time")
    assert row["Efic. origin"].startswith("measured")


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "s.sqlite"
    with open_store(path) as opened:
        opened.add(measured("dot", [500, 500, 500], [1e-2]))
    return path


def test_cli_csv_and_json_are_the_long_frame(store):
    runner = CliRunner()
    out = runner.invoke(
        main, ["compare", "--store", str(store), "--reference", "paper", "--op", "dot", "--format", "csv"]
    )
    assert out.exit_code == 0, out.output
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert len(rows) == 1 + 15
    mine = next(r for r in rows if r["source"] == "cpu-numpy")
    assert float(mine["MFLOP/s"]) == pytest.approx(2 * 500**3 / 1e-2 / 1e6)
    assert mine["MFLOP/s origin"].startswith("derived")
    out = runner.invoke(main, ["compare", "--store", str(store), "--format", "json"])
    records = json.loads(out.stdout)
    assert [r["op"] for r in records] == ["dot"] and records[0]["Efic.%"] == pytest.approx(25.0)


def test_cli_table_shows_one_table_per_op_with_sources(store):
    out = CliRunner().invoke(main, ["compare", "--store", str(store), "--reference", "paper", "--op", "dot"])
    assert out.exit_code == 0, out.output
    assert f"dot: {get_op('dot').formula} — MFLOP/s" in out.stdout
    lines = out.stdout.splitlines()
    group_line, header = next((a, b) for a, b in zip(lines, lines[1:]) if "GTX980 (paper)" in a)
    assert header.split()[-4:] == ["MFLOP/s", "Efic.%", "roof.%", "bound"]  # under the device's name
    assert "3,533,838" in out.stdout
    assert "Sources: where each device's numbers come from" in out.stdout
    assert "nvprof flop_sp_efficiency" in out.stdout


def test_cli_without_a_store_says_how_to_get_one(tmp_path):
    out = CliRunner().invoke(main, ["compare", "--store", str(tmp_path / "none.sqlite")])
    assert out.exit_code == 6 and "no results store" in out.output and "gpuprof sweep" in out.output


def test_efficiency_at_the_clock_of_the_run_when_it_was_recorded():
    run = measured("add", [1000, 1000], [2e-3])
    run.device["clock_during_run_hz"] = 1e9  # half the 2 GHz the 100 GFLOP/s peak assumes
    row = comparison([run]).rows.iloc[0]
    assert row["Efic.%"] == pytest.approx(1.0)  # 0.5 GFLOP/s of 50 GFLOP/s
    assert row["Efic. basis"].startswith("vs-peak-at-run-clock")


def test_sigmoid_beside_the_paper_warns_that_flop_counts_differ():
    run = measured("sigmoid", [1000, 1000], [1e-3], requested="8MB")
    notes = comparison([run], reference=True).notes
    assert any("10-18 FLOPs per element" in n for n in notes)
    assert not any("10-18" in n for n in comparison([run]).notes)  # no paper rows, nothing to warn about


def test_cli_reads_profiler_files_without_a_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPUPROF_STORE", raising=False)
    out = CliRunner().invoke(main, ["compare", "--import", str(FIXTURES / "nvprof_csv_metrics_k40c_flop_stall.csv")])
    assert out.exit_code == 0, out.output
    assert "Tesla K40c" in out.stdout and "2.526e+10" in out.stdout  # flop_count_sp Avg 25264160800
    assert not (tmp_path / "reports").exists()  # reading files creates no store


def test_compare_with_nothing_to_compare_says_what_to_do(tmp_path):
    from click.testing import CliRunner

    from gpuprof.cli import main
    from gpuprof.store import open_store

    with open_store(tmp_path / "empty.sqlite") as store:
        store._db  # noqa: B018 - created now, with no run (a store is otherwise created by its first write)
    result = CliRunner().invoke(main, ["compare", "--store", str(tmp_path / "empty.sqlite")])
    assert result.exit_code == 2 and result.stdout == ""
    assert "nothing to compare" in result.stderr and "--reference paper" in result.stderr


def test_devices_without_energy_for_one_reason_share_one_note():
    from gpuprof.compare import _without_energy

    no_rapl = "not measured: no CPU power source (virtual machines and containers usually hide RAPL)"
    frame = pd.DataFrame(
        {
            "device": ["cpu A", "cpu A", "cpu B", "gpu C", "gpu C", "cpu D"],
            "energy basis": [no_rapl, no_rapl, no_rapl, "not measured: NVML not installed", "measured: NVML", None],
            "J/call": [None, None, None, None, 0.5, None],
        }
    )
    assert _without_energy(frame) == [
        f"no energy numbers for cpu A, cpu B: {no_rapl}",
        "no energy numbers for gpu C in 1 of 2 row(s): not measured: NVML not installed",
    ]


def test_a_run_asked_for_by_shape_is_listed_at_its_footprint(tmp_path):
    store = tmp_path / "s.sqlite"
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--op",
            "add",
            "--shape",
            "512",
            "--device",
            "cpu",
            "--repeat",
            "2",
            "--no-counters",
            "--store",
            str(store),
        ],
    )
    assert result.exit_code == 0, result.output
    records = json.loads(CliRunner().invoke(main, ["compare", "--store", str(store), "--format", "json"]).stdout)
    assert [r["size_MB"] for r in records] == [3 * 512 * 512 * 4 / 1e6]  # 3.145728, not 0.000512
    table = CliRunner().invoke(main, ["compare", "--store", str(store)]).stdout
    assert table.splitlines()[4].split()[0] == "3.146"
    asked = measured("add", [707, 707], [1e-3], requested="6MB")
    asked.workload["size_bytes"] = 3 * 707 * 707 * 4
    assert comparison([asked]).rows["size_MB"].tolist() == [6.0]  # --size keeps the study's sizes


def _calibration_of(host: str, name: str, bandwidth: float) -> Run:
    from gpuprof.calibrate import FORMAT, KIND

    return Run(
        kind=KIND,
        format=FORMAT,
        source="test",
        created="2026-02-01T00:00:00+00:00",
        environment={"host": host},
        device={"name": name},
        launches=[
            Launch(
                "numpy.matmul",
                0,
                attributes={"dtype": "float32", "shape": "8x8x8", "stable": "yes"},
                metrics=[Metric("flop_rate", 90e9, "FLOP/second", origin="calibrated")],
            ),
            Launch(
                "numpy.add",
                1,
                attributes={"array_bytes": "4096", "stable": "yes"},
                metrics=[Metric("bandwidth", bandwidth, "byte/second", origin="calibrated")],
            ),
        ],
    )


def test_runs_made_before_a_calibration_get_its_roofline_and_the_sources_say_so():
    before = measured("add", [1000, 1000], [2e-3])
    before.device["peaks"] = [asdict(THEORY)]  # measured before the host was calibrated
    result = comparison([before, _calibration_of("h1", before.device["name"], 20e9)])
    row = result.rows.iloc[0]
    assert row["roof.%"] == pytest.approx(100 * 0.5e9 / (20e9 / 12))  # 0.5 GFLOP/s of AI 1/12 × 20 GB/s
    assert row["bound"] == "memory" and "(calibrated)" in row["roof. basis"]
    from gpuprof.compare import sources_frame

    sources = sources_frame(result.rows)
    assert sources["roof. ceiling"].tolist() == ["min(float32 peak, AI × peak bandwidth 20 GB/s) (calibrated)"]
    assert not (sources["roof. ceiling"] == "no peak bandwidth known").any()
    other_host = comparison([before, _calibration_of("h2", before.device["name"], 20e9)]).rows.iloc[0]
    assert pd.isna(other_host["roof.%"])  # another machine's calibration is not this one's ceiling


@pytest.mark.slow  # measures runs and compares them with the study's rows: 2-6 s
def test_compare_flags_every_value_above_100_with_its_reason(tmp_path):
    fast = measured("dot", [500, 500, 500], [2e-3])  # 125 GFLOP/s: 125 % of the 100 GFLOP/s peak at 2 GHz
    fast.device.update(clock_during_run_hz=3e9, clock_during_run_source="clock probe after the timed repeats: ...")
    rows = comparison([fast]).rows
    assert rows["Efic.%"].iloc[0] == pytest.approx(125 * 2 / 3)  # at the run clock: 83 %, not flagged
    assert pd.isna(rows["Efic. above 100"].iloc[0])
    assert rows["roof.%"].iloc[0] == pytest.approx(125 / 0.8)  # the calibrated 80 GFLOP/s compute roof
    assert rows["roof. above 100"].iloc[0].startswith("above the calibrated FLOP/s ceiling: the ceiling is suspect")
    store = tmp_path / "s.sqlite"
    with open_store(store) as opened:
        opened.add(fast)
    runner = CliRunner()
    text = runner.invoke(main, ["compare", "--store", str(store)]).stdout
    assert "156.2 [1]" in text and "[1] above the calibrated FLOP/s ceiling: the ceiling is suspect" in text
    markdown = runner.invoke(main, ["compare", "--store", str(store), "--format", "markdown"]).stdout
    assert "| 156.2 [1] |" in markdown and "1. above the calibrated FLOP/s ceiling" in markdown
    csv_rows = list(
        csv.DictReader(io.StringIO(runner.invoke(main, ["compare", "--store", str(store), "--format", "csv"]).stdout))
    )
    assert csv_rows[0]["roof. above 100"].startswith("above the calibrated FLOP/s ceiling")
    page = tmp_path / "c.html"
    assert runner.invoke(main, ["compare", "--store", str(store), "--html", str(page)]).exit_code == 0
    html = page.read_text()
    assert "156.2 [1]</td>" in html and "<li>above the calibrated FLOP/s ceiling: the ceiling is suspect" in html


def test_compare_stalls_in_json_and_a_profile_without_a_device_gets_a_header():
    from fixture_paths import K40C

    text_summary = FIXTURES / "ncu_text_print_summary_per_gpu_a100_roofline_EXCERPT.log"
    runner = CliRunner()
    out = runner.invoke(
        main, ["compare", "--import", str(K40C), "--import", str(text_summary), "--stalls", "--format", "json"]
    )
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    assert {r["profile"] for r in rows} == {"Tesla K40c", "device not named in the file"}
    sync = next(r for r in rows if r["profile"] == "Tesla K40c" and r["reason"] == "stall_sync")
    assert sync["% of stall cycles"] == 28.13 and sync["basis"] == "nvprof"
    table = runner.invoke(
        main, ["compare", "--import", str(K40C), "--import", str(text_summary), "--stalls", "--wide"]
    ).stdout.split("Warp stalls: % of stall cycles per device\n")[1]
    header = table.splitlines()[0]
    assert header.split("  ")[-1].strip() == "device not named in the file" and "Tesla K40c" in header


@NCU_REPORT
def test_imported_kernels_above_100_are_flagged_too(monkeypatch):
    from gpuprof.derive import roofline

    run = read_file(FIXTURES / "ncu_report_binary_2020_win_montecarlo_pi.ncu-rep")
    tiny = Peaks("GeForce RTX 3080", {"float32": 1e9}, 1e8, 1.44e9, "peak-table", "a made-up, too small ceiling")
    monkeypatch.setattr(roofline, "table_peaks", lambda device: [tiny])
    imported = comparison([run]).imported
    row = imported.index[imported["kernel"].str.startswith("void computeValue")][0]
    assert imported.loc[row, "roof.%"] > 100
    number = imported.attrs["marks"]["roof.%"][row]
    assert imported.attrs["notes"][number - 1] == (
        "above the memory ceiling (peak-table): that bandwidth is below what the run read"
    )
    assert "roof. above 100" not in imported.columns
