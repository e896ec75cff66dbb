"""Energy meters: RAPL arithmetic on a powercap tree built in a temporary folder (wraparound included),
the no-source path for real on this machine, impossible readings, and the derived energy numbers."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gpuprof.derive.energy import energy_columns, energy_quantities
from gpuprof.energy import open_energy
from gpuprof.energy.nvml_power import integrate
from gpuprof.energy.rapl import find_domains
from gpuprof.energy.sampling import Reading, checked_metrics
from gpuprof.model import DERIVED, MEASURED, Launch, Run

# A real Xeon's package range (max_energy_range_uj), where the 32-bit counter wraps.
MAX_RANGE = 262143328850


def _zone(root: Path, zone: str, name: str, energy: int, max_range: int | None = MAX_RANGE) -> Path:
    path = root / zone
    path.mkdir(parents=True)
    (path / "name").write_text(f"{name}\n")
    (path / "energy_uj").write_text(f"{energy}\n")
    if max_range is not None:
        (path / "max_energy_range_uj").write_text(f"{max_range}\n")
    return path / "energy_uj"


def _set(counter: Path, value: int) -> None:
    """Change a counter in one step, as sysfs does: the sampling thread must never see half a write."""
    staged = counter.with_name("energy_uj.new")
    staged.write_text(f"{value}\n")
    staged.replace(counter)


@pytest.fixture
def powercap(tmp_path: Path) -> Path:
    """The flat /sys/class/powercap listing of a one-socket server: package, core, dram, and psys."""
    root = tmp_path / "powercap"
    _zone(root, "intel-rapl:0", "package-0", MAX_RANGE - 1_000_000)
    _zone(root, "intel-rapl:0:0", "core", 7_000_000)
    _zone(root, "intel-rapl:0:2", "dram", 5_000_000, 65712999613)
    _zone(root, "intel-rapl:1", "psys", 9_000_000)
    return root


def _metric(metrics: list, name: str) -> float:
    return next(m.value for m in metrics if m.name == name)


def test_only_package_and_dram_zones_are_summed(powercap: Path) -> None:
    domains = find_domains(powercap)
    assert [(d.zone, d.label, d.max_range_uj) for d in domains] == [
        ("intel-rapl:0", "package-0", MAX_RANGE),
        ("intel-rapl:0:2", "dram-0", 65712999613),
    ]


def test_rapl_energy_across_a_counter_wraparound(powercap: Path) -> None:
    meter, notes = open_energy("cpu", interval=60, powercap_root=powercap)  # no sample in between
    assert meter is not None and notes == []
    with meter:
        time.sleep(0.05)
        (powercap / "intel-rapl:0" / "energy_uj").write_text("2000000\n")  # wrapped past MAX_RANGE
        (powercap / "intel-rapl:0:2" / "energy_uj").write_text("5500000\n")
        (powercap / "intel-rapl:0:0" / "energy_uj").write_text("99000000\n")  # core: not summed
    metrics = meter.metrics()
    # package: 1,000,000 uJ up to the wrap + 2,000,000 after it = 3 J; dram 0.5 J.
    assert _metric(metrics, "energy package-0") == pytest.approx(3.0)
    assert _metric(metrics, "energy dram-0") == pytest.approx(0.5)
    assert _metric(metrics, "energy") == pytest.approx(3.5)
    region = _metric(metrics, "energy region")
    assert 0.05 <= region < 1.0
    assert _metric(metrics, "power (avg)") == pytest.approx(3.5 / region)
    assert _metric(metrics, "energy samples") == 1
    assert "package-0, dram-0" in _metric(metrics, "energy method")
    assert {m.origin for m in metrics if m.name.startswith("energy ") and m.unit == "joule"} == {MEASURED}
    assert next(m for m in metrics if m.name == "power (avg)").origin == DERIVED
    assert meter.notes == []


def test_rapl_samples_in_the_background(powercap: Path) -> None:
    package = powercap / "intel-rapl:0" / "energy_uj"
    package.write_text("0\n")
    meter, _ = open_energy("cpu", interval=0.01, powercap_root=powercap)
    assert meter is not None
    with meter:
        for value in (1_000_000, 2_500_000):
            time.sleep(0.1)
            _set(package, value)
        time.sleep(0.05)
    metrics = meter.metrics()
    assert _metric(metrics, "energy package-0") == pytest.approx(2.5)
    assert _metric(metrics, "energy samples") >= 5
    low, avg, high = (_metric(metrics, n) for n in ("power (min sample)", "power (avg)", "power (max sample)"))
    assert low == 0.0 and low <= avg <= high  # intervals without a counter update read 0 W


def test_counter_that_goes_down_without_a_known_range_is_flagged(tmp_path: Path) -> None:
    root = tmp_path / "powercap"
    counter = _zone(root, "intel-rapl:0", "package-0", 5_000_000, max_range=None)
    meter, _ = open_energy("cpu", interval=60, powercap_root=root)
    assert meter is not None
    with meter:
        time.sleep(0.01)
        counter.write_text("4000000\n")
    assert meter.metrics() == []
    assert len(meter.notes) == 1 and "did not advance" not in meter.notes[0]
    assert "impossible reading: negative energy delta on package-0 (5000000 -> 4000000 uJ" in meter.notes[0]


def test_a_step_no_hardware_could_draw_is_dropped_with_a_note(tmp_path: Path) -> None:
    """A counter that went back a little, read with a wrong (huge) wrap point, would add 9.2e12 J."""
    root = tmp_path / "powercap"
    counter = _zone(root, "intel-rapl:0", "package-0", 5_000_000, max_range=2**63 - 1)
    meter, _ = open_energy("cpu", interval=60, powercap_root=root)
    assert meter is not None
    with meter:
        time.sleep(0.01)
        counter.write_text("4000000\n")
    assert not any(m.unit == "joule" and m.value and m.value > 1 for m in meter.metrics())
    assert any(
        "implausible energy step on package-0 (5000000 -> 4000000 uJ" in note and "dropped" in note
        for note in meter.notes
    )


def test_counter_that_does_not_advance_is_flagged(powercap: Path) -> None:
    meter, _ = open_energy("cpu", interval=60, powercap_root=powercap)
    assert meter is not None
    with meter:
        time.sleep(0.01)
    assert meter.metrics() == []
    assert "did not advance" in meter.notes[0] and "give more --repeat" in meter.notes[0]


def test_impossible_readings_are_notes_not_numbers() -> None:
    below = Reading("test", 0.1, duration_s=1.0, energy_j=1.0, powers_w=[2.0, 3.0])
    assert checked_metrics(below) == (
        [],
        ["energy (test) not reported: impossible reading: average power 1 W is below the lowest sample 2 W"],
    )
    above = Reading("test", 0.1, duration_s=1.0, energy_j=9.0, powers_w=[2.0, 3.0])
    assert checked_metrics(above) == (
        [],
        ["energy (test) not reported: impossible reading: average power 9 W is above the highest sample 3 W"],
    )
    metrics, notes = checked_metrics(Reading("test", 0.1, duration_s=1.0, energy_j=1.0, powers_w=[]))
    assert metrics == [] and "energy 1 J with no power samples" in notes[0]
    metrics, notes = checked_metrics(Reading("test", 0.1, duration_s=1.0, energy_j=-0.5, powers_w=[1.0]))
    assert metrics == [] and "negative energy delta -0.5 J" in notes[0]


def test_power_samples_integrate_by_trapezoids() -> None:
    # 0-1 s: 100 -> 200 W (150 J); 1-3 s: flat 200 W (400 J).
    assert integrate([(0.0, 100.0), (1.0, 200.0), (3.0, 200.0)]) == pytest.approx(550.0)
    assert integrate([(0.0, 100.0)]) is None


def test_empty_powercap_folder_means_no_source(tmp_path: Path) -> None:
    meter, notes = open_energy("cpu", powercap_root=tmp_path)
    assert meter is None and notes == [
        f"no CPU power source: {tmp_path} has no intel-rapl zones (virtual machines "
        "and containers usually hide RAPL); energy not measured"
    ]


def test_this_machine_has_no_cpu_power_source() -> None:
    if any(Path("/sys/class/powercap").glob("intel-rapl:*")):
        pytest.skip("this machine exposes RAPL zones")
    meter, notes = open_energy("cpu")
    assert meter is None and len(notes) == 1
    assert notes[0].startswith("no CPU power source: /sys/class/powercap has no intel-rapl zones")


def test_this_machine_has_no_gpu_power_source() -> None:
    pytest.importorskip("pynvml")
    meter, notes = open_energy("cuda")
    if meter is not None:
        pytest.skip("NVML reads a GPU's power here")
    assert notes == [
        "no GPU power source: NVML did not start (NVML Shared Library Not Found; is the NVIDIA "
        "driver installed?); energy not measured"
    ]


def _metered_dot_run() -> Run:
    """A dot 100x200x300 run whose 4 timed repeats took 0.048 J over 0.4 s, through the real metric checks."""
    metrics, notes = checked_metrics(
        Reading(
            "RAPL energy_uj (sysfs powercap): package-0",
            0.1,
            duration_s=0.4,
            energy_j=0.048,
            powers_w=[0.1, 0.12, 0.14, 0.11],
            domains={"package-0": 0.048},
        )
    )
    assert notes == []
    return Run(
        kind="run",
        format="cpu-numpy",
        source="test",
        workload={"op": "dot", "shape": [100, 200, 300], "dtype": "float32"},
        launches=[Launch("numpy:dot", 0, invocations=4, metrics=metrics)],
    )


def test_energy_per_call_per_flop_and_per_watt() -> None:
    quantities = {q.name: q for q in energy_quantities(_metered_dot_run())}
    # 0.048 J / 4 repeats = 0.012 J per call; dot 100x200x300 = 2*100*200*300 = 12e6 FLOP.
    assert quantities["energy (timed repeats)"].value == pytest.approx(0.048)
    assert quantities["energy (timed repeats)"].origin == MEASURED
    assert quantities["energy per call"].value == pytest.approx(0.012)
    assert quantities["energy per FLOP"].value == pytest.approx(1000.0)  # 0.012 J / 12e6 = 1e-9 J = 1000 pJ
    assert quantities["energy per FLOP"].unit == "pJ/FLOP"
    assert quantities["GFLOP/s per watt"].value == pytest.approx(1.0)  # 12e6 FLOP / 0.012 J = 1e9 FLOP/J
    assert quantities["average power"].value == pytest.approx(0.12)  # 0.048 J / 0.4 s
    assert "samples 0.1-0.14 W" in quantities["average power"].basis
    assert {q.origin for n, q in quantities.items() if n != "energy (timed repeats)"} == {DERIVED}
    assert energy_columns(_metered_dot_run()) == pytest.approx(
        {"J/call": 0.012, "W": 0.12, "pJ/FLOP": 1000.0, "GFLOP/s/W": 1.0}
    )


def test_unmetered_run_has_no_energy_numbers() -> None:
    run = Run(
        kind="run",
        format="cpu-numpy",
        source="test",
        workload={"op": "add", "shape": [10, 10]},
        launches=[Launch("numpy:add", 0)],
    )
    assert energy_quantities(run) == [] and energy_columns(run) == {}
