"""Several profiler files of one application as one run: each file holds some of the metrics of
the same launches (NERSC's V100 method ran ncu once per metric, one file each).

Launches are matched by the tool's launch ID, and only where every file that has the ID names the
same kernel: separate runs of an application need not launch the same kernels in the same order
(cuDNN picks algorithms per run), and joining by ID alone would mix kernels. IDs whose kernels
disagree are left out and counted in the run's notes. Where two files give the same metric of the
same launch, the first file's value is kept, and values that differ by more than
:data:`DISAGREE` are counted in the notes: two passes over the same launches should agree.

Cycles, clock and time are the exception: ncu counts SASS instructions by patching the kernel, and
cycles taken in that pass run long (110-154x on the GENE authors' V100 files, which is why their
recipe runs a separate timing pass). So a file that does not count instructions gives those values
whatever the file order, and the joined run is marked as having unchecked cycles only where a kept
cycle value came from an instrumented file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gpuprof.errors import InputError
from gpuprof.model import Run, catalog, tables

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

DISAGREE = 0.05  # relative difference between two files' values of one metric and launch
_COUNTING = ("sass_thread_inst_executed", "sass_inst_executed")  # metrics ncu collects by instrumenting the kernel
_ELAPSED = {"sm__cycles_elapsed.avg", "smsp__cycles_elapsed.avg", "gpc__cycles_elapsed.max", "Elapsed Cycles"}
_TIMED = ("kernel_duration", "sm_clock")  # catalog keys that, with _ELAPSED, make a launch's time


def timing_names() -> frozenset[str]:
    """Every name a launch's cycles, SM clock or duration may appear under: the values an
    instrumented pass gets wrong."""
    entries = catalog.entries()
    names = set(_ELAPSED) | set(_TIMED)
    for key in _TIMED:
        entry = entries[key]
        names.update((*entry.ncu, *entry.also, *entry.labels, *entry.nvprof))
    return frozenset(names)


def source_text(sources: Sequence[str]) -> str:
    """One name for several files: their common start and end around a '*'
    ('out.fp16.*.csv'), or the names joined by ' + ' when they share neither."""
    start = os.path.commonprefix(list(sources))
    end = os.path.commonprefix([s[len(start) :][::-1] for s in sources])[::-1]
    return f"{start}*{end}" if Path(start).name or end else " + ".join(sources)


def counts_instructions(run: Run) -> bool:
    """Whether the file holds SASS instruction counts (metrics ncu collects by instrumenting)."""
    return any(part in name for name in run.metric_table["metric"].cat.categories for part in _COUNTING)


def cycles_unchecked(run: Run) -> bool:
    """Whether the run's elapsed cycles may come from an instrumented pass: its file counts SASS
    instructions too (for files joined into one run, one file had both)."""
    if "joined" in run.environment:
        return bool(run.environment.get("cycles_beside_counts"))
    return counts_instructions(run)


def join(runs: Sequence[Run]) -> Run:
    """One run holding the launches the ``runs`` agree on, with every file's metrics of them."""
    import numpy as np
    import pandas as pd

    if len(runs) < 2:
        raise InputError("joining needs at least two files", "give every file of the same application")
    _refuse_mixed(runs)
    launches = pd.concat(
        [run.launch_table.assign(file=i, position=np.arange(len(run.launch_table))) for i, run in enumerate(runs)],
        ignore_index=True,
    )
    kernels = launches.groupby("index", sort=False)["kernel"].nunique()
    agreed = kernels.index[kernels == 1]
    notes = _disagreements(runs, launches, kernels)
    files = launches.groupby("index", sort=False)["file"].nunique()
    partial = int((files[agreed] < len(runs)).sum())
    if partial:
        notes.append(f"{partial} launch ID(s) are in some of the files only; they have those files' metrics")
    kept = launches[launches["index"].isin(agreed)]
    new_position = pd.Series(np.arange(len(agreed)), index=agreed)
    first = kept.drop_duplicates("index")
    launch_table = tables.launch_table(
        first["kernel"].tolist(),
        first["index"].tolist(),
        first["device"].tolist(),
        first["invocations"].tolist(),
        [dict(a) for a in first["attributes"].tolist()],
    )
    metrics, disagreeing, counted = _metrics(runs, kept, new_position)
    notes += disagreeing
    notes = [f"{Path(run.source).name}: {note}" for run in runs for note in run.notes] + notes
    sources = [run.source for run in runs]
    formats = sorted({run.format for run in runs})
    return Run(
        kind="import",
        format=formats[0] if len(formats) == 1 else "joined",
        source=source_text(sources),
        device=_agreed(run.device for run in runs),
        environment={**runs[0].environment, "joined": sources, "cycles_beside_counts": counted},
        notes=notes,
        tables=(launch_table, metrics),
    )


def _named(run: Run) -> tuple[set[str], set[str]]:
    """The device names and the compute capabilities a file states (either may be empty)."""
    attributes = run.launch_table["attributes"].tolist()
    names = {str(d) for d in run.launch_table["device"].tolist() if d} | {str(run.device.get("name") or "")}
    ccs = {str(a.get("cc") or "") for a in attributes} | {str(run.device.get("cc") or "")}
    return names - {""}, ccs - {""}


