"""Energy through the real CLI: ``gpuprof run --device cpu`` reading a RAPL-style powercap tree built in a
temporary folder (named by $GPUPROF_POWERCAP_ROOT) whose counters a background thread advances at a known
power while the run executes, then ``gpuprof compare`` over the store, with and without a power source.

The GPU side cannot be measured here: its tests check that the energy the workload child records (or
its reason for having none) reaches the Run through ``run_gpu``, with stand-in profilers and a
stand-in child result, as tests/test_gpu_launch_pipeline.py does; those energy values are plumbing,
not measurements."""

from __future__ import annotations

import csv
import io
import json
import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import pytest
from click.testing import CliRunner, Result
from extras import PYTENSOR
from test_energy import _set, _zone

from gpuprof.cli import main
from gpuprof.compare import short_name
from gpuprof.derive.energy import energy_quantities
from gpuprof.energy import from_record, open_energy, to_record
from gpuprof.energy.sampling import Reading, checked_metrics
from gpuprof.model import DERIVED, MEASURED, Run
from gpuprof.store import open_store

# Powercap trees are built with test_energy's _zone (a zone folder) and _set (a counter update in one step).
PACKAGE_W, DRAM_W = 20.0, 5.0
# A small wrap point (12 J: every 0.6 s at 20 W, six sampling intervals), so the package counter
# usually wraps inside the timed region (test_energy.py tests the wrap arithmetic itself); DRAM's is
# a real Xeon's.
PACKAGE_RANGE_UJ, DRAM_RANGE_UJ = 12_000_000, 65_712_999_613
M = K = N = 512
FLOPS = 2 * M * K * N
REGION_S = 0.6  # timed region wanted: several power samples, and a tolerance small next to it


class PowerWriter:
    """Advances the package and DRAM counters as PACKAGE_W and DRAM_W watts would, every 2 ms, in a
    thread; remembers the longest gap between two writes (how stale a read can be)."""

    def __init__(self, package: Path, dram: Path) -> None:
        self.package, self.dram = package, dram
        self.longest_gap = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        start = last = time.perf_counter()
        while not self._stop.wait(0.002):
            now = time.perf_counter()
            _set(self.package, round(PACKAGE_W * 1e6 * (now - start)) % PACKAGE_RANGE_UJ)
            _set(self.dram, round(DRAM_W * 1e6 * (now - start)) % DRAM_RANGE_UJ)
            self.longest_gap, last = max(self.longest_gap, now - last), now

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture
def rapl_root(tmp_path: Path) -> Path:
    """A one-socket server's flat powercap listing: package, its core sub-zone, DRAM, and psys."""
    root = tmp_path / "powercap"
    _zone(root, "intel-rapl:0", "package-0", 0, PACKAGE_RANGE_UJ)
    _zone(root, "intel-rapl:0:0", "core", 0, PACKAGE_RANGE_UJ)
    _zone(root, "intel-rapl:0:2", "dram", 0, DRAM_RANGE_UJ)
    _zone(root, "intel-rapl:1", "psys", 0, PACKAGE_RANGE_UJ)
    return root


@pytest.fixture
def no_rapl_root(tmp_path: Path) -> Path:
    """A powercap folder without RAPL, as in a VM: only a non-RAPL zone."""
    root = tmp_path / "no-rapl"
    (root / "dtpm").mkdir(parents=True)
    return root


def _repeats_for(seconds: float) -> int:
    """Repeats of the 512³ numpy dot that take at least ``seconds`` on this machine (at its fastest)."""
    import numpy as np

    a = np.ones((M, K), dtype=np.float32)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        a @ a
        times.append(time.perf_counter() - start)
    return max(10, math.ceil(seconds / min(times)))


def _run(store: Path, *args: str, engine: str = "numpy", repeat: int = 3) -> Result:
    return CliRunner().invoke(
        main,
        [
            "run",
            "--op",
            "dot",
            "--shape",
            f"{M}x{K}x{N}",
            "--device",
            "cpu",
            "--engine",
            engine,
            "--repeat",
            str(repeat),
            "--warmup",
            "2",
            "--no-counters",
            "--store",
            str(store),
            *args,
        ],
    )


@dataclass
class Metered:
    store: Path
    rows: dict[str, dict]  # the run's JSON output by quantity
    repeat: int
    longest_gap: float  # how stale the counters could be when read


@pytest.fixture
def metered(tmp_path: Path, rapl_root: Path, monkeypatch: pytest.MonkeyPatch) -> Metered:
    """A numpy dot run metered through $GPUPROF_POWERCAP_ROOT while the writer advances the counters."""
    monkeypatch.setenv("GPUPROF_POWERCAP_ROOT", str(rapl_root))
    store, repeat = tmp_path / "s.sqlite", _repeats_for(REGION_S)
    with PowerWriter(rapl_root / "intel-rapl:0" / "energy_uj", rapl_root / "intel-rapl:0:2" / "energy_uj") as writer:
        result = _run(store, "--format", "json", repeat=repeat)
    assert result.exit_code == 0, result.output
    return Metered(
        store, {r["quantity"]: r for r in json.loads(result.stdout)["quantities"]}, repeat, writer.longest_gap
    )


