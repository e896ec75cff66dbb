"""The library behind the CLI: ``import gpuprof`` and get Runs and pandas DataFrames.

Every command is one call here plus rendering, so anything the CLI prints a program can get as data.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuprof.model import Run

if TYPE_CHECKING:
    import pandas as pd

    from gpuprof.measure import RunSettings


def measure_and_store(settings: RunSettings, store_path: str | Path | None = None) -> tuple[Run, Path]:
    """Measure, then store the run whole; returns the run and the store's path."""
    from gpuprof.measure import measure
    from gpuprof.store import open_store

    result = measure(settings, str(store_path) if store_path else None)
    with open_store(store_path) as store:
        store.add(result)
        return result, store.path


def run(op: str, size: str | None = None, *, store: str | Path | None = None, save: bool = True,
        **options: Any) -> Run:
    """Measure ``op`` (e.g. ``gpuprof.run("dot", "6MB")``); options as ``gpuprof.measure.RunSettings``."""
    from gpuprof.measure import RunSettings, measure

    settings = RunSettings(op=op, size=size, **options)
    if save:
        return measure_and_store(settings, store)[0]
    return measure(settings, str(store) if store else None)


def summary(runs: list[Run]) -> pd.DataFrame:
    """One row per measured run: device, engine, op, size, time, MFLOP/s, GB/s, efficiencies."""
    import pandas as pd

    from gpuprof.derive.summary import summary_row

    return pd.DataFrame([summary_row(r) for r in runs if r.kind == "run"])


def results(store: str | Path | None = None) -> pd.DataFrame:
    """Every measured run in the store, summarised (see :func:`summary`)."""
    from gpuprof.store import open_store

    with open_store(store) as opened:
        return summary([r for r in opened.runs() if r.kind == "run"])


def metrics(store: str | Path | None = None) -> pd.DataFrame:
    """Every stored metric in long format (one row per run × launch × metric)."""
    import pandas as pd

    from gpuprof.store import open_store

    with open_store(store) as opened:
        frames = [r.metrics_frame() for r in opened.runs()]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
