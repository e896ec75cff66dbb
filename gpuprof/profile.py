"""``gpuprof profile -- CMD``: any program under a profiler, read back with gpuprof's readers and
kept as runs of kind "profile".

Two calls, so the plan is shown before anything runs (and ``--dry-run`` can stop there):

* :func:`plan` picks the device (a GPU NVML reports, else the CPU) and the profiler (ncu from compute
  capability 7.0, nvprof below, as ``gpuprof run`` does), builds the exact profiler command lines with
  the same builders ``gpuprof run`` uses and the smallest metric set for the question
  (``gpuprof/data/metric_sets.toml``), and says what to expect: the replay passes and the time per
  profiled launch this store measured before for the same GPU, profiler and set, and a warning when
  no filter limits the launches. It runs nothing but the profilers' own queries and creates nothing.
* :func:`execute` runs the plan in ``reports/<run-id>/`` as one process group, reads what the
  profiler wrote (:mod:`gpuprof.launch.gpu_profile`, :mod:`gpuprof.launch.cpu_profile`), and returns
  the runs (one per process, or one merged) together with the one problem to report, if any. The runs
  are returned whatever went wrong: a partial report is read as far as it goes and stored.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import re
import shlex
import shutil
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuprof import counting
from gpuprof.derive.region_counters import counts_from_intervals, interval_basis
from gpuprof.devices import cpu, gpu_detect
from gpuprof.errors import CommandFailed, DeviceError, GpuprofError, InputError, Interrupted, ProfilerError
from gpuprof.launch import counter_sets, gpu_profile, interval_counters, job, nvprof, process, profilers
from gpuprof.launch.cpu_profile import counted, plan_cpu
from gpuprof.launch.gpu_session import DEFAULT_TIMEOUT_S, device_record
from gpuprof.launch.interval_counters import IntervalCounting
from gpuprof.model import DERIVED, PROFILE, TIMED, Launch, Metric, Run, catalog
from gpuprof.store import default_path, open_store

if TYPE_CHECKING:
    from gpuprof.devices.gpu_detect import GpuInfo
    from gpuprof.energy.series import PowerSeries
    from gpuprof.launch.cpu_profile import CpuPlan
    from gpuprof.launch.gpu_profile import ProfileReadback

KIND = PROFILE
DEVICES = ("auto", "cuda", "cpu")
PROCESSES = ("split", "merge")
TRACE_PREFIX = "trace-"
TORCH_HOOKS = ("steps", "layers")  # gpuprof.regions_torch.KINDS
WALL_BASIS = "time.perf_counter_ns around the profiler process (the command under the profiler, replays included)"


@dataclass(frozen=True)
class ProfileSettings:
    """What ``gpuprof profile`` was asked to do, validated."""

    command: tuple[str, ...]
    metric_set: str = "roofline"
    kernel: str | None = None
    nvtx: str | None = None
    launch_skip: int = 0
    launch_count: int | None = None
    device: str = "auto"
    profiler: str = "auto"
    processes: str = "split"
    clock_control: str = "base"
    timeout: float = DEFAULT_TIMEOUT_S
    torch_hooks: tuple[str, ...] = ("steps",)  # global PyTorch hooks installed in the program
    energy: bool = False  # sample RAPL and NVML in the parent while the command runs
    interval: float = 0.5  # seconds between power samples
    label: str | None = None  # the set-up's name for compare --scaling ("1gpu", "ddp2")
    devices: int | None = None  # devices the set-up uses (x in E = S / x)
    counters: str = ""  # CPU counter sets read at every region's begin and end ("mix,topdown")
    counter_interval: float = 0.1  # perf stat -I's interval, where the counters fall back to it
    reports_dir: Path = Path("reports")
    command_line: str = ""  # gpuprof's own command line, for the run's provenance

    def __post_init__(self) -> None:
        if not self.command:
            raise InputError("no command to profile", "give it after '--': gpuprof profile -- python train.py")
        if self.metric_set not in catalog.metric_sets():
            raise InputError(
                f"unknown metric set '{self.metric_set}'", f"choose one of: {', '.join(catalog.metric_sets())}"
            )
        for name, value, allowed in (("--device", self.device, DEVICES), ("--processes", self.processes, PROCESSES)):
            if value not in allowed:
                raise InputError(f"{name} '{value}' is not supported", f"choose one of: {', '.join(allowed)}")
        if self.launch_skip < 0 or (self.launch_count is not None and self.launch_count < 1):
            raise InputError(
                "--launch-skip must be 0 or more and --launch-count 1 or more", "e.g. --launch-skip 10 --launch-count 5"
            )
        unknown = [kind for kind in self.torch_hooks if kind not in TORCH_HOOKS]
        if unknown:
            raise InputError(
                f"--torch-hooks {','.join(unknown)} is not a hook kind",
                f"give none, or one or more of {', '.join(TORCH_HOOKS)} separated by commas",
            )
        if self.devices is not None and self.devices < 1:
            raise InputError(
                "--devices must be 1 or more", "give the number of devices the set-up uses, e.g. --devices 2"
            )
        if self.interval <= 0:
            raise InputError("--interval must be positive", "e.g. --interval 0.5s")
        if self.counter_interval < interval_counters.MINIMUM_S:
            raise InputError(
                "--counter-interval must be 10 ms or more (perf stat -I's least)", "e.g. --counter-interval 100ms"
            )
        if self.timeout <= 0:
            raise InputError("--timeout must be positive", "give a number of seconds, e.g. 600")
        if self.kernel is not None:
            try:
                re.compile(self.kernel)
            except re.error as error:
                raise InputError(
                    f"--kernel '{self.kernel}' is not a regular expression ({error})", "e.g. --kernel 'gemm|conv'"
                ) from None

    @property
    def filters(self) -> dict[str, Any]:
        """The launch filters given, by option name."""
        given = {
            "--kernel": self.kernel,
            "--nvtx": self.nvtx,
            "--launch-skip": self.launch_skip or None,
            "--launch-count": self.launch_count,
        }
        return {name: value for name, value in given.items() if value is not None}


@dataclass(frozen=True)
class Step:
    """One process to run: the profiler around the command (or a second nvprof run for durations)."""

    argv: list[str]
    prefix: str = ""  # of its stdout/stderr files in the run folder


@dataclass(frozen=True)
class ProfilePlan:
    """Everything :func:`execute` needs, and what the user is told before it runs."""

    settings: ProfileSettings
    device: str  # "cuda" or "cpu"
    run_id: str
    run_dir: Path
    steps: tuple[Step, ...]
    before: tuple[str, ...]  # what will happen and what to expect
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # stored with the runs
    gpu: GpuInfo | None = None
    choice: profilers.Choice | None = None
    options: profilers.ProfileOptions | None = None
    cpu: CpuPlan | None = None
    counters_in_program: bool = False  # --counters: the program reads them (perf_event_open, PAPI)
    intervals: IntervalCounting | None = None  # --counters: perf stat -I around the last step instead

    @property
    def tool(self) -> str:
        return self.choice.backend if self.choice else ("perf" if self.cpu and self.cpu.perf else "none")


@dataclass(frozen=True)
class Outcome:
    """The runs a profile produced (stored even when something went wrong) and the problem, if any."""

    runs: tuple[Run, ...]
    problem: GpuprofError | None
    notes: tuple[str, ...] = ()


def _executable(command: tuple[str, ...]) -> list[str]:
    """The command with its program as the absolute path the user's PATH gives it; InputError when
    it cannot be found or run, said before any profiler starts.

    Profilers start the command with a PATH of their own (perf puts its own directories first), so
    a bare ``python3`` would be the system's, not the one of the user's virtual environment or conda.
    """
    program = command[0]
    found = shutil.which(program, path=os.environ.get("PATH", os.defpath))
    if found is None:
        where = (
            "not found on PATH"
            if "/" not in program
            else "not executable"
            if Path(program).exists()
            else "no such file"
        )
        raise InputError(
            f"command not found: {program} ({where})",
            "check the name and PATH, or give the program's path; the command goes after '--'",
        )
    return [program if "/" in program else os.path.abspath(found), *command[1:]]


def _device(settings: ProfileSettings) -> tuple[str, list[GpuInfo], str]:
    """("cuda" or "cpu", NVML's GPUs, why) for --device auto/cuda/cpu."""
    if settings.device == "cpu":
        return "cpu", [], "--device cpu"

    try:
        gpus = gpu_detect.detect()
    except DeviceError as error:
        if settings.device == "cuda":
            raise DeviceError(f"--device cuda: no NVIDIA GPU ({error.problem})", "use --device cpu") from None
        return "cpu", [], f"--device auto found no GPU ({error.problem})"
    return "cuda", gpus, f"{settings.device}: {len(gpus)} GPU(s) from NVML"


def _cc(info: GpuInfo) -> tuple[int, int] | None:
    if not info.cc:
        return None
    major, _, minor = info.cc.partition(".")
    return int(major), int(minor or 0)


def _choose(settings: ProfileSettings, info: GpuInfo) -> profilers.Choice:
    """The profiler for this GPU; an error when there is none (profiling needs one)."""
    if settings.profiler == "none":
        raise InputError(
            "--profiler none: gpuprof profile needs a profiler", "use --profiler auto, ncu, nvprof or a path"
        )
    choice = profilers.choose(settings.profiler, _cc(info))
    if choice.backend == "none":
        tried = "; ".join(f"{name}: {profilers.probe(name).problem}" for name in profilers.candidates(_cc(info)))
        first = profilers.candidates(_cc(info))[0]
        raise ProfilerError(
            f"no profiler for {info.name} (compute capability {info.cc}): {tried}",
            f"{profilers.INSTALL[first]}, or check with 'gpuprof doctor'",
        )
    return choice


def _gpu_steps(
    settings: ProfileSettings, command: list[str], choice: profilers.Choice, run_dir: Path, cc: tuple[int, int] | None
) -> tuple[profilers.ProfileOptions, tuple[Step, ...], list[str], list[str]]:
    """The profiler options, the process(es) to run, what the set and the profiler will do, and the
    notes stored with the runs (the clock control, the metrics this GPU lacks)."""

    metric_set = catalog.metric_sets()[settings.metric_set]
    nvprof_used = choice.backend == "nvprof"
    if nvprof_used:
        lacking = [name for name in ("--nvtx", "--launch-skip", "--launch-count") if name in settings.filters]
        if lacking:
            raise InputError(
                f"nvprof has no {', '.join(lacking)} filter",
                "use --kernel REGEX with nvprof, or ncu (compute capability 7.0 and newer)",
            )
    options = profilers.ProfileOptions(
        settings.nvtx,
        settings.clock_control,
        metrics=metric_set.nvprof if nvprof_used else metric_set.ncu,
        kernel=settings.kernel,
        launch_skip=settings.launch_skip,
        launch_count=settings.launch_count,
        target_processes="all",
        from_start=True,
        cc=cc,
    )
    module, exe = choice.module(), choice.probe.path if choice.probe else ""
    steps = [Step(module.command(exe, command, run_dir, options))]
    collected = (
        nvprof.to_collect(exe, options.metrics)[0]
        if nvprof_used
        else module.to_collect(exe, options.metrics, options.cc)[0]
    )
    notes = nvprof.lacking(options, exe) if nvprof_used else module.notes(options, exe)
    lines = [
        f"metric set {metric_set.name} ({metric_set.question}): {len(collected)} {choice.backend} metric(s)",
        *notes,
    ]
    if nvprof_used and metric_set.durations:
        steps.insert(0, Step(nvprof.trace_command(exe, command, run_dir, options), TRACE_PREFIX))
        lines.append(
            "nvprof runs the command twice: --print-gpu-trace for the kernel durations (its metric "
            "mode reports none), then the metrics"
        )
    return options, tuple(steps), lines, notes


def _history(store_path: str | Path | None, device: str, tool: str, metric_set: str) -> Run | None:
    """The newest stored profile of the same GPU, profiler and metric set that profiled a launch."""

    path = Path(store_path) if store_path else default_path()
    if not path.exists():  # reading the history never creates a store
        return None
    with open_store(path) as store:
        found = [
            run
            for run in store.runs()
            if run.kind == KIND
            and run.device.get("name") == device
            and run.environment.get("profiler") == tool
            and run.environment.get("metric_set") == metric_set
            and len(run.launch_table)
        ]
    return max(found, key=lambda run: run.created) if found else None


def expectations(earlier: Run | None, settings: ProfileSettings, tool: str) -> list[str]:
    """The replay passes and overhead to expect, from an earlier profile measured here (or why not known)."""
    passes = earlier.environment.get("replay_passes") if earlier else None
    if tool == "nvprof":
        lines = ["replay passes: nvprof does not report them (it replays each kernel until its metrics are collected)"]
    elif passes:
        lines = [
            f"replay passes: {max(passes)} per profiled launch (measured by {tool} for set {settings.metric_set} "
            f"on this GPU, run {earlier.run_id[:8]} of {earlier.created})"
        ]  # type: ignore[union-attr]
    else:
        lines = [
            f"replay passes: not known before {tool} has profiled set {settings.metric_set} on this GPU (they "
            "depend on the chip's counters); this run records them, and the next plan shows them"
        ]
    wall = earlier.environment.get("wall_time", {}).get("value") if earlier else None
    if earlier is None or not wall:
        return lines + [
            "overhead: each profiled launch runs once per pass, with the memory it writes saved and "
            "restored between passes; this run's time per launch is shown before the next one"
        ]
    launches = len(earlier.launch_table)
    per = wall / launches
    total = (
        f"; with --launch-count {settings.launch_count}, about {per * settings.launch_count:.3g} s"
        if settings.launch_count
        else "; every launch the filters keep adds as much"
    )
    return lines + [
        f"overhead: about {per:.3g} s per profiled launch (run {earlier.run_id[:8]}: {launches} "
        f"launch(es) in {wall:.3g} s, timed){total}"
    ]


def _unfiltered(settings: ProfileSettings, tool: str) -> list[str]:
    """The warning when nothing limits which launches are profiled."""
    limits = ("--kernel",) if tool == "nvprof" else ("--kernel", "--nvtx", "--launch-count")
    if any(name in settings.filters for name in limits):
        return []
    return [
        f"no {', '.join(limits)}: every kernel launch of the command is profiled, each replayed once per "
        "pass; autotuning and warm-up launches can make this take hours. Limit it, e.g. --launch-skip 20 "
        "--launch-count 5 or --kernel 'gemm'"
    ]


def plan(settings: ProfileSettings, store_path: str | Path | None = None) -> ProfilePlan:
    """Device, profiler, command lines and expectations for ``settings`` (module docstring)."""
    command = _executable(settings.command)
    device, gpus, why = _device(settings)
    run_id = uuid.uuid4().hex
    run_dir = settings.reports_dir / run_id
    made = (
        _cpu_plan(settings, command, run_id, run_dir, why)
        if device == "cpu"
        else _gpu_plan(settings, command, run_id, run_dir, gpus, store_path)
    )
    return _with_counting(made, settings)


def _counter_events(settings: ProfileSettings) -> tuple[list[str], list[str]]:
    """``--counters``: the events of its sets for this CPU, and notes on sets with none here."""
    if not settings.counters:
        return [], []
    return counter_sets.events(settings.counters, cpu.describe().get("vendor"))


def _with_counting(made: ProfilePlan, settings: ProfileSettings) -> ProfilePlan:
    """``--counters``: the first backend this machine allows, each one's reason for being used or
    not: perf_event_open, then PAPI, in the program (tried here, in the parent, as the program will
    try them); else ``perf stat -I`` around the command's last step (the profiled one)."""
    if not settings.counters:
        return made
    events, notes = _counter_events(settings)
    lines = [*notes]
    in_program, intervals = False, None
    if events:
        lines.insert(0, f"counters per region ({settings.counters}): {', '.join(e.partition('=')[0] for e in events)}")
        backend, reasons = counting.choose(
            events, counting.cpu_list(os.environ.get(counting.ENV_CPUS, "")), os.environ.get(counting.ENV_REPLAY)
        )
        if backend is not None:
            backend.close()
        in_program = backend is not None
        lines += [f"counter backend {reason}" for reason in reasons]
        if not in_program:
            intervals, reason = interval_counters.plan(events, settings.counter_interval)
            lines.append(f"counter backend {reason}")
    if events and not in_program and intervals is None:
        lines.append("counters per region: not counted (no backend can count here; regions are only timed)")
    elif not events:
        lines.append("counters per region: no events to count on this CPU")
    steps = made.steps
    if intervals is not None:
        last = steps[-1]
        steps = (*steps[:-1], Step(intervals.wrap(last.argv, made.run_dir), last.prefix))
    return dataclasses.replace(
        made,
        steps=steps,
        before=(*made.before, *lines),
        notes=(*made.notes, *lines),
        counters_in_program=in_program,
        intervals=intervals,
    )


def _gpu_plan(
    settings: ProfileSettings,
    command: list[str],
    run_id: str,
    run_dir: Path,
    gpus: list[GpuInfo],
    store_path: str | Path | None,
) -> ProfilePlan:
    info = gpus[0]
    choice = _choose(settings, info)
    options, steps, lines, notes = _gpu_steps(settings, command, choice, run_dir, _cc(info))
    before = (
        f"device: {info.name} (compute capability {info.cc}, NVML){'' if len(gpus) == 1 else f', the first of {len(gpus)} GPUs'}",
        f"profiler: {choice.probe.described if choice.probe else choice.backend}",
        *lines,
        *expectations(_history(store_path, info.name, choice.backend, settings.metric_set), settings, choice.backend),
    )
    return ProfilePlan(
        settings,
        "cuda",
        run_id,
        run_dir,
        steps,
        before,
        tuple(_unfiltered(settings, choice.backend)),
        tuple(notes),
        info,
        choice,
        options,
    )


def _cpu_plan(settings: ProfileSettings, command: list[str], run_id: str, run_dir: Path, why: str) -> ProfilePlan:
    if settings.filters:
        raise InputError(
            f"{', '.join(settings.filters)} choose GPU kernel launches, and this profile runs on the CPU ({why})",
            "leave them out for a CPU profile (perf counts the whole command), or run on a machine with an NVIDIA GPU",
        )
    cpu = plan_cpu()
    counting = (
        f"perf stat ({cpu.version}): {len(cpu.events)} event(s)" + (f" and -M {cpu.topdown}" if cpu.topdown else "")
        if cpu.perf
        else "no perf: the command is only timed"
    )
    before = (
        f"device: CPU ({why}); the metric sets are for GPUs: on the CPU perf counts what the machine allows",
        counting,
        *cpu.notes,
    )
    steps = (Step(cpu.command(command, run_dir)),)
    return ProfilePlan(settings, "cpu", run_id, run_dir, steps, before, notes=cpu.notes, cpu=cpu)


def commands(plan_: ProfilePlan) -> list[str]:
    """The exact command line(s), quoted for a shell, that :func:`execute` runs (for --dry-run)."""
    return [shlex.join(step.argv) for step in plan_.steps]


def _run_steps(plan_: ProfilePlan, series: PowerSeries | None) -> tuple[list[process.Finished], float]:
    """Run the plan's processes in order (the power series watching each one's processes); stop
    after one that failed or was stopped. Also returns when the last one run ended
    (CLOCK_MONOTONIC seconds: where ``perf stat -I``'s last interval ends)."""
    plan_.run_dir.mkdir(parents=True, exist_ok=True)
    env = job.child_environment(plan_.run_dir, plan_.run_id, plan_.settings.torch_hooks)
    if plan_.counters_in_program:
        env[counting.ENV_EVENTS] = ",".join(_counter_events(plan_.settings)[0])
    done = []
    for step in plan_.steps:
        try:
            finished = process.run_group(
                step.argv,
                plan_.run_dir,
                plan_.settings.timeout,
                prefix=step.prefix,
                env=env,
                started=(lambda p: series.watch(p.pid)) if series else None,
            )
        except OSError as error:
            if plan_.tool == "none":  # no profiler: the step is the command itself
                raise CommandFailed(
                    f"cannot start {step.argv[0]}: {error.strerror}", "check that it is an executable program"
                ) from None
            raise ProfilerError(
                f"cannot execute {step.argv[0]}: {error.strerror}", "check the installation with 'gpuprof doctor'"
            ) from None
        ended_s = job.now_s()
        done.append(finished)
        if finished.stopped or finished.code:
            break
    return done, ended_s


def _environment(plan_: ProfilePlan, done: list[process.Finished]) -> dict[str, Any]:
    """What the run records about how it was made; the wall time covers every process run."""
    finished = done[-1]
    env: dict[str, Any] = {
        "host": platform.node(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "run_folder": str(plan_.run_dir),
        "metric_set": plan_.settings.metric_set,
        "profiler": plan_.tool,
        "profiler_command": [step.argv for step in plan_.steps],
        "exit_code": finished.code,
        "stopped": finished.stopped,
        "timeout_s": plan_.settings.timeout,
        "label": plan_.settings.label,
        "devices": plan_.settings.devices,
        "wall_time": {"value": sum(f.seconds for f in done), "unit": "second", "origin": TIMED, "basis": WALL_BASIS},
    }
    if plan_.choice and plan_.choice.probe and plan_.options:
        probe = plan_.choice.probe
        env.update(
            profiler_path=probe.path,
            profiler_version=probe.version,
            profiler_found_by=probe.found_by,
            profiler_reason=plan_.choice.reason,
            profiler_settings=plan_.choice.module().settings(plan_.options),
        )
    if plan_.cpu:
        env.update(
            profiler_path=plan_.cpu.perf,
            profiler_version=plan_.cpu.version,
            events=list(plan_.cpu.events),
            topdown_group=plan_.cpu.topdown,
        )
    return env


def _workload(settings: ProfileSettings) -> dict[str, Any]:
    return {
        "command": list(settings.command),
        "metric_set": settings.metric_set,
        "filters": {name.lstrip("-"): value for name, value in settings.filters.items()},
    }


def _source(settings: ProfileSettings) -> str:
    return settings.command_line or shlex.join(["gpuprof", "profile", "--", *settings.command])


def _gpu_runs(
    plan_: ProfilePlan, back: ProfileReadback, done: list[process.Finished], problem: GpuprofError | None
) -> tuple[list[Run], list[str]]:
    """One run per process (or one merged run) of what the profiler measured, and what was done."""

    groups = back.processes or {"": []}
    named = [pid for pid in groups if pid]
    if plan_.settings.processes == "merge" or len(groups) == 1:
        parts = [(named, [launch for launches in groups.values() for launch in launches])]
    else:
        parts = [([pid], launches) for pid, launches in groups.items()]
    if len(groups) == 1:
        said = f"1 process profiled{f' (pid {named[0]})' if named else ''}"
    elif len(parts) == 1:
        said = f"{len(groups)} processes profiled (pids {', '.join(named)}): merged into one run (--processes split for one run per process)"
    else:
        said = f"{len(groups)} processes profiled: stored as {len(parts)} runs, one per process (--processes merge for one run)"
    environment = {
        **_environment(plan_, done),
        "replay_passes": back.passes,
        "replay_passes_source": back.passes_source,
        "application_exit_code": back.app_code,
        "processes": {"count": len(groups), "mode": plan_.settings.processes},
    }
    notes = [*plan_.notes, *back.notes, said, *([f"problem: {problem}"] if problem else [])]
    runs = []
    for number, (pids, launches) in enumerate(parts):
        launches = [
            Launch(
                l.kernel,
                l.index,
                l.device,
                l.invocations,
                {**l.attributes, "phase": "profiled", "reader": back.reader},
                l.metrics,
            )
            for l in launches
        ]
        runs.append(
            Run(
                kind=KIND,
                format=back.reader or plan_.tool,
                source=_source(plan_.settings),
                device=device_record(plan_.gpu),
                workload=_workload(plan_.settings),
                environment={**environment, "process": pids[0] if len(pids) == 1 else pids},
                launches=launches,
                notes=list(notes),
                run_id=plan_.run_id if number == 0 else uuid.uuid4().hex,
            )
        )
    return runs, [said]


def _kept(plan_: ProfilePlan, launches: int) -> str:
    return f"{launches} kernel launch(es) read and kept; files in {plan_.run_dir}"


def _gpu_problem(plan_: ProfilePlan, back: ProfileReadback, done: list[process.Finished]) -> GpuprofError | None:
    """The one thing to report about a GPU profile (module docstring of gpu_profile for the inputs)."""
    tool, settings, finished = plan_.tool, plan_.settings, done[-1]
    stderr_file = plan_.run_dir / f"{plan_.steps[len(done) - 1].prefix}{process.STDERR}"
    kept = _kept(plan_, back.launches)
    if finished.stopped == process.INTERRUPTED:
        return Interrupted(
            f"interrupted: {tool} and the command were stopped as one process group; the partial "
            f"report was read ({kept})"
        )
    if finished.stopped == process.TIMEOUT:
        return ProfilerError(
            f"{tool} did not finish within {settings.timeout:g} s and was stopped with the command; "
            f"the partial report was read ({kept})",
            "narrow the profile with --kernel, --nvtx or --launch-count, or give a longer --timeout",
        )
    if back.refused:
        return ProfilerError(
            "counters refused (ERR_NVGPUCTRPERM: the driver lets only admin users read GPU "
            "performance counters); only the command's wall time was kept",
            f"to enable counters {profilers.PERMISSION_FIX}",
        )
    code = back.app_code if back.app_code is not None else finished.code
    if code:
        return CommandFailed(
            f"{settings.command[0]} exited with code {code} (stderr: {process.tail(stderr_file, 3)}); "
            f"the partial report was read ({kept})",
            f"see {stderr_file}",
        )
    if not back.launches and back.no_kernels:
        listed = f"; kernels {tool} saw: {', '.join(back.available)}" if back.available else ""
        if settings.filters:
            return ProfilerError(
                f"no kernel matched the filters ({', '.join(f'{k} {v}' for k, v in settings.filters.items())}){listed}",
                "--kernel is a regular expression on the demangled kernel name; check the filters "
                "against the names, or drop them",
            )
        return ProfilerError(
            f"{tool} profiled no kernel: the command launched none it could see{listed}",
            "check that the command uses an NVIDIA GPU",
        )
    if not back.launches:
        why = back.errors[0] if back.errors else "; ".join(back.notes) or "no kernel in its output"
        return ProfilerError(f"{tool} measured nothing usable ({why})", f"see the files in {plan_.run_dir}")
    return None


def _cpu_run(plan_: ProfilePlan, done: list[process.Finished]) -> tuple[Run, GpuprofError | None]:
    assert plan_.cpu is not None
    finished = done[-1]
    metrics, notes = counted(plan_.cpu, plan_.run_dir, finished)
    settings = plan_.settings
    problem: GpuprofError | None = None
    kept = f"its wall time and perf's counts so far were kept; files in {plan_.run_dir}"
    if finished.stopped == process.INTERRUPTED:
        problem = Interrupted(f"interrupted: {plan_.tool} and the command were stopped as one process group; {kept}")
    elif finished.stopped == process.TIMEOUT:
        problem = CommandFailed(
            f"the command did not finish within {settings.timeout:g} s and was stopped; {kept}",
            "give a longer --timeout",
        )
    elif finished.code:
        stderr = process.tail(plan_.run_dir / process.STDERR, 3)
        problem = CommandFailed(
            f"{settings.command[0]} exited with code {finished.code} (stderr: {stderr}); {kept}",
            f"see {plan_.run_dir / process.STDERR}",
        )
    info = cpu.describe()
    device = {**info, "kind": "cpu", "peaks": [dataclasses.asdict(cpu.theoretical_peaks(info))]}
    launch = Launch(
        shlex.join(settings.command),
        0,
        str(info.get("name", "cpu")),
        1,
        {"phase": "process", "scope": "the command and every process it started"},
        metrics,
    )
    environment = _environment(plan_, done)
    environment["wall_time"]["basis"] = "time.perf_counter_ns around the command (under perf stat when it ran)"
    run = Run(
        kind=KIND,
        format="perf-stat" if plan_.cpu.perf else "timed",
        source=_source(settings),
        device=device,
        workload=_workload(settings),
        environment=environment,
        launches=[launch],
        notes=[*plan_.notes, *notes, *([f"problem: {problem}"] if problem else [])],
        run_id=plan_.run_id,
    )
    return run, problem


def execute(plan_: ProfilePlan) -> Outcome:
    """Run the plan and read back what it measured (module docstring), with the program's regions
    and, with --energy, the power of every device (:mod:`gpuprof.launch.job`)."""

    series, meter_notes = job.open_meters(plan_.settings.energy, plan_.settings.interval)
    start = job.now_s()
    if series:
        series.start()
    try:
        done, ended_s = _run_steps(plan_, series)
    finally:
        if series:
            series.stop()
    window = (start, job.now_s())
    if plan_.device == "cpu":
        run, problem = _cpu_run(plan_, done)
        run = job.attach(run, plan_.run_dir, window, series, meter_notes)
        return Outcome((_with_interval_counts(run, plan_, ended_s),), problem)
    traced = plan_.tool == "nvprof" and len(plan_.steps) > 1
    back = (
        gpu_profile.read_nvprof(plan_.run_dir, traced)
        if plan_.tool == "nvprof"
        else gpu_profile.read_ncu(plan_.run_dir)
    )
    problem = _gpu_problem(plan_, back, done)
    runs, said = _gpu_runs(plan_, back, done, problem)
    runs[0] = _with_interval_counts(job.attach(runs[0], plan_.run_dir, window, series, meter_notes), plan_, ended_s)
    return Outcome(tuple(runs), problem, tuple(said))


def _with_interval_counts(run: Run, plan_: ProfilePlan, ended_s: float) -> Run:
    """``run`` with each region instance's counts from ``perf stat -I`` (when that was the backend):
    each interval's counts shared among the regions by the part of it they cover (derived, at the
    interval's resolution); the intervals stay in the run folder."""
    counting_ = plan_.intervals
    if counting_ is None:
        return run
    import pandas as pd

    path = plan_.run_dir / interval_counters.OUTPUT
    environment, notes = dict(run.environment), list(run.notes)
    try:
        rows = interval_counters.read(path, ended_s) if path.is_file() else []
    except OSError as error:
        rows, why = [], f"{path} could not be read ({error.strerror})"
    else:
        why = f"perf wrote no intervals to {path}"
    basis = interval_basis(counting_.interval_s) + (
        f"; placed on CLOCK_MONOTONIC with perf's last interval ending when perf exited ({ended_s:.6f} s), "
        "up to perf's exit time"
    )
    environment["counters"] = {
        "backend": interval_counters.NAME,
        "interval_s": counting_.interval_s,
        "events": list(counting_.events),
        "file": str(path),
        "intervals": len(rows),
        "end_s": ended_s,
        "basis": basis,
    }
    regions = [launch for launch in run.launches if launch.attributes.get("kind") == "region"]
    if not rows:
        notes.append(f"counters per region not attributed: {why}")
    elif regions:
        spans = pd.DataFrame(
            {
                "name": [launch.kernel for launch in regions],
                "parent": [launch.attributes.get("parent", "") for launch in regions],
                "begin (s)": [_metric(launch, "begin") for launch in regions],
                "end (s)": [_metric(launch, "end") for launch in regions],
            }
        )
        counts = counts_from_intervals(pd.DataFrame(rows), spans, counting_.interval_s)
        events = [c for c in counts.columns if c not in ("name", "parent")]
        shared = {
            launch.index: [
                Metric(event, float(value), "event", None, DERIVED)
                for event, value in zip(events, counts.iloc[position][events], strict=True)
            ]
            for position, launch in enumerate(regions)
        }
        launches = [
            Launch(l.kernel, l.index, l.device, l.invocations, l.attributes, [*l.metrics, *shared[l.index]])
            if l.index in shared
            else l
            for l in run.launches
        ]
        notes.append(f"counters per region from {len(rows)} perf stat -I interval(s): {basis}")
    else:
        launches = run.launches
    return run.replaced(environment=environment, launches=launches, notes=notes)


def _metric(launch: Launch, name: str) -> float:
    return next(float(m.value) for m in launch.metrics if m.name == name)  # type: ignore[arg-type]
