"""``gpuprof profile -- python3 …`` runs the user's python3, under every profiler back-end.

perf puts its own folders first on the PATH of the command it starts (``PERF_EXEC_PATH``, else its
install's perf-core folder), and a profiler that does the same would run the system's ``python3``
instead of the one of the user's virtual environment. gpuprof finds the program on the user's PATH
and passes its absolute path. Each test makes a real virtual environment and puts, in the
profiler's own folder, a ``python3`` that is not it; the command writes which interpreter ran it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakes.environment import FIXTURES, search_path, stand_in_gpu, use_stand_ins

from gpuprof.cli import main
from gpuprof.devices import gpu_detect

SCRIPT = "import sys; open(sys.argv[1], 'w').write(sys.prefix)"


@pytest.fixture
def venv_and_decoy(tmp_path) -> tuple[Path, Path]:
    """A real virtual environment (no pip), and a folder holding a ``python3`` that is not it."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    decoy = tmp_path / "profiler-own"
    decoy.mkdir()
    (decoy / "python3").write_text("#!/bin/sh\necho 'the wrong python3' > \"$3\"\n")
    (decoy / "python3").chmod(0o755)
    return venv, decoy


def _profile(tmp_path: Path, *options: str) -> tuple[str, str]:
    ran = tmp_path / "ran.txt"
    result = CliRunner().invoke(
        main, ["profile", *options, "--store", str(tmp_path / "s.sqlite"), "--", "python3", "-c", SCRIPT, str(ran)]
    )
    assert result.exit_code == 0, result.output
    return ran.read_text(), result.output


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
def test_perf_runs_the_virtual_environments_python(tmp_path, venv_and_decoy, monkeypatch):
    venv, decoy = venv_and_decoy
    perf_dir = Path(shutil.which("perf")).parent
    monkeypatch.setenv("PATH", os.pathsep.join([str(venv / "bin"), str(perf_dir), "/usr/bin", "/bin"]))
    monkeypatch.setenv("PERF_EXEC_PATH", str(decoy))  # perf puts this first on the command's PATH
    monkeypatch.chdir(tmp_path)
    ran, output = _profile(tmp_path, "--device", "cpu")
    assert ran == str(venv), output
    assert f"running: {shutil.which('perf')} stat" in output and f"-- {venv}/bin/python3 -c" in output


@pytest.mark.parametrize(
    ("gpu", "cc", "log"),
    [
        ("NVIDIA B200", "10.0", "ncu_csv_raw_page_b200_flashattn.csv"),
        ("Tesla K40c", "3.5", "nvprof_csv_metrics_k40c_flop_stall.csv"),
    ],
    ids=["ncu", "nvprof"],
)
def test_stand_in_gpu_profilers_run_the_virtual_environments_python(
    tmp_path, venv_and_decoy, monkeypatch, gpu, cc, log
):
    venv, decoy = venv_and_decoy
    use_stand_ins(tmp_path, monkeypatch)
    monkeypatch.setenv("PATH", os.pathsep.join([str(venv / "bin"), search_path(Path(__file__).parent / "fakes")]))
    monkeypatch.setenv("GPUPROF_FAKE_RUN", "1")
    monkeypatch.setenv("GPUPROF_FAKE_LOG", str(FIXTURES / log))
    monkeypatch.setenv("GPUPROF_FAKE_LOGS", str(FIXTURES / log))  # nvprof: one log per process
    monkeypatch.setenv("GPUPROF_FAKE_OWN_PATH", str(decoy))
    monkeypatch.setattr(gpu_detect, "detect", lambda: [stand_in_gpu(gpu, cc, "580.65")])
    monkeypatch.chdir(tmp_path)
    ran, output = _profile(tmp_path)
    assert ran == str(venv), output
