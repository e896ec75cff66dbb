"""The NVTX range path of an ncu CSV launch (issue 28, item 18): a column named 'NVTX' (as profiling
scripts that validate ncu CSVs captured with --nvtx expect it; no public ncu CSV with the column was
found, SOURCES.md) becomes the launch's nvtx attribute, and ``import --nvtx-include`` filters by it.
The file is the real A100 details CSV with that column added."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from click.testing import CliRunner
from fixture_paths import A100

from gpuprof.cli import main
from gpuprof.readers import read

RANGES = {"0": "setup/randomInit", "1": "setup/randomInit", "2": "train/step:1/gemm"}


def with_nvtx(tmp_path: Path) -> Path:
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for row in csv.reader(io.StringIO(A100.read_text())):
        writer.writerow([*row[:7], "NVTX" if row[0] == "ID" else RANGES[row[0]], *row[7:]])
    path = tmp_path / "a100-nvtx.csv"
    path.write_text(out.getvalue())
    return path


def test_the_nvtx_column_is_each_launchs_range_path_not_a_metric(tmp_path: Path) -> None:
    run = read(with_nvtx(tmp_path))
    assert [launch.attributes["nvtx"] for launch in run.launches] == list(RANGES.values())
    assert all(metric.name != "NVTX" for launch in run.launches for metric in launch.metrics)
    plain = read(A100)
    assert [len(launch.metrics) for launch in run.launches] == [len(launch.metrics) for launch in plain.launches]


def test_nvtx_include_keeps_the_launches_inside_the_range(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    result = CliRunner().invoke(
        main,
        ["import", "--store", str(store), str(with_nvtx(tmp_path)), "--nvtx-include", "train/*", "--format", "json"],
    )
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    assert (row["kernel"], row["launches"]) == ("void gemm_v1<float>(float *, float *, float *, int, int, int)", 1)
    assert "--nvtx-include train/*: kept 1 of 3 launches" in result.output
