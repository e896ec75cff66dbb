"""Issue 28 item 11: ``import --join`` of a timing pass and an instrumented pass takes cycles, clock
and time from the pass that does not count instructions, whatever the file order, and calls the time
unchecked only where a kept cycle value came from an instrumented pass. The files are the GENE
authors' two ncu passes over the same V100 launches (SOURCES.md, the issue 28 item 11 section)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_paths import FIXTURES

from gpuprof.derive import counters
from gpuprof.importing import import_files, read_file
from gpuprof.readers import joining

TIMING = FIXTURES / "ncu_csv_v100_gene_dgdxy_timing_pass_dram_cycles.csv"
COUNTING = FIXTURES / "ncu_csv_v100_gene_dgdxy_instrumented_pass_flops_cycles.csv"


@pytest.fixture(scope="module")
def passes() -> tuple:
    return read_file(TIMING, time_notes=False), read_file(COUNTING, time_notes=False)


@pytest.mark.parametrize("order", [(0, 1), (1, 0)], ids=["timing-first", "counting-first"])
def test_cycles_and_clock_come_from_the_timing_pass_in_either_order(passes: tuple, order: tuple) -> None:
    """ID 0 (ij_deriv_kernel): 1,209,252.43 cycles at 1,309,394,950.84 Hz in the timing pass,
    184,880,856.57 (153x) at 1,312,230,262.80 Hz in the instrumented one; the FP64 counts only
    the instrumented pass has are kept."""
    run = joining.join([passes[i] for i in order])
    first = run.launches[0]
    assert first.value("sm__cycles_elapsed.avg") == 1_209_252.43
    assert first.value("sm__cycles_elapsed.avg.per_second") == 1_309_394_950.84
    assert first.value("sm__sass_thread_inst_executed_op_dfma_pred_on.sum") == 137_625_600
    frame = counters.frame(run)
    assert frame["time"].iloc[0] == pytest.approx(1_209_252.43 / 1_309_394_950.84, rel=1e-12)
    assert frame["flops_dp"].iloc[0] == 2 * 137_625_600 + 55_050_240
    assert not run.environment["cycles_beside_counts"]
    assert not any("unchecked" in basis for basis in frame["basis"])


def test_the_instrumented_pass_alone_is_unchecked(passes: tuple) -> None:
    """Read alone, the instrumented pass's time is its own inflated cycles, flagged as such."""
    frame = counters.frame(passes[1])
    assert frame["time"].iloc[0] == pytest.approx(184_880_856.57 / 1_312_230_262.80, rel=1e-12)
    assert "unchecked" in frame["basis"].iloc[0]


def test_cycles_kept_from_an_instrumented_pass_are_still_unchecked(passes: tuple, tmp_path: Path) -> None:
    """The timing pass cut to IDs 0-3: IDs 4-7 keep the instrumented pass's cycles, and only those
    launches are called unchecked."""
    lines = TIMING.read_text().splitlines(keepends=True)
    cut = tmp_path / "timing_ids_0_3.csv"
    cut.write_text("".join(line for line in lines if not line.startswith(('"4"', '"5"', '"6"', '"7"'))))
    run = joining.join([passes[1], read_file(cut, time_notes=False)])
    assert run.environment["cycles_beside_counts"]
    frame = counters.frame(run)
    assert frame["time"].iloc[0] == pytest.approx(1_209_252.43 / 1_309_394_950.84, rel=1e-12)
    assert frame["time"].iloc[4] == pytest.approx(186_688_292.15 / 1_312_252_702.88, rel=1e-12)


def test_import_join_notes_and_the_stored_time_agree_in_either_order(tmp_path: Path) -> None:
    """Through ``import --join``: no 'cannot be checked' note from the instrumented file, the note on
    the disagreeing cycles says which value was kept, and both orders store the same kernel times."""
    times = []
    for i, files in enumerate(([TIMING, COUNTING], [COUNTING, TIMING])):
        (run,) = import_files(files, tmp_path / f"s{i}.db", join=True)
        assert not any("cannot be checked" in note for note in run.notes)
        note = next(note for note in run.notes if "differ by more than 5%" in note)
        assert "kept from a file that does not count SASS instructions" in note
        times.append(counters.frame(run)["time"].tolist())
    assert times[0] == times[1]
