"""The compile row of a run report: what an engine compiled before the first call returned, and how
long that took (:mod:`gpuprof.workloads.compile_time` recorded it apart from the timed repeats)."""

from __future__ import annotations

from gpuprof.derive.quantity import Quantity, reported
from gpuprof.model import TIMED, Run
from gpuprof.model.units import human
from gpuprof.workloads.compile_time import FIRST_CALL, PHASE, PREPARE


def quantities(run: Run) -> list[Quantity]:
    """One row per compile launch (a run has at most one): build + first call, with both parts."""
    out = []
    for launch in run.launches:
        if launch.attributes.get("phase") != PHASE:
            continue
        build, first = launch.value(PREPARE), launch.value(FIRST_CALL)
        if not isinstance(build, float) or not isinstance(first, float):
            continue
        out.append(
            reported(
                "compile_time",
                build + first,
                TIMED,
                f"{launch.attributes.get('compiler', 'compile')}: building the function "
                f"{human(build, 'second')} + first call {human(first, 'second')} (compiles, runs the op "
                "once, checked); time.perf_counter, never part of the repeats",
            )
        )
    return out
