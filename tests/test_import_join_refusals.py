"""``import --join`` refuses files that cannot be passes over the same launches (issue 28, item 9):
files of different tools, and files naming different GPUs. Real fixtures."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from click.testing import CliRunner
from fixture_paths import A100, B200, FIXTURES, K40C, SRAD

from gpuprof.cli import main

NERSC = sorted(FIXTURES.glob("ncu_csv_v100_nersc_one_metric_per_run_tf_fp16_EXCERPT.*.csv"))


def join(tmp_path: Path, *files: Path):
    store = tmp_path / "s.sqlite"
    return CliRunner().invoke(main, ["import", "--join", "--store", str(store), *map(str, files)]), store


def test_join_refuses_files_of_different_tools(tmp_path: Path) -> None:
    # Before: the A100's kernels were labelled "Tesla K40c".
    result, store = join(tmp_path, K40C, A100)
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "--join needs files of one tool" in result.output
    assert "nvprof_csv_metrics_k40c_flop_stall.csv from nvprof" in result.output
    assert "ncu_csv_details_a100_roofline_printfp.csv from ncu" in result.output
    assert "imported" not in result.output
    if store.exists():  # nothing joined was stored
        with sqlite3.connect(store) as db:
            assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0


def test_join_refuses_files_naming_different_gpus(tmp_path: Path) -> None:
    result, _ = join(tmp_path, K40C, SRAD)  # both nvprof: Tesla K40c and GeForce GTX 1070
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "name different ones (GPU" in result.output and "Tesla K40c" in result.output
    assert "GeForce GTX 1070" in result.output
    result, _ = join(tmp_path, A100, B200)  # both ncu: compute capability 8.0 and 10.0
    assert result.exit_code != 0 and "compute capability" in result.output and "10.0" in result.output


def test_join_of_one_tool_and_one_gpu_still_works(tmp_path: Path) -> None:
    result, _ = join(tmp_path, *NERSC)
    assert result.exit_code == 0, result.output
    assert "imported" in result.output
