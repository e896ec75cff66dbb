"""Options and error handling every command shares.

``handle_errors`` is the one place a :class:`gpuprof.errors.GpuprofError` becomes a one-line
message on stderr and a non-zero exit; library code below never prints or exits.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from gpuprof import outputs
from gpuprof.errors import GpuprofError, printable
from gpuprof.render import FORMATS, WIDE, table_width
from gpuprof.render.text import prose
from gpuprof.store import STORE_ENV


class FormatChoice(click.Choice):
    """--format: a Choice that sends 'html' to the option that writes HTML."""

    def __init__(self) -> None:
        super().__init__(FORMATS)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if str(value).lower() == "html":
            self.fail(
                "'html' is not a --format: HTML reports are written by "
                "'gpuprof compare --html FILE' (tables and charts in one file)",
                param,
                ctx,
            )
        return super().convert(value, param, ctx)


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def options(*decorators: Decorator) -> Decorator:
    """Several options as one decorator, listed in ``--help`` in the order given."""

    def apply(func: Callable[..., Any]) -> Callable[..., Any]:
        for decorator in reversed(decorators):
            func = decorator(func)
        return func

    return apply


def choice(*names: str, choices: tuple[str, ...], default: str, help: str, metavar: str | None = None) -> Decorator:
    """An option taking one of ``choices``, its default shown in ``--help``."""
    return click.option(
        *names, type=click.Choice(choices), default=default, show_default=True, help=help, metavar=metavar
    )


def count(
    *names: str, default: int | None, help: str | None = None, low: int = 1, high: int | None = None
) -> Decorator:
    """An option taking a whole number from ``low`` (to ``high``), its default shown in ``--help`` when it has one."""
    return click.option(
        *names, type=click.IntRange(low, high), default=default, show_default=default is not None, help=help
    )


def text(*names: str, metavar: str, help: str, default: str | None = None) -> Decorator:
    """An option taking free text named ``metavar`` in ``--help``, its default shown when it has one."""
    return click.option(*names, default=default, show_default=default is not None, metavar=metavar, help=help)


def _wide(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    ctx.meta[WIDE] = value


def wide_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """--wide: tables with every row on one line instead of fitting the terminal's width."""
    return click.option(
        "--wide",
        is_flag=True,
        expose_value=False,
        callback=_wide,
        help="Print tables with every row on one line (default: fit the terminal's width, "
        "long explanations as numbered notes under the table).",
    )(func)


def format_option(func: Callable[..., Any]) -> Callable[..., Any]:
    func = wide_option(func)
    return click.option(
        "--format", "fmt", type=FormatChoice(), default="table", show_default=True, help="How to print results."
    )(func)


def store_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--store",
        "store_path",
        type=click.Path(dir_okay=False),
        default=None,
        help=f"Results store (SQLite). Default: ${STORE_ENV} or reports/gpuprof.sqlite.",
    )(func)


def _writable(
    ctx: click.Context, param: click.Parameter, value: str | None, folder: bool, suffixes: tuple[str, ...]
) -> str | None:
    """``value`` when gpuprof can write it; a one-line usage error before any work otherwise.

    A file's folder must exist (a typo in it should not cost a measurement); a folder is created
    later, so its nearest existing parent must be a folder this process can write.
    """
    if value is None:
        return None
    path = Path(value)
    if suffixes and path.suffix.lower() not in suffixes:
        raise click.BadParameter(f"'{path.name}' is not a {' or '.join(suffixes)} file name", ctx, param)
    if not folder:  # a symlink is written through to its target, a device or FIFO directly
        try:
            real, stream = outputs.target(path)
        except GpuprofError as error:
            raise click.BadParameter(error.problem, ctx, param) from None
        if stream:
            if not os.access(real, os.W_OK):
                raise click.BadParameter(f"{path} cannot be written: give another path", ctx, param)
            return value
        path = real
    target = path if folder else path.parent
    existing = next(p for p in (target, *target.parents) if p.exists())  # '.' or '/' at the latest
    if not folder and existing != target:
        raise click.BadParameter(f"folder {target} does not exist: create it or give another path", ctx, param)
    if not existing.is_dir():
        raise click.BadParameter(f"{existing} is a file, not a folder: give another path", ctx, param)
    if not os.access(existing, os.W_OK):
        raise click.BadParameter(
            f"folder {existing} cannot be written (read-only, or another user's): give another path", ctx, param
        )
    why = outputs.creatable_in(existing)
    if why:
        raise click.BadParameter(f"nothing can be created in {existing} ({why}): give another path", ctx, param)
    if not folder and path.exists() and not os.access(path, os.W_OK):
        raise click.BadParameter(f"{path} cannot be written: give another path", ctx, param)
    return value


def output_file(*suffixes: str) -> Callable[[click.Context, click.Parameter, str | None], str | None]:
    """Click callback: the option names a file to write (with one of ``suffixes``, when given)."""
    return functools.partial(_writable, folder=False, suffixes=suffixes)


def output_folder(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Click callback: the option names a folder to write into, created when missing."""
    return _writable(ctx, param, value, folder=True, suffixes=())


def handle_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    """Turn gpuprof errors, Ctrl-C and a closed pipe into one line and an exit code, no traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from gpuprof.errors import GpuprofError

        try:
            return func(*args, **kwargs)
        except GpuprofError as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(error.exit_code)
        except KeyboardInterrupt:
            click.echo("error: interrupted. Results stored before the interrupt are kept.", err=True)
            sys.exit(130)
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)

    return wrapper


def command_line() -> str:
    """The exact command the user typed, quoted so it can be pasted back into a shell."""
    import shlex

    return shlex.join(click.get_current_context().meta.get("gpuprof.argv", ["gpuprof"]))


def echo(text: str) -> None:
    click.echo(text)


def note(text: str) -> None:
    """A line for the user that is not data: goes to stderr so piped output stays clean, with control
    characters from file and kernel names written out (:func:`gpuprof.errors.printable`). On a
    terminal it wraps to the width tables fit, continuation lines indented; words (paths, commands)
    are never cut, and what goes to a file or pipe stays one line per note."""
    text = prose(printable(text, keep_newlines=True), table_width() if sys.stderr.isatty() else None)
    click.echo(text, err=True)
