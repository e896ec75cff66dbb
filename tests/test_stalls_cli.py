"""`gpuprof stalls`: files in, ranked table + explanation out; live paths fail with one clear line here."""

from __future__ import annotations

import csv
import io
import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuprof.cli import main

OUT = Path(__file__).parent / "fixtures" / "profiler-outputs"
CPU = Path(__file__).parent / "fixtures" / "cpu-counters"
K40C = OUT / "nvprof_csv_metrics_k40c_flop_stall.csv"
SOURCE_CSV = OUT / "ncu-source-page-sass-csv-HET-RGNNMatmul-excerpt.csv"
TOPDOWN_2B = CPU / "perf-stat-default-TopdownL1-cpu_core-intel-perfbook.txt"
NO_PMU = not any(Path("/sys/bus/event_source/devices", name).exists() for name in ("cpu", "cpu_core", "cpu_atom"))


def _invoke(*args: str):
    return CliRunner().invoke(main, ["stalls", *args])


def test_table_then_explanation_for_nvprof_file() -> None:
    result = _invoke(str(K40C))
    assert result.exit_code == 0, result.output
    assert "Warp stall reasons (measured), Tesla K40c: __kernel___forma_kernel__0__" in " ".join(result.stdout.split())
    lines = result.stdout.splitlines()
    ranked = [line.split()[1] for line in lines if line.split()[:1] in (["1"], ["2"], ["3"])]
    assert ranked == ["stall_sync", "stall_exec_dependency", "stall_memory_dependency"]
    assert "Basis (nvprof)" in result.stdout and "measured" in result.stdout
    assert "share the lead" in result.stdout


def test_json_is_parseable_and_explanations_go_to_stderr() -> None:
    result = _invoke(str(K40C), "--format", "json")
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    assert [r["reason"] for r in rows] == ["stall_sync", "stall_exec_dependency", "stall_memory_dependency"]
    assert rows[0]["share_pct"] == 28.13 and rows[0]["basis"] == "nvprof"
    assert "share the lead" in result.stderr


def test_hot_spots_csv_from_source_page() -> None:
    result = _invoke(str(SOURCE_CSV), "--hot-spots", "--format", "csv")
    assert result.exit_code == 0
    header, first, *_ = csv.reader(io.StringIO(result.stdout))
    assert header[:4] == ["kernel", "address", "instruction", "samples"]
    assert "0x7fc48541d900" in first and any("IMC miss" in cell for cell in first)


def test_cpu_topdown_file() -> None:
    result = _invoke(str(TOPDOWN_2B), "--format", "markdown")
    assert result.exit_code == 0
    assert "| ./benchmark.exe | cpu_core | 1 | backend_bound | Backend bound | 53.4 |" in result.stdout
    assert "Backend bound dominates (53.4% of pipeline slots)" in result.stdout


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".svg", b"<?xml")])
def test_plot_written(tmp_path: Path, suffix: str, magic: bytes) -> None:
    path = tmp_path / f"stalls{suffix}"
    result = _invoke(str(K40C), str(SOURCE_CSV), "--plot", str(path))
    assert result.exit_code == 0, result.output
    assert path.read_bytes().startswith(magic)
    if suffix == ".svg":
        assert "Synchronization" in path.read_text()
        assert "int, int, int, float*)" in path.read_text()  # the K40c kernel's name whole, on a second line


def test_bad_plot_suffix_is_one_line() -> None:
    result = _invoke(str(K40C), "--plot", "x.pdf")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: Invalid value for '--plot': 'x.pdf' is not a .png or .svg file name. see 'main stalls --help'"
    )


def test_file_without_stall_metrics_is_one_line() -> None:
    result = _invoke(str(OUT / "nvprof_text_metrics_gtx1070_dram_units.txt"))
    assert result.exit_code != 0
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("error: ")


def test_live_gpu_without_gpu_is_device_error() -> None:
    result = _invoke("--op", "dot", "--size", "6MB")
    assert result.exit_code == 5
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and "NVIDIA" in line


