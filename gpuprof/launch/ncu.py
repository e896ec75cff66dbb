"""Nsight Compute (``ncu``) backend: one profiler process per sweep point collects everything.

The command (every option checked against the Nsight Compute CLI documentation, v2026.1,
https://docs.nvidia.com/nsight-compute/NsightComputeCli/index.html):

* ``--nvtx --nvtx-include "<range>"`` (section "NVTX Filtering"): profile only kernels inside the
  start/end range the workload child opens around each profiled launch (a name without a trailing
  ``/`` is a start/end range of the default domain). A start/end range is a process range: it holds
  kernels launched from any thread, where a push/pop range holds only those of the thread that
  pushed it, and XLA or TorchInductor may launch from worker threads (NVIDIA's nsight-python moved to
  start/end ranges for this reason). ``gpuprof profile --nvtx`` selects a user's push/pop range,
  ``"<range>/"`` (trailing ``/``). Warm-up and event-timed launches run outside either.
* ``--metrics a,b,...`` (section "Profile"): the catalog's ncu metrics (time, FLOP counters, DRAM
  bytes, clocks, FMA-pipe ceilings, efficiencies, warp-stall percentages) that this GPU offers; only
  these are collected, no sections. What the GPU offers comes from ``ncu --devices 0
  --query-metrics`` (section "General": it lists the base names, without the ``.sum``/``.avg``/
  ``.pct`` suffixes, for the chip of CUDA device 0, the device the workload child uses), else from
  ``--query-metrics --chips <chip>`` for the GPU's compute capability, else from a list shipped per
  chip, cached per ncu across processes (:mod:`gpuprof.launch.ncu_metrics`); a metric whose base name
  is not listed is left out and named in the run's notes, because ncu refuses the whole run for one
  unknown name (``==ERROR== Failed to find metric``).
* ``--clock-control base|none`` ("Profile"): ``base`` locks GPC and memory clocks to base during
  profiling. gpuprof always passes it explicitly, because the default changed (``base`` in ncu
  2019-2025, ``boost`` in 2026.1), and the Run records which one was used.
* ``--cache-control all|none`` ("Profile"): ``all`` flushes GPU caches before each replay pass.
* ``--replay-mode kernel|application`` ("Profile"): replay each kernel, or rerun the application.
* ``--export <dir>/report --force-overwrite`` ("File"): keep the ``.ncu-rep`` in the run folder.
* ``gpuprof profile`` adds, for a user's command ("Filter", "Launch"): ``--kernel-name regex:<re>
  --kernel-name-base demangled`` (match the regular expression against the demangled name, the one
  gpuprof prints; the default base, ``function``, is the bare function name), ``--launch-skip N`` and
  ``--launch-count N`` (counted over the launches the other filters keep), and ``--target-processes
  all`` (also profile the processes the command starts: MPI ranks, Python workers; every launch row
  of the raw page then names its process).
* ``--csv --page raw --log-file <dir>/ncu.csv`` ("Output Pages", "Console Output", "File"): with
  ``--export`` ncu prints nothing unless a page is named; the raw page has one row per kernel with
  every collected metric plus the automatically collected device attributes (clock rates, SM
  count), launch settings and ``profiler__replayer_passes``; ``--csv`` implies
  ``--print-units base``. The ``ncu-raw`` reader reads it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gpuprof.launch import ncu_metrics, profilers
from gpuprof.launch.profilers import ProfileOptions
from gpuprof.model import Launch, catalog

NAME = "ncu"
LOG_NAME = "ncu.csv"
REPORT_STEM = "report"  # ncu appends .ncu-rep
_PASSES = re.compile(r"^==PROF== Profiling .* - (\d+) passes?\s*$", re.MULTILINE)
# ncu's NVTX filter quantifiers; a literal one inside a range name is escaped with '\'.
_QUANTIFIERS = re.compile(r"([@,\[\]/*+\\])")
_LISTED = ncu_metrics.LISTED
CLOCK_TEXT = {
    "base": "ncu --clock-control base: GPC and memory clocks locked to their base frequency while "
    "profiling, so counter-derived rates are at base clock, below boost; use "
    "--clock-control none to profile at the clocks the application gets",
    "none": "ncu --clock-control none: clocks left to the driver (boost and throttling as usual)",
}


def metrics(keys: tuple[str, ...] | None = None) -> list[str]:
    """The ``--metrics`` list: the ncu names of the catalog entries ``keys`` (all by default)."""
    return catalog.ncu_metrics() if keys is None else catalog.ncu_metrics_of(keys)


def offered(exe: str, cc: tuple[int, int] | None = None) -> frozenset[str] | None:
    """Base metric names ncu offers for a GPU of compute capability ``cc``; None when nothing says."""
    return ncu_metrics.query(exe, cc).names


def base_name(metric: str) -> str:
    """``smsp__cycles_elapsed.avg.per_second`` -> ``smsp__cycles_elapsed``, as --query-metrics lists it."""
    return metric.split(".", 1)[0]


def to_collect(
    exe: str, keys: tuple[str, ...] | None = None, cc: tuple[int, int] | None = None
) -> tuple[list[str], list[str]]:
    """(the metrics of catalog entries ``keys`` this GPU offers, those it does not)."""
    return profilers.split_offered(metrics(keys), offered(exe, cc), base_name)


def nvtx_filter(range_name: str, start_end: bool = False) -> str:
    """The ``--nvtx-include`` expression for a push/pop (or start/end) range of the default domain."""
    return _QUANTIFIERS.sub(r"\\\1", range_name) + ("" if start_end else "/")


def log_path(run_dir: Path, options: ProfileOptions | None = None) -> Path:
    """The metric log (one file whatever the options: ncu writes every process's launches to it)."""
    return run_dir / LOG_NAME


def filters(options: ProfileOptions) -> list[str]:
    """The options that choose which launches ncu profiles (NVTX range, kernel name, skip, count, processes)."""
    argv = (
        ["--nvtx", "--nvtx-include", nvtx_filter(options.nvtx_range, options.nvtx_start_end)]
        if options.nvtx_range
        else []
    )
    if options.kernel:
        argv += ["--kernel-name", f"regex:{options.kernel}", "--kernel-name-base", "demangled"]
    if options.launch_skip:
        argv += ["--launch-skip", str(options.launch_skip)]
    if options.launch_count is not None:
        argv += ["--launch-count", str(options.launch_count)]
    if options.target_processes:
        argv += ["--target-processes", options.target_processes]
    return argv


def command(exe: str, child: list[str], run_dir: Path, options: ProfileOptions) -> list[str]:
    """The exact ncu argv for one sweep point or one user command (options documented in the module
    docstring)."""
    return [
        exe,
        *filters(options),
        "--metrics",
        ",".join(to_collect(exe, options.metrics, options.cc)[0]),
        "--clock-control",
        options.clock_control,
        "--cache-control",
        options.cache_control,
        "--replay-mode",
        options.replay_mode,
        "--export",
        str(run_dir / REPORT_STEM),
        "--force-overwrite",
        "--csv",
        "--page",
        "raw",
        "--log-file",
        str(log_path(run_dir)),
        *child,
    ]


def passes(launches: list[Launch], log_text: str) -> tuple[list[int], str]:
    """Replay passes per profiled kernel and where the count came from: the raw page's
    ``profiler__replayer_passes``, else the console log's ``==PROF== Profiling ... - N passes``."""
    counts = [
        int(v)
        for v in (launch.value("profiler__replayer_passes") for launch in launches)
        if isinstance(v, (int, float))
    ]
    if counts:
        return counts, "profiler__replayer_passes (ncu raw page)"
    found = [int(n) for n in _PASSES.findall(log_text)]
    return found, "ncu console log" if found else "not reported"


def settings(options: ProfileOptions) -> dict[str, Any]:
    return {
        "clock_control": options.clock_control,
        "clock_control_text": CLOCK_TEXT[options.clock_control],
        "cache_control": options.cache_control,
        "replay_mode": options.replay_mode,
        "nvtx_include": nvtx_filter(options.nvtx_range, options.nvtx_start_end) if options.nvtx_range else None,
        "page": "raw",
    }


def notes(options: ProfileOptions, exe: str) -> list[str]:
    _, missing = to_collect(exe, options.metrics, options.cc)
    lacking = [f"ncu on this GPU does not offer: {', '.join(missing)} (left out of --metrics)"] if missing else []
    return [CLOCK_TEXT[options.clock_control], ncu_metrics.query(exe, options.cc).described, *lacking]
