"""Small things a new user meets in the first hour: wording, hints that work, options that say
when they do nothing, shell completion."""

from __future__ import annotations

import csv
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuprof.cli import main
from gpuprof.store import open_store

ROOT = Path(__file__).parent.parent


def _run(*args: str, store: Path) -> object:
    return CliRunner().invoke(main, ["run", *args, "--store", str(store)])


def test_one_repeat_has_no_spread(tmp_path):
    result = _run(
        "--op",
        "add",
        "--shape",
        "64x64",
        "--device",
        "cpu",
        "--repeat",
        "1",
        "--no-counters",
        "--format",
        "csv",
        store=tmp_path / "s.sqlite",
    )
    assert result.exit_code == 0, result.output
    spread = next(q for q in csv.DictReader(io.StringIO(result.stdout)) if q["quantity"] == "time spread")
    assert spread["value"] == ""
    assert spread["basis"] == "n/a: one repeat has no spread (give --repeat 4 or more)"


def test_a_gpu_engine_without_a_gpu_suggests_an_engine_that_works(tmp_path):
    from gpuprof.launch.gpu_session import probe_gpu

    if probe_gpu()[0]:
        pytest.skip("this machine has a usable GPU")
    result = _run("--op", "add", "--size", "1MB", "--engine", "cupy", store=tmp_path / "s.sqlite")
    assert result.exit_code == 5
    assert result.output.rstrip().endswith(
        "engine cupy needs a GPU; measure on the CPU with --engine numpy (or pytensor)"
    )
    follow = _run(
        "--op",
        "add",
        "--size",
        "1MB",
        "--engine",
        "numpy",
        "--repeat",
        "2",
        "--no-counters",
        store=tmp_path / "s.sqlite",
    )
    assert follow.exit_code == 0, follow.output  # the suggestion works


def test_gpu_profiler_options_on_the_cpu_are_refused_or_noted(tmp_path):
    refused = _run("--op", "add", "--size", "1MB", "--device", "cpu", "--profiler", "ncu", store=tmp_path / "s.sqlite")
    assert refused.exit_code == 2
    assert refused.output.strip().splitlines() == [
        "error: --profiler ncu applies to GPU runs only, and --device cpu measures on the CPU. drop them (on the "
        "CPU gpuprof counts with perf: --counters), or use --device cuda"
    ]
    from gpuprof.launch.gpu_session import probe_gpu

    if probe_gpu()[0]:
        return
    noted = _run(
        "--op",
        "add",
        "--size",
        "1MB",
        "--profiler",
        "ncu",
        "--replay-mode",
        "application",
        "--repeat",
        "2",
        "--no-counters",
        store=tmp_path / "s.sqlite",
    )
    assert noted.exit_code == 0, noted.output
    assert "--profiler ncu, --replay-mode application ignored: no GPU was used, so no GPU profiler ran" in " ".join(
        noted.output.split()
    )


@pytest.mark.parametrize("command", [["show"], ["compare"], ["run", "--op", "add", "--size", "1MB"]])
def test_format_html_points_to_the_html_option(command):
    result = CliRunner().invoke(main, [*command, "--format", "html"])
    assert result.exit_code == 2
    assert "'html' is not a --format: HTML reports are written by 'gpuprof compare --html FILE'" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_roofline_passes_over_calibration_runs_silently(tmp_path):
    from test_compare import measured

    from gpuprof.calibrate import CalibrationPlan, calibrate

    store = tmp_path / "s.sqlite"
    with open_store(store) as opened:
        opened.add(calibrate(steps=CalibrationPlan(64, 4096, 0, 1)))
        opened.add(measured("add", [1000, 1000], [2e-3]))
    result = CliRunner().invoke(main, ["roofline", "--store", str(store), "--out", str(tmp_path / "charts")])
    assert result.exit_code == 0, result.output
    assert "skipped" not in result.stderr and "cpu-calibrate" not in result.stderr


def test_readme_shows_how_to_enable_shell_completion_and_it_works():
    readme = (ROOT / "README.md").read_text()
    line = re.search(r'eval "\$\((_GPUPROF_COMPLETE=bash_source gpuprof)\)"', readme)
    assert line, "README: no bash completion line"
    exe = Path(sys.executable).parent / "gpuprof"
    script = subprocess.run(
        [str(exe)], env={**os.environ, "_GPUPROF_COMPLETE": "bash_source"}, capture_output=True, text=True, timeout=60
    )
    assert "complete -o nosort -F _gpuprof_completion gpuprof" in script.stdout
    answer = subprocess.run(
        [str(exe)],
        env={**os.environ, "_GPUPROF_COMPLETE": "bash_complete", "COMP_WORDS": "gpuprof run --op d", "COMP_CWORD": "3"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert answer.stdout.split() == ["plain,dot"]
