"""gpuprof against NVIDIA's real Nsight Compute and Nsight Systems CLIs, without a GPU.

ncu lists any chip's metrics (``--chips``), parses its options, and imports ``.ncu-rep`` files with no
GPU; nsys reads ``.nsys-rep`` files. CI unpacks Debian's ncu 2024.1.1 and nsys 2023.4.4
(``.ci/nvidia-tools.sh``); these tests skip with the reason where they are absent. Found through
``$GPUPROF_TEST_NCU`` / ``$GPUPROF_TEST_NSYS``, else the folder that script unpacks into
(``$GPUPROF_NVIDIA_TOOLS``, default ``/opt/nvidia-debian``), else gpuprof's own discovery.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import math
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuprof import readers
from gpuprof.cli import main
from gpuprof.errors import FormatError
from gpuprof.launch import discovery, ncu, ncu_metrics
from gpuprof.launch.profilers import (
    CACHE_CONTROLS,
    CLOCK_CONTROLS,
    REPLAY_MODES,
    ProfileOptions,
)
from gpuprof.model import catalog, units
from gpuprof.readers import ncu_rep

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "profiler-outputs"
_UNPACKED = {
    "ncu": "usr/lib/x86_64-linux-gnu/nsight-compute/target/linux-desktop-glibc_2_11_3-x64/ncu",
    "nsys": "usr/lib/x86_64-linux-gnu/nsight-systems/target-linux-x64/nsys",
}
# The chips gpuprof ships lists for (ncu 2024.1.1 knows no Blackwell chip: gb100/gb202 are absent).
CHIPS = {"gv100": (7, 0), "tu102": (7, 5), "ga100": (8, 0), "ga102": (8, 6), "ad102": (8, 9), "gh100": (9, 0)}
_FULL_NAME = re.compile(r"^([a-z][a-z0-9]*__[a-z0-9_.]+)\s", re.MULTILINE)
# What ncu prints when its own option parsing refuses an argv (before any GPU is looked for).
_REFUSED = re.compile(r"unrecognised option|is invalid|Use --help|ambiguous|requires an argument", re.IGNORECASE)


def tool(name: str) -> str:
    """The real ``name`` CLI, or a skip naming where it was looked for."""
    env = f"GPUPROF_TEST_{name.upper()}"
    unpacked = Path(os.environ.get("GPUPROF_NVIDIA_TOOLS", "/opt/nvidia-debian")) / _UNPACKED[name]
    for candidate in (os.environ.get(env), str(unpacked)):
        if candidate and discovery.executable(Path(candidate)):
            return candidate
    found = discovery.locate(name)
    if found:
        return found.path
    pytest.skip(
        f"NVIDIA's {name} not found (${env}, {unpacked}, {discovery.searched(name)}); "
        "run .ci/nvidia-tools.sh to unpack it"
    )


@pytest.fixture(scope="module")
def ncu_exe() -> str:
    return tool("ncu")


def _run(argv: list[str], cwd: Path, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd, check=False)


def full_names(exe: str, chip: str, bases: set[str], cwd: Path) -> set[str]:
    """Every full metric name (base + .sum/.avg/.per_second/... suffixes) ncu offers for ``bases`` on ``chip``."""
    done = _run([exe, "--query-metrics-mode", "suffix", "--metrics", ",".join(sorted(bases)), "--chips", chip], cwd)
    assert done.returncode == 0, done.stdout + done.stderr
    return set(_FULL_NAME.findall(done.stdout))


def _generator():
    spec = importlib.util.spec_from_file_location("ncu_chip_metrics", ROOT / "tools" / "ncu_chip_metrics.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- metric names -----------------------------------------------------------------------------


@pytest.mark.slow  # the real ncu lists each chip's metrics: 2-5 s
@pytest.mark.parametrize("chip", sorted(CHIPS))
def test_every_metric_gpuprof_requests_exists_on_the_chip(chip, ncu_exe, tmp_path):
    """For each chip, what gpuprof would put in --metrics (the whole catalog, i.e. gpuprof run, and each
    gpuprof profile --set) is a full name ncu offers, and what it leaves out is truly absent."""
    requested, missing = ncu.to_collect(ncu_exe, None, CHIPS[chip])
    assert len(requested) > 50 and missing  # every chip lacks some other chip's tensor spellings
    assert f"--chips {chip}" in ncu_metrics.query(ncu_exe, CHIPS[chip]).source
    offered = full_names(ncu_exe, chip, {ncu.base_name(name) for name in requested}, tmp_path)
    assert sorted(set(requested) - offered) == []
    absent = {ncu.base_name(name) for name in missing}
    done = _run([ncu_exe, "--query-metrics", "--chips", chip], tmp_path)
    assert absent.isdisjoint(re.findall(ncu_metrics.LISTED, done.stdout, re.MULTILINE))
    for name, metric_set in catalog.metric_sets().items():
        chosen, _ = ncu.to_collect(ncu_exe, metric_set.ncu, CHIPS[chip])
        assert chosen and set(chosen) <= offered, name


def test_a_misspelt_suffix_is_caught(ncu_exe, tmp_path):
    """The check above can fail: a name with a suffix ncu lacks is not among the full names."""
    offered = full_names(ncu_exe, "gh100", {"gpu__time_duration"}, tmp_path)
    assert "gpu__time_duration.sum" in offered
    assert "gpu__time_duration.total" not in offered


@pytest.mark.parametrize("chip", sorted(CHIPS))
def test_the_shipped_list_is_what_the_generator_writes_now(chip, ncu_exe):
    generator = _generator()
    shipped = (ncu_metrics.SHIPPED / f"{chip}.txt").read_text()
    assert shipped == generator.listing(ncu_exe, chip)
    assert f"From Nsight Compute {generator.version(ncu_exe)}: ncu --query-metrics --chips {chip}" in shipped
    names = ncu_metrics.shipped(chip)
    assert names == {ncu.base_name(n) for n in ncu.to_collect(ncu_exe, None, CHIPS[chip])[0]}


def test_the_shipped_list_answers_when_ncu_lists_nothing(tmp_path, monkeypatch):
    """The last fallback of gpuprof.launch.ncu_metrics: an ncu that prints nothing, on an H100."""
    silent = tmp_path / "ncu"
    silent.write_text("#!/bin/sh\nexit 1\n")
    silent.chmod(0o755)
    found = ncu_metrics.query(str(silent), (9, 0))
    assert found.source.startswith("gpuprof's shipped list for gh100")
    assert "dram__bytes_read" in found.names and "sm__inst_executed_pipe_tensor_op_hmma" not in found.names
    assert len(found.names) == len((ncu_metrics.SHIPPED / "gh100.txt").read_text().splitlines()) - 4


def test_chips_this_ncu_does_not_know_are_reported(ncu_exe, capsys, tmp_path):
    generator = _generator()
    assert generator.main(["gb100", "--ncu", ncu_exe, "--out", str(tmp_path)]) == 0
    known = generator.known_chips(ncu_exe)
    if "gb100" in known:
        assert (tmp_path / "gb100.txt").is_file()
    else:
        assert "gb100: not known to ncu" in capsys.readouterr().out and not list(tmp_path.iterdir())


# --- argv ---------------------------------------------------------------------------------------


def refusal(exe: str, argv: list[str], cwd: Path) -> str | None:
    """ncu's own complaint about ``argv`` (its option parsing, no GPU needed), or None when it accepts
    it: the program is replaced by /bin/true, so an accepted argv ends with 'No kernels were profiled'."""
    done = _run([exe, *argv, "/bin/true"], cwd)
    text = done.stdout + done.stderr
    if _REFUSED.search(text):
        return text.strip()
    assert "No kernels were profiled" in text or "failed to connect to the CUDA driver" in text, text
    return None


def _argvs(exe: str, run_dir: Path) -> dict[str, list[str]]:
    """Every ncu argv gpuprof builds, the workload child left out (it follows them); ``run_dir`` is
    created, as gpuprof run and profile do before starting ncu."""
    run_dir.mkdir(exist_ok=True)
    child = ["CHILD"]
    made = {}
    for clock in CLOCK_CONTROLS:
        for cache in CACHE_CONTROLS:
            for replay in REPLAY_MODES:
                options = ProfileOptions(
                    "gpuprof:dot:256x256x256:float32", clock, cache, replay, cc=(9, 0), nvtx_start_end=True
                )
                made[f"run {clock} {cache} {replay}"] = ncu.command(exe, child, run_dir, options)
    for name, metric_set in catalog.metric_sets().items():
        options = ProfileOptions(
            "user range",
            "none",
            metrics=metric_set.ncu,
            kernel="gemm|dot",
            launch_skip=2,
            launch_count=3,
            target_processes="all",
            cc=(8, 0),
        )
        made[f"profile --set {name}"] = ncu.command(exe, child, run_dir, options)
    made["profile, no filters"] = ncu.command(
        exe, child, run_dir, ProfileOptions(None, "base", metrics=("kernel_duration",))
    )
    return {label: argv[1 : argv.index("CHILD")] for label, argv in made.items()}


@pytest.mark.slow  # the real ncu parses every argv: 2-5 s
def test_every_ncu_argv_gpuprof_builds_is_accepted_by_ncu(ncu_exe, tmp_path):
    argvs = _argvs(ncu_exe, tmp_path / "run")
    assert len(argvs) >= 8 + len(catalog.metric_sets())
    with ThreadPoolExecutor(4) as pool:  # each ncu start takes about a second, spent waiting
        answers = dict(zip(argvs, pool.map(lambda argv: refusal(ncu_exe, argv, tmp_path), argvs.values())))
    assert {label: why for label, why in answers.items() if why} == {}
    assert not (tmp_path / "run" / "report.ncu-rep").exists()  # no kernel: nothing exported


@pytest.mark.parametrize("wrong", [["--no-such-option"], ["--clock-control", "sometimes"], ["--replay-mode"]])
def test_the_argv_check_catches_what_ncu_refuses(wrong, ncu_exe, tmp_path):
    argv = _argvs(ncu_exe, tmp_path / "run")["run base all kernel"]
    assert refusal(ncu_exe, [*argv, *wrong], tmp_path) is not None


# --- .ncu-rep -----------------------------------------------------------------------------------


def _raw_page(exe: str, report: Path, cwd: Path) -> list[dict[str, tuple[str, str]]]:
    """ncu --import REPORT --csv --page raw --print-units base: per launch, metric -> (unit, value)."""
    done = _run([exe, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"], cwd)
    assert done.returncode == 0, done.stderr
    header, unit_row, *rows = list(csv.reader(io.StringIO(done.stdout)))
    return [{name: (unit, value) for name, unit, value in zip(header, unit_row, row)} for row in rows]


def test_ncu_rep_values_equal_ncu_import_raw_page(ncu_exe, tmp_path):
    """Every metric gpuprof reads from a real .ncu-rep (ncu 2020.x, RTX 3080) equals the value ncu 2024.1.1
    prints for it, launch by launch, in gpuprof's base unit (ncu prints at most two decimals)."""
    pytest.importorskip("ncu_report", reason="the ncu extra (ncu_report) reads .ncu-rep")
    report = FIXTURES / "ncu_report_binary_2020_win_montecarlo_pi.ncu-rep"
    page = _raw_page(ncu_exe, report, tmp_path)
    run = ncu_rep.read(report)
    table = run.metric_table
    assert len(page) == len(run.launches) == 2
    checked = 0
    for index, launch in enumerate(page):
        assert run.launch_table.kernel[index] == launch["Kernel Name"][1]
        # the grid in blocks, as launch__grid_size says; ncu 2024.1.1's "Grid Size" column prints this
        # 2020 report's grid in threads ((156160, 1, 1) = 1220 blocks x 128), so it is not the reference
        assert run.launch_table.attributes[index]["grid"] == f"({launch['launch__grid_size'][1]}, 1, 1)"
        rows = table[table.launch == index]
        assert set(rows.metric) <= set(launch)
        for row in rows.itertuples():
            unit, text = launch[row.metric]
            if isinstance(row.text, str) and row.text:
                assert row.text == text, row.metric
                continue
            value, base = units.to_base(float(text.replace(",", "")), unit) if text else (math.nan, unit)
            if math.isnan(row.value):
                assert math.isnan(value), row.metric
                continue
            assert row.value == pytest.approx(value, rel=1e-6, abs=0.006 * units.to_base(1, unit)[0]), row.metric
            if row.unit:
                assert row.unit == base, row.metric
            checked += 1
    assert checked > 1000