def _refuse_mixed(runs: Sequence[Run]) -> None:
    """Files of different tools or naming different GPUs are not passes over the same launches:
    joining them would label one GPU's kernels with another's name (a K40c nvprof CSV with an
    A100 ncu CSV). A file that names no GPU joins any."""
    tools = {Path(run.source).name: str(run.environment.get("tool") or run.format) for run in runs}
    if len(set(tools.values())) > 1:
        listed = "; ".join(f"{name} from {tool}" for name, tool in tools.items())
        raise InputError(
            f"--join needs files of one tool, and these come from several ({listed})",
            "join only the files one profiler wrote for the same application; import the others without --join",
        )
    for kind, index in (("GPU", 0), ("compute capability", 1)):
        stated = {Path(run.source).name: _named(run)[index] for run in runs}
        distinct = set().union(*stated.values())
        if len(distinct) > 1:
            listed = "; ".join(f"{name}: {', '.join(sorted(values))}" for name, values in stated.items() if values)
            raise InputError(
                f"--join needs files of one GPU, and these name different ones ({kind} {listed})",
                "join only files profiled on the same GPU; import the others without --join",
            )


def _disagreements(runs: Sequence[Run], launches: pd.DataFrame, kernels: pd.Series) -> list[str]:
    """A note on the launch IDs whose files name different kernels, with the first such ID."""
    bad = kernels.index[kernels > 1]
    if not len(bad):
        return []
    example = launches[launches["index"] == bad[0]].drop_duplicates("kernel")
    named = "; ".join(
        f"'{kernel}' in {Path(runs[file].source).name}" for kernel, file in zip(example["kernel"], example["file"])
    )
    return [
        f"{len(bad)} of {len(kernels)} launch IDs name different kernels in different files and were "
        f"left out (the files come from separate runs; ID {bad[0]}: {named})"
    ]


def _metrics(runs: Sequence[Run], kept: pd.DataFrame, new_position: pd.Series) -> tuple[pd.DataFrame, list[str], bool]:
    """The joined metric table (each launch's rows in file order, the first of duplicates kept,
    cycles, clock and time first from a file that does not count instructions), a note on
    duplicates whose values disagree, and whether a kept elapsed-cycle value came from an
    instrumented file."""
    import numpy as np
    import pandas as pd

    instrumented = np.array([cycles_unchecked(run) for run in runs])
    parts = []
    for i, run in enumerate(runs):
        mine = kept[kept["file"] == i]
        to_new = np.full(len(run.launch_table), -1)
        to_new[mine["position"].to_numpy()] = new_position[mine["index"]].to_numpy()
        rows = run.metric_table.assign(launch=to_new[run.metric_table["launch"].to_numpy()], file=i)
        parts.append(rows[rows["launch"] >= 0])
    rows = pd.concat(parts, ignore_index=True)  # categories differ per file: columns become objects
    timed = rows["metric"].isin(timing_names()).to_numpy()
    late = timed & instrumented[rows["file"].to_numpy()]  # an instrumented pass's time comes last
    rows = rows.iloc[np.lexsort((late, rows["launch"].to_numpy()))]
    duplicate = rows.duplicated(["launch", "metric"])
    notes = _disagreeing_values(rows, new_position.index.to_numpy())
    rows = rows[~duplicate]
    counted = bool((rows["metric"].isin(_ELAPSED) & instrumented[rows["file"].to_numpy()]).any())
    columns = {
        c: rows[c].tolist() if c in tables.CATEGORY_COLUMNS else rows[c].to_numpy() for c in tables.METRIC_COLUMNS
    }
    columns["text"] = rows["text"].tolist()
    return tables.metric_table(**columns), notes, counted


def _disagreeing_values(rows: pd.DataFrame, ids: np.ndarray) -> list[str]:
    """A note counting (launch, metric) pairs whose files' values differ by more than DISAGREE
    (``ids``: the launch ID of each joined launch)."""
    import numpy as np

    repeated = rows[rows.duplicated(["launch", "metric"], keep=False)]
    if not len(repeated):
        return []
    spread = repeated.groupby(["launch", "metric"], sort=False)["value"].agg(["min", "max"])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = spread["max"] / spread["min"].where(spread["min"] > 0)
    bad = spread[(ratio > 1 + DISAGREE) | ((spread["min"] <= 0) & (spread["max"] > 0))]
    if not len(bad):
        return []
    (launch, metric), worst = bad.index[0], bad.iloc[0]
    return [
        f"{len(bad)} metric value(s) differ by more than {DISAGREE:.0%} between files that measured the "
        f"same launch (e.g. {metric} of ID {ids[launch]}: {worst['min']:g} and "
        f"{worst['max']:g}); cycles, clock and time are kept from a file that does not count SASS "
        "instructions, other values from the first file — passes of the same launches should agree, so "
        "one of them is off (an instrumented pass inflates cycles)"
    ]


def _agreed(devices: object) -> dict[str, str]:
    """The device fields every run that names them agrees on."""
    merged: dict[str, set[str]] = {}
    for device in devices:  # type: ignore[attr-defined]
        for key, value in device.items():
            merged.setdefault(key, set()).add(value)
    return {key: values.pop() for key, values in merged.items() if len(values) == 1}
