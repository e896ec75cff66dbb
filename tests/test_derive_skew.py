"""Kernel times a file cannot vouch for (issue #15, cycle skew). No public ncu output with inflated
cycles was found (SOURCES.md section 6, "Variants with no public sample found"), so the skewed
cases here are real fixtures with one value edited by the test, as each test says."""

from __future__ import annotations

from pathlib import Path

from fixture_paths import FIXTURES

from gpuprof import readers
from gpuprof.derive import counters
from gpuprof.importing import read_file
from gpuprof.readers import joining

A100_SGEMM = FIXTURES / "ncu_csv_a100_nersc_roofline_metrics_with_duration_sgemm.csv"
V100_CYCLES = FIXTURES / "ncu_csv_v100_nersc_one_metric_per_run_tf_fp16_EXCERPT.sm__cycles_elapsed.avg.csv"


def test_cycles_that_disagree_with_the_duration_are_noted_and_the_duration_kept(tmp_path: Path) -> None:
    """6b with ID 0's sm__cycles_elapsed.avg edited from 7,556.52 to 755,652.00 (x 100, as an
    instrumented pass would give): the note names the launch and the ratio; time stays 7,488 ns."""
    text = A100_SGEMM.read_text()
    edited = text.replace(
        '"sm__cycles_elapsed.avg","cycle","7,556.52"', '"sm__cycles_elapsed.avg","cycle","755,652.00"'
    )
    assert edited != text
    path = tmp_path / "skewed.csv"
    path.write_text(edited)
    run = read_file(path)
    note = next(note for note in run.notes if "differs from gpu__time_duration.sum" in note)
    assert note.startswith("1 of 2 launches") and "launch ID 0, 100 x" in note
    assert counters.frame(run)["time"].iloc[0] == 7_488e-9


def test_cycles_of_an_unedited_file_raise_no_note() -> None:
    assert not [note for note in read_file(A100_SGEMM).notes if "gpu__time_duration" in note]


def test_two_files_of_the_same_launches_that_disagree(tmp_path: Path) -> None:
    """The V100 cycles file joined with a copy of itself whose ID 123 reads 100 x more cycles
    (18,075,890.00 instead of 180,758.90): the join keeps the first and says they disagree."""
    text = V100_CYCLES.read_text()
    edited = text.replace(
        '"sm__cycles_elapsed.avg","cycle","180758.90"', '"sm__cycles_elapsed.avg","cycle","18075890.00"'
    )
    assert edited != text
    copy = tmp_path / "second_pass.csv"
    copy.write_text(edited)
    run = joining.join([readers.read(V100_CYCLES), readers.read(copy)])
    note = next(note for note in run.notes if "differ by more than 5%" in note)
    assert note.startswith("1 metric value(s)") and "sm__cycles_elapsed.avg of ID 123: 180759 and 1.80759e+07" in note
    gemm = run.launches[run.launch_table["index"].tolist().index(123)]
    assert gemm.value("sm__cycles_elapsed.avg") == 180_758.90


def test_cycles_from_separate_runs_are_not_called_unchecked() -> None:
    """NERSC's V100 runs took the cycles in a run of their own: joined with the counting runs, the
    time is derived but not flagged; the A100 capture counted and took cycles in one run: flagged."""
    v100 = joining.join([readers.read(path) for path in sorted(FIXTURES.glob("ncu_csv_v100_nersc_*.csv"))])
    assert "unchecked" not in counters.frame(v100)["basis"].iloc[0]
    printfp = FIXTURES / "ncu_csv_details_a100_roofline_printfp.csv"
    assert any("cannot be checked" in note for note in read_file(printfp).notes)
