"""``gpuprof profile --device cpu -- CMD``: perf stat around a real command on this machine, as far
as it allows (in a VM without a PMU only the software events: said, and the command still timed and
stored), and the reading of what perf writes when the PMU is there, on real recorded perf output."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gpuprof import profile
from gpuprof.cli import main
from gpuprof.errors import Interrupted
from gpuprof.launch import perf
from gpuprof.launch.cpu_profile import OUTPUT, CpuPlan, counted, plan_cpu
from gpuprof.launch.process import Finished
from gpuprof.model import Launch, Run
from gpuprof.render.profile_report import cpu_frame
from gpuprof.store import open_store

COUNTERS = Path(__file__).parent / "fixtures" / "cpu-counters"
NUMPY_WORK = [sys.executable, "-c", "import numpy as np; a = np.ones((300, 300)); print((a @ a).sum())"]


def invoke(tmp_path: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["profile", "--store", str(tmp_path / "s.sqlite"), "--device", "cpu", *args])


def test_a_numpy_command_is_counted_as_far_as_this_machine_allows_timed_and_stored(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke(tmp_path, "--", *NUMPY_WORK)
    assert result.exit_code == 0, result.output
    with open_store(tmp_path / "s.sqlite") as store:
        [run] = store.runs()
    folder = tmp_path / "reports" / run.run_id
    assert (folder / "stdout.txt").read_text() == "27000000.0\n"  # the command's own output, kept
    [launch] = run.launches
    wall = launch.metric("wall time")
    assert wall.origin == "timed" and wall.value > 0 and run.kind == "profile"
    shown = CliRunner().invoke(main, ["show", run.run_id[:8], "--store", str(tmp_path / "s.sqlite")])
    assert shown.exit_code == 0 and "CPU profile (perf stat around the whole command)" in shown.stdout
    assert "wall time" in shown.stdout  # the stored run prints the same table again
    expected = plan_cpu()
    assert tuple(run.notes[: len(expected.notes)]) == expected.notes  # each thing perf cannot count here, said once
    for line in expected.notes:
        assert f"plan: {line}" in result.stderr
    if expected.perf is None:
        assert run.format == "timed" and [m.name for m in launch.metrics] == ["wall time"]
        return
    assert run.format == "perf-stat" and (folder / OUTPUT).is_file()
    assert launch.metric("task-clock").origin == "measured" and launch.value("task-clock") > 0
    assert "task-clock" in result.stdout and "wall time" in result.stdout
    if not set(perf.HARDWARE) <= set(expected.events):  # a VM without a PMU, as this project's machines
        assert any(line.startswith("CPU hardware counters unavailable") for line in run.notes)
        assert any(line.startswith("Top-Down level 1 not counted") for line in run.notes)
        assert launch.metric("cycles") is None  # never reported as a number when perf could not count it


def test_gpu_filters_are_refused_for_a_cpu_profile(tmp_path):
    result = invoke(tmp_path, "--kernel", "gemm", "--", *NUMPY_WORK)
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "error: --kernel choose GPU kernel launches, and this profile runs on the CPU (--device cpu). leave them out"
    )


def test_a_failing_command_is_one_line_and_its_counts_are_kept(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke(tmp_path, "--", sys.executable, "-c", "import sys; sys.exit('no input file')")
    assert result.exit_code == 8
    with open_store(tmp_path / "s.sqlite") as store:
        [run] = store.runs()
    assert result.stderr.splitlines()[-1] == (
        f"error: {sys.executable} exited with code 1 (stderr: no input file); its wall time and perf's counts so far "
        f"were kept; files in reports/{run.run_id}. see reports/{run.run_id}/stderr.txt"
    )
    assert run.environment["exit_code"] == 1 and run.launches[0].value("wall time") > 0


def test_ctrl_c_stops_perf_and_the_command_and_keeps_the_counts_so_far(tmp_path, monkeypatch, ctrl_c_reaches_python):
    monkeypatch.chdir(tmp_path)
    pid_file = tmp_path / "command.pid"
    hanging = (
        sys.executable,
        "-c",
        f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)",
    )
    plan = profile.plan(profile.ProfileSettings(command=hanging, device="cpu"))

    def press_ctrl_c() -> None:
        deadline = time.monotonic() + 30
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=press_ctrl_c, daemon=True).start()
    outcome = profile.execute(plan)
    assert isinstance(outcome.problem, Interrupted)
    [run] = outcome.runs
    assert run.environment["stopped"] == "interrupted" and run.launches[0].value("wall time") > 0
    if plan.cpu and plan.cpu.perf:  # perf writes what it counted when the group gets SIGINT
        assert run.launches[0].value("task-clock") is not None
    command = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while Path(f"/proc/{command}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{command}").exists() or open(f"/proc/{command}/stat").read().split(") ")[-1][0] == "Z"


def _profile_of(fixture: str, tmp_path: Path, topdown: str | None = None) -> Run:
    """A CPU profile whose perf output is a real recorded one (the PMU this machine lacks)."""
    shutil.copyfile(COUNTERS / fixture, tmp_path / OUTPUT)
    plan = CpuPlan("perf", "perf version (recorded)", ("fp_arith_inst_retired.scalar_double",), topdown)
    metrics, notes = counted(plan, tmp_path, Finished(0, 39.5))
    peaks = {"flops": {"float64": 480e9}, "source": "a stated peak for the test"}
    return Run(
        kind="profile",
        format="perf-stat",
        source="test",
        device={"kind": "cpu", "peaks": [peaks]},
        environment={"wall_time": {"basis": "test"}, "profiler_version": plan.version},
        launches=[Launch("cmd", 0, metrics=metrics)],
        notes=notes,
    )


def test_counted_fp_events_give_flops_and_flop_rate(tmp_path):
    # perf stat -e fp_arith_inst_retired.* on an i7-1185G7 (SOURCES.md 1a): 2 x 17,075,053 + 4 x 3,849,289
    # + 8 x 563,539,901,688 + 122,202,329 FLOP over 39.428329959 s elapsed
    run = _profile_of("perf-stat-human-fp512-i7-1185G7-suanpan.txt", tmp_path)
    frame = cpu_frame(run, people=False).set_index("quantity")
    flops = 2 * 17_075_053 + 4 * 3_849_289 + 8 * 563_539_901_688 + 122_202_329
    assert frame.loc["FLOPs counted (float64)", "value"] == flops
    assert frame.loc["FLOP/s (float64)", "value"] == pytest.approx(flops / 39.428329959)
    assert frame.loc["FLOP/s (float64)", "value"] == pytest.approx(114.34e9, rel=1e-3)
    assert frame.loc["efficiency vs peak (float64)", "value"] == pytest.approx(100 * flops / 39.428329959 / 480e9)
    assert frame.loc["FLOPs counted (float64)", "origin"] == "measured"
    assert frame.loc["FLOP/s (float64)", "origin"] == "derived"
    assert frame.loc["wall time", "value"] == 39.5 and frame.loc["wall time", "origin"] == "timed"


def test_top_down_level_1_is_read_beside_the_counts(tmp_path):
    run = _profile_of("perf-stat-default-TopdownL1-cpu_core-intel-perfbook.txt", tmp_path, topdown="TopdownL1")
    frame = cpu_frame(run, people=False).set_index("quantity")
    assert frame.loc["Top-Down: Backend bound", "value"] == 53.4
    assert frame.loc["Top-Down: Retiring", "value"] == 32.5
    assert frame.loc["Top-Down: Frontend bound", "value"] == 13.8
    assert frame.loc["Top-Down: Bad speculation", "value"] == 0.2
    assert "tma_backend_bound" not in frame.index  # shown once, as Top-Down
