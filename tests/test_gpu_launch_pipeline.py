"""``run_gpu`` end to end without a GPU: stand-in ``ncu``/``nvprof`` record their argv and replay
real recorded profiler output into the paths gpuprof asked for; gpuprof then reads it back with its
own readers into a Run.

What is real here: the profiler outputs (tests/fixtures/profiler-outputs, see SOURCES.md), the
argv, the run folder and the reading. What is a stand-in: NVML's answer (the fixture's own GPU) and
the workload child's result file (the child needs a GPU; its CUDA-event times below are plumbing
values, not measurements). On this machine the real child and the real device probe are exercised
by the last tests.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest
from fakes.environment import FIXTURES, calls, use_stand_ins

from gpuprof.devices.gpu_detect import GpuInfo
from gpuprof.errors import DeviceError
from gpuprof.launch import gpu_session, ncu, nvprof, profilers
from gpuprof.measure import RunSettings
from gpuprof.model import MEASURED, TIMED

STAND_IN_TIMES = [0.001, 0.002, 0.003]


@pytest.fixture
def profiler_calls(tmp_path, monkeypatch):
    """Stand-in ncu/nvprof on PATH; the file their calls are recorded in."""
    return use_stand_ins(tmp_path, monkeypatch)


def _gpu(name: str, cc: str) -> GpuInfo:
    return GpuInfo(
        index=0,
        name=name,
        pci_bus_id=None,
        cc=cc,
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
def stand_in(tmp_path, monkeypatch, profiler_calls):
    """A GPU that NVML 'reports' and CuPy 'reaches', and a stand-in child result for the replays."""

    def use(name: str, cc: str, log: str | None, report: str | None = None) -> None:
        monkeypatch.setattr(gpu_session, "_nvml_gpu", lambda: (_gpu(name, cc), f"NVML: {name} (stand-in)"))
        monkeypatch.setattr(gpu_session, "_cupy_state", lambda: (True, "CuPy: stand-in"))
        child = tmp_path / "child-stand-in.json"
        child.write_text(
            json.dumps(
                {
                    "schema": 1,
                    "times": STAND_IN_TIMES,
                    "device": {"name": name, "cc": cc},
                    "engine": "cupy",
                    "engine_version": "stand-in",
                    "relative_error": 0.0,
                    "kernel": None,
                    "timer": "stand-in",
                }
            )
        )
        monkeypatch.setenv("GPUPROF_FAKE_CHILD", str(child))
        for variable, fixture in (("GPUPROF_FAKE_LOG", log), ("GPUPROF_FAKE_REPORT", report)):
            if fixture:
                monkeypatch.setenv(variable, str(FIXTURES / fixture))

    return use


def _settings(tmp_path, op="add", shape="256x256", **gpu) -> RunSettings:
    return RunSettings(
        op=op,
        shape=shape,
        repeat=3,
        warmup=1,
        command="gpuprof run (test)",
        gpu={"reports_dir": tmp_path / "reports", **gpu},
    )


def _profiling_call(record) -> list[str]:
    return [c["argv"] for c in calls(record) if c["argv"] != ["--version"] and "--query-metrics" not in c["argv"]][0]


def test_ncu_run_end_to_end(tmp_path, stand_in, profiler_calls):
    # the B200 raw page was produced by `ncu --csv --page raw --log-file X --metrics ...`, our layout
    stand_in(
        "NVIDIA B200", "10.0", "ncu_csv_raw_page_b200_flashattn.csv", "ncu_report_binary_2020_win_montecarlo_pi.ncu-rep"
    )
    run = gpu_session.run_gpu(_settings(tmp_path), (256, 256))

    folder = tmp_path / "reports" / run.run_id
    argv = _profiling_call(profiler_calls)
    child = gpu_session.child_command(_settings(tmp_path), (256, 256), "cupy", 3, folder / "child.json")
    options = profilers.ProfileOptions(
        "gpuprof:add:256x256:float32", "base", "all", "kernel", cc=(10, 0), nvtx_start_end=True
    )
    command = run.environment["profiler_command"]
    assert command == ncu.command(run.environment["profiler_path"], child, folder, options)
    # a start/end range (no trailing '/'): it holds kernels XLA or TorchInductor launch from other threads
    assert command[command.index("--nvtx-include") + 1] == "gpuprof:add:256x256:float32"
    assert command[1:] == argv and command[0].endswith("/fakes/ncu")
    assert child[1:] == [
        "-m",
        "gpuprof.launch.child",
        "--op",
        "add",
        "--shape",
        "256x256",
        "--dtype",
        "float32",
        "--engine",
        "cupy",
        "--repeat",
        "3",
        "--warmup",
        "1",
        "--profiled",
        "3",
        "--batch",
        "0",
        "--range",
        "gpuprof:add:256x256:float32",
        "--seed",
        "0",
        "--result",
        str(folder / "child.json"),
    ]
    assert [c["argv"] for c in calls(profiler_calls)][:2] == [["--version"], ["--devices", "0", "--query-metrics"]]
    assert {p.name for p in folder.iterdir()} >= {"ncu.csv", "report.ncu-rep", "child.json", "stdout.txt", "stderr.txt"}

    timed = [launch for launch in run.launches if launch.attributes["phase"] == "timed"]
    profiled = [launch for launch in run.launches if launch.attributes["phase"] == "profiled"]
    assert [launch.value("kernel_duration") for launch in timed] == STAND_IN_TIMES
    assert {launch.metric("kernel_duration").origin for launch in timed} == {TIMED}
    # values read from the fixture: 16 kernel rows, gpu__time_duration.sum 687488 ns in row 0, 11 passes each
    assert len(profiled) == 16
    first = profiled[0]
    assert first.kernel.startswith("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4")
    assert first.value("kernel_duration") == pytest.approx(687488e-9)
    assert first.metric("kernel_duration").origin == MEASURED
    assert first.index == 3 and first.attributes["reader"] == "ncu-raw"
    assert run.environment["replay_passes"] == [11] * 16
    assert run.environment["profiler_settings"]["clock_control"] == "base"
    assert any("--clock-control base" in note and "locked" in note for note in run.notes)
    assert run.workload["profiled"] == 3 and run.format == "cuda-cupy"
    assert f"profiler: ncu 0.0.0-fake ({command[0]}, found by PATH)" in run.notes
    # this page holds 16 launches of another program, which cannot be 3 calls of the op: said, not used
    assert run.environment["kernels_per_call"] is None
    [nvtx] = [note for note in run.notes if "NVTX range" in note]
    assert "16 kernel launch(es) read for 3 profiled call(s)" in nvtx and "gpuprof:add:256x256:float32" in nvtx


def test_profiled_calls_are_their_own_option_and_checked_against_the_launches_read(tmp_path, stand_in, profiler_calls):
    stand_in("NVIDIA B200", "10.0", "ncu_csv_raw_page_b200_flashattn.csv")
    run = gpu_session.run_gpu(_settings(tmp_path, profiled=16), (256, 256))  # --repeat stays 3
    argv = _profiling_call(profiler_calls)
    assert argv[argv.index("--profiled") + 1] == "16" and argv[argv.index("--repeat") + 1] == "3"
    assert run.environment["kernels_per_call"] == 1
    assert run.environment["nvtx_check"] == "passed: 16 launch(es) = 16 call(s) x 1 kernel(s)"
    assert not any("NVTX range" in note for note in run.notes)


def test_nvprof_run_end_to_end(tmp_path, stand_in, profiler_calls):
    stand_in("Tesla K40c", "3.5", "nvprof_csv_metrics_k40c_flop_stall.csv")
    run = gpu_session.run_gpu(_settings(tmp_path, op="dot", shape="64x64x64"), (64, 64, 64))

    folder = tmp_path / "reports" / run.run_id
    argv = _profiling_call(profiler_calls)
    assert argv[:4] == ["--profile-from-start", "off", "--csv", "--log-file"]
    assert argv[4] == str(folder / "nvprof.csv")
    assert argv[5:7] == ["--metrics", ",".join(nvprof.metrics())]
    assert argv[7:9] == ["--replay-mode", "kernel"]
    assert argv[10:12] == ["-m", "gpuprof.launch.child"]
    assert run.environment["profiler"] == "nvprof" and "3.5 -> nvprof" in run.environment["profiler_reason"]

    profiled = [launch for launch in run.launches if launch.attributes["phase"] == "profiled"]
    # from the K40c fixture: one kernel, 3 invocations, flop_count_sp 25264160800, stall_sync avg 28.125501%
    assert len(profiled) == 1 and profiled[0].invocations == 3
    assert profiled[0].kernel.startswith("__kernel___forma_kernel__0__(float*, int")
    assert profiled[0].value("flop_count_sp") == 25264160800
    assert profiled[0].value("stall_sync") == pytest.approx(28.125501)
    assert run.environment["replay_passes"] == []
    assert any("time from CUDA events" in note for note in run.notes)
    assert run.environment["kernels_per_call"] == 1  # nvprof's 3 invocations are the 3 profiled calls


def test_counter_permission_falls_back_to_event_timing(tmp_path, stand_in, profiler_calls):
    stand_in("NVIDIA A100-SXM4-40GB", "8.0", "ncu_csv_err_nvgpuctrperm_no_kernels.txt")
    run = gpu_session.run_gpu(_settings(tmp_path), (256, 256))

    assert [launch.attributes["phase"] for launch in run.launches] == ["timed"] * 3
    assert [launch.value("kernel_duration") for launch in run.launches] == STAND_IN_TIMES
    assert run.environment["profiler_outcome"] == "counters refused (ERR_NVGPUCTRPERM)"
    [note] = [n for n in run.notes if "ERR_NVGPUCTRPERM" in n]
    assert "FLOPs are analytic" in note and "NVreg_RestrictProfilingToAdminUsers=0" in note
    assert "\n" not in note
    assert (tmp_path / "reports" / run.run_id / "ncu.csv").read_text().startswith("==PROF== Connected")


QUOTED_METRIC_ERROR = r"==ERROR== Failed to find metric regex:^flop_count_sp\.(sum|min|max|avg|pct|ratio|max_rate)$"


def _child_run_directly(tmp_path, monkeypatch, argv_seen: list[list[str]]) -> None:
    """The stand-in result for a workload child gpuprof runs without a profiler (it needs a GPU)."""
    profiling = gpu_session._execute

    def execute(argv, run_dir, timeout):
        if argv[0] != sys.executable:
            return profiling(argv, run_dir, timeout)
        argv_seen.append(argv)
        (run_dir / "child.json").write_bytes((tmp_path / "child-stand-in.json").read_bytes())
        return 0

    monkeypatch.setattr(gpu_session, "_execute", execute)


def test_a_metric_the_gpu_lacks_keeps_the_event_timing(tmp_path, stand_in, monkeypatch):
    # ncu refused a metric name (a log quoted from a real L4 run) and exited 1 after the workload wrote its result
    stand_in("NVIDIA L4", "8.9", "ncu_err_failed_to_find_metric_QUOTED.log")
    monkeypatch.setenv("GPUPROF_FAKE_EXIT", "1")
    run = gpu_session.run_gpu(_settings(tmp_path), (256, 256))

    assert [launch.attributes["phase"] for launch in run.launches] == ["timed"] * 3
    assert [launch.value("kernel_duration") for launch in run.launches] == STAND_IN_TIMES
    assert run.environment["profiler_outcome"] == f"failed: {QUOTED_METRIC_ERROR}"
    [note] = [n for n in run.notes if "measured nothing usable" in n]
    assert note == (
        f"ncu measured nothing usable ({QUOTED_METRIC_ERROR}), so time is from CUDA events and FLOPs "
        f"are analytic; see {tmp_path / 'reports' / run.run_id / 'ncu.csv'}"
    )


def test_a_profiler_that_stops_the_workload_is_followed_by_a_run_without_it(tmp_path, stand_in, monkeypatch):
    stand_in("NVIDIA L4", "8.9", "ncu_err_failed_to_find_metric_QUOTED.log")
    monkeypatch.delenv("GPUPROF_FAKE_CHILD")  # ncu stopped: the workload wrote no result
    monkeypatch.setenv("GPUPROF_FAKE_EXIT", "1")
    direct: list[list[str]] = []
    _child_run_directly(tmp_path, monkeypatch, direct)
    run = gpu_session.run_gpu(_settings(tmp_path), (256, 256))

    folder = tmp_path / "reports" / run.run_id
    [argv] = direct
    assert argv[argv.index("--profiled") + 1] == "0" and argv[-1] == str(folder / "without-profiler" / "child.json")
    assert [launch.value("kernel_duration") for launch in run.launches] == STAND_IN_TIMES
    assert run.environment["profiler_outcome"] == "failed: stopped before the workload finished"
    assert (
        f"ncu stopped before the workload finished ({QUOTED_METRIC_ERROR}); measured again without a profiler, "
        f"so time is from CUDA events and FLOPs are analytic (files in {folder})"
    ) in run.notes
    assert (folder / "ncu.csv").is_file()  # the profiler's log is kept beside the second run's files


def test_no_counters_runs_no_profiler(tmp_path, stand_in, profiler_calls, monkeypatch):
    stand_in("NVIDIA A100-SXM4-40GB", "8.0", None)
    direct: list[list[str]] = []
    _child_run_directly(tmp_path, monkeypatch, direct)
    settings = dataclasses.replace(_settings(tmp_path), counters=False)
    run = gpu_session.run_gpu(settings, (256, 256))
    assert calls(profiler_calls) == []  # no profiler even probed
    assert run.environment["profiler"] == "none" and len(direct) == 1
    assert "hardware counters off (--no-counters): time from CUDA events, FLOPs analytic" in run.notes


def test_profiler_none_runs_the_child_directly(tmp_path, stand_in, monkeypatch):
    stand_in("NVIDIA A100-SXM4-40GB", "8.0", None)
    argv_seen = []

    def fake_execute(argv, run_dir, timeout):
        argv_seen.append(argv)
        (run_dir / "child.json").write_bytes((tmp_path / "child-stand-in.json").read_bytes())
        return 0

    monkeypatch.setattr(gpu_session, "_execute", fake_execute)
    run = gpu_session.run_gpu(_settings(tmp_path, profiler="none"), (256, 256))
    assert argv_seen[0][0] == sys.executable and "--profiled" in argv_seen[0]
    assert argv_seen[0][argv_seen[0].index("--profiled") + 1] == "0"
    assert run.environment["profiler"] == "none" and "profiler_outcome" not in run.environment
    assert len(run.launches) == 3


def test_child_error_is_raised_with_its_own_class(tmp_path, stand_in, monkeypatch):
    """The REAL child, on this GPU-less machine, reports DeviceError and run_gpu re-raises it."""
    pytest.importorskip("cupy")
    if gpu_session.probe_gpu()[0]:
        pytest.skip("a GPU is usable here: the child would measure instead of failing")
    stand_in("NVIDIA A100-SXM4-40GB", "8.0", None)
    monkeypatch.delenv("GPUPROF_FAKE_CHILD")
    with pytest.raises(DeviceError, match="cudaErrorInsufficientDriver|no CUDA|CUDA driver"):
        gpu_session.run_gpu(_settings(tmp_path, profiler="none"), (16, 16))


def test_device_cuda_without_gpu_says_what_was_tried(tmp_path):
    usable, reason = gpu_session.probe_gpu()
    if usable:
        pytest.skip(f"a GPU is usable here ({reason})")
    assert "NVML" in reason and "CuPy" in reason
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuprof",
            "run",
            "--op",
            "add",
            "--size",
            "1MB",
            "--device",
            "cuda",
            "--store",
            str(tmp_path / "s.sqlite"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == DeviceError.exit_code
    assert done.stderr.startswith("error: --device cuda: no usable NVIDIA GPU (")
    assert "use --device cpu" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
