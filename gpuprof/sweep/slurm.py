"""Sweep points measured as Slurm jobs, through submitit.

API (what ``gpuprof sweep CONFIG --slurm`` calls)::

    runs, failures = run_points_on_slurm(points, options, result_dir, progress_callback,
                                         resume=False, on_runs=None, stop=lambda: False)

- ``points``: :class:`SlurmPoint` (key, :class:`gpuprof.measure.RunSettings`, sweep tag).
- ``options``: :class:`SlurmOptions`, from the config's ``[slurm]`` table and ``--slurm-*`` options.
- ``result_dir``: a folder on the filesystem the compute nodes share. Each job appends its runs to its
  own JSON-lines file there with :func:`gpuprof.store.runfile.append` as each point finishes (SQLite is not
  safe over NFS); submitit's pickles and logs go to ``result_dir/logs``; ``jobs.jsonl`` lists what
  was submitted.
- ``progress_callback`` gets a :class:`SlurmProgress` per job submitted, attached, finished or failed;
  ``on_runs`` gets runs as they come back (to store them at once); ``stop()`` ends the wait early.
- Returns the runs to merge into the store and a :class:`SlurmFailure` per job that failed,
  timed out or was cancelled (with submitit's stdout/stderr paths, if the job wrote them) and per
  point that failed. :mod:`gpuprof.sweep.slurm_state` reads how a job ended.

Points are grouped into jobs by device kind and then in chunks of ``options.chunk`` (0: one job per
device kind); several jobs of one kind are one job array. A requeued job skips the points already
in its result file. With ``resume=True`` the runs already in ``result_dir`` are collected first and
jobs still queued or running (from a ``gpuprof`` that was killed while waiting) are waited for, so
only points that are neither measured nor in flight are submitted again.

:func:`sweep_on_slurm` is the same for a whole :class:`gpuprof.sweep.SweepConfig`: it skips points
already stored, stores each run as it comes back and reports through the sweep's listener.
"""

from __future__ import annotations

import contextlib
import io
import json
import platform
import shutil
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuprof.errors import GpuprofError, InputError
from gpuprof.measure import RunSettings, measure
from gpuprof.model import Run
from gpuprof.store import open_store
from gpuprof.store import runfile as export
from gpuprof.sweep import SweepResult, sweep_tag
from gpuprof.sweep.slurm_state import FINAL_STATES, final_state, queue

if TYPE_CHECKING:
    from gpuprof.measure import RunSettings
    from gpuprof.sweep import Listener, SweepConfig, SweepResult

MANIFEST = "jobs.jsonl"
_OPTION_KEYS = {"partition", "gpus", "cpus", "time", "chunk", "sbatch", "setup", "poll"}


@dataclass(frozen=True)
class SlurmOptions:
    """How jobs are requested: sbatch's partition, GPUs, CPUs, time limit, plus anything else."""

    partition: str | None = None
    gpus: int | None = None  # GPUs per job for CUDA points (default 1); CPU points never ask for one
    cpus: int | None = None  # --cpus-per-task
    time_min: int = 60  # --time, per job
    chunk: int = 0  # points per job; 0: every point of one device kind in one job
    sbatch: tuple[str, ...] = ()  # more sbatch options: "--account=proj", "--qos=short", "--exclusive"
    setup: tuple[str, ...] = ()  # shell lines run before the job ("module load cuda")
    poll_s: float = 2.0  # how often to look at the queue while waiting

    def __post_init__(self) -> None:
        for name, value, least in (
            ("gpus", self.gpus, 0),
            ("cpus", self.cpus, 1),
            ("time", self.time_min, 1),
            ("chunk", self.chunk, 0),
        ):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < least):
                raise InputError(
                    f"slurm option {name} must be an integer of at least {least}, got {value!r}",
                    f"e.g. {name} = {max(least, 1)} in [slurm] or --slurm-{name}",
                )
        if isinstance(self.poll_s, bool) or not isinstance(self.poll_s, (int, float)) or self.poll_s <= 0:
            raise InputError(
                f"slurm option poll must be a number of seconds above 0, got {self.poll_s!r}",
                "e.g. poll = 2 in [slurm]",
            )
        _additional(self.sbatch)

    @classmethod
    def from_table(cls, table: dict[str, Any], where: str = "[slurm]", **overrides: Any) -> SlurmOptions:
        """Options from a config's ``[slurm]`` table; ``overrides`` (CLI options, None = unset) win."""
        unknown = sorted(set(table) - _OPTION_KEYS)
        if unknown:
            raise InputError(f"{where}: unknown key '{unknown[0]}'", f"known keys: {', '.join(sorted(_OPTION_KEYS))}")
        for key in ("sbatch", "setup"):
            value = table.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InputError(f"{where}: {key} must be a list of strings", f'e.g. {key} = ["--qos=short"]')
        if "partition" in table and not isinstance(table["partition"], str):
            raise InputError(f"{where}: partition must be a string", 'e.g. partition = "gpu"')
        values: dict[str, Any] = {
            "partition": table.get("partition"),
            "gpus": table.get("gpus"),
            "cpus": table.get("cpus"),
            "time_min": table.get("time", 60),
            "chunk": table.get("chunk", 0),
            "sbatch": tuple(table.get("sbatch", ())),
            "setup": tuple(table.get("setup", ())),
            "poll_s": table.get("poll", 2.0),
        }
        values.update({k: v for k, v in overrides.items() if v is not None and v != ()})
        return cls(**values)