def test_live_gpu_profile_is_ranked_with_the_op_as_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the GPU session returns (ncu warp-state percentages on profiled launches) reaches the table."""
    from gpuprof.model import Launch, Metric, Run

    pct = "smsp__warp_issue_stalled_{}_per_warp_active.pct"
    run = Run(
        "run",
        "cuda-cupy",
        "gpuprof stalls --op sigmoid",
        device={"name": "Test GPU"},
        workload={"op": "sigmoid"},
        launches=[
            Launch("cupy:sigmoid", 0, attributes={"phase": "timed"}),
            Launch(
                "sigmoid_kernel",
                1,
                attributes={"phase": "profiled"},
                metrics=[
                    Metric(pct.format("short_scoreboard"), 30.0, "%"),
                    Metric(pct.format("long_scoreboard"), 10.0, "%"),
                ],
            ),
        ],
    )
    seen = {}
    monkeypatch.setattr("gpuprof.measure.measure", lambda settings: seen.setdefault("settings", settings) and run)
    result = _invoke("--op", "sigmoid", "--size", "6MB")
    assert result.exit_code == 0, result.output
    assert (seen["settings"].op, seen["settings"].size, seen["settings"].device) == ("sigmoid", "6MB", "cuda")
    assert "Short scoreboard stalls dominate (75.0% of stall cycles)" in result.stdout
    assert "special-function unit" in result.stdout


@pytest.mark.skipif(not NO_PMU, reason="this machine exposes a CPU PMU")
def test_live_cpu_without_pmu_says_so_in_one_line() -> None:
    result = _invoke("--op", "dot", "--size", "6MB", "--device", "cpu")
    assert result.exit_code == 4
    (line,) = result.stderr.strip().splitlines()
    assert "CPU Top-Down needs hardware counters" in line


def test_live_cpu_with_counters_runs_perf_topdown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a PMU, perf stat -M TopdownL1 wraps `gpuprof run`; a stand-in perf replays a recorded output."""
    from gpuprof.launch import perf, topdown

    fake = tmp_path / "perf"
    log = tmp_path / "argv.txt"
    fake.write_text(f"""#!/bin/sh
printf '%s\\n' "$@" > {log}
while [ "$1" != "-o" ]; do shift; done
cp {TOPDOWN_2B} "$2"
""")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(perf, "probe", lambda events, perf="perf": perf_probe(str(fake), events))
    monkeypatch.setattr("gpuprof.devices.cpu.describe", lambda: {"vendor": "GenuineIntel"})
    run = topdown.record_topdown("dot", "6MB")
    argv = log.read_text().split("\n")
    assert argv[:4] == ["stat", "-M", "TopdownL1", "-o"]
    assert argv[argv.index("--") + 2 : argv.index("--") + 8] == ["-m", "gpuprof", "run", "--op", "dot", "--size"]
    assert run.launches[0].value("tma_backend_bound") == 53.4
    assert run.launches[0].kernel == "gpuprof run --op dot --size 6MB --device cpu"
    assert any("whole 'gpuprof run' process" in n for n in run.notes)


def perf_probe(path: str, events: tuple[str, ...]):
    from gpuprof.launch.perf import PerfProbe

    return PerfProbe(path, "perf version 6.1", usable=events)


def test_files_and_op_together_are_refused() -> None:
    result = _invoke(str(K40C), "--op", "dot", "--size", "6MB")
    assert result.exit_code == 2 and "not both" in result.stderr


def test_help_lists_command() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert "stalls" in result.stdout


@pytest.mark.slow  # reads a real .ncu-rep in a child process: 2-4 s
def test_ncu_rep_ranked_table_and_wait_hot_spot() -> None:
    pytest.importorskip("ncu_report")
    rep = OUT / "ncu_report_binary_2020_win_montecarlo_pi.ncu-rep"
    result = _invoke(str(rep), "--kernel", "computeValue", "--reason", "wait", "--top", "1")
    assert result.exit_code == 0, result.output
    flat = " ".join(result.stdout.split())
    assert "Warp stall reasons (measured), GeForce RTX 3080: void computeValue<float>" in flat
    first_rank = next(line for line in result.stdout.splitlines() if line.startswith("   1"))
    assert first_rank.split()[1] == "wait"
    spot = next(line for line in result.stdout.splitlines() if "BSYNC B0" in line)
    assert spot.split()[-1] == "427" and "Source hot spots (PC sampling, SASS, measured)" in result.stdout
    assert "Wait stalls dominate" in " ".join(result.stdout.split())


def test_an_unknown_stall_reason_is_an_error_listing_the_known_ones():
    from click.testing import CliRunner
    from fixture_paths import K40C

    from gpuprof.cli import main

    result = CliRunner().invoke(main, ["stalls", str(K40C), "--reason", "foo"])
    assert result.exit_code == 2
    [line] = result.output.strip().splitlines()
    assert line.startswith("error: unknown stall reason 'foo'. choose one of: barrier, branch_resolving, ")
    assert "long_scoreboard" in line and "wait" in line
