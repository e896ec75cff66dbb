"""STONNE outputs (issue 32): the study's real sanity GEMM (M=20 N=20 K=256 on a 256-multiplier MAERI,
bandwidths 64/64, tiles T_K=64 T_M=2 T_N=1) read from tests/fixtures/stonne (SOURCES.md)."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuprof.derive import simulated
from gpuprof.derive.kernel_table import kernel_table
from gpuprof.errors import FormatError
from gpuprof.importing import read_file
from gpuprof.model import ANALYTIC, SIMULATED
from gpuprof.readers import detect, stonne

FIXTURES = Path(__file__).parent / "fixtures" / "stonne"
RUN = FIXTURES / "run_0001_TM2_TN1_TK64"
COUNTERS = next(RUN.glob("*.counters"))
STATS = next(RUN.glob("*.txt"))
TABLE = FIXTURES / "energy_model.txt"


def gpuprof(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuprof", *args], check=False, capture_output=True, text=True, timeout=120
    )


def test_the_folder_reads_as_one_run_with_the_layer_paired_across_timestamps() -> None:
    run = read_file(RUN)
    assert run.format == "stonne" and run.device["kind"] == "simulated"
    (layer,) = run.launches
    assert layer.kernel == "TestLayer"
    assert layer.metric("cycles").value == 6200 and layer.metric("cycles").origin == SIMULATED
    assert layer.metric("MACs").value == 102_400 and layer.metric("MACs").origin == ANALYTIC
    assert layer.value("multipliers") == 256
    assert layer.value("global buffer reads") == 108_720 and layer.value("global buffer writes") == 1600
    assert layer.value("GlobalBuffer/GLOBALBUFFER.READ") == 108_720
    assert layer.value("MSNetwork/MULTIPLIER instances") == 256
    assert layer.value("CollectionBus/CB_WIRE.WRITE") == 3200
    assert layer.value("SDMemory.N_SRAM_input_reads") == 102_400
    assert layer.value("SDMemory.N_SRAM_weight_reads") == 5120
    assert layer.attributes["layer.K"] == "20" and layer.attributes["layer.S"] == "256"
    assert layer.attributes["tile.T_S"] == "64" and layer.attributes["tile.T_X_"] == "2"
    assert layer.attributes["hw.SDMemory.dn_bw"] == "64"
    assert {m.origin for m in layer.metrics} == {SIMULATED, ANALYTIC}


def test_check_values_6200_cycles_and_6_45_percent_utilisation() -> None:
    row = simulated.layer_table(read_file(RUN)).iloc[0]
    assert row["cycles"] == 6200
    assert row["utilisation (%)"] == pytest.approx(100 * 102_400 / (6200 * 256))
    assert round(row["utilisation (%)"], 2) == 6.45
    assert "time (s)" not in row  # no clock given: no time
    assert simulated.layer_table(read_file(RUN), clock_hz=1e9).iloc[0]["time (s)"] == pytest.approx(6.2e-6)


def test_energy_matches_stonnes_own_script_as_the_study_recorded_it() -> None:
    with open(FIXTURES / "summary.csv", newline="") as handle:
        recorded = {row["run_name"]: row for row in csv.DictReader(handle)}["run_0006_TM2_TN1_TK64"]
    assert int(recorded["cycles"]) == 6200
    row = simulated.layer_table(read_file(RUN), energy_table=TABLE).iloc[0]
    assert row["energy (table units)"] == pytest.approx(float(recorded["energy"]), rel=1e-12)
    assert row["static energy (table units)"] == pytest.approx(
        6200 * (256 * 0.001614 + 255 * 0.001505 + 0.0101 + _switches() * 0.000157), rel=1e-12
    )


def _switches() -> int:
    return sum(1 for line in COUNTERS.read_text().splitlines() if line.startswith("SWITCH "))


def test_each_file_alone_reads_what_it_holds() -> None:
    counters = read_file(COUNTERS).launches[0]
    assert counters.value("cycles") == 6200 and counters.value("multipliers") == 256
    assert counters.value("MACs") is None  # the counters file has no layer dimensions
    stats = read_file(STATS).launches[0]
    assert stats.value("cycles") == 6200 and stats.value("MACs") == 102_400 and stats.value("multipliers") == 256
    assert stats.value("global buffer reads") is None
    assert detect(COUNTERS) is stonne and detect(STATS) is stonne and detect(RUN) is stonne


def test_console_output_gives_the_cycles_stonne_prints(tmp_path: Path) -> None:
    # the line STONNEModel.cpp prints after a layer: "Number of cycles running: " << n_cycles
    console = tmp_path / "stonne.log"
    console.write_text("Output Size: (X'=20, Y'=1)\nNumber of cycles running: 6200\nTest passed correctly\n")
    assert read_file(console).launches[0].value("cycles") == 6200


@pytest.mark.slow  # gpuprof in child processes: 2-6 s
def test_import_shows_the_simulated_layer_table(tmp_path: Path) -> None:
    done = gpuprof("import", str(RUN), "--store", str(tmp_path / "s.db"), "--format", "csv")
    assert done.returncode == 0, done.stderr
    assert "6200.0" in done.stdout and "6.451612903225806" in done.stdout
    text = gpuprof("import", str(RUN), "--store", str(tmp_path / "s.db"))
    assert "Imported layers (simulated" in text.stdout and "already in the store" in text.stderr
    table = kernel_table([read_file(RUN)])
    assert table["origin"].iat[0].startswith("cycles, multipliers, reads and writes simulated (STONNE)")


def test_simulate_layers_prints_energy_in_table_units() -> None:
    done = gpuprof("simulate", "layers", str(RUN), "--clock", "1000", "--energy-table", str(TABLE), "--format", "csv")
    assert done.returncode == 0, done.stderr
    header, row = list(csv.reader(done.stdout.splitlines()))[:2]
    values = dict(zip(header, row))
    assert float(values["energy (table units)"]) == pytest.approx(31342.74640269291, rel=1e-12)
    assert float(values["time (s)"]) == pytest.approx(6.2e-6)
    assert "in that table's units (STONNE states none)" in values["origin"]


def test_a_folder_with_an_unpaired_file_is_one_line(tmp_path: Path) -> None:
    shutil.copy(STATS, tmp_path / STATS.name)
    with pytest.raises(FormatError, match="without their pair"):
        read_file(tmp_path)
    done = gpuprof("import", str(tmp_path), "--store", str(tmp_path / "s.db"))
    assert done.returncode != 0 and "without their pair" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) <= 2


@pytest.mark.slow  # gpuprof in child processes: 2-6 s
def test_a_folder_of_something_else_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    done = gpuprof("simulate", "layers", str(tmp_path))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "no STONNE layer files" in done.stderr
    imported = gpuprof("import", str(tmp_path), "--store", str(tmp_path / "s.db"))
    assert imported.returncode != 0 and "Traceback" not in imported.stderr
    assert "a folder gpuprof cannot read as one run" in imported.stderr


def test_counters_from_another_simulation_are_refused(tmp_path: Path) -> None:
    shutil.copy(STATS, tmp_path / STATS.name)
    (tmp_path / COUNTERS.name).write_text(COUNTERS.read_text().replace("CYCLES=6200", "CYCLES=11760", 1))
    with pytest.raises(FormatError, match="6200"):
        read_file(tmp_path)


def test_the_energy_scripts_output_reads_its_totals_in_table_units() -> None:
    run = read_file(FIXTURES / "sanity_gemm.energy")
    layer = run.launches[0]
    with open(FIXTURES / "summary.csv", newline="") as handle:
        recorded = {row["run_name"]: row for row in csv.DictReader(handle)}["run_0006_TM2_TN1_TK64"]
    assert layer.value("energy (table units)") == float(recorded["energy"])
    assert layer.value("static energy (table units)") == 5190.658600000052
    assert layer.value("GlobalBuffer dynamic energy (table units)") == 4854.079999999999
    assert layer.value("area (table units)") == 679443.640000001
    # gpuprof's own sum over the counters with the same table agrees
    ours = simulated.layer_table(read_file(RUN), energy_table=TABLE).iloc[0]["energy (table units)"]
    assert ours == pytest.approx(layer.value("energy (table units)"), rel=1e-12)


def test_energy_output_without_its_total_is_one_line(tmp_path: Path) -> None:
    cut = tmp_path / "cut.energy"
    cut.write_text((FIXTURES / "sanity_gemm.energy").read_text().split("Total STATIC")[0])
    with pytest.raises(FormatError, match="no 'Total Energy' line"):
        read_file(cut)


def test_simulate_layers_shows_the_energy_scripts_total() -> None:
    done = gpuprof("simulate", "layers", str(FIXTURES / "sanity_gemm.energy"), "--format", "csv")
    assert done.returncode == 0, done.stderr
    values = next(csv.DictReader(done.stdout.splitlines()))
    assert float(values["energy (table units)"]) == 31342.74640269291
    assert "calculate_energy.py summed it" in values["origin"]
