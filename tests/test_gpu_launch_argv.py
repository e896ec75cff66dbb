"""Exact ncu/nvprof argv, profiler selection by compute capability, and the one-time probe.

Option names and values are asserted against NVIDIA's documentation (Nsight Compute CLI v2026.1
"Command Line Options"; CUDA Profiler User's Guide "nvprof"); metric names against the catalog.
Profilers are the stand-ins in tests/fakes (no GPU, no NVIDIA tools needed).
"""

from __future__ import annotations

import re

import pytest
from fakes.environment import FAKES, FIXTURES, calls, search_path, use_stand_ins

from gpuprof import catalog
from gpuprof.errors import InputError, ProfilerError
from gpuprof.launch import ncu, nvprof, profilers
from gpuprof.launch.profilers import ProfileOptions

CHILD = ["/usr/bin/python3", "-m", "gpuprof.launch.child", "--op", "dot"]
# Documented values (Nsight Compute CLI, "Profile" options table).
NCU_DOCUMENTED = {
    "--clock-control": {"base", "boost", "force-boost", "none", "reset"},
    "--cache-control": {"all", "none"},
    "--replay-mode": {"kernel", "application", "range", "app-range"},
    "--page": {"details", "raw", "source", "session"},
}


@pytest.fixture
def profiler_calls(tmp_path, monkeypatch):
    """Stand-in ncu/nvprof on PATH; the file their calls are recorded in."""
    return use_stand_ins(tmp_path, monkeypatch)


def test_ncu_argv_is_exact(tmp_path):
    options = ProfileOptions("gpuprof:dot:707x707x707:float32", "base", "all", "kernel")
    argv = ncu.command("/opt/ncu", CHILD, tmp_path, options)
    assert argv == [
        "/opt/ncu", "--nvtx", "--nvtx-include", "gpuprof:dot:707x707x707:float32/",
        "--metrics", ",".join(ncu.metrics()),
        "--clock-control", "base", "--cache-control", "all", "--replay-mode", "kernel",
        "--export", str(tmp_path / "report"), "--force-overwrite",
        "--csv", "--page", "raw", "--log-file", str(tmp_path / "ncu.csv"),
        *CHILD,
    ]
    for option, allowed in NCU_DOCUMENTED.items():
        assert argv[argv.index(option) + 1] in allowed


def test_ncu_metrics_come_from_the_catalog_and_are_metric_names():
    names = ncu.metrics()
    assert names and set(names) <= set(catalog.ncu_metrics())
    assert all(re.fullmatch(r"[a-z0-9_]+__[a-z0-9_.]+", n) for n in names)
    # the FLOP counters NVIDIA maps flop_count_sp/dp/hp to, DRAM bytes, time and SM clock are all asked for
    for entry in ("flop_count_sp", "flop_count_dp", "flop_count_hp"):
        assert set(catalog.entries()[entry].ncu_sum) <= set(names)
    for name in ("gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
                 "smsp__cycles_elapsed.avg.per_second"):
        assert name in names
    assert any(n.startswith("smsp__warp_issue_stalled_") for n in names)
    # the FMA-pipe ceilings that make efficiency at the measured clock possible (derive.counters.peak_flop_rate)
    for op in ("ffma", "dfma", "hfma"):
        assert f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum.peak_sustained" in names
    assert "Duration" not in names  # a details-page title, not a collectable metric


def test_ncu_nvtx_filter_escapes_quantifiers():
    assert ncu.nvtx_filter("gpuprof:add:64x64:float32") == "gpuprof:add:64x64:float32/"
    assert ncu.nvtx_filter("a/b@c[1]") == r"a\/b\@c\[1\]/"


