"""Output for terminals: tables fit the width ($COLUMNS, else the terminal's), --wide keeps every
row on one line, csv/json stay whole."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_paths import FIXTURES, K40C
from terminal_pty import in_terminal
from test_compare import measured
from test_run_progress import TINY_CALIBRATE

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


@pytest.mark.slow  # each case runs a command on a pseudo-terminal: 1-4 s
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
    assert 80 < max(map(len, _screen_lines(screen))) <= 100  # the bar while reading is erased: not counted


@pytest.mark.slow  # a command piped into a pager on a pseudo-terminal: 2-4 s
def test_piped_into_a_pager_the_table_fits_the_terminal_of_stderr():
    _, piped = in_terminal(
        [sys.executable, "-m", "gpuprof", "compare", "--reference", "paper", "--op", "add"], 100, stdout_too=False
    )
    assert 80 < max(map(len, piped.splitlines())) <= 100


def test_doctor_fits_the_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    result = CliRunner().invoke(main, ["doctor"])
    assert [line for line in result.stdout.splitlines() if len(line) > 80 and " " in line.strip()] == []


def _screen_lines(screen: str) -> list[str]:
    """What a person sees, line by line: colours and cursor moves taken out, a redrawn bar split off."""
    # erasing the line (ESC [2K) starts the redraw over it, as a carriage return does
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", re.sub(r"\x1b\[2K", "\r", screen))
    return [line for part in plain.split("\n") for line in part.split("\r") if line.strip()]


def _prose_commands(tmp_path: Path) -> dict[str, list[str]]:
    sweep_config = tmp_path / "t.toml"
    sweep_config.write_text('name = "t"\nrepeat = 1\nwarmup = 0\n[[grid]]\nops = ["add"]\nsizes = ["64KB"]\n')
    store = str(tmp_path / "s.sqlite")
    return {
        "profile's plan": [sys.executable, "-m", "gpuprof", "profile", "--dry-run", "--device", "cpu"]
        + ["--store", store, "--", "true"],
        "calibrate's notes": [sys.executable, "-c", TINY_CALIBRATE, store],
        "each sweep line": [sys.executable, "-m", "gpuprof", "sweep", str(sweep_config), "--device", "cpu"]
        + ["--store", store],
    }


# at 120 columns the two that measure run in the slow set (subprocesses that time calls)
WRAP_CASES = [(80, "profile's plan"), (80, "calibrate's notes"), (80, "each sweep line"), (120, "profile's plan")] + [
    pytest.param(120, what, marks=pytest.mark.slow) for what in ("calibrate's notes", "each sweep line")
]


@pytest.mark.slow  # each case runs a command on a pseudo-terminal and again piped: 3-9 s
@pytest.mark.parametrize(("columns", "what"), WRAP_CASES)
def test_notes_wrap_to_the_terminal_and_stay_whole_when_piped(tmp_path, what, columns):
    # notes, plans and sweep lines ran to 329 columns in an 80-column terminal
    argv = _prose_commands(tmp_path)[what]
    screen, _ = in_terminal(argv, columns, stdout_too=False)
    lines = _screen_lines(screen)
    # a single word (a long temporary path) cannot wrap: only lines with a space in them must fit
    assert lines and [line for line in lines if len(line) > columns and " " in line.strip()] == []
    if columns > 80:
        return  # what a pipe gets does not depend on the terminal's width: checked once, at 80
    (tmp_path / "s.sqlite").unlink(missing_ok=True)  # the sweep stores its point again
    piped = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stderr
    prose = [line for line in piped.splitlines() if line.startswith(("plan:", "note:", "stored "))]
    long_lines = [line for line in prose if len(line) > columns]
    assert long_lines  # some are wider than 80 columns, ...
    numbers = re.compile(r"\S*\d\S*")  # calibrate measures again: its numbers and ids differ, not its words

    def words(text: str) -> str:
        return numbers.sub("#", " ".join(text.split()))

    on_screen = words(" ".join(line.strip() for line in lines))
    for line in long_lines:  # ... each one line when piped, shown whole on the terminal over several lines
        assert words(line) in on_screen


@pytest.mark.parametrize("columns", [80, 120])
def test_diff_says_what_it_compared_and_how_within_the_width(monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    shown = CliRunner().invoke(main, ["diff", str(K40C), str(K40C)]).stdout
    words = [line for line in shown.splitlines() if " " in line.strip()]  # a path alone may be longer
    assert max(map(len, words)) <= columns and max(map(len, words)) > columns * 0.7
    assert "Verdicts per kernel: Mann" in shown  # the statistics paragraph, wrapped, not cut
    assert "the verdict rests on that single measurement." in " ".join(shown.split())
    outputs = []
    for width in ("30", "400"):  # JSON stays whole at any width
        monkeypatch.setenv("COLUMNS", width)
        outputs.append(CliRunner().invoke(main, ["diff", str(K40C), str(K40C), "--format", "json"]).stdout)
    assert outputs[0] == outputs[1] and json.loads(outputs[0])


def test_split_tables_repeat_the_run_id_in_every_panel(store, monkeypatch):
    # each panel repeated the 'kind' column ('run' in every row), so no row of a later panel could be told apart
    monkeypatch.setenv("COLUMNS", "80")
    ids = [
        row["run"]
        for row in json.loads(CliRunner().invoke(main, ["show", "--store", str(store), "--format", "json"]).stdout)
    ]
    shown = CliRunner().invoke(main, ["show", "--store", str(store)]).stdout
    panels = [panel for panel in shown.split("\n\n") if panel.strip()]
    assert len(panels) >= 3 and shown.count("kind") == 1
    for panel in panels:  # each panel's rows start with their run's id (wrapped cells continue indented)
        lines = panel.splitlines()
        rows = lines[next(i for i, line in enumerate(lines) if line.startswith("---")) + 1 :]
        assert [row.split()[0] for row in rows if not row.startswith(" ")] == ids, panel


def test_piped_compare_tells_engines_of_one_device_apart(tmp_path, monkeypatch):
    # cut to their columns, four engines of one CPU were 'AMD EPYC · nump', 'AMD EPYC · pyte' (twice) ...
    path = tmp_path / "s.sqlite"
    with open_store(path) as opened:
        for engine in ("numpy", "pytensor-jax", "pytensor", "pytensor-torch"):
            run = measured("add", [1000, 1000], [2e-3], name="AMD EPYC 7B13 64-Core Processor")
            run.workload["engine"] = engine
            opened.add(run)
    monkeypatch.setenv("COLUMNS", "80")
    shown = CliRunner().invoke(main, ["compare", "--store", str(path), "--op", "add"]).stdout
    lines = shown.splitlines()
    group_lines = [lines[i - 1] for i, line in enumerate(lines) if line.startswith("size (MB)")]  # one per panel
    groups = [label for line in group_lines for label in re.split(r"\s{2,}", line.strip())]
    assert len(groups) == 4 and len(set(groups)) == 4, shown
    for engine, label in zip(("numpy", "pytensor-jax", "pytensor", "pytensor-torch"), groups):
        assert label.endswith(engine) or label.endswith("…"), label  # whole, or cut where the ellipsis says
        assert "…" in label  # a cut name says it was cut
