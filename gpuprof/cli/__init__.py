"""Command-line entry point: a thin Click layer over the library.

Commands live one per module and are imported only when invoked, so ``gpuprof --help`` never
loads NumPy, pandas or matplotlib. To add a command: write ``gpuprof/cli/<module>.py`` with a
Click command and list it in ``COMMANDS``.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

DEBUG_ENV = "GPUPROF_DEBUG"
INTERNAL_ERROR_EXIT = 70  # EX_SOFTWARE: a bug in gpuprof, not a problem with the input (errors.py: 1-8, 130)

# command name -> (module under gpuprof.cli, attribute, one-line help shown by --help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "calibrate": ("calibrate", "calibrate", "Measure and store this CPU's FLOP/s and bandwidth ceilings."),
    "import": ("importing", "import_", "Read profiler output files into the results store."),
    "run": ("run", "run", "Measure one op at one size on the CPU or a GPU."),
    "profile": ("profile", "profile", "Run any command under ncu, nvprof or perf; store and print its kernels."),
    "doctor": ("doctor", "doctor", "Check what profiling needs here (driver, counters, profilers, perf, energy)."),
    "show": ("show", "show", "List stored results."),
    "devices": ("devices", "devices", "List this machine's CPU and NVIDIA GPUs with their peaks."),
    "peaks": ("devices", "peaks", "GPU peak FLOP/s and bandwidth from the device table, with formulas."),
    "roofline": ("roofline", "roofline", "Draw roofline charts (PNG + SVG) of stored runs per device."),
    "stalls": ("stalls", "stalls", "Rank and explain why warps (or CPU pipeline slots) stall."),
    "sweep": ("sweep", "sweep", "Measure every point of a sweep config, storing each as it finishes."),
    "compare": ("compare", "compare", "Compare devices in the reference study's tables (text, CSV, JSON, HTML)."),
    "merge": ("merge", "merge", "Combine results stores and run files from several machines."),
    "export": ("merge", "export", "Write a store's runs to a JSON-lines run file."),
    "simulate": (
        "simulate",
        "simulate",
        "Read simulated accelerators' outputs (STONNE) per layer: cycles, utilisation, energy.",
    ),
    "trace": (
        "trace",
        "trace",
        "Per-op, per-kernel, per-step tables of a PyTorch/TensorFlow/JAX trace; two side by side.",
    ),
    "diff": ("diff", "diff", "Compare two profiles, runs, stores or sweeps kernel by kernel; gate regressions in CI."),
}


class LazyGroup(click.Group):
    """A group that imports a command's module only when that command runs."""

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: object
    ) -> click.Context:
        """Keep the exact command line (before parsing) for the provenance of every run."""
        ctx = super().make_context(info_name, list(args), parent=parent, **extra)  # type: ignore[arg-type]
        ctx.meta["gpuprof.argv"] = ["gpuprof", *args]
        return ctx

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Usage errors as one line (``error: ...``) naming the fix, like every other gpuprof error,
        instead of Click's usage block."""
        if not kwargs.get("standalone_mode", True):
            return super().main(*args, **kwargs)
        self.debug = os.environ.get(DEBUG_ENV, "") not in ("", "0")
        try:
            return super().main(*args, **{**kwargs, "standalone_mode": False})
        except click.ClickException as error:
            where = (
                f"'{error.ctx.command_path} --help'"
                if isinstance(error, click.UsageError) and error.ctx
                else "'gpuprof --help'"
            )
            click.echo(f"error: {error.format_message().rstrip('.')}. see {where}", err=True)
            sys.exit(error.exit_code)
        except click.Abort:
            click.echo("error: aborted.", err=True)
            sys.exit(1)
        except Exception as error:  # noqa: BLE001 - the last resort: a bug, said in one line
            if self.debug:
                raise
            _internal_error(error)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attr, _ = COMMANDS[name]
        return getattr(importlib.import_module(f"gpuprof.cli.{module}"), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _internal_error(error: Exception) -> None:
    """One line for an exception no gpuprof error explains, its traceback in a file to report;
    every run stored before it stays stored (each run is its own transaction)."""
    import tempfile
    import traceback

    text = "".join(traceback.format_exception(error))
    try:
        handle, name = tempfile.mkstemp(prefix="gpuprof-internal-error-", suffix=".txt")
        with os.fdopen(handle, "w", encoding="utf-8") as details:
            details.write(f"command: {' '.join(sys.argv)}\n\n{text}")
        where = f"details in {name}"
    except OSError:
        where = f"details with {DEBUG_ENV}=1 or 'gpuprof --debug'"
    first = (str(error).splitlines() or [""])[0][:200]
    click.echo(
        f"error: internal error: {type(error).__name__}{': ' + first if first else ''}; {where}; "
        "please report it. Results stored before the error are kept.",
        err=True,
    )
    sys.exit(INTERNAL_ERROR_EXIT)


def _debug(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and isinstance(ctx.command, LazyGroup):
        ctx.command.debug = True


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gpuprof-hpc", prog_name="gpuprof")
@click.option(
    "--debug",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_debug,
    help=f"Show the traceback of an internal error (also ${DEBUG_ENV}=1).",
)
def main() -> None:
    """gpuprof: how close do your kernels run to what the hardware can do?"""
