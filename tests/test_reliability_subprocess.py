"""Subprocesses: never through a shell, hostile paths passed unchanged, hung profilers stopped.

The profiler stand-ins are real executables on PATH (tests/fakes, or a hanging one written here);
gpuprof launches them through its public ``gpu_session.run_gpu``. NVML and CuPy are replaced by
their stand-ins as in test_gpu_launch_pipeline.py, because no GPU exists here.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import time
from pathlib import Path

import pytest
from fakes.environment import FAKES, FIXTURES, PYTHON_DIR, calls, use_stand_ins

from gpuprof.devices.gpu_detect import GpuInfo
from gpuprof.errors import ProfilerError
from gpuprof.launch import gpu_session, ncu, profilers
from gpuprof.measure import RunSettings

PACKAGE = Path(__file__).resolve().parents[1] / "gpuprof"
HOSTILE = "dir with spaces; 'single' \"double\" $(touch PWNED) `touch PWNED` & | *"
SHELL_CALLS = {
    ("os", "system"),
    ("os", "popen"),
    ("subprocess", "getoutput"),
    ("subprocess", "getstatusoutput"),
    ("asyncio", "create_subprocess_shell"),
}


def _calls(tree: ast.AST) -> list[tuple[ast.Call, str, str]]:
    """(call, module name, function name) of every ``module.function(...)`` call in ``tree``."""
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
        ):
            found.append((node, node.func.value.id, node.func.attr))
    return found


@pytest.mark.slow  # runs commands under a watch on every subprocess call: 2-5 s
def test_no_subprocess_goes_through_a_shell_and_every_run_has_a_timeout():
    sources = sorted(PACKAGE.rglob("*.py"))
    assert len(sources) > 50
    shell, untimed, launched = [], [], 0
    for path in sources:
        tree = ast.parse(path.read_text(), str(path))
        where = path.relative_to(PACKAGE.parent)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.keyword)
                and node.arg == "shell"
                and not (isinstance(node.value, ast.Constant) and node.value.value is False)
            ):
                shell.append(f"{where}:{node.value.lineno} shell=")
        for call, module, function in _calls(tree):
            if (module, function) in SHELL_CALLS:
                shell.append(f"{where}:{call.lineno} {module}.{function}")
            if module == "subprocess" and function in ("run", "call", "check_call", "check_output"):
                launched += 1
                if not any(k.arg == "timeout" for k in call.keywords):
                    untimed.append(f"{where}:{call.lineno} subprocess.{function} without timeout")
    assert launched >= 6  # the scan does see gpuprof's subprocess.run calls
    assert shell == []
    assert untimed == []


def _gpu() -> GpuInfo:
    return GpuInfo(
        index=0,
        name="NVIDIA B200",
        pci_bus_id=None,
        cc="10.0",
        sm_count=None,
        sm_count_source="unknown",
        cores=None,
        max_sm_clock_hz=None,
        sm_clock_hz=None,
        max_memory_clock_hz=None,
        bus_width_bits=None,
        memory_bytes=None,
        l2_bytes=None,
        driver=None,
    )


@pytest.fixture
def no_gpu_needed(tmp_path, monkeypatch):
    """NVML and CuPy stand-ins, and a stand-in child result the fake profiler copies into place."""
    monkeypatch.setattr(gpu_session, "_nvml_gpu", lambda: (_gpu(), "NVML: stand-in"))
    monkeypatch.setattr(gpu_session, "_cupy_state", lambda: (True, "CuPy: stand-in"))
    child = tmp_path / "child-stand-in.json"
    child.write_text(
        json.dumps(
            {
                "schema": 1,
                "times": [0.001],
                "device": {"name": "NVIDIA B200", "cc": "10.0"},
                "engine": "cupy",
                "engine_version": "stand-in",
                "relative_error": 0.0,
                "kernel": None,
                "timer": "stand-in",
            }
        )
    )
    monkeypatch.setenv("GPUPROF_FAKE_CHILD", str(child))
    monkeypatch.setenv("GPUPROF_FAKE_LOG", str(FIXTURES / "ncu_csv_raw_page_b200_flashattn.csv"))


def _settings(reports: Path, **gpu: object) -> RunSettings:
    return RunSettings(
        op="add",
        shape="64x64",
        repeat=1,
        warmup=0,
        command="gpuprof run (test)",
        gpu={"reports_dir": reports, "profiler": "ncu", **gpu},
    )


def test_paths_with_spaces_quotes_and_semicolons_reach_the_profiler_unchanged(tmp_path, monkeypatch, no_gpu_needed):
    record = use_stand_ins(tmp_path, monkeypatch)
    bin_dir = tmp_path / f"bin {HOSTILE}"
    shutil.copytree(FAKES, bin_dir)  # the profiler itself lives under the hostile name too
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), PYTHON_DIR]))
    monkeypatch.chdir(tmp_path)
    reports = tmp_path / f"reports {HOSTILE}"

    run = gpu_session.run_gpu(_settings(reports), (64, 64))

    folder = reports / run.run_id
    profiled = [c["argv"] for c in calls(record) if c["argv"] != ["--version"] and "--query-metrics" not in c["argv"]]
    child = gpu_session.child_command(
        _settings(reports), (64, 64), "cupy", gpu_session.DEFAULT_PROFILED, folder / "child.json"
    )
    options = profilers.ProfileOptions("gpuprof:add:64x64:float32", cc=(10, 0), nvtx_start_end=True)
    expected = ncu.command(str(bin_dir / "ncu"), child, folder, options)
    assert run.environment["profiler_command"] == expected
    assert profiled == [expected[1:]]  # what the program received, argument by argument
    assert f"{folder}/ncu.csv" in profiled[0] and f"{folder}/child.json" in profiled[0]
    assert not list(tmp_path.rglob("PWNED"))  # nothing was ever run by a shell
    assert (folder / "ncu.csv").is_file() and len(run.launches) > 1


HANGING_NCU = """#!/usr/bin/env python3
import os, subprocess, sys, time
if sys.argv[1:] == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2099.1 (hanging stand-in)")
    sys.exit(0)
