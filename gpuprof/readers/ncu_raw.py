"""Nsight Compute ``--page raw --csv``: one wide row per kernel launch, one column per metric.

The header holds the per-launch columns (``ID`` ... ``CC``) followed by raw metric names
(``gpu__time_duration.sum``, ``launch__grid_size`` ...); recent versions put the metric units in a
second row whose ``ID`` cell is empty. ``==PROF==`` lines may precede the table.
"""

from __future__ import annotations

from pathlib import Path

from gpuprof.errors import FormatError
from gpuprof.model import Launch, Run
from gpuprof.readers._text import (
    CsvRows,
    ToolLog,
    cut_off,
    ends_with_newline,
    find_csv_header,
    head_has_csv_header,
    metric_maker,
    open_text,
    parse_count,
)
from gpuprof.readers.ncu_csv import LAUNCH_COLUMNS, launch_columns, run_device

NAME = "ncu-raw"
DESCRIPTION = "Nsight Compute raw page CSV (ncu --page raw --csv), one wide row per kernel launch"

_REQUIRED = ("ID", "Kernel Name")


def sniff(path: Path, head: str) -> bool:
    for line in head.splitlines():
        if '"ID"' in line and '"Kernel Name"' in line:
            return '"Metric Name"' not in line and "__" in line and head_has_csv_header(line, _REQUIRED)
    return False


def read(path: Path) -> Run:
    log = ToolLog("ncu")
    with open_text(path) as handle:
        header, _ = find_csv_header(handle, _REQUIRED, log)
        if header is None:
            raise log.failure(path) or FormatError(
                f"{path}: no Nsight Compute raw-page CSV header found", "Export it with `ncu --page raw --csv`"
            )
        rows = CsvRows(handle, log, cut=cut_off(path), open_end=not ends_with_newline(path))
        launches, skipped = _launches(header, rows)
    notes = log.notes() + rows.notes()
    if skipped:
        notes.append(f"{skipped} row(s) with a different number of fields than the header were skipped")
    if not launches:
        raise log.failure(path) or FormatError(
            f"{path}: the raw-page CSV has a header but no launch rows", "Re-export it; the file may be truncated"
        )
    return Run(
        kind="import",
        format=NAME,
        source=str(path),
        device=run_device((launch.device for launch in launches), (launch.attributes for launch in launches)),
        environment={"tool": "ncu"},
        launches=launches,
        notes=notes,
    )


def _launches(header: list[str], rows: CsvRows) -> tuple[list[Launch], int]:
    i_id, i_kernel = header.index("ID"), header.index("Kernel Name")
    attributes = launch_columns(header)
    metric_columns = [
        i for i, name in enumerate(header) if name not in LAUNCH_COLUMNS and name not in ("ID", "Kernel Name")
    ]
    units = [""] * len(header)
    make = metric_maker()
    launches: list[Launch] = []
    skipped = 0
    for row in rows:
        if len(row) != len(header):
            skipped += 1
            continue
        if not row[i_id]:  # the units row
            units = row
            continue
        launch = Launch(
            kernel=row[i_kernel],
            index=parse_count(row[i_id], len(launches)),
            attributes={key: row[i] for key, i in attributes.items()},
        )
        launch.metrics = [make(header[i], units[i], row[i]) for i in metric_columns if row[i] != ""]
        name = launch.value("device__attribute_display_name")
        launch.device = name if isinstance(name, str) else ""
        launches.append(launch)
    return launches, skipped
