"""An efficiency above 100 % says why, from what its ceiling assumed: a FLOP ceiling is never
blamed on caches, a calibrated ceiling beaten by more than 5 % is called suspect, and the run
clock is measured (perf cycles or the clock probe), never /proc/cpuinfo's nominal clock."""

from __future__ import annotations

import platform
import sys
from dataclasses import asdict

import pytest
from click.testing import CliRunner

from gpuprof.cli import main
from gpuprof.derive.efficiency import VS_DATASHEET, VS_ROOFLINE, VS_RUN_CLOCK, RunClock, above_100, efficiencies
from gpuprof.derive.summary import quantities
from gpuprof.devices.peaks import Peaks
from gpuprof.model import TIMED, Launch, Metric, Run
from gpuprof.store import open_store

NOMINAL = Peaks(
    "AMD EPYC", {"float32": 166.2e9}, None, 2.596e9, "derived", "2 cores × 2.596 GHz (/proc/cpuinfo cpu MHz) × ..."
)
CALIBRATED = Peaks("AMD EPYC", {"float32": 100e9}, 14e9, None, "calibrated", "gpuprof calibrate ...")
PROBED = RunClock(3.69e9, "clock probe after the timed repeats: chains of 100 dependent adds (measured)")
UNKNOWN = RunClock(None, "unknown: perf counted no cycles here, and no clock probe for aarch64 on linux")


def _one(found, kind, unit="FLOP/second"):
    return next(e for e in found if e.kind == kind and e.unit == unit)


def test_a_flop_peak_at_the_nominal_clock_is_explained_by_the_clock_not_caches():
    found = efficiencies(193e9, 1.6e9, "float32", NOMINAL, PROBED.hz)
    nominal = _one(found, VS_DATASHEET)
    assert nominal.percent == pytest.approx(116.1, abs=0.1)
    why = above_100(nominal, NOMINAL, PROBED, cache="warm")
    assert why == (
        "above a peak at 2.596 GHz: the cores ran faster (clock probe after the timed repeats); "
        "see the efficiency at the run clock"
    )
    assert "cache" not in why
    assert above_100(_one(found, VS_RUN_CLOCK), NOMINAL, PROBED) is None  # 82 % at the probed clock


def test_without_a_run_clock_the_reason_says_it_is_unknown():
    nominal = _one(efficiencies(193e9, None, "float32", NOMINAL, None), VS_DATASHEET)
    why = above_100(nominal, NOMINAL, UNKNOWN, cache="cold")
    assert why.startswith("above a peak at 2.596 GHz, a clock the cores exceed under load (turbo)")
    assert why.endswith(
        "the run clock is unknown: perf counted no cycles here, and no clock probe for aarch64 on linux"
    )


def test_a_calibrated_ceiling_beaten_by_more_than_5_percent_is_suspect():
    beaten = _one(efficiencies(150e9, None, "float32", CALIBRATED), VS_DATASHEET)
    assert above_100(beaten, CALIBRATED, PROBED).startswith(
        "above the calibrated FLOP/s ceiling: the ceiling is suspect"
    )
    close = _one(efficiencies(103e9, None, "float32", CALIBRATED), VS_DATASHEET)
    assert "within its noise" in above_100(close, CALIBRATED, PROBED)


def test_a_memory_roof_is_explained_by_the_cache_when_warm_and_suspect_when_cold():
    roof = _one(efficiencies(2e9, 24e9, "float32", CALIBRATED), VS_ROOFLINE)
    assert roof.bound == "memory" and roof.percent > 105
    warm = above_100(roof, CALIBRATED, PROBED, cache="warm")
    assert warm.startswith("above the memory ceiling: the operands stayed in cache") and "--cache cold" in warm
    assert above_100(roof, CALIBRATED, PROBED, cache="cold").startswith(
        "above the calibrated bandwidth: the ceiling is suspect"
    )


def _run(seconds: float, peaks: list[Peaks], device: dict) -> Run:
    return Run(
        kind="run",
        format="cpu-numpy",
        source="test",
        device={"name": "AMD EPYC", "kind": "cpu", "peaks": [asdict(p) for p in peaks], **device},
        workload={
            "op": "dot",
            "dtype": "float32",
            "shape": [1000, 1000, 1000],
            "size_bytes": 12_000_000,
            "requested": "12MB",
            "engine": "numpy",
            "cache": "warm",
            "warmup": 1,
        },
        environment={"host": "h"},
        launches=[
            Launch("numpy:dot", i, metrics=[Metric("wall_time", seconds, "second", "kernel_duration", TIMED)])
            for i in range(3)
        ],
    )


def test_the_run_report_flags_every_value_above_100_with_its_reason():
    run = _run(
        2e9 / 193e9, [NOMINAL, CALIBRATED], {"clock_during_run_hz": PROBED.hz, "clock_during_run_source": PROBED.source}
    )
    found = {q.name: q for q in quantities(run)}
    assert found["core clock during run"].value == PROBED.hz and found["core clock during run"].origin == "measured"
    above = {name: q.basis for name, q in found.items() if name.startswith("efficiency") and q.value > 100}
    assert set(above) == {
        "efficiency: FLOP/s, theoretical peak",
        "efficiency: FLOP/s, calibrated peak",
        "efficiency: roofline, calibrated (compute-bound)",
    }
    assert all(" — ABOVE 100 %: " in basis for basis in above.values())
    assert (
        " — ABOVE 100 %: 16.1 % above a peak at 2.596 GHz: the cores ran faster"
        in above["efficiency: FLOP/s, theoretical peak"]
    )
    assert "the ceiling is suspect" in above["efficiency: FLOP/s, calibrated peak"]
    assert found["efficiency: theoretical peak at run clock"].value == pytest.approx(82.0, abs=0.5)


def test_a_stored_nominal_clock_is_not_taken_for_the_run_clock():
    run = _run(
        2e9 / 193e9,
        [NOMINAL],
        {
            "clock_during_run_hz": 2.596e9,
            "clock_during_run_source": "mean 'cpu MHz' in /proc/cpuinfo right after the timed repeats",
        },
    )
    found = {q.name: q for q in quantities(run)}
    assert found["core clock during run"].value is None
    assert "not a measurement of the clock under load" in found["core clock during run"].basis
    assert "efficiency: theoretical peak at run clock" not in found


@pytest.mark.skipif(sys.platform != "linux" or platform.machine() != "x86_64", reason="the clock probe is x86-64 Linux")
def test_a_cpu_run_records_a_measured_clock(tmp_path):
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--op",
            "add",
            "--shape",
            "64x64",
            "--device",
            "cpu",
            "--repeat",
            "2",
            "--store",
            str(tmp_path / "s.sqlite"),
        ],
    )
    assert result.exit_code == 0, result.output
    with open_store(tmp_path / "s.sqlite") as store:
        (run,) = store.runs()
    source = run.device["clock_during_run_source"]
    assert source.startswith(("perf: cycles", "clock probe")) and "/proc/cpuinfo" not in source
    assert 0.2e9 < run.device["clock_during_run_hz"] < 8e9


def test_without_a_calibrated_flop_ceiling_the_roofline_says_why():
    bandwidth_only = Peaks("AMD EPYC", {"float64": 18e9}, 15e9, None, "calibrated", "gpuprof calibrate ...")
    run = _run(2e9 / 10e9, [NOMINAL, bandwidth_only], {})
    roofline = next(q for q in quantities(run) if q.name == "efficiency: roofline")
    assert roofline.value is None and roofline.basis == (
        "this host's calibrations have no stable float32 FLOP/s ceiling: rerun 'gpuprof calibrate' when the host "
        "is idle"
    )
