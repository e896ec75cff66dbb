"""Kernel times a file cannot vouch for: elapsed cycles that may come from an instrumented pass.

Nsight Compute counts SASS instructions (``*sass_thread_inst_executed*``) by patching the kernel's
code and replaying it; cycle counters read in such a pass run long (about 100x has been reported),
and a CSV does not say which pass a counter came from. So the time ``elapsed cycles / SM clock``
is checked where it can be and flagged where it cannot:

* a launch with both ``gpu__time_duration.sum`` and cycles / clock: the two must agree (they do to
  2e-7 in NERSC's A100 fixture); the note counts the launches where they differ by more than
  :data:`TOLERANCE` and gives the worst ratio. The time shown is the measured duration.
* a file that counts SASS instructions and gives time only as cycles / clock: the note says that
  time is unchecked.

Two files of the same launches that disagree are :mod:`gpuprof.readers.joining`'s to report.
"""

from __future__ import annotations

from gpuprof.derive.counted import cycle_time, keys
from gpuprof.derive.pivot import Counters
from gpuprof.model import Run
from gpuprof.readers.joining import counts_instructions, cycles_unchecked

__all__ = ["TOLERANCE", "counts_instructions", "cycles_unchecked", "notes"]  # the file facts live with the reader

TOLERANCE = 0.10  # relative difference between the measured duration and cycles / clock


def notes(run: Run) -> list[str]:
    """What the run's notes should say about its kernel times (see the module docstring)."""
    import numpy as np

    c = Counters.of_run(run, keys())
    measured, derived = c.number("kernel_duration"), cycle_time(c)
    both = ~np.isnan(measured) & ~np.isnan(derived) & (measured > 0)
    ratio = np.where(both, derived / np.where(both, measured, 1.0), 1.0)
    off = np.abs(ratio - 1) > TOLERANCE
    found = []
    if off.any():
        worst = int(np.argmax(np.abs(np.log(ratio))))
        found.append(
            f"{int(off.sum())} of {int(both.sum())} launches: elapsed cycles / SM clock differs from "
            f"gpu__time_duration.sum by more than {TOLERANCE:.0%} (worst: launch ID "
            f"{run.launch_table['index'].iloc[worst]}, {ratio[worst]:.3g} x); the cycles look taken in "
            "an instrumented (instruction-counting) pass; kernel time is the measured duration"
        )
    only_cycles = np.isnan(measured) & ~np.isnan(derived)
    if only_cycles.any() and cycles_unchecked(run):
        found.append(
            f"kernel time of {int(only_cycles.sum())} launch(es) is elapsed cycles / SM clock from a file "
            "that also counts SASS instructions: ncu can take those cycles in an instrumented pass, where "
            "they run long (~100x), and without gpu__time_duration.sum this time cannot be checked"
        )
    return found
