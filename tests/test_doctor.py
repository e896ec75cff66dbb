"""``gpuprof doctor``: each check on this machine, compared with what the machine itself says; then on
made-up /proc and /sys trees with stand-in NVML, CuPy and profilers, for the machines this one is not
(a driver that restricts counters, MIG on, a container, paranoid perf, RAPL readable)."""

from __future__ import annotations

import json
import shutil
import sys
import types
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakes.environment import FIXTURES, calls, stand_in_gpu, use_stand_ins

from gpuprof import doctor
from gpuprof.cli import main
from gpuprof.devices import gpu_detect
from gpuprof.errors import DeviceError
from gpuprof.launch import perf

NAMES = [
    "NVIDIA driver and GPUs",
    "counter permission",
    "ncu",
    "nvprof",
    "GPU profiler",
    "nsys",
    "CuPy",
    "MIG mode",
    "container",
    "perf",
    "perf_event_paranoid",
    "CPU PMU",
    "RAPL energy",
    "NVML energy",
]


def test_doctor_here_says_what_this_machine_says_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["doctor", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert list(rows) == NAMES
    assert list(tmp_path.iterdir()) == []  # a command that only reads creates nothing
    try:
        gpus = gpu_detect.detect()
    except DeviceError as error:
        gpus = []
        assert rows["NVIDIA driver and GPUs"] == {
            "name": "NVIDIA driver and GPUs",
            "status": "fail",
            "found": f"NVML: {error.problem}",
            "fix": rows["NVIDIA driver and GPUs"]["fix"],
        }
        assert rows["MIG mode"]["status"] == rows["NVML energy"]["status"] == rows["GPU profiler"]["status"] == "n/a"
    if gpus:
        assert (
            rows["NVIDIA driver and GPUs"]["status"] == "ok" and gpus[0].name in rows["NVIDIA driver and GPUs"]["found"]
        )
    if not Path("/proc/driver/nvidia/params").exists() and not gpus:
        assert rows["counter permission"]["status"] == "n/a"
    assert (rows["perf"]["status"] == "ok") == (shutil.which("perf") is not None)
    devices = Path("/sys/bus/event_source/devices")
    listed = sorted(p.name for p in devices.iterdir()) if devices.is_dir() else []
    if not any(doctor.PMU_NAMES.match(name) for name in listed):
        assert rows["CPU PMU"]["status"] == "fail" and ", ".join(listed) in rows["CPU PMU"]["found"]
    if not any(Path("/sys/class/powercap").glob("intel-rapl:*")):
        assert rows["RAPL energy"]["status"] == "fail"
    in_container = Path("/.dockerenv").exists() or Path("/run/.containerenv").exists()
    assert rows["container"]["found"].startswith("in a container" if in_container else "not in a container")
    paranoid = Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip()
    assert rows["perf_event_paranoid"]["found"].startswith(paranoid)


def test_for_cpu_exits_by_whether_cpu_counters_can_work_here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["doctor", "--for", "cpu"])
    counted = perf.probe(perf.HARDWARE)
    can = shutil.which("perf") is not None and set(perf.HARDWARE) <= set(counted.usable)
    assert result.exit_code == (0 if can else 1)
    assert result.stderr.strip() == (
        "--for cpu: can work here"
        if can
        else f"--for cpu: cannot work here ({'CPU PMU' if shutil.which('perf') else 'perf, CPU PMU'})"
    )
    checks = [line for line in result.stdout.splitlines() if not line.startswith(" ")]  # wrapped lines indent
    assert len(checks) == len(NAMES)  # one entry per check


class _NvmlError(Exception):
    pass


def _stand_in_nvml(mig: int) -> types.ModuleType:
    """pynvml as it answers for one A100 with MIG ``mig`` and readable board power."""
    module = types.ModuleType("pynvml")
    module.NVMLError = _NvmlError
    module.nvmlInit = module.nvmlShutdown = lambda: None
    module.nvmlDeviceGetHandleByIndex = lambda index: f"gpu{index}"
    module.nvmlDeviceGetMigMode = lambda handle: (mig, mig)
    module.nvmlDeviceGetName = lambda handle: "NVIDIA A100-SXM4-40GB"
    module.nvmlDeviceGetPowerUsage = lambda handle: 61_000
    module.nvmlDeviceGetTotalEnergyConsumption = lambda handle: 123_456
    return module


