"""What a profiled job adds beside the profiler: the program's regions and the power of every device.

* :func:`child_environment` creates the run's regions file (its header names the run) and gives the
  command ``$GPUPROF_REGIONS``/``$GPUPROF_RUN_ID`` and, with torch hooks, gpuprof's sitecustomize
  first on ``PYTHONPATH`` (:mod:`gpuprof.launch.inject`).
* :func:`open_meters` opens the power series (``--energy``), or says which meter is missing and why.
* :func:`attach` adds to the profile's run: each region instance as a launch (with its energy per
  device, all devices and devices in use, over its window), the power series and the command's
  energy in its environment, ``power.csv`` in the run folder, and notes. Whatever went wrong with
  either, what the profiler measured is kept.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

from gpuprof import regions
from gpuprof.energy.series import PowerSeries, energies, now_s, open_series
from gpuprof.errors import GpuprofError
from gpuprof.model import DERIVED, Launch, Metric, Run
from gpuprof.readers import regions as region_reader

REGIONS_FILE = "regions.jsonl"
POWER_FILE = "power.csv"
TORCH_HOOKS_ENV = "GPUPROF_TORCH_HOOKS"
ENERGY_ALL, ENERGY_IN_USE = "energy (all devices)", "energy (devices in use)"
__all__ = ["attach", "child_environment", "now_s", "open_meters"]


def child_environment(run_dir: Path, run_id: str, torch_hooks: tuple[str, ...]) -> dict[str, str]:
    """Create ``run_dir/regions.jsonl`` with its header; the variables the command gets."""
    path = run_dir / REGIONS_FILE
    with open(path, "x", encoding="utf-8") as handle:
        handle.write(json.dumps(regions.header(run_id), separators=(",", ":")) + "\n")
    env = {regions.ENV_FILE: str(path.resolve()), regions.ENV_RUN: run_id}
    if torch_hooks:
        package = Path(regions.__file__).resolve().parent
        paths = [str(package / "launch" / "inject"), *filter(None, [os.environ.get("PYTHONPATH")]), str(package.parent)]
        env.update({"PYTHONPATH": os.pathsep.join(paths), TORCH_HOOKS_ENV: ",".join(torch_hooks)})
    return env


def open_meters(wanted: bool, interval: float) -> tuple[PowerSeries | None, list[str]]:
    """The power series for ``--energy`` (None without it, or when no meter is readable: then the
    notes say which meters are missing and why)."""
    if not wanted:
        return None, []
    return open_series(interval)


def _energy_metrics(record: dict[str, Any], start: float, end: float) -> list[Metric]:
    found = energies(record, start, end)
    basis = "over the window from the power series ({})"
    metrics = [
        Metric(f"energy {name}", joules, "joule", None, DERIVED)
        for name, (joules, method) in found["devices"].items()
        if joules is not None
    ]
    metrics.append(Metric(ENERGY_ALL, found["all_j"], "joule", None, DERIVED))
    metrics.append(Metric(ENERGY_IN_USE, found["in_use_j"], "joule", None, DERIVED))
    methods = sorted({method for _, method in found["devices"].values()})
    metrics.append(Metric("energy basis", basis.format(", ".join(methods)), "", None, DERIVED))
    return metrics


def _write_power(record: dict[str, Any], path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(["t_monotonic_s", "device", "in_use", "power_w", "energy_j"])
        for name, trace in record["devices"].items():
            for t, power, energy in zip(trace["t"], trace["power_w"], trace["energy_j"]):
                out.writerow(
                    [
                        f"{t:.6f}",
                        name,
                        trace["in_use"],
                        "" if power is None else f"{power:.6g}",
                        "" if energy is None else f"{energy:.9g}",
                    ]
                )


def _command_energy(record: dict[str, Any], window: tuple[float, float]) -> dict[str, Any]:
    found = energies(record, *window)
    return {
        "all_j": found["all_j"],
        "in_use_j": found["in_use_j"],
        "window_s": list(window),
        "devices": {
            name: {"joules": joules, "method": method, "in_use": record["devices"][name]["in_use"]}
            for name, (joules, method) in found["devices"].items()
        },
    }


def attach(
    run: Run, run_dir: Path, window: tuple[float, float], series: PowerSeries | None, meter_notes: list[str]
) -> Run:
    """``run`` with the regions and the power of the job (module docstring)."""
    notes, environment = [*run.notes, *meter_notes], dict(run.environment)
    record = series.record() if series else None
    if record is not None:
        environment["power"] = record
        environment["energy"] = _command_energy(record, window)
        _write_power(record, run_dir / POWER_FILE)
        notes += [
            f"{name}: {problem}" for name, trace in record["devices"].items() for problem in trace["problems"][:3]
        ]
        idle = [name for name, trace in record["devices"].items() if not trace["in_use"]]
        if idle:
            notes.append(
                f"idle devices (no process of the command on them): {', '.join(idle)}; energy in use leaves them out"
            )
    launches = run.launches
    try:
        found = region_reader.parse(run_dir / REGIONS_FILE, run.run_id, int(window[1] * 1e9))
    except GpuprofError as error:
        notes.append(f"regions not read: {error.problem}")
        found = None
    if found and found.regions:
        first = max((launch.index for launch in launches), default=-1) + 1
        made = region_reader.launches(found, first)
        if record is not None:
            made = [
                Launch(
                    l.kernel,
                    l.index,
                    l.device,
                    l.invocations,
                    l.attributes,
                    [*l.metrics, *_energy_metrics(record, r.begin_ns / 1e9, r.end_ns / 1e9)],
                )  # type: ignore[operator]
                for l, r in zip(made, found.regions)
            ]
        launches = [*launches, *made]
        notes += region_reader.notes(found)
        environment["regions"] = {
            "file": str(run_dir / REGIONS_FILE),
            "instances": len(found.regions),
            "clock": region_reader.CLOCK_BASIS,
            "processes": {str(pid): rank for pid, rank in found.processes.items()},
        }
    return run.replaced(environment=environment, launches=launches, notes=notes)
