"""Encodings and endings (issue 28, item 8): real files re-saved as PowerShell's '>' writes them
(UTF-16 LE with BOM, CRLF) and real files whose final newline is missing read exactly as the
originals; a file cut inside a row is still said to be truncated."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_paths import FIXTURES, K40C, README, SRAD, TEXT_TRACE

from gpuprof import readers

RAW = FIXTURES / "ncu_csv_raw_page_b200_flashattn.csv"
B200 = FIXTURES / "ncu_csv_details_b200_setfull_with_rule_columns.log"


def powershell(source: Path, target: Path, final_newline: bool = True) -> Path:
    text = source.read_text(encoding="utf-8")
    text = text.rstrip("\r\n") + ("\n" if final_newline else "")
    target.write_bytes(text.replace("\r\n", "\n").replace("\n", "\r\n").encode("utf-16"))
    return target


def without_final_newline(source: Path, target: Path) -> Path:
    target.write_bytes(source.read_bytes().rstrip(b"\r\n"))
    return target


def values(run) -> list[tuple]:
    return [(m.name, m.value, m.unit) for launch in run.launches for m in launch.metrics]


@pytest.mark.parametrize("source", [K40C, SRAD, RAW, B200, README, TEXT_TRACE], ids=lambda p: p.name[:40])
def test_utf16_file_loses_no_line(source: Path, tmp_path: Path) -> None:
    original = readers.read(source)
    for final in (True, False):
        run = readers.read(powershell(source, tmp_path / f"u16-{final}{source.suffix}", final))
        assert values(run) == values(original)
        assert not any("truncated" in note for note in run.notes)


@pytest.mark.parametrize("source", [K40C, SRAD, RAW, B200, README, TEXT_TRACE], ids=lambda p: p.name[:40])
def test_complete_file_without_final_newline_is_not_truncated(source: Path, tmp_path: Path) -> None:
    original = readers.read(source)
    run = readers.read(without_final_newline(source, tmp_path / f"nonl{source.suffix}"))
    assert values(run) == values(original)
    assert not any("truncated" in note for note in run.notes)


def test_k40c_utf16_keeps_its_last_metric(tmp_path: Path) -> None:
    # The case: the last row of the K40c CSV (ipc of the last kernel) was dropped.
    run = readers.read(powershell(K40C, tmp_path / "k40c.csv"))
    last = run.launches[-1].metrics[-1]
    assert last.name == readers.read(K40C).launches[-1].metrics[-1].name
    assert len(run.launches[-1].metrics) == len(readers.read(K40C).launches[-1].metrics)


def test_a_row_cut_in_the_middle_is_still_truncated(tmp_path: Path) -> None:
    text = RAW.read_text()
    path = tmp_path / "cut.csv"
    path.write_text(text[: text.rindex('","') + 1])  # the last row stops after a quoted field
    run = readers.read(path)
    assert any("truncated" in note for note in run.notes)
    assert len(run.launches) == len(readers.read(RAW).launches) - 1