def _stand_in_cupy(runtime: int, driver: int) -> types.ModuleType:
    cupy = types.ModuleType("cupy")
    cupy.__version__ = "13.6.0"
    cupy.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(
            runtimeGetVersion=lambda: runtime, driverGetVersion=lambda: driver, CUDARuntimeError=RuntimeError
        )
    )
    return cupy


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """A made-up machine: an A100 with driver 580, a container, paranoid 3, a CPU PMU, a RAPL zone."""
    root = tmp_path / "root"
    for folder in (
        "proc/driver/nvidia",
        "proc/sys/kernel",
        "proc/1",
        "sys/bus/event_source/devices/cpu",
        "sys/bus/event_source/devices/software",
        "sys/class/powercap/intel-rapl:0",
    ):
        (root / folder).mkdir(parents=True)
    (root / "proc/driver/nvidia/params").write_text("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\n")
    (root / "proc/sys/kernel/perf_event_paranoid").write_text("3\n")
    (root / "proc/1/cgroup").write_text("0::/kubepods/besteffort/pod1234\n")
    zone = root / "sys/class/powercap/intel-rapl:0"
    (zone / "name").write_text("package-0\n")
    (zone / "energy_uj").write_text("8123456\n")
    (zone / "max_energy_range_uj").write_text("262143328850\n")
    monkeypatch.delenv("GPUPROF_POWERCAP_ROOT", raising=False)
    monkeypatch.setattr(gpu_detect, "detect", lambda: [stand_in_gpu("NVIDIA A100-SXM4-40GB", "8.0", "580.65.06")])
    monkeypatch.setitem(sys.modules, "pynvml", _stand_in_nvml(mig=1))
    monkeypatch.setitem(sys.modules, "cupy", _stand_in_cupy(runtime=13000, driver=12040))
    monkeypatch.setattr(doctor.os, "geteuid", lambda: 1000)  # an ordinary user
    monkeypatch.setattr(
        perf,
        "probe",
        lambda events, perf_path="perf": perf.PerfProbe("/usr/bin/perf", "perf version 6.8", usable=tuple(events)),
    )
    use_stand_ins(tmp_path, monkeypatch)
    return root


def _by_name(root: Path) -> dict[str, doctor.Check]:
    return {check.name: check for check in doctor.checks(root)}


def test_a_driver_restricting_counters_is_a_failure_with_the_fix(elsewhere):
    found = _by_name(elsewhere)
    assert found["NVIDIA driver and GPUs"].found == (
        "driver 580.65.06, 1 GPU(s): GPU 0 NVIDIA A100-SXM4-40GB (compute capability 8.0)"
    )
    permission = found["counter permission"]
    assert permission.status == "fail" and "RmProfilingAdminOnly: 1 in" in permission.found
    assert permission.fix.startswith(
        "to enable counters run as root or load the nvidia module with NVreg_RestrictProfilingToAdminUsers=0"
    )
    assert doctor.verdict(list(found.values()), "profile") == (False, ["counter permission"])


def test_without_the_setting_an_ncu_trial_reads_the_real_refusal(elsewhere, monkeypatch, tmp_path):
    (elsewhere / "proc/driver/nvidia/params").write_text("ResmanDebugLevel: 4294967295\n")
    monkeypatch.setenv("GPUPROF_FAKE_CONSOLE", str(FIXTURES / "ncu_csv_err_nvgpuctrperm_no_kernels.txt"))
    record = tmp_path / "calls.jsonl"
    monkeypatch.setenv("GPUPROF_FAKE_RECORD", str(record))
    permission = _by_name(elsewhere)["counter permission"]
    assert (permission.status, permission.found) == (
        "fail",
        "ncu trial: ERR_NVGPUCTRPERM (only admin users may read GPU performance counters)",
    )
    [trial] = [c["argv"] for c in calls(record) if "--metrics" in c["argv"]]
    assert trial[:2] == ["--clock-control", "none"]  # doctor never locks the clocks (ncu's default would)


def test_the_other_checks_on_the_made_up_machine(elsewhere):
    found = _by_name(elsewhere)
    assert found["ncu"].status == "ok" and found["ncu"].found.endswith("version 0.0.0-fake; supports GPU 0 (CC 8.0)")
    assert found["nvprof"].found.endswith("supports none of this machine's GPUs")  # nvprof ends before CC 8.0
    assert found["GPU profiler"].status == "ok"
    cupy = found["CuPy"]
    assert (cupy.status, cupy.found) == ("fail", "CuPy 13.6.0 for CUDA 13.0, but the driver serves CUDA 12.4")
    assert found["MIG mode"].status == "warn" and found["MIG mode"].found.startswith("on for GPU 0: CUPTI")
    assert "--clock-control none" in found["MIG mode"].fix
    assert found["container"].found.startswith("in a container (/proc/1/cgroup names kubepods")
    assert (found["perf_event_paranoid"].status, found["perf_event_paranoid"].fix) == (
        "fail",
        "sudo sysctl kernel.perf_event_paranoid=2 (or run as root)",
    )
    assert found["perf_event_paranoid"].found == "3: no unprivileged events at all"
    assert found["CPU PMU"].status == "ok" and found["CPU PMU"].found.startswith("cpu in ")
    assert found["RAPL energy"].found == f"readable in {elsewhere / 'sys/class/powercap'}: package-0"
    assert found["NVML energy"].found == "board power readable through NVML for GPU 0"
    assert doctor.verdict(list(found.values()), "cuda") == (False, ["CuPy"])
    assert doctor.verdict(list(found.values()), "cpu") == (False, ["perf_event_paranoid"])