# --- .nsys-rep ----------------------------------------------------------------------------------

QDREP = FIXTURES / "nsys_report_binary_2020_cupy_quadro_rtx8000.qdrep"
NEWER = FIXTURES / "nsys_report_binary_gemm3.nsys-rep"


@pytest.fixture
def nsys_on_path(monkeypatch) -> str:
    exe = tool("nsys")
    monkeypatch.setenv("PATH", f"{Path(exe).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    return exe


def test_nsys_rep_kernels_equal_nsys_stats(nsys_on_path, tmp_path):
    """A real 2020 .qdrep read through nsys export: per kernel name, the launches, total, min and max
    duration equal NVIDIA's own cuda_gpu_kern_sum report of the same file; nothing is written beside it."""
    report = tmp_path / "user" / "cupy.qdrep"
    report.parent.mkdir()
    report.write_bytes(QDREP.read_bytes())
    run = readers.read(report)
    assert run.format == "nsys-rep" and run.source == str(report) and run.device["name"] == "Quadro RTX 8000"
    assert sorted(p.name for p in report.parent.iterdir()) == ["cupy.qdrep"]
    copy = tmp_path / "copy.nsys-rep"
    copy.write_bytes(QDREP.read_bytes())
    done = _run(
        [nsys_on_path, "stats", "--report", "cuda_gpu_kern_sum", "--format", "csv", "--output", "-", str(copy)],
        tmp_path,
    )
    lines = done.stdout.splitlines()
    rows = list(csv.DictReader(lines[next(i for i, line in enumerate(lines) if line.startswith("Time")) :]))
    kernels = [launch for launch in run.launches if launch.attributes["kind"] == "kernel"]
    assert len(kernels) == sum(int(row["Instances"]) for row in rows) == 15
    for row in rows:
        mine = [launch.metric("kernel_duration").value for launch in kernels if launch.kernel == row["Name"]]
        assert len(mine) == int(row["Instances"]), row["Name"]
        assert sum(mine) == pytest.approx(float(row["Total Time (ns)"]) * 1e-9, rel=1e-12), row["Name"]
        assert min(mine) == pytest.approx(float(row["Min (ns)"]) * 1e-9, rel=1e-12)
        assert max(mine) == pytest.approx(float(row["Max (ns)"]) * 1e-9, rel=1e-12)


def test_a_report_newer_than_nsys_is_one_clear_error(nsys_on_path, tmp_path):
    report = tmp_path / "gemm3.nsys-rep"
    report.write_bytes(NEWER.read_bytes())
    version = _run([nsys_on_path, "--version"], tmp_path).stdout
    if "2023." not in version:
        pytest.skip(f"this nsys ({version.strip()}) may read an nsys 2026.1 report")
    with pytest.raises(FormatError) as error:
        readers.read(report)
    assert "newer than your current version" in str(error.value)
    assert "use the nsys that wrote it (or newer)" in error.value.fix
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gemm3.nsys-rep"]


# --- doctor -------------------------------------------------------------------------------------


def test_doctor_reports_the_real_tools_and_where(ncu_exe, monkeypatch):
    nsys = tool("nsys")
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(ncu_exe).parent), str(Path(nsys).parent), "/usr/bin", "/bin"]))
    result = CliRunner().invoke(main, ["doctor", "--format", "json"])
    checks = {check["name"]: check for check in json.loads(result.stdout)}
    assert checks["ncu"]["status"] == "ok" and checks["nsys"]["status"] == "ok"
    assert f"{ncu_exe} (found by PATH), version " in checks["ncu"]["found"]
    assert f"{nsys} (found by PATH), version " in checks["nsys"]["found"]
