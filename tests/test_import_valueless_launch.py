"""An ncu action whose counters are all NaN keeps its launch, with a note (issue 28, item 7): the
real A100 details CSV with every Metric Value of launch ID 1 replaced by 'nan', as ncu prints for a
pass that failed (no public file with such an action was found)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from fixture_paths import A100

from gpuprof.derive.kernel_table import kernel_table
from gpuprof.importing import read_file


def with_nan_action(tmp_path: Path) -> Path:
    out = []
    for line in A100.read_text().splitlines(keepends=True):
        if line.startswith('"1",'):
            row = next(csv.reader([line]))
            row[-1] = "nan"
            buffer = io.StringIO()
            csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\n").writerow(row)
            line = buffer.getvalue()
        out.append(line)
    path = tmp_path / "nan-action.csv"
    path.write_text("".join(out))
    return path


def test_all_nan_action_keeps_its_launch_with_a_note(tmp_path: Path) -> None:
    run = read_file(with_nan_action(tmp_path))
    assert [launch.index for launch in run.launches] == [0, 1, 2]
    # no number: kept as missing (the cell text "nan" with a note naming it, or None)
    assert all(metric.value is None or isinstance(metric.value, str) for metric in run.launches[1].metrics)
    assert run.notes[-1] == (
        "1 launch(es) with every counter NaN or n/a, kept with nothing to derive: "
        "1 (void randomInit<float>(T1 *, int, int, unsigned int))"
    )
    assert (
        kernel_table([run]).set_index("kernel").loc["void randomInit<float>(T1 *, int, int, unsigned int)", "launches"]
        == 2
    )


def test_the_original_file_has_no_such_note() -> None:
    assert not any("every counter NaN" in note for note in read_file(A100).notes)
