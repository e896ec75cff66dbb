"""Issue 28 item 22: numbers of runs whose repeats disagree (time spread above 10 %) carry a marker in
``compare``, in sweep lines and in the HTML report; a point measured several times shows its most
recent run, and ``compare`` says which run that is and by which rule. The runs: seven real CPU runs of
``add`` recorded under load (tests/fixtures/stores/SOURCES.md), all UNSTABLE."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuprof.compare import comparison, study_table
from gpuprof.compare.html_report import table_html
from gpuprof.derive.summary import UNSTABLE_NOTE, instability
from gpuprof.render.text import table as text_table
from gpuprof.store import runfile
from gpuprof.sweep import Point, stored_line

RUNS = Path(__file__).parent / "fixtures" / "stores" / "cpu_add_reruns_under_load_epyc_2026-11-27.jsonl"


@pytest.fixture(scope="module")
def runs() -> list:
    found, notes = runfile.load(RUNS)
    assert not notes and len(found) == 7
    return found


def _by_id(runs: list, prefix: str):
    return next(run for run in runs if run.run_id.startswith(prefix))


def test_instability_gives_the_spread(runs: list) -> None:
    assert instability(_by_id(runs, "d3a4df33")) == "UNSTABLE (time spread 23.1%)"  # IQR / median of 30 repeats


def test_compare_marks_unstable_cells_and_names_the_run_shown(runs: list) -> None:
    result = comparison(runs, ops_wanted=["add"])
    rows = result.rows
    assert rows["run"].tolist() == ["507a9f10", "d3a4df33"]  # the newest of 3 and of 4
    assert rows["unstable"].str.startswith("UNSTABLE").all()
    note = next(n for n in result.notes if "older run(s) not shown" in n)
    assert note.startswith("5 older run(s) not shown: a point measured several times shows its most recent run")
    assert "add float32 0.064 MB on AMD EPYC: run 507a9f10, the newest of 3" in note
    assert "add float32 6 MB on AMD EPYC: run d3a4df33, the newest of 4" in note
    table = study_table(rows, "add")
    assert table.attrs["notes"] == [UNSTABLE_NOTE]
    assert table.attrs["marks"] == {"AMD EPYC MFLOP/s": {0: 1, 1: 1}}
    text = text_table(table)
    assert text.count(" [1]") == 2 and "[1] UNSTABLE" in text.replace("\n", " ")
    html = table_html(table, table.attrs["groups"])
    assert html.count(" [1]</td>") == 2 and "<li>UNSTABLE: this run" in html


def test_an_older_stable_run_is_named_but_the_most_recent_is_shown(runs: list, tmp_path: Path) -> None:
    """Run 18e029d4 (6 MB, the oldest of four) edited here to eight equal times: stable. The rule
    still shows the newest, UNSTABLE run, and the note names the stable one."""
    lines = RUNS.read_text().splitlines(keepends=True)
    edited = []
    for line in lines:
        record = json.loads(line)
        if record["run_id"].startswith("18e029d4"):
            for launch in record["launches"]:
                launch["metrics"][0]["value"] = 1.079e-4
            line = json.dumps(record) + "\n"
        edited.append(line)
    path = tmp_path / "one_stable.jsonl"
    path.write_text("".join(edited))
    changed, _ = runfile.load(path)
    assert instability(_by_id(changed, "18e029d4")) == ""
    result = comparison(changed, ops_wanted=["add"])
    assert result.rows["run"].tolist() == ["507a9f10", "d3a4df33"]
    note = next(n for n in result.notes if "older run(s) not shown" in n)
    assert "run d3a4df33, the newest of 4, UNSTABLE; run 18e029d4 of it was stable" in note


def test_sweep_line_says_unstable(runs: list) -> None:
    run = _by_id(runs, "d3a4df33")
    point = Point("add", "6MB", 6_000_000, "float32", "numpy", "warm", 30, 3, False)
    line = stored_line(point, run)
    assert line.startswith("stored add 6.00 MB float32 numpy: 3,949.9 MFLOP/s")
    assert "MFLOP/s (derived: analytic FLOPs / timed median) UNSTABLE (time spread 23.1%), numpy on AMD EPYC" in line
