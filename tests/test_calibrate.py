"""Calibration: plan sizes, the stored Run, load_calibration, and the CLI end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuprof import calibrate as cal
from gpuprof.cli import main
from gpuprof.store import open_store

MiB = 2**20
TINY = cal.Plan(matmul_n=96, stream_array_bytes=MiB, warmup=1, repeats=2)


def test_plan_sizes_follow_the_llc_and_free_memory() -> None:
    llc = 480 * MiB  # the build VM's L3
    quick = cal.plan(False, llc, 24 * 2**30)
    assert 3 * quick.stream_array_bytes == 2 * llc and (quick.matmul_n, quick.repeats) == (2048, 5)
    thorough = cal.plan(True, llc, 24 * 2**30)
    assert 3 * thorough.stream_array_bytes == 4 * llc and (thorough.matmul_n, thorough.repeats) == (4096, 10)
    assert 3 * cal.plan(False, 8 * MiB, None).stream_array_bytes == 192 * MiB  # floor for small caches
    assert 3 * cal.plan(False, None, None).stream_array_bytes == 192 * MiB    # LLC unknown: 64 MiB assumed
    assert cal.plan(False, llc, 400 * MiB).stream_array_bytes == 100 * MiB // 3  # a quarter of free memory


def test_calibration_run_is_consistent() -> None:
    run = cal.calibrate(command="test", steps=TINY)
    assert (run.kind, run.format, run.source) == ("calibration", "cpu-calibrate", "test")
    assert [l.kernel for l in run.launches] == ["numpy.matmul", "numpy.matmul", "numpy.add"]
    matmul = run.launches[0]
    assert matmul.attributes["dtype"] == "float32" and matmul.attributes["shape"] == "96x96x96"
    assert matmul.value("flops") == 2 * 96**3
    assert matmul.value("flop_rate") == pytest.approx(2 * 96**3 / matmul.value("wall_time (min)"))
    assert matmul.value("flop_rate") >= matmul.value("flop_rate (median)")
    assert matmul.metric("flop_rate").origin == "calibrated"
    stream = run.launches[2]
    assert stream.value("bytes") == 3 * MiB
    assert stream.value("bandwidth") == pytest.approx(3 * MiB / stream.value("wall_time (min)"))
    assert run.environment["host"] == run.device["host"]
    llc = run.device.get("llc_bytes")
    if llc and llc > MiB:
        assert any("under 2× the last-level cache" in n for n in run.notes)


def test_store_and_load_newest_for_host(tmp_path: Path) -> None:
    first, second = cal.calibrate(steps=TINY), cal.calibrate(steps=TINY)
    with open_store(tmp_path / "s.sqlite") as store:
        store.add(first)
        store.add(second)
    with open_store(tmp_path / "s.sqlite") as store:
        peaks = cal.load_calibration(store, second.environment["host"])
        assert cal.load_calibration(store, "no-such-host") is None
    assert peaks is not None and peaks.origin == "calibrated" and peaks.clock_hz is None
    assert peaks.flops["float64"] == second.launches[1].value("flop_rate")
    assert peaks.bandwidth == second.launches[2].value("bandwidth")
    assert "float16" not in peaks.flops
    assert "float32 matmul 96x96x96" in peaks.source


def test_summary_rows_compare_with_theoretical() -> None:
    rows = cal.summary_rows(cal.calibrate(steps=TINY))
    assert [r["ceiling"] for r in rows] == ["FLOP/s float32 (matmul)", "FLOP/s float64 (matmul)",
                                            "bandwidth (np.add)"]
    for row in rows[:2]:
        if row["theoretical"]:
            assert row["% of theoretical"] == pytest.approx(100 * row["value"] / row["theoretical"])


def test_cli_calibrate_quick_stores_and_prints_json(tmp_path: Path) -> None:
    store = tmp_path / "cli.sqlite"
    result = CliRunner().invoke(main, ["calibrate", "--quick", "--store", str(store), "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert {r["ceiling"] for r in rows} >= {"FLOP/s float32 (matmul)", "bandwidth (np.add)"}
    assert all(r["origin"] == "calibrated" for r in rows)
    assert "stored calibration" in result.stderr
    with open_store(store) as opened:
        runs = opened.runs()
    assert [r.kind for r in runs] == ["calibration"]
    assert runs[0].source.startswith("gpuprof")  # the process's own argv, as `gpuprof run` records it


def test_cli_bad_store_fails_fast_in_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = CliRunner().invoke(main, ["calibrate", "--store", str(blocker / "s.sqlite")])
    assert result.exit_code == 6
    assert result.stderr.startswith("error: cannot create results store") and "Traceback" not in result.output
    assert "calibrating" not in result.stderr