@dataclass(frozen=True)
class SlurmPoint:
    """One measurement to make on the cluster.

    ``tag`` goes into ``run.workload["sweep"]``, with ``"host"`` set to the node that measured it.
    """

    key: str
    settings: RunSettings
    tag: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SlurmFailure:
    """A job (or one point in it) that did not bring back all its runs, and where to look."""

    job_id: str
    state: str  # Slurm state (CANCELLED, TIMEOUT, FAILED...) or POINT-FAILED
    keys: tuple[str, ...]  # points without a run
    message: str
    stdout: str  # "" when the job never wrote one (it never started)
    stderr: str

    def describe(self) -> str:
        logs = f" (logs: {self.stdout}, {self.stderr})" if self.stdout or self.stderr else ""
        return (
            f"Slurm job {self.job_id} {self.state}: {self.message}{logs}; "
            "rerun with --resume to measure the missing points"
        )


@dataclass(frozen=True)
class SlurmProgress:
    """One event while jobs run: ``submitted``, ``attached`` (resume), ``finished`` or ``failed``."""

    event: str
    job_id: str
    points: int  # points in this job
    jobs_done: int
    jobs_total: int
    runs: int  # runs collected so far in this call

    def describe(self) -> str:
        return (
            f"Slurm job {self.job_id} {self.event} ({self.points} point(s)); "
            f"{self.jobs_done} of {self.jobs_total} job(s) done, {self.runs} run(s) back"
        )


ProgressCallback = Callable[[SlurmProgress], None]


# ---- inside the job -------------------------------------------------------------------------


def _identity(key: str, tag: dict[str, str]) -> tuple[str, str]:
    """What matches a run to its point: the key and the sweep tag, less the host that measured it."""
    return key, json.dumps({k: v for k, v in tag.items() if k != "host"}, sort_keys=True)


def _run_identity(run: Run) -> tuple[str, str] | None:
    key = (run.environment.get("slurm") or {}).get("point")
    return _identity(key, (run.workload or {}).get("sweep") or {}) if key else None


def _point_identity(point: SlurmPoint) -> tuple[str, str]:
    return _identity(point.key, point.tag)


def _slurm_environment() -> dict[str, str]:
    import os

    names = {
        "SLURM_JOB_ID": "job_id",
        "SLURM_ARRAY_JOB_ID": "array_job_id",
        "SLURM_ARRAY_TASK_ID": "array_task",
        "SLURM_JOB_PARTITION": "partition",
        "SLURMD_NODENAME": "node",
        "SLURM_JOB_GPUS": "gpus",
        "SLURM_CPUS_PER_TASK": "cpus_per_task",
        "SLURM_CLUSTER_NAME": "cluster",
    }
    found = {short: os.environ[name] for name, short in names.items() if name in os.environ}
    if "array_job_id" in found:  # the id submitit and sacct show for an array task
        found["job"] = f"{found['array_job_id']}_{found.get('array_task', '')}"
    else:
        found["job"] = found.get("job_id", "?")
    return found


