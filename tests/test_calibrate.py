"""Calibration: plan sizes, the stored Run, load_calibration, and the CLI end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuprof import calibrate as cal
from gpuprof.cli import main
from gpuprof.devices.cpu import parse
from gpuprof.model import Launch, Metric, Run
from gpuprof.store import open_store

MiB = 2**20
TINY = cal.CalibrationPlan(matmul_n=96, stream_array_bytes=MiB, warmup=1, repeats=2)


def test_plan_sizes_follow_the_llc_and_free_memory() -> None:
    llc = 480 * MiB  # the build VM's L3
    quick = cal.plan(False, llc, 24 * 2**30)
    assert 3 * quick.stream_array_bytes == 2 * llc and (quick.matmul_n, quick.repeats) == (2048, 5)
    thorough = cal.plan(True, llc, 24 * 2**30)
    assert 3 * thorough.stream_array_bytes == 4 * llc and (thorough.matmul_n, thorough.repeats) == (4096, 10)
    assert 3 * cal.plan(False, 8 * MiB, None).stream_array_bytes == 192 * MiB  # floor for small caches
    assert 3 * cal.plan(False, None, None).stream_array_bytes == 192 * MiB  # LLC unknown: 64 MiB assumed
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


@pytest.mark.slow  # a real calibration: 2-4 s
def test_store_and_load_the_best_stable_values_for_host(tmp_path: Path) -> None:
    first, second = cal.calibrate(steps=TINY), cal.calibrate(steps=TINY)
    with open_store(tmp_path / "s.sqlite") as store:
        store.add(first)
        store.add(second)
    with open_store(tmp_path / "s.sqlite") as store:
        peaks = cal.load_calibration(store, second.environment["host"])
        assert cal.load_calibration(store, "no-such-host") is None
    assert peaks is not None and peaks.origin == "calibrated" and peaks.clock_hz is None
    for index, key in ((1, "float64"), (2, "bandwidth")):
        usable = [c for run in (first, second) for c in cal.ceilings(run) if c.key == key and not cal.not_used(c)]
        assert all(c.launch.attributes["stable"] == "yes" for c in usable)  # tiny sizes may also be far below theory
        best = max((c.value for c in usable), default=None)
        assert (peaks.flops.get(key) if key != "bandwidth" else peaks.bandwidth) == best
    assert "float16" not in peaks.flops
    assert "best stable value of 2 calibration(s)" in peaks.source


def _calibration(float32: float, bandwidth: float, stable: str = "yes", created: str = "2026-01-01") -> Run:
    """A stored calibration with chosen values (timing is what the other tests measure for real)."""
    timing = {"repeats": "5", "statistic": "best of 5", "stable": stable, "spread_of_fastest": "1.0 %"}
    return Run(
        kind=cal.KIND,
        format=cal.FORMAT,
        source="test",
        created=f"{created}T00:00:00+00:00",
        environment={"host": "h"},
        device={**parse(""), "name": "cpu"},
        launches=[
            Launch(
                "numpy.matmul",
                0,
                attributes={"dtype": "float32", "shape": "8x8x8", **timing},
                metrics=[Metric("flop_rate", float32, "FLOP/second", origin="calibrated")],
            ),
            Launch(
                "numpy.add",
                1,
                attributes={"array_bytes": "4096", **timing},
                metrics=[Metric("bandwidth", bandwidth, "byte/second", origin="calibrated")],
            ),
        ],
    )


def test_a_worse_calibration_does_not_replace_a_better_one(tmp_path: Path) -> None:
    good, busy = _calibration(184e9, 15e9), _calibration(103e9, 16e9, created="2026-02-01")
    with open_store(tmp_path / "s.sqlite") as store:
        store.add(good)
        store.add(busy)  # the newest
        peaks = cal.load_calibration(store, "h")
    assert peaks is not None and peaks.flops["float32"] == 184e9 and peaks.bandwidth == 16e9
    assert f"float32 matmul 8x8x8 184.0 GFLOP/s ({good.run_id[:8]}" in peaks.source
    assert cal.review(busy, [good]) == [
        f"float32 matmul 8x8x8 103.0 GFLOP/s is 56 % of the 184.0 GFLOP/s that calibration {good.run_id[:8]} "
        "(2026-01-01) measured on this host; that one stays in use (a busy host only measures less)"
    ]
    in_use = {row["ceiling"]: row["in use"] for row in cal.summary_rows(busy, [good])}
    assert in_use == {"float32 matmul": f"{good.run_id[:8]}: 184", "np.add bandwidth": "this"}


def test_an_unstable_ceiling_is_stored_but_never_used() -> None:
    shaky = _calibration(500e9, 20e9, stable="no")
    assert cal.peaks_from_runs([shaky]) is None
    steady = _calibration(150e9, 14e9)
    peaks = cal.peaks_from_runs([steady, shaky])
    assert peaks is not None and (peaks.flops["float32"], peaks.bandwidth) == (150e9, 14e9)
    assert [r["stable"] for r in cal.summary_rows(shaky, [steady])] == ["NO (1.0 %)", "NO (1.0 %)"]


def test_timing_goes_on_until_the_fastest_calls_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuprof.workloads import timing

    class Clock:
        now = 0

        def perf_counter_ns(self) -> int:
            return self.now

    clock = Clock()
    monkeypatch.setattr(timing, "time", clock)
    durations = iter([30, 10, 20, 40, 50, 10.2, 60, 10.1, 99, 99])  # ms; settles at the 8th call

    def call() -> None:
        clock.now += int(next(durations) * 1e6)

    times, stable = cal.stable_times(call, cal.CalibrationPlan(8, 4, warmup=0, repeats=5, budget_s=0.4))
    assert stable and len(times) == 8
    assert cal.spread_of_fastest(times) == pytest.approx(0.02)
    durations = iter([30, 10, 20, 40, 50, 60, 70, 80, 90, 99])
    times, stable = cal.stable_times(call, cal.CalibrationPlan(8, 4, warmup=0, repeats=5, budget_s=0.4))
    assert not stable and len(times) == 9  # 450 ms of calls: over the budget


def test_summary_rows_compare_with_theoretical() -> None:
    rows = cal.summary_rows(cal.calibrate(steps=TINY))
    assert [r["ceiling"] for r in rows] == ["float32 matmul", "float64 matmul", "np.add bandwidth"]
    for row in rows[:2]:
        if row["theory"]:
            assert row["% of theory"] == pytest.approx(100 * row["value"] / row["theory"])


@pytest.mark.slow
def test_cli_calibrate_quick_stores_and_prints_json(tmp_path: Path) -> None:
    store = tmp_path / "cli.sqlite"
    result = CliRunner().invoke(main, ["calibrate", "--quick", "--store", str(store), "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert {r["ceiling"] for r in rows} >= {"float32 matmul", "np.add bandwidth"}
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
