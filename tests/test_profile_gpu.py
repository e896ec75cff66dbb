"""``gpuprof profile -- CMD`` on a GPU, without one: stand-in ``ncu``/``nvprof`` (tests/fakes) record
their argv, write a real recorded output where gpuprof asked for it, and run the command they were
given (commands that need no GPU), as the profiler would; gpuprof reads the output back with its
own readers. NVML's answer is a stand-in GPU record (the fixture's own GPU).

What is real: the profiler outputs (tests/fixtures/profiler-outputs, SOURCES.md), the argv, the
command's own exit code and stderr, the run folder, the process group, the reading and the store.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fakes.environment import FIXTURES, calls, stand_in_gpu, use_stand_ins

from gpuprof import profile
from gpuprof.cli import main
from gpuprof.devices import gpu_detect
from gpuprof.errors import Interrupted, ProfilerError
from gpuprof.launch import gpu_profile
from gpuprof.model import catalog
from gpuprof.readers import read
from gpuprof.store import open_store

B200_PAGE = FIXTURES / "ncu_csv_raw_page_b200_flashattn.csv"  # 16 launches of process 233787, 11 passes each
REFUSED = FIXTURES / "ncu_csv_err_nvgpuctrperm_no_kernels.txt"
NO_MATCH = FIXTURES / "ncu_console_no_kernels_matched_rtx40_CUDAX365_EXCERPT.txt"
K40C = FIXTURES / "nvprof_csv_metrics_k40c_flop_stall.csv"  # process 21206
SRAD = FIXTURES / "nvprof_text_metrics_gtx1070_srad.txt"  # process 12830
TRACE = FIXTURES / "nvprof_csv_gpu_trace_titanxp_um_HEAD300.csv"
QUIET = [sys.executable, "-c", "print('the command ran')"]


@pytest.fixture
def gpu(tmp_path, monkeypatch):
    """A GPU NVML 'reports', stand-in profilers that run the command, the test's folder as cwd;
    the file the stand-ins record their calls in."""
    record = use_stand_ins(tmp_path, monkeypatch)
    monkeypatch.setenv("GPUPROF_FAKE_RUN", "1")
    monkeypatch.chdir(tmp_path)

    def use(name: str, cc: str, log: Path | None = None) -> Path:
        monkeypatch.setattr(gpu_detect, "detect", lambda: [stand_in_gpu(name, cc, "580.65")])
        if log is not None:
            monkeypatch.setenv("GPUPROF_FAKE_LOG", str(log))
        return record

    return use


def invoke(tmp_path: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["profile", "--store", str(tmp_path / "s.sqlite"), *args])


def stored(tmp_path: Path) -> list:
    with open_store(tmp_path / "s.sqlite") as store:
        return store.runs()


def profiling_calls(record: Path) -> list[list[str]]:
    return [c["argv"] for c in calls(record) if c["argv"] != ["--version"] and "--query-metrics" not in c["argv"]]


def test_ncu_profile_runs_the_command_stores_the_run_and_prints_the_kernels(tmp_path, gpu):
    record = gpu("NVIDIA B200", "10.0", B200_PAGE)
    result = invoke(tmp_path, "--kernel", "flash", "--launch-count", "20", "--format", "json", "--", *QUIET)
    assert result.exit_code == 0, result.output

    [run] = stored(tmp_path)
    folder = tmp_path / "reports" / run.run_id
    [argv] = profiling_calls(record)
    metrics = ",".join(catalog.ncu_metrics_of(catalog.metric_sets()["roofline"].ncu))
    assert argv == [
        "--kernel-name",
        "regex:flash",
        "--kernel-name-base",
        "demangled",
        "--launch-count",
        "20",
        "--target-processes",
        "all",
        "--metrics",
        metrics,
        "--clock-control",
        "base",
        "--cache-control",
        "all",
        "--replay-mode",
        "kernel",
        "--export",
        f"reports/{run.run_id}/report",
        "--force-overwrite",
        "--csv",
        "--page",
        "raw",
        "--log-file",
        f"reports/{run.run_id}/ncu.csv",
        *QUIET,
    ]
    assert (folder / "stdout.txt").read_text() == "the command ran\n"  # the command really ran, as given
    assert (folder / "ncu.csv").read_bytes() == B200_PAGE.read_bytes()
    assert run.kind == "profile" and run.format == "ncu-raw"
    assert run.source == shlex.join(
        [
            "gpuprof",
            "profile",
            "--store",
            str(tmp_path / "s.sqlite"),
            "--kernel",
            "flash",
            "--launch-count",
            "20",
            "--format",
            "json",
            "--",
            *QUIET,
        ]
    )
    assert run.workload == {
        "command": QUIET,
        "metric_set": "roofline",
        "filters": {"kernel": "flash", "launch-count": 20},
    }
    assert run.environment["replay_passes"] == [11] * 16 and run.environment["process"] == "233787"
    assert run.environment["wall_time"]["origin"] == "timed" and run.environment["wall_time"]["value"] > 0
    assert run.device["name"] == "NVIDIA B200" and len(run.launches) == 16
    assert "1 process profiled (pid 233787)" in run.notes
    # the printed table: per kernel, values from the fixture (gpu__time_duration.sum 687488 ns in row 0)
    rows = json.loads(result.stdout)
    first = next(r for r in rows if r["kernel"] == run.launches[0].kernel)
    assert first["launches"] == sum(1 for launch in run.launches if launch.kernel == first["kernel"])
    assert "plan: profiler: ncu 0.0.0-fake" in result.stderr and "warning:" not in result.stderr


def test_dry_run_prints_the_exact_command_and_runs_nothing(tmp_path, gpu):
    record = gpu("NVIDIA B200", "10.0", B200_PAGE)
    result = invoke(tmp_path, "--set", "stalls", "--nvtx", "step 3", "--dry-run", "--", *QUIET)
    assert result.exit_code == 0, result.output
    [line] = result.stdout.splitlines()
    argv = shlex.split(line)
    assert argv[0].endswith("/fakes/ncu") and argv[1:4] == ["--nvtx", "--nvtx-include", "step 3/"]
    assert argv[argv.index("--metrics") + 1].split(",") == catalog.ncu_metrics_of(catalog.metric_sets()["stalls"].ncu)
    assert argv[-len(QUIET) :] == QUIET
    assert (
        profiling_calls(record) == [] and not (tmp_path / "reports").exists() and not (tmp_path / "s.sqlite").exists()
    )


def test_no_filter_warns_and_the_next_plan_knows_the_passes_measured(tmp_path, gpu):
    gpu("NVIDIA B200", "10.0", B200_PAGE)
    first = invoke(tmp_path, "--", *QUIET)
    assert first.exit_code == 0, first.output
    assert (
        "warning: no --kernel, --nvtx, --launch-count: every kernel launch of the command is profiled" in first.stderr
    )
    assert "plan: replay passes: not known before ncu has profiled set roofline on this GPU" in first.stderr
    assert "plan: overhead: each profiled launch runs once per pass" in first.stderr
    [run] = stored(tmp_path)
    wall = run.environment["wall_time"]["value"]

    again = invoke(tmp_path, "--launch-count", "4", "--dry-run", "--", *QUIET)
    assert (
        f"plan: replay passes: 11 per profiled launch (measured by ncu for set roofline on this GPU, "
        f"run {run.run_id[:8]} of {run.created})"
    ) in again.stderr
    assert (
        f"plan: overhead: about {wall / 16:.3g} s per profiled launch (run {run.run_id[:8]}: 16 launch(es) in "
        f"{wall:.3g} s, timed); with --launch-count 4, about {wall / 16 * 4:.3g} s"
    ) in again.stderr
    assert "warning:" not in again.stderr


def test_a_command_that_does_not_exist_is_one_line_and_nothing_runs(tmp_path, gpu):
    record = gpu("NVIDIA B200", "10.0", B200_PAGE)
    result = invoke(tmp_path, "--", "no-such-program-here", "--flag")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: command not found: no-such-program-here (not found on PATH). check the name and "
        "PATH, or give the program's path; the command goes after '--'\n"
    )
    assert calls(record) == [] and not (tmp_path / "s.sqlite").exists()


def test_a_failing_command_keeps_its_exit_code_stderr_and_the_partial_report(tmp_path, gpu):
    gpu("NVIDIA B200", "10.0", B200_PAGE)
    failing = [sys.executable, "-c", "import sys; print('out of memory at step 7', file=sys.stderr); sys.exit(3)"]
    result = invoke(tmp_path, "--launch-count", "20", "--", *failing)
    assert result.exit_code == 8
    [run] = stored(tmp_path)
    folder = tmp_path / "reports" / run.run_id
    error = result.stderr.splitlines()[-1]
    assert error == (
        f"error: {sys.executable} exited with code 3 (stderr: out of memory at step 7); the partial "
        f"report was read (16 kernel launch(es) read and kept; files in reports/{run.run_id}). "
        f"see reports/{run.run_id}/stderr.txt"
    )
    assert len(run.launches) == 16 and run.environment["exit_code"] == 3
    assert (folder / "stderr.txt").read_text() == "out of memory at step 7\n"
    assert any(note.startswith("problem: ") and "exited with code 3" in note for note in run.notes)
    assert "flash_fwd_kernel" in result.stdout  # the table of what was read is still printed


@pytest.mark.parametrize(
    "gpu_name, cc, log, args, error",
    [
        (
            "NVIDIA A100-SXM4-40GB",
            "8.0",
            REFUSED,
            ("--launch-count", "1"),
            "error: counters refused (ERR_NVGPUCTRPERM: the driver lets only admin users read GPU performance counters); "
            "only the command's wall time was kept. to enable counters run as root or load the nvidia module with "
            "NVreg_RestrictProfilingToAdminUsers=0 (https://developer.nvidia.com/ERR_NVGPUCTRPERM)",
        ),
        (
            "NVIDIA GeForce RTX 4090",
            "8.9",
            NO_MATCH,
            ("--kernel", "::wmma_gemm_kernel"),
            "error: no kernel matched the filters (--kernel ::wmma_gemm_kernel); kernels ncu saw: Kernel2, "
            "wmma_gemm_kernel. --kernel is a regular expression on the demangled kernel name; check the filters "
            "against the names, or drop them",
        ),
    ],
    ids=["counters refused", "no kernel matched"],
)
def test_a_profile_without_kernels_says_why_in_one_line_and_keeps_the_wall_time(
    tmp_path, gpu, gpu_name, cc, log, args, error
):
    gpu(gpu_name, cc, log)
    result = invoke(tmp_path, *args, "--", *QUIET)
    assert result.exit_code == ProfilerError.exit_code
    assert result.stderr.splitlines()[-1] == error
    [run] = stored(tmp_path)
    assert len(run.launches) == 0 and run.environment["wall_time"]["value"] > 0


def _wait_for(path: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def _gone(pid: int, seconds: float = 5) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().split(") ")[-1][0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def _hanging(pid_file: Path) -> list[str]:
    return [
        sys.executable,
        "-c",
        f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)",
    ]


def test_ctrl_c_stops_profiler_and_command_as_a_group_and_keeps_the_partial_report(
    tmp_path, gpu, ctrl_c_reaches_python
):
    record = gpu("NVIDIA B200", "10.0", B200_PAGE)
    pid_file = tmp_path / "command.pid"
    settings = profile.ProfileSettings(command=tuple(_hanging(pid_file)), launch_count=20)
    plan = profile.plan(settings)

    def press_ctrl_c() -> None:  # what a terminal does: SIGINT to gpuprof, not to the profiler's own group
        _wait_for(pid_file)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=press_ctrl_c, daemon=True).start()
    began = time.monotonic()
    outcome = profile.execute(plan)
    assert time.monotonic() - began < 30
    assert isinstance(outcome.problem, Interrupted) and outcome.problem.exit_code == 130
    assert str(outcome.problem).startswith(
        "interrupted: ncu and the command were stopped as one process group; "
        "the partial report was read (16 kernel launch(es) read and kept"
    )
    [run] = outcome.runs
    assert len(run.launches) == 16 and run.environment["stopped"] == "interrupted"
    [profiler_call] = [c for c in calls(record) if "--metrics" in c["argv"]]
    assert _gone(int(pid_file.read_text())), "the command was left running"
    assert _gone(profiler_call["pid"]), "the profiler was left running"


@pytest.mark.slow  # waits for the profile's timeout: 2-5 s
def test_the_timeout_stops_both_and_keeps_the_partial_report(tmp_path, gpu):
    gpu("NVIDIA B200", "10.0", B200_PAGE)
    pid_file = tmp_path / "command.pid"
    result = invoke(tmp_path, "--timeout", "3", "--launch-count", "20", "--", *_hanging(pid_file))
    assert result.exit_code == ProfilerError.exit_code
    [run] = stored(tmp_path)
    assert result.stderr.splitlines()[-1] == (
        f"error: ncu did not finish within 3 s and was stopped with the command; the partial report was read "
        f"(16 kernel launch(es) read and kept; files in reports/{run.run_id}). narrow the profile with --kernel, "
        "--nvtx or --launch-count, or give a longer --timeout"
    )
    assert run.environment["stopped"] == "timeout" and len(run.launches) == 16
    assert _gone(int(pid_file.read_text()))


def test_nvprof_runs_the_trace_then_the_metrics_one_log_per_process(tmp_path, gpu, monkeypatch):
    record = gpu("Tesla K40c", "3.5")
    monkeypatch.setenv("GPUPROF_FAKE_LOGS", str(K40C))
    monkeypatch.setenv("GPUPROF_FAKE_TRACES", str(TRACE))
    result = invoke(tmp_path, "--kernel", "forma", "--format", "json", "--", *QUIET)
    assert result.exit_code == 0, result.output
    [run] = stored(tmp_path)
    trace, metrics = profiling_calls(record)
    assert trace == [
        "--profile-child-processes",
        "--csv",
        "--print-gpu-trace",
        "--log-file",
        f"reports/{run.run_id}/trace.%p.csv",
        *QUIET,
    ]
    roofline = ",".join(catalog.nvprof_metrics(catalog.metric_sets()["roofline"].nvprof))
    assert metrics == [
        "--profile-child-processes",
        "--csv",
        "--log-file",
        f"reports/{run.run_id}/nvprof.%p.csv",
        "--kernels",
        "::forma:",
        "--metrics",
        roofline,
        "--replay-mode",
        "kernel",
        *QUIET,
    ]
    assert run.format == "nvprof-csv-metrics" and run.environment["process"] == "21206"
    assert "plan: replay passes: nvprof does not report them" in result.stderr
    [launch] = run.launches
    assert launch.value("flop_count_sp") == 25264160800 and launch.invocations == 3
    # the trace (another program's kernels) has no forma kernel: no duration, said, never invented
    assert launch.value("kernel_duration") is None
    assert any(note.startswith("no duration in the trace run for 1 kernel(s)") for note in run.notes)


def test_several_processes_give_one_run_each_or_one_merged_run(tmp_path, gpu, monkeypatch):
    gpu("Tesla K40c", "3.5")
    monkeypatch.setenv("GPUPROF_FAKE_LOGS", os.pathsep.join(map(str, (K40C, SRAD))))
    split = invoke(tmp_path, "--set", "stalls", "--format", "json", "--", *QUIET)
    assert split.exit_code == 0, split.output
    runs = stored(tmp_path)
    assert [r.environment["process"] for r in runs] == ["12830", "21206"]
    assert [len(r.launches) for r in runs] == [6, 1]
    said = "2 processes profiled: stored as 2 runs, one per process (--processes merge for one run)"
    assert said in runs[0].notes and f"note: {said}" in split.stderr
    assert {row["process"] for row in json.loads(split.stdout)} == {"12830", "21206"}
    # nvprof's stall percentages of the K40c kernel, ranked, in the table
    forma = next(row for row in json.loads(split.stdout) if row["kernel"].startswith("__kernel___forma"))
    assert forma["top stall reasons (share)"] == (
        "Synchronization 28.1%, Execution dependency 27.4%, Memory dependency 9.2% (of all stalls)"
    )

    merged = invoke(tmp_path, "--set", "stalls", "--processes", "merge", "--", *QUIET)
    assert merged.exit_code == 0, merged.output
    run = stored(tmp_path)[-1]
    assert run.environment["process"] == ["12830", "21206"] and len(run.launches) == 7
    assert (
        "2 processes profiled (pids 12830, 21206): merged into one run (--processes split for one run per process)"
    ) in run.notes


def test_nvprof_has_no_nvtx_or_launch_filters(tmp_path, gpu):
    gpu("Tesla K40c", "3.5")
    result = invoke(tmp_path, "--nvtx", "step", "--launch-count", "3", "--", *QUIET)
    assert result.exit_code == 2
    assert result.stderr == (
        "error: nvprof has no --nvtx, --launch-count filter. use --kernel REGEX with nvprof, "
        "or ncu (compute capability 7.0 and newer)\n"
    )


def test_traced_durations_are_the_mean_of_each_kernels_traced_launches():
    traced = read(TRACE).launches
    flux = [launch for launch in traced if launch.kernel.startswith("cuda_compute_flux")]
    from gpuprof.model import Launch

    [timed], unmatched = gpu_profile.with_durations([Launch(flux[0].kernel, 0, invocations=21)], traced)
    durations = [launch.value("kernel_duration") for launch in flux]
    duration = timed.metric("kernel_duration")
    assert len(flux) == 21 and unmatched == []
    assert duration.value == pytest.approx(sum(durations) / 21) and duration.origin == "measured"
    assert (duration.minimum, duration.maximum) == (min(durations), max(durations))
    assert timed.attributes["traced_launches"] == "21"


def test_each_metric_set_names_catalog_entries_and_what_roofline_asks_ncu_for():
    sets = catalog.metric_sets()
    assert list(sets) == ["roofline", "stalls", "full"]
    for metric_set in sets.values():  # a name the catalog lacks would be a KeyError here
        for keys in (metric_set.ncu, metric_set.nvprof):
            if keys is not None:
                assert catalog.ncu_metrics_of(keys) is not None and catalog.nvprof_metrics(keys) is not None
    assert sets["full"].ncu is None and sets["full"].nvprof is None  # the whole catalog, as gpuprof run
    names = catalog.ncu_metrics_of(sets["roofline"].ncu)
    assert names[:17] == [
        "gpu__time_duration.sum",
        "smsp__cycles_elapsed.avg.per_second",
        "sm__cycles_elapsed.avg.per_second",
        "gpc__cycles_elapsed.avg.per_second",
        *(f"smsp__sass_thread_inst_executed_op_{p}{op}_pred_on.sum" for p in "fdh" for op in ("add", "mul", "fma")),
        "dram__bytes.sum",
        "l1tex__t_bytes.sum",
        "lts__t_bytes.sum",
        "sm__inst_executed_pipe_tensor.sum",
    ]
    assert names[-3:] == [f"sm__sass_thread_inst_executed_op_{p}fma_pred_on.sum.peak_sustained" for p in "fdh"]
    tensor = names[17:-3]  # every chip's spelling; ncu is asked only for those its GPU offers
    assert len(set(tensor)) == len(tensor) and all(n.startswith("sm__ops_path_tensor_src_") for n in tensor)
    assert {
        "sm__ops_path_tensor_src_fp16_dst_fp32.sum",
        "sm__ops_path_tensor_src_fp64.sum",
        "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
        "sm__ops_path_tensor_src_int8.sum",
    } <= set(tensor)
    assert catalog.nvprof_metrics(sets["stalls"].nvprof) == list(sets["stalls"].nvprof)  # stall_* are nvprof's names