if "--query-metrics" in sys.argv:  # it hangs only once it profiles
    sys.exit(0)
print("==PROF== Connected to process (hanging stand-in)", file=sys.stderr, flush=True)
print("==ERROR== stand-in: the workload stopped responding", file=sys.stderr, flush=True)
workload = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],  # what ncu launches
                            process_group=0 if os.environ.get("HANG_OWN_GROUP") else None)
with open(os.environ["HANG_PIDS"], "w") as handle:
    handle.write(f"{os.getpid()} {workload.pid}")
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ")[-1][0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False


@pytest.mark.slow  # waits for a hanging profiler's timeout: 2-6 s
@pytest.mark.parametrize("own_group", [False, True], ids=["same group", "workload in its own group"])
def test_a_hanging_profiler_is_stopped_by_the_timeout_with_its_workload(
    tmp_path, monkeypatch, no_gpu_needed, own_group
):
    """Also when the workload leaves the profiler's process group: the whole session and every
    descendant is killed, or the orphan would hold the GPU and ncu's lock file for the next run."""
    if own_group:
        monkeypatch.setenv("HANG_OWN_GROUP", "1")
    bin_dir = tmp_path / "hanging bin"
    bin_dir.mkdir()
    (bin_dir / "ncu").write_text(HANGING_NCU)
    (bin_dir / "ncu").chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), PYTHON_DIR]))
    monkeypatch.setenv("HANG_PIDS", str(tmp_path / "pids"))
    profilers._probe_executable.cache_clear()
    reports = tmp_path / "reports"

    began = time.monotonic()
    with pytest.raises(ProfilerError) as stopped:
        gpu_session.run_gpu(_settings(reports, timeout=2.0), (64, 64))
    took = time.monotonic() - began

    [folder] = list(reports.iterdir())
    assert str(stopped.value) == (
        f"ncu did not finish within 2 s (files in {folder}). give a smaller --size or --shape, or a longer GPU timeout"
    )
    assert took < 10
    # what the profiler said before it hung is kept in the run folder
    assert (folder / "stderr.txt").read_text().splitlines() == [
        "==PROF== Connected to process (hanging stand-in)",
        "==ERROR== stand-in: the workload stopped responding",
    ]
    profiler_pid, workload_pid = map(int, (tmp_path / "pids").read_text().split())
    deadline = time.monotonic() + 5
    while (_alive(profiler_pid) or _alive(workload_pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(profiler_pid), "the hung profiler was left running"
    assert not _alive(workload_pid), "the workload the profiler launched was left running"