def measure_points(points: list[SlurmPoint], result_file: str) -> list[tuple[str, str]]:
    """The job's body: measure each point, append its run to ``result_file``; (key, error) per failed point.

    Points already in ``result_file`` (a requeued job) are not measured again. The results store is
    not opened on the shared filesystem: a private temporary one stands in, so calibrated ceilings
    are not looked up for runs measured in Slurm jobs (the run's notes say so).
    """
    import tempfile

    path = Path(result_file)
    done = {_run_identity(r) for r in export.load(path)[0]} if path.exists() else set()
    slurm = _slurm_environment()
    failed: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="gpuprof-slurm-") as private:
        for point in points:
            if _point_identity(point) in done:
                continue
            try:
                run = measure(point.settings, str(Path(private) / "calibration.sqlite"))
            except Exception as error:  # one bad point must not lose the rest of the job
                failed.append(
                    (
                        point.key,
                        str(error)
                        if isinstance(error, GpuprofError)
                        else f"unexpected {type(error).__name__}: {error} (a gpuprof bug: please report it)",
                    )
                )
                continue
            run.workload = {**(run.workload or {}), "sweep": {**point.tag, "host": platform.node()}}
            run.environment["slurm"] = {**slurm, "point": point.key}
            run.notes.append(
                f"measured in Slurm job {slurm['job']} on {platform.node()}; "
                "calibrated ceilings are not looked up in Slurm jobs"
            )
            export.append(path, run)
    return failed


# ---- on the submitting side -----------------------------------------------------------------


def _additional(sbatch: Iterable[str]) -> dict[str, Any]:
    """``--account=proj`` / ``account=proj`` / ``--exclusive`` as submitit's additional_parameters."""
    out: dict[str, Any] = {}
    for item in sbatch:
        name, sep, value = item.lstrip("-").partition("=")
        if not name or " " in name or (sep and not value):
            raise InputError(
                f"cannot read sbatch option '{item}'", "write it as --name=value or --flag, e.g. --qos=short"
            )
        out[name.replace("-", "_")] = value if sep else True
    return out


def _require_submitit() -> Any:
    try:
        import submitit
    except ImportError:
        raise InputError("--slurm needs the submitit package", "pip install 'gpuprof-hpc[slurm]'") from None
    if shutil.which("sbatch") is None or shutil.which("srun") is None:
        raise InputError(
            "--slurm needs Slurm's sbatch and srun on PATH", "run on a login node of a Slurm cluster, or drop --slurm"
        )
    return submitit


def _jobs_plan(points: list[SlurmPoint], chunk: int) -> list[tuple[str, list[SlurmPoint]]]:
    """(device kind, points) per job: grouped by kind, then cut into chunks."""
    groups: dict[str, list[SlurmPoint]] = {}
    for point in points:
        groups.setdefault(point.settings.device, []).append(point)
    plan = []
    for kind, members in groups.items():
        size = chunk or len(members)
        plan += [(kind, members[i : i + size]) for i in range(0, len(members), size)]
    return plan


def _executor(submitit: Any, folder: Path, options: SlurmOptions, kind: str, python: str | None) -> Any:
    executor = submitit.SlurmExecutor(folder=folder / "%j", max_num_timeout=0, python=python)
    gpus = options.gpus if options.gpus is not None else (1 if kind == "cuda" else 0)
    params: dict[str, Any] = {
        "job_name": f"gpuprof-{kind}",
        "time": options.time_min,
        "additional_parameters": _additional(options.sbatch),
        # submitit's pre-timeout signal (unused here) must fit in short time limits.
        "signal_delay_s": min(90, max(10, options.time_min * 6)),
    }
    if options.partition:
        params["partition"] = options.partition
    if gpus and kind != "cpu":
        params["gpus_per_node"] = gpus
    if options.cpus:
        params["cpus_per_task"] = options.cpus
    if options.setup:
        params["setup"] = list(options.setup)
    try:
        executor.update_parameters(**params)
    except ValueError as error:
        raise InputError(
            f"submitit refused the Slurm options: {str(error).splitlines()[0]}",
            "check [slurm] in the config and the --slurm-* options",
        ) from None
    return executor


