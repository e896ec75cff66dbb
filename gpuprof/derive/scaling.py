"""Scaling across set-ups: per phase, time, speed-up S = T_base / T, parallel efficiency
E = S / (x / x_base) with x the set-up's device count, energy, and the energy-delay product
EDP = T × energy normalised to the baseline's, with and without idle devices.

Pure functions: :func:`phase_entries` reads a profile run (its wall time, its region instances and the
energy the profile metered over each) into rows, :func:`scaling_table` does the arithmetic on any
frame of such rows (the study's own numbers included), :func:`published_rows` gives the study's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpuprof.derive.regions import region_frame
from gpuprof.errors import InputError
from gpuprof.model import Run

if TYPE_CHECKING:
    import pandas as pd

PROGRAM = "program"  # the whole command, as the phase name
ENERGY_ALL = "energy (all devices)"
ENERGY_IN_USE = "energy (devices in use)"
ENTRY_COLUMNS = ("label", "devices", "phase", "time_s", "energy_j", "energy_in_use_j", "instances", "basis")
TIME_BASIS = (
    "wall time of each instance (timed, CLOCK_MONOTONIC), summed per process; the slowest process "
    "counts (ranks run side by side)"
)
PROGRAM_BASIS = "wall time of the command (timed, time.perf_counter_ns in gpuprof)"


def run_label(run: Run) -> str:
    return str(run.environment.get("label") or run.run_id[:8])


def run_devices(run: Run) -> int:
    return int(run.environment.get("devices") or 1)


def _run_energy(run: Run) -> tuple[float | None, float | None]:
    """The command's metered energy (all devices, devices in use), when the profile metered it."""
    energy = run.environment.get("energy") or {}
    return energy.get("all_j"), energy.get("in_use_j")


def phase_entries(run: Run, phases: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """Rows for :func:`scaling_table` from one profile run: the whole program, then each region
    name (``phases``: these only, else every name that has a top-level instance or a child of
    one). Per name: the instances of each process summed, the process with the longest total kept
    (its energy too: a window's energy is the machine's, so ranks side by side must not add)."""
    label, devices = run_label(run), run_devices(run)
    wall = (run.environment.get("wall_time") or {}).get("value")
    all_j, in_use_j = _run_energy(run)
    rows = [
        {
            "label": label,
            "devices": devices,
            "phase": PROGRAM,
            "time_s": wall,
            "energy_j": all_j,
            "energy_in_use_j": in_use_j,
            "instances": 1,
            "basis": PROGRAM_BASIS,
        }
    ]
    frame = region_frame(run, (ENERGY_ALL, ENERGY_IN_USE))
    if frame.empty:
        return rows
    top = set(frame.loc[frame["parent"] == "", "launch"].astype(str))
    shallow = frame[(frame["parent"] == "") | frame["parent"].isin(top)]
    wanted = list(phases) if phases else list(dict.fromkeys(shallow["name"]))
    for name in wanted:
        mine = frame[frame["name"] == name]
        if mine.empty:
            continue
        per_process = mine.groupby("process").agg(
            time_s=("wall time (s)", "sum"),
            energy_j=(ENERGY_ALL, "sum"),
            energy_in_use_j=(ENERGY_IN_USE, "sum"),
            instances=("name", "size"),
            unmetered=(ENERGY_ALL, lambda s: s.isna().any()),
        )
        slowest = per_process.sort_values("time_s").iloc[-1]
        metered = not bool(slowest["unmetered"])
        rows.append(
            {
                "label": label,
                "devices": devices,
                "phase": name,
                "time_s": float(slowest["time_s"]),
                "energy_j": float(slowest["energy_j"]) if metered else None,
                "energy_in_use_j": float(slowest["energy_in_use_j"]) if metered else None,
                "instances": int(slowest["instances"]),
                "basis": TIME_BASIS,
            }
        )
    return rows


def scaling_table(entries: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Per phase and set-up: time, S, E, energy, EDP normalised to ``baseline``'s (all devices and
    devices in use). ``entries``: :data:`ENTRY_COLUMNS` (energy may be missing: NaN)."""
    import numpy as np
    import pandas as pd

    labels = list(dict.fromkeys(entries["label"]))
    if baseline not in labels:
        raise InputError(
            f"--baseline {baseline}: no run with that label (labels: {', '.join(map(str, labels)) or 'none'})",
            "give the --label of one of the runs, e.g. --baseline 1gpu",
        )
    out = []
    for phase, rows in entries.groupby("phase", sort=False):
        base = rows[rows["label"] == baseline]
        if base.empty:
            continue
        base = base.iloc[0]
        for _, row in rows.iterrows():
            time_s, energy, in_use = (
                float(row[c]) if row[c] is not None else np.nan for c in ("time_s", "energy_j", "energy_in_use_j")
            )
            speedup = float(base["time_s"]) / time_s if time_s else np.nan
            ratio = float(row["devices"]) / float(base["devices"])
            base_edp = float(base["time_s"]) * _number(base["energy_j"])
            base_edp_in_use = float(base["time_s"]) * _number(base["energy_in_use_j"])
            out.append(
                {
                    "phase": phase,
                    "label": row["label"],
                    "devices": int(row["devices"]),
                    "time (s)": time_s,
                    "S": speedup,
                    "E (%)": 100 * speedup / ratio,
                    "energy (J)": energy,
                    "EDP (norm.)": time_s * energy / base_edp if base_edp else np.nan,
                    "energy in use (J)": in_use,
                    "EDP in use (norm.)": time_s * in_use / base_edp_in_use if base_edp_in_use else np.nan,
                    "instances": row.get("instances", 1),
                    "basis": row.get("basis", ""),
                }
            )
    return pd.DataFrame(out)


def _number(value: Any) -> float:
    import math

    return math.nan if value is None else float(value)
