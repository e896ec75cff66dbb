"""``gpuprof sweep``: measure every point of a config, storing each one as it finishes."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from gpuprof.cli.common import (
    command_line,
    handle_errors,
    note,
    output_folder,
    store_option,
)

if TYPE_CHECKING:
    from gpuprof.model import Run
    from gpuprof.sweep import Point

EXIT_FAILED_POINTS = 1
EXIT_INTERRUPTED = 130


class _Progress:
    """A rich progress bar on stderr plus one line per finished point."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.console = Console(stderr=True)
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
            transient=False,
        )
        self.task: Any = None

    def started(self, total: int, skipped: int) -> None:
        self.bar.start()
        self.task = self.bar.add_task("sweep", total=total, completed=skipped)
        if skipped:
            self.console.print(f"resuming: {skipped} of {total} point(s) already stored, skipped")

    def point_started(self, point: Point) -> None:
        self.bar.update(self.task, description=point.label)

    def point_stored(self, point: Point, run: Run) -> None:
        from gpuprof.sweep import stored_line

        self.console.print(
            stored_line(point, run),
            markup=False,
            highlight=False,
            soft_wrap=not self.console.is_terminal,  # wrapped on a terminal, one line into a log
        )
        self.bar.advance(self.task)

    def point_failed(self, point: Point, error: str) -> None:
        self.console.print(
            f"FAILED {point.label}: {error}",
            markup=False,
            highlight=False,
            style="red",
            soft_wrap=not self.console.is_terminal,
        )
        self.bar.advance(self.task)

    def slurm_event(self, event: Any) -> None:
        """A Slurm job submitted, finished or failed (``gpuprof.sweep.slurm.SlurmProgress``)."""
        self.console.print(event.describe(), markup=False, highlight=False, soft_wrap=not self.console.is_terminal)

    def stop(self) -> None:
        self.bar.stop()


@click.command()
@click.argument("config", type=click.Path(dir_okay=False))
@click.option(
    "--device",
    default="auto",
    show_default=True,
    type=click.Choice(("auto", "cpu", "cuda")),
    help="auto = CUDA when a GPU is usable, else the CPU.",
)
@click.option("--resume", is_flag=True, help="Skip points this config already stored for this device and host.")
@click.option("--slurm", is_flag=True, help="Run the points as Slurm jobs (config's [slurm] table; needs submitit).")
@click.option(
    "--slurm-dir",
    type=click.Path(file_okay=False),
    default=None,
    callback=output_folder,
    help="Shared folder for job results and logs. Default: reports/slurm/<config name>.",
)
@click.option("--slurm-partition", default=None, help="sbatch --partition (overrides [slurm] partition).")
@click.option("--slurm-gpus", type=int, default=None, help="GPUs per job for CUDA points.")
@click.option("--slurm-cpus", type=int, default=None, help="sbatch --cpus-per-task.")
@click.option("--slurm-time", type=int, default=None, help="Time limit per job, minutes.")
@click.option("--slurm-chunk", type=int, default=None, help="Points per job (0: one job per device kind).")
@click.option(
    "--slurm-sbatch",
    multiple=True,
    metavar="OPTION",
    help="More sbatch options, added to [slurm] sbatch: --slurm-sbatch=--qos=short (repeatable).",
)
@store_option
@handle_errors
def sweep(
    config: str,
    device: str,
    resume: bool,
    slurm: bool,
    slurm_dir: str | None,
    slurm_partition: str | None,
    slurm_gpus: int | None,
    slurm_cpus: int | None,
    slurm_time: int | None,
    slurm_chunk: int | None,
    slurm_sbatch: tuple[str, ...],
    store_path: str | None,
) -> None:
    """Measure every point of CONFIG (a TOML sweep such as configs/quick.toml), storing each as it finishes.

    Ctrl-C stops after the current point; a killed sweep keeps every finished point, and --resume
    measures only what is missing. The exit code is 1 when some points failed, 130 when interrupted.
    """
    import signal

    from gpuprof.job_sweep import is_job_config
    from gpuprof.sweep import load_config, run_sweep

    if is_job_config(config):
        _job_sweep(config, resume, store_path)
        return
    settings = load_config(config)
    interrupted = []

    def on_sigint(signum: int, frame: Any) -> None:
        interrupted.append(signum)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # before saying so: a second Ctrl-C stops at once
        note("interrupt: stopping after the current point (Ctrl-C again to stop at once)")

    progress = _Progress()
    command = command_line()
    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        if slurm:
            from pathlib import Path

            from gpuprof.sweep.slurm import SlurmOptions, slurm_table, sweep_on_slurm

            options = SlurmOptions.from_table(
                slurm_table(config),
                partition=slurm_partition,
                gpus=slurm_gpus,
                cpus=slurm_cpus,
                time_min=slurm_time,
                chunk=slurm_chunk,
            )
            if slurm_sbatch:
                import dataclasses

                options = dataclasses.replace(options, sbatch=options.sbatch + slurm_sbatch)
            folder = slurm_dir or Path("reports") / "slurm" / settings.name
            result = sweep_on_slurm(
                settings,
                options,
                folder,
                progress,
                store_path,
                device=device,
                resume=resume,
                stop=lambda: bool(interrupted),
                command=command,
                progress_callback=progress.slurm_event,
            )
        else:
            result = run_sweep(
                settings,
                store_path,
                device=device,
                resume=resume,
                listener=progress,
                stop=lambda: bool(interrupted),
                command=command,
            )
    finally:
        progress.stop()
        signal.signal(signal.SIGINT, previous)
    note(
        f"sweep '{settings.name}' ({settings.config_hash}): {len(result.stored)} point(s) stored in {result.store}, "
        f"{len(result.skipped)} already stored, {len(result.failed)} failed"
        + (f", {len(result.not_run)} not run (interrupted)" if result.interrupted else "")
    )
    for point, error in result.failed:
        note(f"  failed: {point.label}: {error}")
    if result.interrupted:
        note(f"  resume with: gpuprof sweep {config} --resume" + (f" --store {store_path}" if store_path else ""))
        sys.exit(EXIT_INTERRUPTED)
    if result.failed:
        sys.exit(EXIT_FAILED_POINTS)


def _job_sweep(config: str, resume: bool, store_path: str | None) -> None:
    """A config of training jobs ([[job]]/[[jobs]]): each profiled and stored in turn (gpuprof.job_sweep)."""
    from gpuprof.job_sweep import load_jobs, run_jobs

    jobs = load_jobs(config)
    note(
        f"job sweep '{jobs.name}': {len(jobs.jobs)} job(s), each under gpuprof profile"
        + (f" --energy --interval {jobs.interval:g}s" if jobs.energy else "")
    )
    stored, skipped, failed = run_jobs(jobs, store_path, resume, command_line())
    for run in stored:
        wall = run.environment.get("wall_time", {}).get("value")
        note(f"  {run.environment.get('label')}: run {run.run_id[:8]}, {wall:.3g} s")
    meters = [
        line
        for line in dict.fromkeys(n for run in stored for n in run.notes)
        if line.startswith(("no CPU power source", "no GPU meter", "no meter", "RAPL counters"))
    ]
    for line in meters:
        note(f"note: {line}")
    note(f"job sweep '{jobs.name}': {len(stored)} stored, {len(skipped)} already stored, {len(failed)} failed")
    for label, problem in failed:
        note(f"  failed: {label}: {problem}")
    if failed:
        sys.exit(EXIT_FAILED_POINTS)