def test_nvprof_argv_is_exact(tmp_path, profiler_calls):
    options = ProfileOptions("gpuprof:add:64x64:float32", replay_mode="application")
    argv = nvprof.command(str(FAKES / "nvprof"), CHILD, tmp_path, options)
    wanted = nvprof.wanted_metrics()
    assert argv == [
        str(FAKES / "nvprof"), "--profile-from-start", "off",
        "--csv", "--log-file", str(tmp_path / "nvprof.csv"),
        "--metrics", ",".join(wanted), "--replay-mode", "application", *CHILD,
    ]
    nvprof_names = {n for e in catalog.entries().values() for n in e.nvprof}
    assert set(wanted) <= nvprof_names
    assert {"flop_count_sp", "flop_count_dp", "dram_read_bytes", "stall_memory_dependency"} <= set(wanted)
    assert "Duration" not in wanted  # a trace column, not a metric
    # the stand-in lists no metrics for --query-metrics, so nothing is filtered out
    assert [c["argv"] for c in calls(profiler_calls)] == [["--query-metrics"]]


def test_profile_options_reject_undocumented_values():
    with pytest.raises(InputError, match="--clock-control 'boost'"):
        ProfileOptions("r", clock_control="boost")
    with pytest.raises(InputError, match="--replay-mode"):
        ProfileOptions("r", replay_mode="range")


@pytest.mark.parametrize(("cc", "expected"), [((3, 5), "nvprof"), ((6, 1), "nvprof"), ((7, 0), "ncu"),
                                              ((8, 0), "ncu"), ((10, 0), "ncu"), (None, "ncu")])
def test_auto_picks_by_compute_capability(profiler_calls, cc, expected):
    choice = profilers.choose(None, cc)
    assert choice.backend == expected and not choice.fallback
    assert choice.probe.version == "0.0.0-fake"
    assert f"-> {expected}" in choice.reason


def test_auto_uses_nvprof_on_volta_when_ncu_is_missing(tmp_path, monkeypatch):
    only_nvprof = tmp_path / "bin"
    only_nvprof.mkdir()
    (only_nvprof / "nvprof").symlink_to(FAKES / "nvprof")
    monkeypatch.setenv("PATH", search_path(only_nvprof))
    assert profilers.choose("auto", (7, 0)).backend == "nvprof"
    fallback = profilers.choose("auto", (8, 6))
    assert fallback.backend == "none" and fallback.fallback
    assert "ncu: ncu not found on PATH" in fallback.reason and "install Nsight Compute" in fallback.reason


def test_explicit_profiler_errors(profiler_calls, monkeypatch):
    with pytest.raises(ProfilerError, match="nvprof does not support compute capability 8.0"):
        profilers.choose("nvprof", (8, 0))
    with pytest.raises(ProfilerError, match="does not support compute capability 6.1"):
        profilers.choose("ncu", (6, 1))
    monkeypatch.setenv("PATH", search_path())
    with pytest.raises(ProfilerError, match="ncu not found on PATH") as error:
        profilers.choose("ncu", (8, 0))
    assert "--profiler none" in str(error.value)
    assert profilers.choose("none", (8, 0)).backend == "none"
    with pytest.raises(InputError):
        profilers.choose("nsys", (8, 0))


def test_each_profiler_is_probed_once(profiler_calls):
    for _ in range(3):
        profilers.choose("auto", (7, 5))
        profilers.choose("nvprof", (7, 5))
    versions = [c for c in calls(profiler_calls) if c["argv"] == ["--version"]]
    assert [c["tool"] for c in versions] == ["ncu", "nvprof"]


def test_permission_error_is_recognised_in_the_real_log():
    text = (FIXTURES / "ncu_csv_err_nvgpuctrperm_no_kernels.txt").read_text()
    assert profilers.counters_refused(text)
    assert not profilers.counters_refused("==PROF== Connected to process 1")


def test_passes_from_the_console_log_line():
    # a real ncu progress line (ncu_text_print_summary_per_gpu_a100_roofline_EXCERPT.log, line 2)
    log = (FIXTURES / "ncu_text_print_summary_per_gpu_a100_roofline_EXCERPT.log").read_text()
    assert ncu.passes([], log) == ([18], "ncu console log")
    assert ncu.passes([], "") == ([], "not reported")
