"""Output for terminals: tables fit the width ($COLUMNS, else the terminal's), --wide keeps every
row on one line, csv/json stay whole."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_paths import FIXTURES, K40C
from terminal_pty import in_terminal
from test_compare import measured

from gpuprof.cli import main
from gpuprof.store import open_store

NCU_REP = FIXTURES / "ncu_report_binary_2020_win_montecarlo_pi.ncu-rep"


@pytest.fixture
def store(tmp_path):
    """A store like one after 'gpuprof calibrate' and a run: two ceilings, long bases."""
    path = tmp_path / "s.sqlite"
    with open_store(path) as opened:
        opened.add(measured("add", [1000, 1000], [2e-3]))
        opened.add(measured("dot", [500, 500, 500], [1e-2]))
    return path


def _commands(store: Path, tmp_path: Path) -> dict[str, list[str]]:
    run_id = CliRunner().invoke(main, ["show", "--store", str(store), "--format", "json"])
    first = json.loads(run_id.stdout)[0]["run"]
    return {
        "show RUN": ["show", first, "--store", str(store)],
        "show": ["show", "--store", str(store)],
        "compare --reference paper": ["compare", "--store", str(store), "--reference", "paper"],
        "import": ["import", str(K40C), str(NCU_REP), "--store", str(tmp_path / "i.sqlite")],
        "stalls": ["stalls", str(K40C), str(NCU_REP)],
        "peaks": ["peaks"],
        "devices": ["devices"],
    }


@pytest.mark.parametrize(
    "name", ["show RUN", "show", "compare --reference paper", "import", "stalls", "peaks", "devices"]
)
@pytest.mark.parametrize("columns", [80, 100])
def test_tables_fit_the_width(store, tmp_path, monkeypatch, name, columns):
    pytest.importorskip("ncu_report") if name in ("import", "stalls") else None
    monkeypatch.setenv("COLUMNS", str(columns))
    result = CliRunner().invoke(main, _commands(store, tmp_path)[name])
    assert result.exit_code == 0, result.output
    too_wide = [line for line in result.stdout.splitlines() if len(line) > columns and " " in line.strip()]
    assert too_wide == []  # a single word longer than the width (a URL) may stand alone
    assert max(map(len, result.stdout.splitlines())) > columns * 0.7  # the width is used, not wasted


def test_wide_puts_every_row_on_one_line(store, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    wide = (
        CliRunner()
        .invoke(main, ["compare", "--store", str(store), "--reference", "paper", "--op", "add", "--wide"])
        .stdout
    )
    assert max(map(len, wide.splitlines())) > 200 and "[1]" not in wide
    rows = [line for line in wide.splitlines() if line.split()[:1] in (["6"], ["12"], ["24"], ["48"], ["96"])]
    assert len(rows) == 5  # add at five sizes, each one line with every device


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_csv_and_json_stay_whole_at_any_width(store, monkeypatch, fmt):
    outputs = []
    for columns in ("30", "400"):
        monkeypatch.setenv("COLUMNS", columns)
        outputs.append(CliRunner().invoke(main, ["compare", "--store", str(store), "--format", fmt]).stdout)
    assert outputs[0] == outputs[1]
    rows = json.loads(outputs[0]) if fmt == "json" else list(csv.DictReader(io.StringIO(outputs[0])))
    assert len(rows) == 2 and rows[0]["MFLOP/s origin"] == "derived: analytic FLOPs / timed median"


def test_a_terminal_of_100_columns_is_filled_without_COLUMNS():
    screen, _ = in_terminal([sys.executable, "-m", "gpuprof", "compare", "--reference", "paper", "--op", "add"], 100)
    lines = [line.rstrip("\r") for line in screen.split("\n")]
    assert 80 < max(map(len, lines)) <= 100


def test_piped_into_a_pager_the_table_fits_the_terminal_of_stderr():
    _, piped = in_terminal(
        [sys.executable, "-m", "gpuprof", "compare", "--reference", "paper", "--op", "add"], 100, stdout_too=False
    )
    assert 80 < max(map(len, piped.splitlines())) <= 100


def test_doctor_fits_the_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    result = CliRunner().invoke(main, ["doctor"])
    assert [line for line in result.stdout.splitlines() if len(line) > 80 and " " in line.strip()] == []


def test_notes_wrap_to_the_terminal_and_stay_whole_when_piped(tmp_path):
    argv = [
        sys.executable,
        "-m",
        "gpuprof",
        "profile",
        "--dry-run",
        "--device",
        "cpu",
        "--store",
        str(tmp_path / "s.sqlite"),
        "--",
        "true",
    ]
    screen, _ = in_terminal(argv, 80, stdout_too=False)
    lines = screen.replace("\r", "").splitlines()
    assert lines and max(map(len, lines)) <= 80, screen
    piped = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stderr
    long_notes = [line for line in piped.splitlines() if len(line) > 80]
    assert long_notes  # the plan has lines wider than 80 columns ...
    on_screen = " ".join(line.strip() for line in lines)
    for line in long_notes:  # ... each shown whole on the terminal, over several lines
        assert " ".join(line.split()) in on_screen
