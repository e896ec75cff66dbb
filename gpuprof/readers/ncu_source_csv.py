"""Nsight Compute's source page: per-SASS-instruction warp-stall samples.

Two ways in: the CSV that ``ncu --page source --csv --import X.ncu-rep`` prints (this module's
registered reader format), and the same PC-sampling data read straight from a ``.ncu-rep`` with
NVIDIA's ``ncu_report`` module (:func:`rep_instructions`). Both give
:class:`~gpuprof.model.stalls.InstructionSamples` for the hot-spot table; :func:`read` also sums the
per-instruction columns into one kernel-level PC-sampling profile, stored under ncu's metric names
(``smsp__pcsamp_warps_issue_stalled_<reason>``, the metrics behind the ``stall_*`` columns).

CSV layout (ncu 2021-2023): a ``"Kernel Name","<signature>",`` line, then a header with
``Address, Source, Warp Stall Sampling (All Cycles|All Samples), ... stall_<reason> ...,
stall_<reason> (Not Issued)``; ``-`` placeholders; a column name (Instructions Executed) may repeat.
Only the all-samples ``stall_*`` columns are used; ``(Not Issued)`` ones are a subset of them.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from gpuprof.errors import FormatError, ProfilerError, shortened
from gpuprof.model import Launch, Metric, Run
from gpuprof.model.stalls import InstructionSamples, classify, reason_for_token, vocabulary
from gpuprof.model.units import parse_number
from gpuprof.readers._text import csv_records
from gpuprof.readers.ncu_rep import check_loadable

if TYPE_CHECKING:
    from gpuprof.model.stalls import InstructionSamples

NAME = "ncu-source-csv"
DESCRIPTION = "Nsight Compute source page as CSV (ncu --page source --csv): per-instruction stall samples"

_KERNEL = '"Kernel Name",'
_ALL_SAMPLES = ("Warp Stall Sampling (All Samples)", "Warp Stall Sampling (All Cycles)")


def sniff(path: Path, head: str) -> bool:
    return _KERNEL in head and '"Address","Source"' in head


def _blocks(path: Path) -> list[tuple[str, list[dict[str, str]], list[str]]]:
    """(kernel, rows, header) for each ``Kernel Name`` block of the file."""
    with open(path, newline="", encoding="utf-8-sig", errors="replace") as handle:
        records = [record for record in csv_records(handle) if record is not None]
    blocks: list[tuple[str, list[dict[str, str]], list[str]]] = []
    header: list[str] = []
    for record in records:
        if not record or not record[0].strip():
            continue
        if record[0] == "Kernel Name" and len(record) > 1:
            blocks.append((record[1], [], []))
            header = []
        elif blocks and not header and record[0] == "Address":
            header = record
            blocks[-1][2].extend(header)
        elif blocks and header and len(record) >= len(header) - 1:
            # dict() keeps the last of a repeated column name; the stall columns are unique.
            blocks[-1][1].append(dict(zip(header, record)))
    if not blocks or not any(rows for _, rows, _ in blocks):
        raise FormatError(
            f'{path}: no source-page rows (expected a "Kernel Name" line, an '
            "Address,Source header and instruction rows)",
            "export with: ncu --page source --csv --import REPORT.ncu-rep > out.csv",
        )
    return blocks


def _number(cell: str) -> float:
    """A sample count; an empty cell is 0, a cell that is no count ('nan', 'n/a') is NaN (missing, never 0)."""
    value = parse_number(cell)
    return value if value is not None else 0.0 if not cell.strip() else math.nan


def _reason_columns(header: list[str]) -> dict[str, str]:
    """stall_* column -> ncu reason, all-samples columns only."""
    columns = {}
    for name in header:
        if name.startswith("stall_") and "(" not in name:
            reason = reason_for_token(name)
            columns[name] = reason if reason != name else name.removeprefix("stall_")
    return columns


def instructions(path: str | Path) -> dict[str, list[InstructionSamples]]:
    """Kernel name -> per-instruction stall samples, in file order."""
    result: dict[str, list[InstructionSamples]] = {}
    for kernel, rows, header in _blocks(Path(path)):
        columns = _reason_columns(header)
        result[kernel] = [
            InstructionSamples(
                int(row["Address"], 16),
                row.get("Source", ""),
                {reason: _number(row.get(col, "")) for col, reason in columns.items()},
            )
            for row in rows
            if row.get("Address", "").startswith("0x")
        ]
    return result


def _pcsamp_name(reason: str) -> str:
    token = vocabulary()["ncu"].get(reason, {}).get("pcsamp", reason)
    return f"smsp__pcsamp_warps_issue_stalled_{token}"


def read(path: Path) -> Run:
    """One launch per kernel block: the stall columns summed over all instructions."""
    launches = []
    unreadable: list[str] = []

    def total(kernel: str, rows: list[dict[str, str]], column: str) -> float | None:
        counts = [_number(row.get(column, "")) for row in rows]
        bad = next((n for n, count in enumerate(counts) if math.isnan(count)), None)
        if bad is None:
            return sum(counts)
        unreadable.append(
            f"{kernel}: {column} of instruction {rows[bad].get('Address', bad)} is "
            f"'{shortened(rows[bad].get(column, ''), 40)}', not a count: the kernel's sum is kept as missing"
        )
        return None

    for index, (kernel, rows, header) in enumerate(_blocks(Path(path))):
        columns = _reason_columns(header)
        all_column = next((c for c in _ALL_SAMPLES if c in header), None)
        metrics = [Metric(_pcsamp_name(reason), total(kernel, rows, col), "sample") for col, reason in columns.items()]
        if all_column:
            metrics.append(Metric("smsp__pcsamp_sample_count", total(kernel, rows, all_column), "sample"))
        launches.append(
            Launch(kernel=kernel, index=index, attributes={"instructions": str(len(rows))}, metrics=metrics)
        )
    return Run(
        kind="import",
        format=NAME,
        source=str(path),
        launches=launches,
        notes=[
            "PC-sampling counts summed over the instructions listed in the file; an excerpt covers only its rows",
            *unreadable[:5],
            *([f"{len(unreadable) - 5} more sums kept as missing"] if len(unreadable) > 5 else []),
        ],
    )


def rep_instructions(path: str | Path) -> dict[str, list[InstructionSamples]]:
    """Kernel name (demangled) -> per-PC stall samples from a ``.ncu-rep`` (needs ``ncu-report``).

    Each ``smsp__pcsamp_warps_issue_stalled_<reason>`` metric has one instance per sampled PC; its
    correlation ids are the SASS addresses, and ``action.sass_by_pc`` gives the instruction text.
    """
    try:
        import ncu_report
    except ImportError:
        raise ProfilerError(
            "reading .ncu-rep source samples needs NVIDIA's ncu-report module", 'pip install "gpuprof-hpc[ncu]"'
        ) from None

    check_loadable(Path(path))
    report = ncu_report.load_report(str(path))
    result: dict[str, list[InstructionSamples]] = {}
    for r in range(report.num_ranges()):
        rng = report.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            per_pc: dict[int, dict[str, float]] = {}
            for name in action.metric_names():
                kind = classify(name)
                metric = action.metric_by_name(name)
                if kind is None or kind[0] != "pcsamp" or not metric.has_correlation_ids():
                    continue
                ids = metric.correlation_ids()
                for i in range(metric.num_instances()):
                    per_pc.setdefault(ids.as_uint64(i), {})[kind[1]] = metric.as_double(i)
            if per_pc:
                kernel = action.name(ncu_report.IAction.NameBase_DEMANGLED)
                result[kernel] = [
                    InstructionSamples(pc, action.sass_by_pc(pc) or "", samples)
                    for pc, samples in sorted(per_pc.items())
                ]
    return result
