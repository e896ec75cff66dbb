"""``gpuprof profile --energy``: power of every device sampled in the parent while a real command runs,
against a RAPL powercap tree built in a temporary folder (counters a thread advances at known watts)
and a stand-in NVML with two GPUs: GPU 0 has the total-energy counter and runs a process of the
command's processes, GPU 1 has no counter (its power samples are integrated) and stays idle. Each region
gets its energy per device, all devices and devices in use; the series, power.csv and the chart are
kept. Window arithmetic on samples with known answers; no meter: regions and times still work."""

from __future__ import annotations

import os
import sys
import threading
import time
import types
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_energy import _set, _zone

from gpuprof.cli import main
from gpuprof.derive.regions import region_frame
from gpuprof.derive.scaling import phase_entries
from gpuprof.energy.series import COUNTER, INTEGRATED, descends, window_energy
from gpuprof.store import open_store

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_W, DRAM_W, GPU0_W, GPU1_W = 20.0, 5.0, 100.0, 50.0
START = time.monotonic()

JOB = """
import time, gpuprof
time.sleep(0.2)
with gpuprof.region("train"):
    time.sleep(0.8)
with gpuprof.region("test"):
    time.sleep(0.4)
"""


def test_window_energy_from_a_counter_and_from_power_samples() -> None:
    times = [0.0, 1.0, 2.0, 3.0]
    # A counter of 10 W: any window is 10 J per second, its edges interpolated between samples.
    assert window_energy(times, [0.0, 10.0, 20.0, 30.0], [None] * 4, 0.5, 2.25) == (pytest.approx(17.5), COUNTER)
    # Power rising 0 -> 30 W linearly: the trapezoids over [0.5, 2.5] give 2 s x 15 W.
    assert window_energy(times, [None] * 4, [0.0, 10.0, 20.0, 30.0], 0.5, 2.5) == (pytest.approx(30.0), INTEGRATED)
    assert window_energy([0.0], [0.0], [1.0], 0.0, 1.0)[0] is None


class _Counters(threading.Thread):
    """Advances the package and DRAM counters as PACKAGE_W and DRAM_W would, every 2 ms; remembers the
    longest gap between two writes (how stale a read can be on a loaded machine)."""

    def __init__(self, package: Path, dram: Path) -> None:
        super().__init__(daemon=True)
        self.package, self.dram, self.halt = package, dram, threading.Event()
        self.longest_gap = 0.0

    def run(self) -> None:
        start = last = time.monotonic()
        while not self.halt.wait(0.002):
            now = time.monotonic()
            elapsed = now - start
            _set(self.package, round(PACKAGE_W * 1e6 * elapsed))
            _set(self.dram, round(DRAM_W * 1e6 * elapsed))
            self.longest_gap, last = max(self.longest_gap, now - last), now


def _stand_in_nvml() -> types.ModuleType:
    """Two GPUs: 0 with the energy counter (mJ, at GPU0_W) and every process of this machine on it
    (the sampler keeps the command's), 1 without a counter, at GPU1_W, with no process."""
    nvml = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    def energy(handle: int) -> int:
        if handle == 1:
            raise NVMLError("Not Supported")
        return round(GPU0_W * 1000 * (time.monotonic() - START))

    def processes(handle: int) -> list:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()] if handle == 0 else []
        return [types.SimpleNamespace(pid=pid) for pid in pids]

    nvml.NVMLError = NVMLError
    nvml.nvmlInit = nvml.nvmlShutdown = lambda: None
    nvml.nvmlDeviceGetCount = lambda: 2
    nvml.nvmlDeviceGetHandleByIndex = lambda index: index
    nvml.nvmlDeviceGetName = lambda handle: "Stand-in GPU"
    nvml.nvmlDeviceGetTotalEnergyConsumption = energy
    nvml.nvmlDeviceGetPowerUsage = lambda handle: round((GPU0_W if handle == 0 else GPU1_W) * 1000)
    nvml.nvmlDeviceGetComputeRunningProcesses = processes
    return nvml