@dataclass
class _Job:
    job: Any  # submitit.SlurmJob
    points: list[SlurmPoint]
    result_file: Path
    seen: str = "PENDING"  # the last state squeue listed; sbatch queues a job as PENDING


def _collect(
    result_dir: Path, wanted: dict[tuple[str, str], SlurmPoint], files: Iterable[Path] | None = None
) -> dict[tuple[str, str], Run]:
    """Runs for wanted points found in the job result files (first one per point)."""
    found: dict[tuple[str, str], Run] = {}
    for path in sorted(files if files is not None else result_dir.glob("runs-*.jsonl")):
        if not path.exists():
            continue
        for run in export.load(path)[0]:
            identity = _run_identity(run)
            if identity in wanted and identity not in found:
                found[identity] = run
    return found


def _manifest_entries(result_dir: Path) -> list[dict[str, Any]]:
    path = result_dir / MANIFEST
    if not path.exists():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue  # a line cut off by a kill while it was being written
    return entries


def _record(result_dir: Path, job: _Job) -> None:
    entry = {
        "job_id": str(job.job.job_id),
        "folder": str(job.job.paths.folder.parent),
        "result_file": str(job.result_file),
        "keys": [_point_identity(p) for p in job.points],
    }
    with open(result_dir / MANIFEST, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")


def _finished(job: _Job, queued: dict[str, str] | None) -> bool:
    """Whether the job left the queue (ended, or no longer listed); squeue failing says nothing."""
    if job.job.paths.result_pickle.exists():
        return True
    if queued is None:
        return False
    listed = queued.get(str(job.job.job_id))
    return listed is None or listed in FINAL_STATES


def _reattach(submitit: Any, result_dir: Path, wanted: dict[tuple[str, str], SlurmPoint]) -> list[_Job]:
    """Jobs from an earlier call that are still queued or running and hold wanted points."""
    jobs = []
    queued = queue()
    for entry in _manifest_entries(result_dir):
        points = [wanted[tuple(k)] for k in entry.get("keys", []) if tuple(k) in wanted]
        if points:
            job = _Job(
                submitit.SlurmJob(folder=Path(entry["folder"]) / "%j", job_id=entry["job_id"]),
                points,
                Path(entry["result_file"]),
                (queued or {}).get(entry["job_id"], "UNKNOWN"),
            )
            if queued is None or not _finished(job, queued):
                jobs.append(job)
    return jobs


def _outcome(job: _Job, queued: dict[str, str], poll_s: float) -> tuple[str, list[tuple[str, str]], str]:
    """(state, point failures reported by the job, message) of a finished job."""
    submitit = _require_submitit()
    if job.job.paths.result_pickle.exists():
        try:
            return "COMPLETED", list(job.job.result()), ""
        except submitit.core.utils.FailedJobError as error:
            lines = [line for line in str(error).splitlines() if line.strip() and not line.startswith("-")]
            trace = [
                line for line in lines if not line.startswith(("Job (task", "You can check", "or at paths", "  - "))
            ]
            return "FAILED", [], trace[-1].strip() if trace else "the job raised an error"
    state, message = final_state(str(job.job.job_id), queued.get(str(job.job.job_id)), job.seen, poll_s)
    return state, [], message


def _failures(
    job: _Job, state: str, point_errors: list[tuple[str, str]], message: str, measured: set[tuple[str, str]]
) -> list[SlurmFailure]:
    paths = job.job.paths
    logs = tuple(str(path) if path.exists() else "" for path in (paths.stdout, paths.stderr))
    out = [SlurmFailure(str(job.job.job_id), "POINT-FAILED", (key,), error, *logs) for key, error in point_errors]
    errored = {key for key, _ in point_errors}
    missing = tuple(p.key for p in job.points if _point_identity(p) not in measured and p.key not in errored)
    if missing:
        out.append(
            SlurmFailure(
                str(job.job.job_id), state, missing, message or "finished without measuring these points", *logs
            )
        )
    return out


def run_points_on_slurm(
    points: list[SlurmPoint],
    options: SlurmOptions,
    result_dir: str | Path,
    progress_callback: ProgressCallback | None = None,
    resume: bool = False,
    on_runs: Callable[[list[Run]], None] | None = None,
    stop: Callable[[], bool] = lambda: False,
    python: str | None = None,
) -> tuple[list[Run], list[SlurmFailure]]:
    """Measure ``points`` as Slurm jobs and wait for them; (runs, failures). See the module docstring.

    ``on_runs`` receives runs as they come back (to store them at once). When ``stop()`` turns true,
    or on Ctrl-C, waiting ends and the jobs go on running; ``resume=True`` later collects their
    results. ``python`` is the command that starts Python on the nodes (default: this interpreter).
    """
    submitit = _require_submitit()
    result_dir = Path(result_dir).resolve()
    result_dir.mkdir(parents=True, exist_ok=True)
    notify = progress_callback or (lambda event: None)
    wanted = {_point_identity(p): p for p in points}
    if len(wanted) != len(points):
        raise InputError("two sweep points have the same key", "remove the duplicate point from the config")
    runs: dict[tuple[str, str], Run] = _collect(result_dir, wanted) if resume else {}
    deliver = on_runs or (lambda new: None)
    deliver(list(runs.values()))
    jobs = _reattach(submitit, result_dir, {k: p for k, p in wanted.items() if k not in runs}) if resume else []
    in_flight = {_point_identity(p) for job in jobs for p in job.points}
    todo = [p for k, p in wanted.items() if k not in runs and k not in in_flight]
    for job in jobs:
        notify(SlurmProgress("attached", str(job.job.job_id), len(job.points), 0, len(jobs), len(runs)))
    jobs += _submit(submitit, todo, options, result_dir, python, notify, len(jobs), len(runs))
    return _wait(jobs, options, result_dir, wanted, runs, notify, deliver, stop)


def _submit(
    submitit: Any,
    todo: list[SlurmPoint],
    options: SlurmOptions,
    result_dir: Path,
    python: str | None,
    notify: ProgressCallback,
    attached: int,
    collected: int,
) -> list[_Job]:
    batch = uuid.uuid4().hex[:8]
    plan = _jobs_plan(todo, options.chunk)
    by_kind: dict[str, list[tuple[int, list[SlurmPoint]]]] = {}
    for index, (kind, members) in enumerate(plan):
        by_kind.setdefault(kind, []).append((index, members))
    jobs: list[_Job] = []
    for kind, chunks in by_kind.items():
        executor = _executor(submitit, result_dir / "logs", options, kind, python)
        files = [result_dir / f"runs-{batch}-{index}.jsonl" for index, _ in chunks]
        refused = (submitit.core.utils.FailedSubmissionError, submitit.core.utils.FailedJobError)
        try:
            with contextlib.redirect_stderr(io.StringIO()), executor.batch():  # submitit echoes sbatch's stderr
                submitted = [
                    executor.submit(measure_points, members, str(path)) for (_, members), path in zip(chunks, files)
                ]
        except refused as error:
            detail = str(error).strip().splitlines()[-1] if str(error).strip() else "sbatch failed"
            raise InputError(
                f"Slurm refused the jobs: {detail}", "check the partition, GPU count and time limit against 'sinfo'"
            ) from None
        for job, (_, members), path in zip(submitted, chunks, files):
            entry = _Job(job, members, path)
            _record(result_dir, entry)
            jobs.append(entry)
    total = attached + len(jobs)
    for entry in jobs:
        notify(SlurmProgress("submitted", str(entry.job.job_id), len(entry.points), 0, total, collected))
    return jobs


def _wait(
    jobs: list[_Job],
    options: SlurmOptions,
    result_dir: Path,
    wanted: dict[tuple[str, str], SlurmPoint],
    runs: dict[tuple[str, str], Run],
    notify: ProgressCallback,
    deliver: Callable[[list[Run]], None],
    stop: Callable[[], bool],
) -> tuple[list[Run], list[SlurmFailure]]:
    failures: list[SlurmFailure] = []
    pending = list(jobs)
    while pending and not stop():
        queued = queue()
        for job in pending:
            job.seen = (queued or {}).get(str(job.job.job_id), job.seen)
        for job in [j for j in pending if _finished(j, queued)]:
            pending.remove(job)
            new = {k: r for k, r in _collect(result_dir, wanted, [job.result_file]).items() if k not in runs}
            runs.update(new)
            deliver(list(new.values()))
            state, point_errors, message = _outcome(job, queued or {}, options.poll_s)
            lost = _failures(job, state, point_errors, message, set(runs))
            failures += lost
            notify(
                SlurmProgress(
                    "failed" if lost else "finished",
                    str(job.job.job_id),
                    len(job.points),
                    len(jobs) - len(pending),
                    len(jobs),
                    len(runs),
                )
            )
        if pending:
            time.sleep(options.poll_s)
    order = list(wanted)
    return sorted(runs.values(), key=lambda r: order.index(_run_identity(r))), failures


# ---- a whole sweep config -------------------------------------------------------------------


def slurm_table(config_path: str | Path) -> dict[str, Any]:
    """The ``[slurm]`` table of a sweep config file (empty when there is none)."""
    import tomllib

    try:
        table = tomllib.loads(Path(config_path).read_text(encoding="utf-8")).get("slurm", {})
    except (OSError, tomllib.TOMLDecodeError):
        return {}  # load_config reports an unreadable config first
    if not isinstance(table, dict):
        raise InputError(f"{config_path}: slurm must be a table", "write [slurm] with partition, gpus, time...")
    return table


def cluster_device(device: str, options: SlurmOptions) -> str:
    """The device kind jobs measure on: ``auto`` means CUDA only when GPUs are requested."""
    if device in ("cpu", "cuda"):
        return device
    return "cuda" if options.gpus else "cpu"


def stored_on_cluster(workloads: Iterable[dict[str, Any] | None], config_name: str, device: str) -> set[str]:
    """Point keys stored for this config and device kind, from any host: cluster jobs land on many nodes."""
    keys = set()
    for workload in workloads:
        tag = (workload or {}).get("sweep") or {}
        tag = tag if isinstance(tag, dict) else {}
        if tag.get("config") == config_name and tag.get("device") == device:
            keys.add(tag.get("point"))
    return keys


def sweep_on_slurm(
    config: SweepConfig,
    options: SlurmOptions,
    result_dir: str | Path,
    listener: Listener,
    store_path: str | Path | None = None,
    device: str = "auto",
    resume: bool = False,
    progress_callback: ProgressCallback | None = None,
    stop: Callable[[], bool] = lambda: False,
    command: str = "",
) -> SweepResult:
    """``gpuprof sweep --slurm``: the sweep's points as Slurm jobs, each run stored as it comes back."""
    kind = cluster_device(device, options)
    result = SweepResult()
    with open_store(store_path) as store:
        result.store = str(store.path)
        done = stored_on_cluster(store.workloads('"sweep"'), config.name, kind) if resume else set()
        result.skipped = [p for p in config.points if p.key in done]
        listener.started(len(config.points), len(result.skipped))
        by_key = {}
        points: list[SlurmPoint] = []
        for point in (p for p in config.points if p.key not in done):
            try:
                settings = point.settings(kind, config.seed, command)
            except GpuprofError as error:
                result.failed.append((point, str(error)))
                listener.point_failed(point, str(error))
                continue
            by_key[point.key] = point
            points.append(SlurmPoint(point.key, settings, sweep_tag(config, point, kind, "")))

        def store_runs(runs: list[Run]) -> None:
            for run in runs:
                point = by_key[run.environment["slurm"]["point"]]
                store.add(run)
                result.stored.append((point, run.run_id))
                listener.point_stored(point, run)

        _, failures = run_points_on_slurm(points, options, result_dir, progress_callback, resume, store_runs, stop)
    for failure in failures:
        for key in failure.keys:
            result.failed.append((by_key[key], failure.describe()))
            listener.point_failed(by_key[key], failure.describe())
    finished = {p.key for p, _ in result.stored} | {p.key for p, _ in result.failed}
    result.not_run = [p for p in by_key.values() if p.key not in finished]
    result.interrupted = bool(result.not_run)
    return result
