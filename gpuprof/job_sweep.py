"""Sweeps of training jobs: every set-up of a study profiled in turn (``gpuprof sweep configs/resnet-study.toml``).

A config whose tables are ``[[job]]`` (one job each) or ``[[jobs]]`` (a grid: lists of hidden-layer
widths and batch sizes, every combination one job) is a job sweep rather than an op sweep. Each
job is the built-in training workload (:mod:`gpuprof.workloads.training`) run under ``gpuprof
profile`` (the command timed and counted as the CPU allows, its regions kept, ``energy = true``:
every device metered), stored as a profile run with the job's label and device count, so
``gpuprof compare --scaling --baseline LABEL`` compares them. Every job is stored as it finishes;
``--resume`` skips the labels this config already stored::

    name = "resnet-study"
    energy = true                # gpuprof profile --energy
    interval = 0.5               # seconds between power samples
    [[job]]
    label = "cpu"                # the set-up's name (--label)
    devices = 1                  # --devices
    model = "resnet34"           # resnet34 | cnn | mlp; the other keys are the workload's options
    setup = "cpu"                # cpu | cuda | cuda-ddp | ddp:N
    [[jobs]]
    model = "mlp"
    hidden = [[50], [6400, 3200, 1664]]
    batch_size = [32, 256]
"""

from __future__ import annotations

import itertools
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuprof import inputs
from gpuprof.errors import FormatError, GpuprofError, InputError
from gpuprof.model import Run
from gpuprof.profile import ProfileSettings, execute, plan
from gpuprof.store import open_store
from gpuprof.workloads.training import parse_setup

# Job keys -> the workload's command-line options.
OPTIONS = {
    "model": "--model",
    "setup": "--setup",
    "epochs": "--epochs",
    "batch_size": "--batch-size",
    "train_batches": "--train-batches",
    "validation_batches": "--validation-batches",
    "test_batches": "--test-batches",
    "inference_sizes": "--inference-sizes",
    "repeats": "--repeats",
    "hidden": "--hidden",
    "height": "--height",
    "width": "--width",
    "seed": "--seed",
    "threads": "--threads",
}
_TOP = {"name", "description", "energy", "interval", "timeout", "job", "jobs"}


@dataclass(frozen=True)
class Job:
    label: str
    devices: int
    command: tuple[str, ...]


@dataclass(frozen=True)
class JobConfig:
    name: str
    jobs: tuple[Job, ...]
    energy: bool = True
    interval: float = 0.5
    timeout: float = 3600.0


def _toml(path: str | Path) -> dict[str, Any]:
    """The config as TOML, read only from a regular file of at most 1 MiB (never a FIFO or /dev/zero)."""
    return tomllib.loads(inputs.read_capped(path, 1 << 20, "a sweep config").decode("utf-8"))


def is_job_config(path: str | Path) -> bool:
    """Whether ``path`` is a job sweep (it has [[job]] or [[jobs]] tables); False for anything unreadable."""
    try:
        table = _toml(path)
    except (FormatError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False  # load_config says what is wrong with it
    return "job" in table or "jobs" in table


def _value(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def _label(entry: dict[str, Any]) -> str:
    """A grid job's name: model, hidden widths, batch size, set-up other than cpu (mlp-6400x3200-b256)."""
    parts = [str(entry.get("model", "resnet34"))]
    if "hidden" in entry:
        parts.append("x".join(map(str, entry["hidden"])))
    if "batch_size" in entry:
        parts.append(f"b{entry['batch_size']}")
    if entry.get("setup", "cpu") != "cpu":
        parts.append(str(entry["setup"]))
    return "-".join(parts)


def _job(path: Path, where: str, entry: dict[str, Any]) -> Job:
    unknown = set(entry) - set(OPTIONS) - {"label", "devices"}
    if unknown:
        raise InputError(
            f"{path}: {where}: unknown key(s) {', '.join(sorted(unknown))}",
            f"a job takes label, devices and {', '.join(OPTIONS)}",
        )
    try:
        parse_setup(str(entry.get("setup", "cpu")))
    except ValueError as error:
        raise InputError(f"{path}: {where}: {error}", "fix the setup key") from None
    label = str(entry.get("label") or _label(entry))
    arguments = [item for key, value in entry.items() if key in OPTIONS for item in (OPTIONS[key], _value(value))]
    devices = entry.get("devices", 1)
    if not isinstance(devices, int) or devices < 1:
        raise InputError(f"{path}: {where}: devices must be a whole number of 1 or more", "e.g. devices = 2")
    return Job(label, devices, (sys.executable, "-m", "gpuprof.workloads.training", *arguments))


def load_jobs(path: str | Path) -> JobConfig:
    """The config's jobs, checked (InputError naming the key otherwise)."""
    path = Path(path)
    try:
        table = _toml(path)
    except FormatError as error:
        raise InputError(error.problem, error.fix) from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise InputError(f"{path}: cannot be read as TOML ({error})", "check the file") from None
    unknown = set(table) - _TOP
    if unknown:
        raise InputError(
            f"{path}: unknown key(s) {', '.join(sorted(unknown))}", f"a job sweep takes {', '.join(sorted(_TOP))}"
        )
    jobs = [_job(path, f"job {i + 1}", entry) for i, entry in enumerate(table.get("job", []))]
    for i, grid in enumerate(table.get("jobs", [])):
        axes = {key: value for key, value in grid.items() if isinstance(value, list) and key != "inference_sizes"}
        fixed = {key: value for key, value in grid.items() if key not in axes}
        for combination in itertools.product(*axes.values()):
            jobs.append(_job(path, f"jobs {i + 1}", {**fixed, **dict(zip(axes, combination))}))
    labels = [job.label for job in jobs]
    if len(set(labels)) != len(labels):
        raise InputError(
            f"{path}: two jobs have the label {next(l for l in labels if labels.count(l) > 1)}",
            "give each job its own label",
        )
    if not jobs:
        raise InputError(f"{path}: no [[job]] or [[jobs]] table", "add one job per set-up")
    return JobConfig(
        str(table.get("name", path.stem)),
        tuple(jobs),
        bool(table.get("energy", True)),
        float(table.get("interval", 0.5)),
        float(table.get("timeout", 3600.0)),
    )


def run_jobs(
    config: JobConfig, store_path: str | Path | None, resume: bool = False, command: str = ""
) -> tuple[list[Run], list[str], list[tuple[str, str]]]:
    """Profile and store each job in turn; (stored runs, labels skipped, (label, problem) failures)."""

    done: set[str] = set()
    if resume:
        with open_store(store_path) as store:
            done = {
                str(run.environment.get("label"))
                for run in store.runs()
                if run.kind == "profile" and (run.workload or {}).get("sweep", {}).get("config") == config.name
            }
    stored, skipped, failed = [], [], []
    for job in config.jobs:
        if job.label in done:
            skipped.append(job.label)
            continue
        settings = ProfileSettings(
            command=job.command,
            device="cpu",
            energy=config.energy,
            interval=config.interval,
            label=job.label,
            devices=job.devices,
            timeout=config.timeout,
            command_line=command,
        )
        try:
            outcome = execute(plan(settings, store_path))
        except GpuprofError as error:
            failed.append((job.label, str(error)))
            continue
        with open_store(store_path) as store:
            for run in outcome.runs:
                run.workload = {**(run.workload or {}), "sweep": {"config": config.name, "job": job.label}}
                store.add(run)
                stored.append(run)
        if outcome.problem is not None:
            failed.append((job.label, str(outcome.problem)))
    return stored, skipped, failed