def test_profile_meters_every_device_per_region_with_and_without_idle_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    root = tmp_path / "powercap"
    package = _zone(root, "intel-rapl:0", "package-0", 0)
    dram = _zone(root, "intel-rapl:0:2", "dram", 0)
    monkeypatch.setenv("GPUPROF_POWERCAP_ROOT", str(root))
    monkeypatch.setitem(sys.modules, "pynvml", _stand_in_nvml())
    (tmp_path / "job.py").write_text(JOB)
    counters = _Counters(package, dram)
    counters.start()
    try:
        result = CliRunner().invoke(
            main,
            [
                "profile",
                "--device",
                "cpu",
                "--energy",
                "--interval",
                "50ms",
                "--torch-hooks",
                "none",
                "--label",
                "one",
                "--store",
                str(tmp_path / "s.sqlite"),
                "--",
                sys.executable,
                "job.py",
            ],
        )
    finally:
        counters.halt.set()
        counters.join()
    assert result.exit_code == 0, result.output
    with open_store(tmp_path / "s.sqlite") as store:
        [run] = store.runs()
    devices = run.environment["power"]["devices"]
    assert list(devices) == ["package-0", "dram-0", "GPU 0 (Stand-in GPU)", "GPU 1 (Stand-in GPU)"]
    assert [d["in_use"] for d in devices.values()] == [True, True, True, False]
    frame = region_frame(
        run,
        (
            "energy package-0",
            "energy dram-0",
            "energy GPU 0 (Stand-in GPU)",
            "energy GPU 1 (Stand-in GPU)",
            "energy (all devices)",
            "energy (devices in use)",
        ),
    )
    for name, seconds in (("train", 0.8), ("test", 0.4)):
        row = frame[frame["name"] == name].iloc[0]
        wall = row["wall time (s)"]
        assert seconds <= wall < seconds + 0.3
        stale = 2 * counters.longest_gap  # each edge of the window may read a counter that old
        assert row["energy package-0"] == pytest.approx(PACKAGE_W * wall, rel=0.1, abs=PACKAGE_W * stale)
        assert row["energy dram-0"] == pytest.approx(DRAM_W * wall, rel=0.1, abs=DRAM_W * stale)
        assert row["energy GPU 0 (Stand-in GPU)"] == pytest.approx(GPU0_W * wall, rel=0.05)  # counter
        assert row["energy GPU 1 (Stand-in GPU)"] == pytest.approx(GPU1_W * wall, rel=0.01)  # integrated
        assert row["energy (all devices)"] == pytest.approx(
            row[
                ["energy package-0", "energy dram-0", "energy GPU 0 (Stand-in GPU)", "energy GPU 1 (Stand-in GPU)"]
            ].sum()
        )
        assert row["energy (devices in use)"] == pytest.approx(
            row["energy (all devices)"] - row["energy GPU 1 (Stand-in GPU)"]
        )
    command = run.environment["energy"]
    wall = run.environment["wall_time"]["value"]
    assert command["all_j"] == pytest.approx(
        (PACKAGE_W + DRAM_W + GPU0_W + GPU1_W) * wall, rel=0.1, abs=(PACKAGE_W + DRAM_W) * 2 * counters.longest_gap
    )
    assert command["devices"]["GPU 1 (Stand-in GPU)"]["method"] == INTEGRATED
    entries = {row["phase"]: row for row in phase_entries(run)}
    assert entries["train"]["energy_in_use_j"] < entries["train"]["energy_j"]
    folder = tmp_path / "reports" / run.run_id
    lines = (folder / "power.csv").read_text().splitlines()
    assert lines[0] == "t_monotonic_s,device,in_use,power_w,energy_j" and len(lines) > 4 * 20
    assert (folder / "power.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "idle devices (no process of the command on them): GPU 1 (Stand-in GPU)" in result.stderr


def test_without_a_meter_regions_and_times_still_work_and_the_output_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("GPUPROF_POWERCAP_ROOT", str(tmp_path))  # no intel-rapl zone in it
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails: nvidia-ml-py missing
    (tmp_path / "job.py").write_text(JOB)
    result = CliRunner().invoke(
        main,
        [
            "profile",
            "--device",
            "cpu",
            "--energy",
            "--torch-hooks",
            "none",
            "--store",
            str(tmp_path / "s.sqlite"),
            "--",
            sys.executable,
            "job.py",
        ],
    )
    assert result.exit_code == 0, result.output
    assert f"no CPU power source: {tmp_path} has no intel-rapl zones" in result.stderr
    assert "no GPU meter: nvidia-ml-py is not installed" in result.stderr
    assert "no meter readable: regions and times are kept, energy is not measured" in result.stderr
    with open_store(tmp_path / "s.sqlite") as store:
        [run] = store.runs()
    frame = region_frame(run)
    assert frame["name"].tolist() == ["train", "test"] and "power" not in run.environment


def test_a_process_under_the_command_counts_even_in_its_own_session() -> None:
    """torchrun starts each rank with start_new_session: the parent chain, not the process group, ties it to the command."""
    import subprocess

    spawn = (
        "import subprocess, sys; subprocess.run([sys.executable, '-c', 'import time; time.sleep(30)'], "
        "start_new_session=True)"
    )
    outer = subprocess.Popen([sys.executable, "-c", spawn])
    try:
        deadline = time.monotonic() + 20
        inner = None
        while inner is None and time.monotonic() < deadline:
            children = Path(f"/proc/{outer.pid}/task/{outer.pid}/children")
            found = children.read_text().split() if children.exists() else []
            inner = int(found[0]) if found else None
            time.sleep(0.05)
        assert inner is not None and os.getpgid(inner) != outer.pid  # a session and group of its own
        assert descends(inner, outer.pid) and descends(outer.pid, outer.pid)
        assert not descends(os.getpid(), outer.pid)
    finally:
        outer.kill()
        outer.wait()
        if inner:
            os.kill(inner, 9)
