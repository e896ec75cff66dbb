"""The one progress bar of every long command (run, calibrate, compare --html): a line on stderr
that names the step in progress, shown on a terminal only, so piped output stays clean.

Library code reports steps through a :data:`gpuprof.workloads.timing.Progress` callable
(``(step, done, total)``); it never imports this module.
"""

from __future__ import annotations

import sys
import time
from typing import Any


class Bar:
    """A bar on stderr drawn between calls (no thread competes with timed ones), at most five times a
    second, a new step at once; gone when stopped, and started again by the next step."""

    def __init__(self, label: str) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.label = label
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=Console(stderr=True),
            transient=True,
            auto_refresh=False,
        )
        self.task: Any = None
        self.drawn = 0.0
        self.phase = ""

    def __call__(self, phase: str, done: int, total: int) -> None:
        if self.task is None:
            self.task = self.bar.add_task(f"{self.label}: {phase}")
            self.bar.start()
        self.bar.update(self.task, description=f"{self.label}: {phase}", completed=done, total=total)
        if time.monotonic() - self.drawn > 0.2 or phase != self.phase:  # a new phase is shown at once
            self.phase = phase
            self.bar.refresh()
            self.drawn = time.monotonic()

    def stop(self) -> None:
        """Erase the bar (before the command prints its results); the next step draws it again."""
        if self.task is not None:
            self.bar.stop()
            self.bar.remove_task(self.task)
            self.task, self.phase = None, ""


def bar(label: str, first_step: str | None = None) -> Bar | None:
    """A :class:`Bar` when stderr is a terminal (None when piped), showing ``first_step`` at once."""
    if not sys.stderr.isatty():
        return None
    shown = Bar(label)
    if first_step:
        shown(first_step, 0, 1)
    return shown
