"""Region instances of a run (launches of kind "region") as a table, and the run without them.

A profile keeps its program's regions as launches beside what the profiler measured; the kernel and
CPU tables are about the latter, so they read :func:`without_regions`, and the region table is
:func:`region_frame`: one row per instance, never summed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuprof.model import Run

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

KIND = "region"  # gpuprof.readers.regions.KIND


def region_mask(run: Run) -> np.ndarray:
    """True for each launch of ``run`` that is a region instance."""
    import numpy as np

    return np.array([isinstance(a, dict) and a.get("kind") == KIND for a in run.launch_table["attributes"]], dtype=bool)


def without_regions(run: Run) -> Run:
    """The same run with its region launches left out (the run itself when it has none)."""
    import numpy as np

    mask = region_mask(run)
    if not mask.any():
        return run
    keep = np.flatnonzero(~mask)
    renumber = np.full(len(mask), -1, dtype=np.int64)
    renumber[keep] = np.arange(len(keep))
    metrics = run.metric_table
    rows = renumber[metrics["launch"].to_numpy()] >= 0
    kept = metrics[rows].copy()
    kept["launch"] = renumber[kept["launch"].to_numpy()].astype(np.int32)
    return run.replaced(tables=(run.launch_table.iloc[keep].reset_index(drop=True), kept.reset_index(drop=True)))


def region_frame(run: Run, extra: tuple[str, ...] = ()) -> pd.DataFrame:
    """One row per region instance in begin order: launch, name, index, parent, process, rank,
    thread, start (seconds after the first region's begin), wall time (s, timed), unclosed, and
    the metrics named in ``extra`` (e.g. "energy (all devices)")."""
    import pandas as pd

    mask = region_mask(run)
    if not mask.any():
        return pd.DataFrame(
            columns=["launch", "name", "index", "parent", "process", "rank", "start (s)", "wall time (s)", "unclosed"]
        )
    values, _ = run.lookup(["wall time", "begin", *extra])
    values = values[mask]
    attributes = run.launch_table["attributes"][mask].tolist()
    first = values[:, 1].min()
    frame = pd.DataFrame(
        {
            "launch": run.launch_table["index"][mask].to_numpy(),
            "name": [a.get("name", "") for a in attributes],
            "index": [a.get("index", "") for a in attributes],
            "parent": [a.get("parent", "") for a in attributes],
            "process": [a.get("process", "") for a in attributes],
            "rank": [a.get("rank", "") for a in attributes],
            "thread": [a.get("thread", "") for a in attributes],
            "start (s)": values[:, 1] - first,
            "wall time (s)": values[:, 0],
            "unclosed": [a.get("unclosed", "") for a in attributes],
        }
    )
    for column, name in enumerate(extra, start=2):
        frame[name] = values[:, column]
    return frame
