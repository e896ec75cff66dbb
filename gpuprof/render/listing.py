"""Lists of stored runs for ``gpuprof show``: one line per run, whatever produced it."""

from __future__ import annotations

import pandas as pd

from gpuprof.derive.summary import summary_row
from gpuprof.errors import InputError
from gpuprof.model import Run
from gpuprof.render import emit
from gpuprof.render.profile_report import profile_report
from gpuprof.render.run_report import run_report
from gpuprof.store import Store


def listing_frame(runs: list[Run]) -> pd.DataFrame:
    """Measured runs with their headline numbers; imported and calibration runs with their source."""
    rows = []
    for run in runs:
        if run.kind == "run":
            rows.append({"kind": run.kind, **summary_row(run)})
        else:
            rows.append({"kind": run.kind, "run": run.run_id[:8], "created": run.created,
                         "device": run.device.get("name", ""), "format": run.format,
                         "source": run.source, "launches": len(run.launch_table)})
    return pd.DataFrame(rows)


def find_run(store: Store, prefix: str, fmt: str) -> str:
    """The report of the one run whose id starts with ``prefix``."""
    matches = [run_id for run_id in store.run_ids() if run_id.startswith(prefix)]
    if len(matches) != 1:
        problem = f"no stored run starts with '{prefix}'" if not matches else f"'{prefix}' matches {len(matches)} runs"
        raise InputError(problem, "list runs with 'gpuprof show' and give more of the id")
    run = store.get(matches[0])
    if run.kind == "run":
        return run_report(run, fmt)
    if run.kind == "profile":
        return profile_report([run], fmt) or emit(run.metrics_frame(), fmt)
    return emit(run.metrics_frame(), fmt)
