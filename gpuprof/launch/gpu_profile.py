"""What ncu or nvprof recorded for a user's command (``gpuprof profile``), read back with gpuprof's
readers and grouped by process, with everything the profiler said about what went wrong.

Nothing here decides what is an error: :class:`ProfileReadback` says what was found (launches per process,
counters refused, no kernel matched, the application's exit code, the profiler's error lines) and
:mod:`gpuprof.profile` turns that into runs and one line for the user. A log that cannot be read
leaves no launches and a note, never an exception: a partial report is read as far as it goes.

* ncu with ``--target-processes all`` writes one raw page for every process; each row names its
  process (``Process ID``), so launches are grouped by that.
* nvprof with ``--profile-child-processes`` writes one log per process (``nvprof.<pid>.csv``). Its
  metric mode reports no durations, so the kernel times come from the ``--print-gpu-trace`` run of
  the same command: per kernel name, the mean duration over its traced launches (origin measured,
  Min/Max kept), added to the metric run's row for that kernel. The two runs are two executions with
  different process IDs, so the traced durations are pooled over all traced processes by kernel name.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from gpuprof import readers
from gpuprof.errors import GpuprofError
from gpuprof.launch import gpu_readback, ncu, nvprof, process, profilers
from gpuprof.model import MEASURED, Launch, Metric

NO_KERNELS = "No kernels were profiled"
_APP_CODE = re.compile(r"The application returned an error code \((-?\d+)\)")
_AVAILABLE = re.compile(r"^\s*+\d++\.\s++(\S(?:.*\S)?)\s*$")
_PID = re.compile(r"\.(\d+)\.csv$")
TRACE_SOURCE = "nvprof --print-gpu-trace (a second run of the command, without counters)"


@dataclass(frozen=True)
class ProfileReadback:
    """What the profiler's files hold (see the module docstring)."""

    processes: dict[str, list[Launch]]  # process ID ("" when not named) -> its launches
    reader: str = ""  # the format gpuprof's readers found
    refused: bool = False  # ERR_NVGPUCTRPERM
    no_kernels: bool = False  # the profiler said no kernel was profiled
    available: list[str] = field(default_factory=list)  # kernels ncu saw when none matched
    app_code: int | None = None  # the application's exit code, as the profiler reported it
    errors: list[str] = field(default_factory=list)  # the profiler's own error lines
    passes: list[int] = field(default_factory=list)
    passes_source: str = "not reported"
    notes: list[str] = field(default_factory=list)

    @property
    def launches(self) -> int:
        return sum(len(found) for found in self.processes.values())


def _read(path: Path) -> tuple[list[Launch], str, str | None]:
    """(launches, format, why nothing was read) of one profiler log."""
    if not path.is_file():
        return [], "", f"{path.name} was not written"
    try:
        run = readers.read(path)
    except GpuprofError as error:
        return [], "", error.problem
    return run.launches, run.format, None


def _available(text: str) -> list[str]:
    """The kernel names ncu lists under 'Available Kernels:' when its filters matched none."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == "Available Kernels:"]
    if not starts:
        return []
    found = []
    for line in lines[starts[-1] + 1 :]:
        match = _AVAILABLE.match(line)
        if not match:
            break
        found.append(match.group(1))
    return found


def _common(text: str) -> dict[str, object]:
    """What every profiler's text says, whatever was read: refusal, no kernels, the app's exit code."""
    code = _APP_CODE.findall(text)
    return {
        "refused": profilers.counters_refused(text),
        "no_kernels": NO_KERNELS in text,
        "available": _available(text),
        "app_code": int(code[-1]) if code else None,
        "errors": gpu_readback.error_lines(text),
    }


def read_ncu(run_dir: Path) -> ProfileReadback:
    """ncu's raw page in ``run_dir``, grouped by process."""
    log = ncu.log_path(run_dir)
    text = gpu_readback.profiler_text(log, run_dir)
    launches, reader, why = _read(log)
    processes: dict[str, list[Launch]] = {}
    for launch in launches:
        processes.setdefault(launch.attributes.get("pid", ""), []).append(launch)
    passes, source = ncu.passes(launches, text)
    notes = [f"ncu's log could not be read ({why}); see {log}"] if why and NO_KERNELS not in text else []
    return ProfileReadback(processes, reader, passes=passes, passes_source=source, notes=notes, **_common(text))  # type: ignore[arg-type]


def _logs(run_dir: Path, single: str, per_process: str) -> dict[str, Path]:
    """Process ID -> log: one per process (``name.<pid>.csv``), or the one log ("" -> it); {} when none was written."""
    pattern = per_process.replace("%p", "*")
    found = {match.group(1): path for path in sorted(run_dir.glob(pattern)) if (match := _PID.search(path.name))}
    return found or ({"": run_dir / single} if (run_dir / single).is_file() else {})


def with_durations(launches: list[Launch], traced: list[Launch]) -> tuple[list[Launch], list[str]]:
    """The metric run's launches with each kernel's traced duration added (module docstring), and
    the kernels no traced launch matched."""
    durations: dict[str, list[float]] = {}
    for launch in traced:
        value = launch.value("kernel_duration")
        if launch.attributes.get("kind", "kernel") == "kernel" and isinstance(value, (int, float)):
            durations.setdefault(launch.kernel, []).append(float(value))
    out, unmatched = [], []
    for launch in launches:
        times = durations.get(launch.kernel)
        if not times or launch.value("kernel_duration") is not None:
            unmatched += [launch.kernel] if not times else []
            out.append(launch)
            continue
        duration = Metric(
            "Duration", statistics.fmean(times), "second", "kernel_duration", MEASURED, min(times), max(times)
        )
        out.append(
            Launch(
                launch.kernel,
                launch.index,
                launch.device,
                launch.invocations,
                {**launch.attributes, "duration_from": TRACE_SOURCE, "traced_launches": str(len(times))},
                [*launch.metrics, duration],
            )
        )
    return out, unmatched


def read_nvprof(run_dir: Path, traced: bool) -> ProfileReadback:
    """nvprof's metric log(s) in ``run_dir``, one per process, with durations from the trace run."""
    logs = _logs(run_dir, nvprof.LOG_NAME, nvprof.PER_PROCESS)
    traces = _logs(run_dir, nvprof.TRACE_NAME, nvprof.TRACE_PER_PROCESS) if traced else {}
    traced_launches = [launch for trace in traces.values() for launch in _read(trace)[0]]
    processes: dict[str, list[Launch]] = {}
    reader = ""
    notes = [] if logs else [f"nvprof wrote no metric log ({nvprof.PER_PROCESS} or {nvprof.LOG_NAME} in {run_dir})"]
    for pid, log in logs.items():
        launches, fmt, why = _read(log)
        reader = reader or fmt
        if why:
            notes.append(f"nvprof's log {log.name} could not be read ({why})")
        if traced and launches:
            launches, unmatched = with_durations(launches, traced_launches)
            if unmatched:
                notes.append(
                    f"no duration in the trace run for {len(unmatched)} kernel(s) "
                    f"({unmatched[0][:60]} ...): FLOP/s not derived for them"
                )
        if launches:
            processes[pid] = launches
    text = "\n".join(
        path.read_text(errors="replace") for path in (*logs.values(), run_dir / process.STDERR) if path.is_file()
    )
    return ProfileReadback(processes, reader, notes=notes, passes_source="not reported by nvprof", **_common(text))  # type: ignore[arg-type]
