"""Exact ncu/nvprof argv, profiler selection by compute capability, and the one-time probe.

Option names and values are asserted against NVIDIA's documentation (Nsight Compute CLI v2026.1
"Command Line Options"; CUDA Profiler User's Guide "nvprof"); metric names against the catalog.
Profilers are the stand-ins in tests/fakes (no GPU, no NVIDIA tools needed).
"""

from __future__ import annotations

import re

import pytest
from fakes.environment import FAKES, FIXTURES, calls, isolate_discovery, search_path, use_stand_ins

from gpuprof.errors import InputError, ProfilerError
from gpuprof.launch import discovery, ncu, nvprof, profilers
from gpuprof.launch.profilers import ProfileOptions
from gpuprof.model import catalog

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
        "/opt/ncu",
        "--nvtx",
        "--nvtx-include",
        "gpuprof:dot:707x707x707:float32/",
        "--metrics",
        ",".join(ncu.metrics()),
        "--clock-control",
        "base",
        "--cache-control",
        "all",
        "--replay-mode",
        "kernel",
        "--export",
        str(tmp_path / "report"),
        "--force-overwrite",
        "--csv",
        "--page",
        "raw",
        "--log-file",
        str(tmp_path / "ncu.csv"),
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
    for name in (
        "gpu__time_duration.sum",
        "dram__bytes_read.sum",
        "dram__bytes_write.sum",
        "smsp__cycles_elapsed.avg.per_second",
    ):
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
    wanted = nvprof.metrics()
    assert argv == [
        str(FAKES / "nvprof"),
        "--profile-from-start",
        "off",
        "--csv",
        "--log-file",
        str(tmp_path / "nvprof.csv"),
        "--metrics",
        ",".join(wanted),
        "--replay-mode",
        "application",
        *CHILD,
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


@pytest.mark.parametrize(
    ("cc", "expected"),
    [((3, 5), "nvprof"), ((6, 1), "nvprof"), ((7, 0), "ncu"), ((8, 0), "ncu"), ((10, 0), "ncu"), (None, "ncu")],
)
def test_auto_picks_by_compute_capability(profiler_calls, cc, expected):
    choice = profilers.choose(None, cc)
    assert choice.backend == expected and not choice.fallback
    assert choice.probe.version == "0.0.0-fake"
    assert f"-> {expected}" in choice.reason


def test_auto_uses_nvprof_on_volta_when_ncu_is_missing(tmp_path, monkeypatch):
    isolate_discovery(tmp_path, monkeypatch)
    only_nvprof = tmp_path / "bin"
    only_nvprof.mkdir()
    (only_nvprof / "nvprof").symlink_to(FAKES / "nvprof")
    monkeypatch.setenv("PATH", search_path(only_nvprof))
    assert profilers.choose("auto", (7, 0)).backend == "nvprof"
    fallback = profilers.choose("auto", (8, 6))
    assert fallback.backend == "none" and fallback.fallback
    assert "ncu: ncu not found (searched PATH, " in fallback.reason and "install Nsight Compute" in fallback.reason


def test_explicit_profiler_errors(profiler_calls, monkeypatch):
    with pytest.raises(ProfilerError, match="nvprof does not support compute capability 8.0"):
        profilers.choose("nvprof", (8, 0))
    with pytest.raises(ProfilerError, match="does not support compute capability 6.1"):
        profilers.choose("ncu", (6, 1))
    monkeypatch.setenv("PATH", search_path())
    with pytest.raises(
        ProfilerError,
        match=r"ncu not found \(searched PATH, .*nsight-compute/<version>/ncu, "
        r"\$CUDA_HOME/bin \(\$CUDA_HOME unset\), .*/usr/local/cuda/bin\)",
    ) as error:
        profilers.choose("ncu", (8, 0))
    assert "--profiler none" in str(error.value) and "--profiler /path/to/ncu" in str(error.value)
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


def _install(folder, tool: str = "ncu"):
    """A stand-in profiler installed as ``folder/tool`` (a link to tests/fakes)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / tool).symlink_to(FAKES / tool)
    return folder / tool


def test_ncu_is_found_in_nvidias_install_places_newest_version_first(tmp_path, monkeypatch):
    root = isolate_discovery(tmp_path, monkeypatch)
    monkeypatch.setenv("PATH", search_path())  # not on PATH
    opt = root / "opt" / "nvidia" / "nsight-compute"
    _install(opt / "2024.1.0")
    newest = _install(opt / "2025.3.1")
    _install(opt / "2025.1.10")
    (opt / "latest-docs").mkdir()  # not a version folder
    found = profilers.probe("ncu")
    assert found.usable and found.path == str(FAKES / "ncu")  # the link's target, probed once per executable
    assert found.found_by == f"{opt}, newest of 3 version(s)"
    assert discovery.locate("ncu").path == str(newest)
    choice = profilers.choose("auto", (9, 0))
    assert choice.backend == "ncu" and f"found by {opt}, newest of 3 version(s)" in choice.reason


@pytest.mark.parametrize("place", ["cuda_home", "usr_local_cuda"])
def test_profilers_are_found_in_the_cuda_toolkit(tmp_path, monkeypatch, place):
    root = isolate_discovery(tmp_path, monkeypatch)
    monkeypatch.setenv("PATH", search_path())
    if place == "cuda_home":
        monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda-12.4"))
        _install(tmp_path / "cuda-12.4" / "bin", "nvprof")
        where = "$CUDA_HOME/bin"
    else:
        _install(root / "usr" / "local" / "cuda" / "bin", "nvprof")
        where = f"{root / 'usr' / 'local' / 'cuda'}/bin"
    found = profilers.probe("nvprof")
    assert found.usable and found.found_by == where and found.version == "0.0.0-fake"


def test_profiler_given_by_path_is_identified_by_its_banner(tmp_path, monkeypatch):
    isolate_discovery(tmp_path, monkeypatch)
    monkeypatch.setenv("PATH", search_path())
    renamed = tmp_path / "tools" / "my-ncu"
    renamed.parent.mkdir()
    renamed.symlink_to(FAKES / "ncu")
    choice = profilers.choose(str(renamed), (9, 0))
    assert choice.backend == "ncu" and choice.probe.path == str(renamed) and choice.probe.found_by == "--profiler"
    assert choice.reason == f"--profiler {renamed}: ncu 0.0.0-fake ({renamed}, found by --profiler)"
    with pytest.raises(ProfilerError, match="nvprof does not support compute capability 9.0"):
        profilers.choose(str(FAKES / "nvprof"), (9, 0))
    with pytest.raises(ProfilerError, match="no executable file there"):
        profilers.choose(str(tmp_path / "missing" / "ncu"), (9, 0))
    not_a_profiler = tmp_path / "tools" / "echo-version"
    not_a_profiler.write_text("#!/bin/sh\necho 'some tool Version 1.0'\n")
    not_a_profiler.chmod(0o755)
    with pytest.raises(ProfilerError, match="does not name Nsight Compute or nvprof"):
        profilers.choose(str(not_a_profiler), (9, 0))


def test_ncu_asks_only_for_metrics_the_gpu_lists(tmp_path, profiler_calls, monkeypatch):
    # the real `ncu --devices 0 --query-metrics` output of an A100 (ncu 2023.2), whose author kept its
    # first two rows: against it, only the two DRAM metrics are requested and the rest are named as missing
    monkeypatch.setenv("GPUPROF_FAKE_QUERY", str(FIXTURES / "ncu_query_metrics_a100_EXCERPT.txt"))
    exe = str(FAKES / "ncu")
    assert ncu.offered(exe) == {"dram__bytes", "dram__bytes_read"}
    collect, missing = ncu.to_collect(exe)
    assert collect == [m for m in ncu.metrics() if m.split(".")[0] in ("dram__bytes", "dram__bytes_read")]
    assert "dram__bytes_read.sum" in collect and "dram__bytes.sum.per_second" in collect
    assert "gpu__time_duration.sum" in missing and len(collect) + len(missing) == len(ncu.metrics())
    argv = ncu.command(exe, CHILD, tmp_path, ProfileOptions("gpuprof:dot:8x8x8:float32"))
    assert argv[argv.index("--metrics") + 1] == ",".join(collect)
    [note] = [n for n in ncu.notes(ProfileOptions("r"), exe) if "does not offer" in n]
    assert note.startswith("ncu on this GPU does not offer: gpu__time_duration.sum, gpc__cycles_elapsed.max, ")
    assert note.endswith("(left out of --metrics)") and "dram__bytes_read.sum," not in note
    queries = [c["argv"] for c in calls(profiler_calls) if "--query-metrics" in c["argv"]]
    assert queries == [["--devices", "0", "--query-metrics"]]  # asked once, however often the list is used


A100_QUERY = FIXTURES / "ncu_query_metrics_a100_EXCERPT.txt"  # two real rows: dram__bytes, dram__bytes_read


def test_ncu_metric_list_falls_back_to_the_chip_query_when_the_device_query_lists_nothing(
    tmp_path, profiler_calls, monkeypatch
):
    """The device query prints nothing (as without counter permission): before, every catalog name went
    to ncu, which refuses the run for one unknown name; now ncu is asked for the chip of the compute
    capability (ga100 for 8.0), which needs no GPU."""
    from gpuprof.launch import ncu_metrics

    monkeypatch.setenv("GPUPROF_FAKE_QUERY_CHIPS", str(A100_QUERY))
    exe = str(FAKES / "ncu")
    options = ProfileOptions("gpuprof:add:8x8:float32", cc=(8, 0))
    argv = ncu.command(exe, CHILD, tmp_path, options)
    requested = argv[argv.index("--metrics") + 1].split(",")
    assert {name.split(".")[0] for name in requested} == {"dram__bytes", "dram__bytes_read"}
    assert len(requested) < len(ncu.metrics())
    queries = [c["argv"] for c in calls(profiler_calls) if "--query-metrics" in c["argv"]]
    assert queries == [["--devices", "0", "--query-metrics"], ["--query-metrics", "--chips", "ga100"]]
    [source] = [n for n in ncu.notes(options, exe) if n.startswith("ncu metric list:")]
    assert source == "ncu metric list: 2 names from ncu --query-metrics --chips ga100"
    assert (
        ncu_metrics.chip((9, 0)) == "gh100" and ncu_metrics.chip((8, 6)) == "ga102" and ncu_metrics.chip(None) is None
    )


def test_ncu_metric_list_falls_back_to_a_shipped_list_then_to_every_name(tmp_path, profiler_calls, monkeypatch):
    from gpuprof.launch import ncu_metrics

    exe = str(FAKES / "ncu")
    shipped = tmp_path / "ncu_metrics"
    shipped.mkdir()
    names = sorted(set(re.findall(ncu_metrics.LISTED, A100_QUERY.read_text(), re.MULTILINE)))
    (shipped / "ga100.txt").write_text(
        "# generated from ncu --query-metrics-mode all --chips ga100\n" + "\n".join(names) + "\n"
    )
    monkeypatch.setattr(ncu_metrics, "SHIPPED", shipped)
    found = ncu_metrics.query(exe, (8, 0))
    assert found.names == {"dram__bytes", "dram__bytes_read"}
    assert found.source.startswith(
        "gpuprof's shipped list for ga100 (ncu --devices 0 --query-metrics; "
        "ncu --query-metrics --chips ga100 listed nothing)"
    )
    nothing = ncu_metrics.query(exe, (9, 0))  # no gh100 list shipped here
    assert nothing.names is None and nothing.source.endswith("listed nothing; no shipped list for gh100")
    assert ncu.to_collect(exe, cc=(9, 0)) == (ncu.metrics(), [])
    assert not list(ncu_metrics.cache_dir().glob("ncu-metrics-*"))  # failed and shipped answers are not cached


def test_ncu_metric_list_is_cached_per_ncu_and_version_across_processes(tmp_path, profiler_calls, monkeypatch):
    """A second process asks ncu nothing; another ncu version is asked again."""
    import subprocess
    import sys

    monkeypatch.setenv("GPUPROF_FAKE_QUERY", str(A100_QUERY))
    exe = str(FAKES / "ncu")
    script = (
        "import sys; from gpuprof.launch import ncu_metrics as m; "
        "found = m.query(sys.argv[1], (8, 0)); print(len(found.names or ()) or None, found.source)"
    )

    def one_process() -> str:
        done = subprocess.run(
            [sys.executable, "-c", script, exe], capture_output=True, text=True, timeout=120, check=True
        )
        return done.stdout.strip()

    first = one_process()
    monkeypatch.delenv("GPUPROF_FAKE_QUERY")  # a second query would now list nothing
    second = one_process()
    assert first == "2 ncu --devices 0 --query-metrics"
    assert second.startswith("2 ncu --devices 0 --query-metrics (cached in ")
    monkeypatch.setenv("GPUPROF_FAKE_VERSION", "2099.1")
    # another ncu version: asked again, and now it lists nothing, so gpuprof's shipped ga100 list answers
    from gpuprof.launch import ncu_metrics

    assert one_process().startswith(f"{len(ncu_metrics.shipped('ga100'))} gpuprof's shipped list for ga100 (")
    queries = [c["argv"] for c in calls(profiler_calls) if "--query-metrics" in c["argv"]]
    assert queries.count(["--devices", "0", "--query-metrics"]) == 2
