"""Lists of stored runs for ``gpuprof show``: one line per run, whatever produced it."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from gpuprof.derive import cpu_flops
from gpuprof.derive.summary import summary_row
from gpuprof.devices.peaks import Peaks
from gpuprof.errors import InputError
from gpuprof.model import DERIVED, MEASURED, Run
from gpuprof.render import emit
from gpuprof.render.profile_report import profile_report
from gpuprof.render.run_report import run_report
from gpuprof.store import Store


def listing_frame(runs: list[Run], ceilings: Callable[[Run, list[Run]], list[Peaks]] | None = None) -> pd.DataFrame:
    """Measured runs with their headline numbers (efficiencies against ``ceilings(run, runs)`` when
    given, as :func:`find_run`); imported and calibration runs with their source. The run id comes
    first: a table split into panels repeats it in each, so every row can be told from the others."""
    rows = []
    for run in runs:
        if run.kind == "run":
            rows.append(
                {"run": run.run_id[:8], "kind": run.kind, **summary_row(run, ceilings(run, runs) if ceilings else None)}
            )
        else:
            rows.append(
                {
                    "run": run.run_id[:8],
                    "kind": run.kind,
                    "created": run.created,
                    "device": run.device.get("name", ""),
                    "format": run.format,
                    "source": run.source,
                    "launches": len(run.launch_table),
                }
            )
    return pd.DataFrame(rows)


def find_run(
    store: Store, prefix: str, fmt: str, ceilings: Callable[[Run, list[Run]], list[Peaks]] | None = None
) -> str:
    """The report of the one run whose id starts with ``prefix``; a measured run's efficiencies
    against ``ceilings(run, every stored run)`` (``gpuprof.compare.ceilings_for``) when given."""
    matches = [run_id for run_id in store.run_ids() if run_id.startswith(prefix)]
    if len(matches) != 1:
        problem = f"no stored run starts with '{prefix}'" if not matches else f"'{prefix}' matches {len(matches)} runs"
        raise InputError(problem, "list runs with 'gpuprof show' and give more of the id")
    run = store.get(matches[0])
    if run.kind == "run":
        return run_report(run, fmt, ceilings(run, store.runs()) if ceilings else None)
    if run.kind == "profile":
        return profile_report([run], fmt) or emit(run.metrics_frame(), fmt)
    return emit(_with_counted_flops(run), fmt)


def _with_counted_flops(run: Run) -> pd.DataFrame:
    """An imported run's metrics, with the FLOPs a CPU run's FP events count and their rate over
    the elapsed time after each launch's rows (the lane weights in ``text``)."""
    frame = run.metrics_frame()
    counted = cpu_flops.launch_columns(run) if run.device.get("kind") == "cpu" else None
    if counted is None:
        return frame
    rows = []
    for position, launch in enumerate(run.launches):
        total, seconds, basis = counted["total"][position], counted["time"][position], counted["basis"][position]
        if not basis:
            continue
        common = {
            "run_id": run.run_id,
            "device": launch.device,
            "kernel": launch.kernel,
            "launch": launch.index,
            "invocations": launch.invocations,
            "canonical": None,
            "text": basis,
            "minimum": float("nan"),
            "maximum": float("nan"),
        }
        rows.append({**common, "metric": "counted FLOPs", "value": total, "unit": "FLOP", "origin": MEASURED})
        rows.append(
            {**common, "metric": "counted FLOP/s", "value": total / seconds, "unit": "FLOP/second", "origin": DERIVED}
        )
    return pd.concat(
        [frame.astype({c: object for c in ("metric", "canonical", "unit", "origin")}), pd.DataFrame(rows)],
        ignore_index=True,
    ).sort_values("launch", kind="stable")
