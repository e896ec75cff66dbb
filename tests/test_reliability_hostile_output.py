"""Names from hostile files reach the terminal with their control characters written out (issue 34,
item 5), and CSV formula neutralisation reads cells as a spreadsheet does (item 6)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from fixture_paths import K40C
from terminal_pty import in_terminal

from gpuprof.render.text import _csv_safe

ROOT = Path(__file__).resolve().parent.parent
FORMA = "__kernel___forma_kernel__0__(float*, int, int, int, int, int, int, float*)"
# A window-title set, a clipboard write (OSC 52), a screen clear and a right-to-left override.
HOSTILE = "evil\x1b]0;pwned\x07\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\u202eexe.txt"
GPUPROF = [sys.executable, "-m", "gpuprof"]


@pytest.fixture
def hostile_profile(tmp_path: Path) -> Path:
    path = tmp_path / "hostile\x1b[31m.csv"
    path.write_text(K40C.read_text().replace(FORMA, HOSTILE))
    return path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*GPUPROF, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.DEVNULL,
    )


def _clean(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text, repr(text[:3000])


@pytest.mark.slow  # every reading command in a child process: 8-20 s
def test_import_show_diff_compare_write_escape_sequences_out(tmp_path: Path, hostile_profile: Path) -> None:
    """Failed before: the kernel and file names reached stdout and stderr with their ESC bytes."""
    store = str(tmp_path / "s.sqlite")
    outputs = [
        _run("import", str(hostile_profile), "--store", store),
        _run("show", "--store", store),
        _run("diff", str(hostile_profile), str(K40C), "--store", store),
        _run("compare", "--import", str(hostile_profile), "--store", store),
        _run("import", str(hostile_profile), "--store", store, "--format", "markdown"),
    ]
    for result in outputs:
        assert "Traceback" not in result.stderr, result.stderr[-2000:]
        _clean(result.stdout + result.stderr)
    assert "evil\\x1b]0;pwned\\x07" in outputs[0].stdout and "\\u202eexe.txt" in outputs[0].stdout
    assert "hostile\\x1b[31m.csv" in outputs[0].stderr


def test_csv_to_a_terminal_writes_escapes_out_and_piped_csv_stays_whole(
    tmp_path: Path, hostile_profile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = str(tmp_path / "s.sqlite")
    argv = [*GPUPROF, "import", str(hostile_profile), "--store", store, "--format", "csv"]
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    shown, _ = in_terminal(argv, 200)
    _clean(shown)
    assert "evil\\x1b]0;pwned" in shown
    _, piped = in_terminal(argv, 200, stdout_too=False)
    assert "evil\x1b]0;pwned\x07" in piped  # data for a program keeps the name as the reader read it


@pytest.mark.parametrize(
    "cell",
    [
        "=1+1",
        " =1+1",
        "\t=1+1",
        "  +cmd|' /C calc'!A0",
        '\u3000=HYPERLINK("x")',
        "＝1+1",
        " ＋1",
        "－1",
        "＠SUM(A1)",
        "\n=1",
    ],
)
def test_formula_neutralisation_reads_the_cell_as_a_spreadsheet_does(cell: str) -> None:
    """Failed before for leading blanks and full-width signs."""
    assert _csv_safe(cell) == "'" + cell


@pytest.mark.parametrize("cell", ["sgemm", "1=1", "a-b", "", " kernel"])
def test_ordinary_text_is_left_alone(cell: str) -> None:
    assert _csv_safe(cell) == cell
    frame = pd.DataFrame({"name": [cell], "value": [-5.0]})
    from gpuprof.render.text import csv

    assert csv(frame).splitlines()[1] == f'"{cell}",-5.0'
