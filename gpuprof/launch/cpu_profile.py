"""A user's command on the CPU (``gpuprof profile --device cpu``): ``perf stat`` with the FP events
and Top-Down level 1 around it, as far as this machine allows, and its wall time.

perf runs the command itself (``perf stat -o perf.txt -e EVENTS [-M GROUP] -- CMD``), so it counts
the command and every process it starts, from start to exit. Which events can be counted is asked
first (:func:`gpuprof.launch.perf.probe`: ``perf stat -e EVENTS -- true``); in a VM without a PMU only
the software events remain and one note says so. Top-Down level 1 (``TopdownL1`` on Intel,
``PipelineL1`` on AMD) needs the core PMU; its metric group is tried with ``perf stat -M GROUP --
true`` before it is asked for. perf writes its human form (the Top-Down lines need it), read back
with the ``perf-stat`` and ``perf-topdown`` readers. The command runs with the environment as given
(no ``LC_ALL``): the readers follow perf's locale. Without perf the command is only timed.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from gpuprof.devices import cpu
from gpuprof.errors import FormatError
from gpuprof.launch import perf
from gpuprof.launch.process import Finished
from gpuprof.launch.topdown import METRIC_GROUP
from gpuprof.model import TIMED, Metric
from gpuprof.readers import perf_stat, perf_topdown

OUTPUT = "perf.txt"
NOT_COUNTED = "FLOPs are not counted"
_TRIAL_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class CpuPlan:
    """What perf can count around the command here, and one note for each thing it cannot."""

    perf: str | None  # perf's path; None: the command is only timed
    version: str | None = None
    events: tuple[str, ...] = ()
    topdown: str | None = None  # the Top-Down level-1 metric group, when the PMU allows it
    notes: tuple[str, ...] = ()

    def command(self, cmd: list[str], run_dir: Path) -> list[str]:
        """``perf stat ... -- CMD`` (a list: no shell), or CMD alone without perf."""
        if self.perf is None:
            return list(cmd)
        group = ["-M", self.topdown] if self.topdown else []
        return [self.perf, "stat", "-o", str(run_dir / OUTPUT), "-e", ",".join(self.events), *group, "--", *cmd]


def _topdown(perf_path: str, found: perf.PerfProbe, vendor: str) -> tuple[str | None, str | None]:
    """(the Top-Down group perf accepts here, or None and why not)."""
    if not set(perf.HARDWARE) <= set(found.usable):
        return None, (
            "Top-Down level 1 not counted: it needs the core PMU, which this machine does not expose "
            f"({', '.join(perf.HARDWARE)} not countable)"
        )
    group = METRIC_GROUP.get(vendor)
    if group is None:
        return None, f"Top-Down level 1 not counted: no metric group known for CPU vendor '{vendor or 'unknown'}'"
    try:
        trial = subprocess.run(
            [perf_path, "stat", "-M", group, "--", "true"],
            capture_output=True,
            text=True,
            timeout=_TRIAL_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return None, f"Top-Down level 1 not counted: perf stat -M {group} could not run ({error})"
    if trial.returncode != 0:
        lines = [line.strip() for line in trial.stderr.splitlines() if line.strip()]
        return (
            None,
            f"Top-Down level 1 not counted: perf stat -M {group} failed ({lines[0] if lines else 'no message'})",
        )
    return group, None


def plan_cpu() -> CpuPlan:
    """What to count around the command on this machine."""
    info = cpu.describe()
    vendor = str(info.get("vendor") or "")
    found = perf.probe(perf.default_events(vendor))
    reason = found.reason(in_vm=bool(info.get("hypervisor")), consequence=NOT_COUNTED)
    notes = [reason] if reason else []
    if found.perf is None or not found.usable:
        return CpuPlan(None, notes=(*notes, "the command is only timed"))
    group, why = _topdown(found.perf, found, vendor)
    return CpuPlan(found.perf, found.version, found.usable, group, tuple(notes + ([why] if why else [])))


def counted(plan: CpuPlan, run_dir: Path, finished: Finished) -> tuple[list[Metric], list[str]]:
    """The command's wall time (timed) and what perf counted (measured), with perf's own notes."""
    metrics = [Metric("wall time", finished.seconds, "second", None, TIMED)]
    output = run_dir / OUTPUT
    if plan.perf is None:
        return metrics, []
    if not output.is_file() or not output.read_text(errors="replace").strip():
        return metrics, [f"perf wrote no counts ({output} is missing or empty)"]
    stat = perf_stat.parse(output.read_text(errors="replace"))
    for launch in perf_stat.launches(stat, "command"):
        metrics += launch.metrics
    notes = perf_stat.notes(stat)
    if plan.topdown:
        try:
            levels = perf_topdown.read(output)
        except FormatError as error:
            notes.append(f"Top-Down level 1 not read: {error.problem}")
        else:
            names = {m.name for m in metrics}
            metrics += [m for launch in levels.launches for m in launch.metrics if m.name not in names]
    return metrics, notes
