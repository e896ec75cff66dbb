"""nvprof backend (compute capability below 8.0): one profiler process per sweep point.

The command, checked against the CUDA Profiler User's Guide
(https://docs.nvidia.com/cuda/profiler-users-guide/index.html, "nvprof" chapter):

* ``--profile-from-start off`` ("Focused Profiling"): collect only between the child's
  ``cudaProfilerStart()``/``cudaProfilerStop()``, which bracket the profiled launches; nvprof has
  no NVTX filter, so this is how warm-up and event-timed launches stay out.
* ``--csv --log-file <dir>/nvprof.csv`` ("CSV", "Redirecting Output"): the metric table in the
  layout the ``nvprof-csv-metrics`` reader reads.
* ``--metrics a,b,...`` ("Event/metric Summary Mode"): the catalog's nvprof metrics that this
  GPU offers (``nvprof --query-metrics``), one row per kernel and metric with Min/Max/Avg over the
  profiled invocations.
* ``--replay-mode kernel|application``: how nvprof replays kernels when the metrics need several
  passes.

Why one run and not the study's two: nvprof's metric modes (summary, or per launch with
``--print-gpu-trace``) report counter values but no kernel durations, which in metric mode are
distorted by replay. gpuprof takes the time from CUDA events around unprofiled launches in the same
process, so one nvprof run gives both. nvprof has no clock or cache control options; clocks are
whatever the driver sets (recorded from NVML).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gpuprof import catalog
from gpuprof.launch import profilers
from gpuprof.launch.profilers import ProfileOptions
from gpuprof.model import Launch

NAME = "nvprof"
LOG_NAME = "nvprof.csv"
_NVPROF_METRIC = re.compile(r"^[a-z][a-z0-9_]*$")
_LISTED = r"^\s*([a-z][a-z0-9_]*):\s"


def wanted_metrics() -> list[str]:
    """Every nvprof metric name in the catalog (trace column names such as Duration left out)."""
    names: list[str] = []
    for entry in catalog.entries().values():
        names += [n for n in entry.nvprof if _NVPROF_METRIC.match(n) and n not in names]
    return names


def offered(exe: str) -> frozenset[str] | None:
    """Metric names ``nvprof --query-metrics`` lists for this machine's GPU; None when it lists none."""
    return profilers.listed((exe, "--query-metrics"), _LISTED)


def metrics(exe: str) -> tuple[list[str], list[str]]:
    """(metrics to collect, catalog metrics this GPU does not offer)."""
    return profilers.split_offered(wanted_metrics(), offered(exe))


def log_path(run_dir: Path) -> Path:
    return run_dir / LOG_NAME


def command(exe: str, child: list[str], run_dir: Path, options: ProfileOptions) -> list[str]:
    """The exact nvprof argv for one sweep point (options documented in the module docstring)."""
    collect, _ = metrics(exe)
    return [
        exe,
        "--profile-from-start", "off",
        "--csv", "--log-file", str(log_path(run_dir)),
        "--metrics", ",".join(collect),
        "--replay-mode", options.replay_mode,
        *child,
    ]


def passes(launches: list[Launch], log_text: str) -> tuple[list[int], str]:
    return [], "not reported by nvprof"


def settings(options: ProfileOptions) -> dict[str, Any]:
    return {"clock_control": "not controlled (nvprof has no clock option)",
            "cache_control": "not controlled (nvprof has no cache option)",
            "replay_mode": options.replay_mode}


def notes(options: ProfileOptions, exe: str) -> list[str]:
    out = ["nvprof: kernel time from CUDA events around unprofiled launches (nvprof's metric mode "
           "reports no durations); counters from the profiled launches, clocks as the driver set them"]
    _, missing = metrics(exe)
    if missing:
        out.append(f"nvprof on this GPU does not offer: {', '.join(missing)}")
    return out