def _energy_metrics(store: Path, repeat: int) -> dict[str, float | str]:
    with open_store(store) as opened:
        (run,) = opened.runs()
    launch = next((l for l in run.launches if l.value("energy") is not None), None)
    assert launch is not None, run.notes  # the notes say why the meter reported nothing
    assert launch.invocations == repeat
    return {m.name: m.value for m in launch.metrics}


@pytest.mark.slow  # a real metered run (0.6 s of timed work, its repeats calibrated first): 3-12 s
def test_run_reports_energy_from_the_counters_the_thread_advanced(metered: Metered) -> None:
    rows = metered.rows
    stored = _energy_metrics(metered.store, metered.repeat)
    region, energy = stored["energy region"], stored["energy"]
    # Each read sees the counters at most one write gap old, so the metered energy is the written power
    # times the metered time, give or take one gap (plus the few microseconds between clock and read).
    slack = metered.longest_gap + 0.005
    assert stored["energy package-0"] == pytest.approx(PACKAGE_W * region, abs=PACKAGE_W * slack)
    assert stored["energy dram-0"] == pytest.approx(DRAM_W * region, abs=DRAM_W * slack)
    assert energy == pytest.approx(stored["energy package-0"] + stored["energy dram-0"])
    assert "package-0, dram-0" in stored["energy method"]  # core and psys not summed

    per_call = energy / metered.repeat
    assert rows["energy (timed repeats)"]["value"] == pytest.approx(energy)
    assert stored["energy sampling interval"] == 0.1 and stored["energy samples"] >= 1
    assert rows["energy (timed repeats)"]["origin"] == MEASURED
    assert "RAPL energy_uj (sysfs powercap)" in rows["energy (timed repeats)"]["basis"]
    assert rows["energy per call"]["value"] == pytest.approx(per_call)
    assert rows["energy per call"]["unit"] == "joule"
    assert rows["average power"]["value"] == pytest.approx(energy / region)
    assert rows["average power"]["value"] == pytest.approx(
        PACKAGE_W + DRAM_W, abs=(PACKAGE_W + DRAM_W) * slack / region
    )
    assert rows["energy per FLOP"]["value"] == pytest.approx(per_call / FLOPS * 1e12)
    assert rows["energy per FLOP"]["unit"] == "pJ/FLOP"
    assert rows["GFLOP/s per watt"]["value"] == pytest.approx(FLOPS / per_call / 1e9)
    assert rows["GFLOP/s per watt"]["unit"] == "GFLOP/s/W"
    assert {rows[q]["origin"] for q in ("energy per call", "average power", "energy per FLOP", "GFLOP/s per watt")} == {
        DERIVED
    }


