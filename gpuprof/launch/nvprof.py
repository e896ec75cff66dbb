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

For a user's command (``gpuprof profile``) there are no such events, so a metric set that needs
durations runs the command twice, as the study did: first ``--csv --print-gpu-trace`` ("GPU-Trace
and API-Trace Modes"), which times every kernel without counters, then the metric run. The metric
run profiles from the start (the command has no ``cudaProfilerStart``) and adds, where asked:

* ``--kernels ::<re>:`` ("Profiling Scope", placed before ``--metrics``, whose scope it sets): only
  kernels whose name matches the regular expression, in any context, stream and invocation;
* ``--profile-child-processes`` ("Multiprocess Profiling") with ``%p`` in the log name
  ("Redirecting Output": replaced by each process's ID), so every process writes its own log.

nvprof has no NVTX filter and no launch skip or count.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuprof.launch import profilers
from gpuprof.launch.profilers import ProfileOptions
from gpuprof.model import Launch, catalog

NAME = "nvprof"
LOG_NAME = "nvprof.csv"
PER_PROCESS = "nvprof.%p.csv"  # nvprof puts each process's ID in place of %p
TRACE_NAME, TRACE_PER_PROCESS = "trace.csv", "trace.%p.csv"
_LISTED = r"^\s*([a-z][a-z0-9_]*):\s"


def metrics(keys: tuple[str, ...] | None = None) -> list[str]:
    """The ``--metrics`` list: the nvprof names of the catalog entries ``keys`` (all by default; trace
    column names such as Duration left out)."""
    return catalog.nvprof_metrics(keys)


def offered(exe: str) -> frozenset[str] | None:
    """Metric names ``nvprof --query-metrics`` lists for this machine's GPU; None when it lists none."""
    return profilers.listed((exe, "--query-metrics"), _LISTED)


def to_collect(
    exe: str, keys: tuple[str, ...] | None = None, cc: tuple[int, int] | None = None
) -> tuple[list[str], list[str]]:
    """(the metrics of catalog entries ``keys`` this GPU offers, those it does not); nvprof lists them for
    the GPU it runs on, so ``cc`` is not needed."""
    return profilers.split_offered(metrics(keys), offered(exe))


def log_path(run_dir: Path, options: ProfileOptions | None = None) -> Path:
    """The metric log; a name with ``%p`` (one file per process) when child processes are profiled."""
    per_process = options is not None and options.target_processes == "all"
    return run_dir / (PER_PROCESS if per_process else LOG_NAME)


def _processes(options: ProfileOptions) -> list[str]:
    return ["--profile-child-processes"] if options.target_processes == "all" else []


def command(exe: str, child: list[str], run_dir: Path, options: ProfileOptions) -> list[str]:
    """The exact nvprof argv for one sweep point or one user command (module docstring)."""
    collect, _ = to_collect(exe, options.metrics)
    return [
        exe,
        *(["--profile-from-start", "off"] if not options.from_start else []),
        *_processes(options),
        "--csv",
        "--log-file",
        str(log_path(run_dir, options)),
        *(["--kernels", f"::{options.kernel}:"] if options.kernel else []),
        "--metrics",
        ",".join(collect),
        "--replay-mode",
        options.replay_mode,
        *child,
    ]


def trace_command(exe: str, child: list[str], run_dir: Path, options: ProfileOptions) -> list[str]:
    """nvprof timing every kernel of ``child`` without counters (``--print-gpu-trace``): the
    durations its metric mode does not report."""
    per_process = options.target_processes == "all"
    log = run_dir / (TRACE_PER_PROCESS if per_process else TRACE_NAME)
    return [exe, *_processes(options), "--csv", "--print-gpu-trace", "--log-file", str(log), *child]


def passes(launches: list[Launch], log_text: str) -> tuple[list[int], str]:
    return [], "not reported by nvprof"


def settings(options: ProfileOptions) -> dict[str, Any]:
    return {
        "clock_control": "not controlled (nvprof has no clock option)",
        "cache_control": "not controlled (nvprof has no cache option)",
        "replay_mode": options.replay_mode,
    }


def lacking(options: ProfileOptions, exe: str) -> list[str]:
    """One note naming the metrics asked for that this GPU does not offer, if any."""
    _, missing = to_collect(exe, options.metrics)
    return [f"nvprof on this GPU does not offer: {', '.join(missing)}"] if missing else []


def notes(options: ProfileOptions, exe: str) -> list[str]:
    return [
        "nvprof: kernel time from CUDA events around unprofiled launches (nvprof's metric mode "
        "reports no durations); counters from the profiled launches, clocks as the driver set them",
        *lacking(options, exe),
    ]
