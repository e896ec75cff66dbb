"""Issue 28 items 21 and 19: a calibration far below the theoretical peak at the clock probed after it is
stored but not used, and its "in use" column says why. The device is this build VM's real
/proc/cpuinfo and lscpu text (tests/test_cpu_device.py): 2 cores x 2.6 GHz x 16 float32 lanes x
2 FMA units x 2 = 332.8 GFLOP/s at the 2.6 GHz probed."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_cpu_device import CPUINFO, LSCPU

from gpuprof import calibrate as cal
from gpuprof.devices.cpu import parse
from gpuprof.model import Launch, Metric, Run
from gpuprof.store import open_store

PROBED = "2599998000"


def _calibration(float32: float, created: str, spread: str = "1.0 %", bandwidth: float = 9e9) -> Run:
    stable = "yes" if float(spread.split()[0]) <= 100 * cal.STABLE_WITHIN else "no"
    timing = {"repeats": "5", "statistic": "best of 5", "stable": stable, "spread_of_fastest": spread}
    return Run(
        kind=cal.KIND,
        format=cal.FORMAT,
        source="test",
        created=f"{created}T00:00:00+00:00",
        environment={"host": "vm"},
        device=parse(CPUINFO, LSCPU),
        launches=[
            Launch(
                "numpy.matmul",
                0,
                attributes={"dtype": "float32", "shape": "512x512x512", "clock_hz": PROBED, **timing},
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


def test_a_stable_calibration_at_17_percent_of_theory_is_stored_not_used(tmp_path: Path) -> None:
    low = _calibration(56.6e9, "2026-01-01")  # 17 % of 332.8 GFLOP/s: stable but far below
    assert cal.not_used(cal.ceilings(low)[0]).startswith(
        "17 % of the theoretical 332.8 GFLOP/s at the 2.6 GHz probed after it, under 50 %"
    )
    assert cal.not_used(cal.ceilings(low)[1]) == ""  # bandwidth: no theoretical value to judge by
    with open_store(tmp_path / "s.sqlite") as store:
        store.add(low)
        peaks = cal.load_calibration(store, "vm")
    assert peaks is not None and "float32" not in peaks.flops and peaks.bandwidth == 9e9  # stored, not used
    [matmul, _] = cal.summary_rows(low)
    assert matmul["% of theory"] == 100 * 56.6e9 / 332.7997440e9
    assert matmul["in use"].startswith("none (not this: 17 % of the theoretical 332.8 GFLOP/s")
    fair = _calibration(180e9, "2026-02-01")  # 54 %: used, and it stays the one in use
    assert cal.peaks_from_runs([low, fair]).flops["float32"] == 180e9
    assert cal.summary_rows(low, [fair])[0]["in use"].startswith(f"{fair.run_id[:8]}: 180 (not this: 17 %")


def test_a_run_measured_before_calibrate_has_one_roofline_efficiency_everywhere(tmp_path: Path) -> None:
    """Issue 28 item 19: a CPU run stored before its host's calibration is judged against that
    calibration by compare, show (text and JSON) and gpuprof.results() alike (before: compare
    gave a roofline efficiency, show and results() none)."""
    import json

    from click.testing import CliRunner

    import gpuprof
    from gpuprof.cli import main
    from gpuprof.devices.cpu import theoretical_peaks
    from gpuprof.model import TIMED

    device = parse(CPUINFO, LSCPU)
    shape = [1000, 1000]
    run = Run(
        kind="run",
        format="cpu-numpy",
        source="test",
        created="2025-12-01T00:00:00+00:00",
        device={**device, "kind": "cpu", "peaks": [vars(theoretical_peaks(device))]},
        workload={
            "op": "add",
            "dtype": "float32",
            "shape": shape,
            "size_bytes": 12_000_000,
            "requested": "12MB",
            "engine": "numpy",
        },
        environment={"host": "vm"},
        launches=[
            Launch("numpy:add", i, metrics=[Metric("wall_time", t, "second", "kernel_duration", TIMED)])
            for i, t in enumerate([1.5e-3, 1.6e-3, 1.5e-3, 1.55e-3])
        ],
    )
    store = tmp_path / "s.sqlite"
    with open_store(store) as opened:
        opened.add(run)
        opened.add(_calibration(180e9, "2026-01-01"))  # np.add 9 GB/s, measured after the run
    runner = CliRunner()
    compared = json.loads(runner.invoke(main, ["compare", "--store", str(store), "--format", "json"]).stdout)
    [row] = [r for r in compared if r["run"] == run.run_id[:8]]
    expected = 100 * (1e6 / 1.525e-3) / (1e6 / 12e6 * 9e9)  # memory-bound: AI x calibrated bandwidth
    assert row["roof.%"] == pytest.approx(expected)
    shown = json.loads(runner.invoke(main, ["show", run.run_id[:8], "--store", str(store), "--format", "json"]).stdout)
    roof = [q for q in shown["quantities"] if q["quantity"].startswith("efficiency: roofline")]
    assert [q["value"] for q in roof] == [pytest.approx(expected)]
    assert gpuprof.results(store)["eff_roofline_%"].tolist() == [pytest.approx(expected)]
    listing = runner.invoke(main, ["show", "--store", str(store), "--format", "json"]).stdout
    assert [r["eff_roofline_%"] for r in json.loads(listing) if r["kind"] == "run"] == [pytest.approx(expected)]


def test_show_kind_calibration_lists_each_ceiling_whether_it_settled_and_why_it_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27 item 14: 'show --kind calibration' listed format, source and a launch count only."""
    import json

    from click.testing import CliRunner

    from gpuprof.cli import main

    low, fair, shaky = (
        _calibration(56.6e9, "2026-01-01"),
        _calibration(180e9, "2026-02-01", bandwidth=9.5e9),
        _calibration(200e9, "2026-03-01", spread="9.0 %", bandwidth=8e9),  # neither ceiling settled
    )
    with open_store(tmp_path / "s.sqlite") as store:
        for run in (low, fair, shaky):
            store.add(run)
    command = ["show", "--kind", "calibration", "--store", str(tmp_path / "s.sqlite")]
    rows = json.loads(CliRunner().invoke(main, [*command, "--format", "json"]).stdout)
    seen = {(row["run"], row["ceiling"]): row for row in rows}
    assert len(rows) == 6 and {row["origin"] for row in rows} == {"calibrated"}
    low32, fair32, shaky32 = (seen[(r.run_id[:8], "float32 matmul")] for r in (low, fair, shaky))
    assert (low32["value"], low32["unit"], low32["theory"]) == (56.6, "GFLOP/s", pytest.approx(332.8, abs=0.05))
    assert fair32["in use"] == "this" and fair32["why not used"] == ""
    assert low32["in use"] == f"{fair.run_id[:8]}: 180"
    assert low32["why not used"].startswith("17 % of the theoretical 332.8 GFLOP/s at the 2.6 GHz probed after it")
    assert shaky32["stable"] == "NO (9.0 %)" and shaky32["why not used"] == "did not settle"
    low_bandwidth = seen[(low.run_id[:8], "np.add bandwidth")]  # 9 GB/s, stable: fair's 9.5 is used
    assert low_bandwidth["in use"] == f"{fair.run_id[:8]}: 9.5" and "as high or higher" in low_bandwidth["why not used"]
    monkeypatch.setenv("COLUMNS", "80")
    table = CliRunner().invoke(main, command).stdout
    assert max(len(line) for line in table.splitlines()) <= 80 and "did not settle" in table
