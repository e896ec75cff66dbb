"""A GPU run's profiler output, read back into launches: what the profiler measured, kept when it
failed part-way, and checked to be the profiled calls of the op and nothing else.

* counters refused (ERR_NVGPUCTRPERM): no launches, and the note that says how to allow them;
* the profiler wrote no readable profile (``==ERROR== Failed to find metric``, a crash, an empty
  NVTX selection): no launches, one note with its first error line and the log's path; the run keeps
  its CUDA-event times and analytic FLOPs instead of being lost;
* launches read: new :class:`Launch` objects marked ``phase=profiled`` (the reader's Run is left as
  it was), and a check that they are exactly the profiled calls. ncu's ``--nvtx --nvtx-include``
  keeps only kernels launched inside the NVTX range the child opens around each profiled call, and
  nvprof's ``--profile-from-start off`` only those between cudaProfilerStart/Stop; the check
  confirms it on what was read: the launches divide into one identical list of kernels per call and,
  with gpuprof's own kernels, every launch is the expected kernel. When the check fails, the run
  says so and per-call counter values are not derived (``kernels_per_call`` is None).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuprof import readers
from gpuprof.errors import GpuprofError
from gpuprof.launch import profilers
from gpuprof.model import Launch

ERROR_MARK = "==ERROR=="


@dataclass(frozen=True)
class SessionReadback:
    """What the GPU session read back from its profiler: the profiled launches, what the run records
    about the profiler, and notes for the user (a user's own command: gpu_profile.ProfileReadback)."""

    launches: list[Launch]
    environment: dict[str, Any]
    notes: list[str]


def error_lines(text: str) -> list[str]:
    """The profiler's own error lines (ncu prints ``==ERROR== ...``; nvprof ``==<pid>== Error: ...``)."""
    return [
        line.strip()
        for line in text.splitlines()
        if ERROR_MARK in line or (line.startswith("==") and "== Error" in line)
    ]


def profiler_text(log: Path, run_dir: Path) -> str:
    """The profiler's log and the run's stderr, where its errors appear."""
    return "\n".join(path.read_text(errors="replace") for path in (log, run_dir / "stderr.txt") if path.is_file())


def failed(name: str, why: str, log: Path) -> SessionReadback:
    return SessionReadback(
        [],
        {"profiler_outcome": f"failed: {why}"},
        [f"{name} measured nothing usable ({why}), so time is from CUDA events and FLOPs are analytic; see {log}"],
    )


def collect(
    module: profilers.ProfilerBackend,
    exe: str,
    options: profilers.ProfileOptions,
    run_dir: Path,
    first_index: int,
    calls: int,
    expected_kernel: str | None,
) -> SessionReadback:
    """Read the profiler's log back (see the module docstring)."""
    log = module.log_path(run_dir, options)
    text = profiler_text(log, run_dir)
    if profilers.counters_refused(text):
        return SessionReadback(
            [], {"profiler_outcome": "counters refused (ERR_NVGPUCTRPERM)"}, [profilers.PERMISSION_NOTE]
        )
    errors = error_lines(text)
    try:
        profile = readers.read(log)
    except GpuprofError as error:
        return failed(module.NAME, errors[0] if errors else f"its output could not be read: {error.problem}", log)
    if not profile.launches:
        return failed(module.NAME, errors[0] if errors else "it profiled no kernel", log)
    launches = [
        Launch(
            launch.kernel,
            first_index + offset,
            launch.device,
            launch.invocations,
            {**launch.attributes, "phase": "profiled", "reader": profile.format},
            launch.metrics,
        )
        for offset, launch in enumerate(profile.launches)
    ]
    per_call, check = check_calls(launches, calls, expected_kernel)
    counts, source = module.passes(launches, text)
    notes = module.notes(options, exe)
    if per_call is None:
        notes.append(
            f"profiled launches not attributable to the {calls} call(s) inside NVTX range "
            f"{options.nvtx_range} ({check}), so no per-call counter values are reported"
        )
    if errors:
        notes.append(f"{module.NAME} reported: {errors[0]}")
    return SessionReadback(
        launches,
        {
            "profiler_outcome": "counters collected",
            "replay_passes": counts,
            "replay_passes_source": source,
            "nvtx_check": check,
            "kernels_per_call": per_call,
        },
        notes,
    )


def check_calls(launches: list[Launch], calls: int, expected_kernel: str | None) -> tuple[int | None, str]:
    """(kernel launches per profiled call, what the check found); None when the launches read are
    not ``calls`` identical calls. A launch with ``invocations > 1`` is nvprof's aggregate of one
    kernel over the calls, so each such count must be a multiple of ``calls``."""
    total = sum(launch.invocations for launch in launches)
    if calls < 1 or not launches or total % calls:
        return None, f"{total} kernel launch(es) read for {calls} profiled call(s), not a whole number per call"
    if any(launch.invocations % calls for launch in launches if launch.invocations > 1):
        return None, f"a kernel ran a number of times that is not a multiple of the {calls} calls"
    singles = [launch.kernel for launch in launches if launch.invocations == 1]
    per = len(singles) // calls
    if singles and singles != singles[:per] * calls:
        return None, "the calls did not launch the same kernels in the same order"
    stray = [launch.kernel for launch in launches if expected_kernel and expected_kernel not in launch.kernel]
    if stray:
        return None, f"launch of {stray[0][:80]} is not the op's kernel {expected_kernel}"
    return total // calls, f"passed: {total} launch(es) = {calls} call(s) x {total // calls} kernel(s)"
