"""The study's C reference (tests/c/matmul.c), compiled with cc and run under gpuprof profile."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuprof.cli import main
from gpuprof.store import open_store

SOURCE = Path(__file__).parent / "c" / "matmul.c"


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc) on this machine")
def test_profile_the_c_matmul(tmp_path, monkeypatch):
    binary = tmp_path / "matmul"
    subprocess.run(["cc", "-O2", "-o", str(binary), str(SOURCE)], check=True, timeout=120)
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "s.db"
    result = CliRunner().invoke(main, ["profile", "--store", str(store), "--", "./matmul", "128"])
    assert result.exit_code == 0, result.output
    with open_store(store) as opened:
        run = opened.runs()[-1]
    assert run.device["kind"] == "cpu"
    stdout = next(tmp_path.glob("reports/*/stdout.txt")).read_text()
    assert stdout.strip() == f"n=128 sum={2 * 128**3}"  # 2n³: every C[i][j] is 2n