def test_run_without_rapl_zones_explains_instead(
    tmp_path: Path, no_rapl_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUPROF_POWERCAP_ROOT", str(no_rapl_root))
    result = _run(tmp_path / "s.sqlite")
    assert result.exit_code == 0, result.output
    assert (
        f"no CPU power source: {no_rapl_root} has no intel-rapl zones (the folder named by "
        "$GPUPROF_POWERCAP_ROOT); energy not measured"
    ) in " ".join(result.output.split())
    assert "energy per call" not in result.output and "GFLOP/s per watt" not in result.output


@pytest.mark.slow  # measures runs with metering and compares them: 8-19 s
@PYTENSOR
def test_compare_shows_energy_columns_and_explains_a_device_without_a_source(
    metered: Metered, no_rapl_root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    store, rows = metered.store, metered.rows
    monkeypatch.setenv("GPUPROF_POWERCAP_ROOT", str(no_rapl_root))
    # The same dot measured with PyTensor and no power source: compare labels it as its own column group.
    assert _run(store, engine="pytensor").exit_code == 0
    with open_store(store) as opened:
        name = short_name(opened.runs()[0].device["name"])
    with_energy, without = f"{name} · numpy", f"{name} · pytensor"
    runner = CliRunner()

    out = runner.invoke(main, ["compare", "--store", str(store), "--format", "csv"])
    assert out.exit_code == 0, out.output
    by_device = {r["device"]: r for r in csv.DictReader(io.StringIO(out.stdout))}
    assert float(by_device[with_energy]["J/call"]) == pytest.approx(rows["energy per call"]["value"])
    assert float(by_device[with_energy]["GFLOP/s/W"]) == pytest.approx(rows["GFLOP/s per watt"]["value"])
    assert float(by_device[with_energy]["pJ/FLOP"]) == pytest.approx(rows["energy per FLOP"]["value"])
    assert by_device[with_energy]["energy basis"].startswith(
        "measured: RAPL energy_uj (sysfs powercap): package-0, dram-0"
    )
    assert "sampled every 0.1 s" in by_device[with_energy]["energy basis"]
    assert by_device[without]["J/call"] == "" and by_device[without]["GFLOP/s/W"] == ""
    reason = (
        f"no CPU power source: {no_rapl_root} has no intel-rapl zones (the folder named by "
        "$GPUPROF_POWERCAP_ROOT); energy not measured"
    )
    assert by_device[without]["energy basis"] == reason

    out = runner.invoke(
        main, ["compare", "--store", str(store), "--html", str(tmp_path / "c.html"), "--format", "markdown"]
    )  # Markdown keeps 'device quantity' column names
    assert out.exit_code == 0, out.output
    assert "— MFLOP/s, Efic.% (of FLOP peak), roof.% (of roofline), bound, J/call, GFLOP/s/W (energy)" in out.stdout
    header = next(line for line in out.stdout.splitlines() if "MFLOP/s" in line and "size (MB)" in line)
    assert f"{with_energy} J/call" in header and f"{with_energy} GFLOP/s/W" in header
    assert f"{without} MFLOP/s" in header and f"{without} J/call" not in header
    assert "sampled every 0.1 s" in out.stdout  # the sources table says how energy was measured
    assert f"note: no energy numbers for {without}: {reason}" in out.stderr
    assert f"no energy numbers for {with_energy}" not in out.stderr
    page = (tmp_path / "c.html").read_text()
    assert "<th>J/call</th>" in page and "J/call: measured energy of the timed repeats per call" in page
    assert f"<li>no energy numbers for {without}: " in page


def test_energy_record_survives_json_between_processes(rapl_root: Path) -> None:
    meter, notes = open_energy("cpu", interval=60, powercap_root=rapl_root)
    assert meter is not None
    with meter:
        time.sleep(0.01)
        _set(rapl_root / "intel-rapl:0" / "energy_uj", 1_500_000)
    record = json.loads(json.dumps(to_record(meter.metrics(), notes + meter.notes)))
    metrics, back_notes = from_record(record)
    assert metrics == meter.metrics() and back_notes == []
    assert {m.name: m.value for m in metrics}["energy package-0"] == pytest.approx(1.5)
    assert from_record(None) == ([], [])  # a child result from before energy was recorded


def _gpu_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, energy: dict) -> Run:
    """run_gpu with a stand-in ncu refused the counters and a stand-in child result holding ``energy``."""
    from fakes.environment import FIXTURES, use_stand_ins

    from gpuprof.launch import gpu_session
    from gpuprof.measure import RunSettings

    use_stand_ins(tmp_path, monkeypatch)
    monkeypatch.setattr(gpu_session, "_nvml_gpu", lambda: (None, "NVML: stand-in"))
    monkeypatch.setattr(gpu_session, "_cupy_state", lambda: (True, "CuPy: stand-in"))
    child = tmp_path / "child-stand-in.json"
    child.write_text(
        json.dumps(
            {
                "schema": 1,
                "times": [0.001, 0.002, 0.003],
                "energy": energy,
                "device": {"name": "stand-in GPU", "cc": "8.0"},
                "engine": "cupy",
                "engine_version": "stand-in",
                "relative_error": 0.0,
                "kernel": None,
                "timer": "stand-in",
            }
        )
    )
    monkeypatch.setenv("GPUPROF_FAKE_CHILD", str(child))
    monkeypatch.setenv("GPUPROF_FAKE_LOG", str(FIXTURES / "ncu_csv_err_nvgpuctrperm_no_kernels.txt"))
    settings = RunSettings(
        op="dot",
        shape="64x64x64",
        repeat=3,
        warmup=1,
        command="gpuprof run (test)",
        gpu={"reports_dir": tmp_path / "reports", "profiler": "ncu"},
    )
    return gpu_session.run_gpu(settings, (64, 64, 64))


def test_gpu_run_keeps_the_energy_its_child_metered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What NvmlMeter hands to the checks after 3 repeats: 0.9 J over 0.03 s (plumbing values).
    metrics, notes = checked_metrics(
        Reading(
            "NVML stand-in GPU: energy nvmlDeviceGetTotalEnergyConsumption, power nvmlDeviceGetPowerUsage; whole board",
            0.1,
            duration_s=0.03,
            energy_j=0.9,
            powers_w=[29.0, 31.0],
        )
    )
    assert notes == []
    run = _gpu_run(tmp_path, monkeypatch, to_record(metrics, []))
    [launch] = [l for l in run.launches if l.attributes["phase"] == "energy"]
    assert launch.invocations == 3 and launch.index == 3
    assert [l.attributes["phase"] for l in run.launches] == ["timed"] * 3 + ["energy"]
    found = {q.name: q for q in energy_quantities(run)}
    assert found["energy per call"].value == pytest.approx(0.3)
    assert found["energy per FLOP"].value == pytest.approx(0.3 / (2 * 64**3) * 1e12)
    assert "NVML stand-in GPU" in found["energy (timed repeats)"].basis


def test_gpu_run_says_why_its_child_had_no_power_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    meter, notes = open_energy("cuda")  # on this machine: no NVML, so the child would record this reason
    if meter is not None:
        pytest.skip("NVML reads a GPU's power here")
    run = _gpu_run(tmp_path, monkeypatch, to_record([], notes))
    assert notes[0].startswith("no GPU power source: ") and notes[0] in run.notes
    assert energy_quantities(run) == [] and all(l.attributes["phase"] != "energy" for l in run.launches)
