"""FLOPs counted by CPU hardware events, weighted the way the DL-Prof study does.

Intel ``FP_ARITH_INST_RETIRED.*`` counts instructions by vector width, and an FMA counts twice, so
FLOPs = Σ lanes × count: 1 / 4 / 8 / 16 per scalar / 128b / 256b / 512b packed single instruction,
1 / 2 / 4 / 8 for double. AMD's ``fp_ret_sse_avx_ops.all`` already counts FLOPs (an FMA counts 2);
its umasks (``.mac_flops``, ``.add_sub_flops`` ...) are parts of it and never added to it. Names are matched
case-insensitively with or without a PMU prefix (``cpu_core/...``, summed over hybrid PMUs) and
modifiers (``:u``), in perf (``fp_arith_inst_retired.scalar_double``) or libpfm
(``FP_ARITH:SCALAR_DOUBLE``) spelling.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from gpuprof.model import Metric, Run

if TYPE_CHECKING:
    import pandas as pd

# (width, precision) -> FLOPs per retired instruction.
INTEL_WEIGHTS = {
    ("scalar", "single"): 1,
    ("128b_packed", "single"): 4,
    ("256b_packed", "single"): 8,
    ("512b_packed", "single"): 16,
    ("scalar", "double"): 1,
    ("128b_packed", "double"): 2,
    ("256b_packed", "double"): 4,
    ("512b_packed", "double"): 8,
}
_INTEL = re.compile(r"^fp_arith(?:_inst_retired)?[.:](scalar|128b_packed|256b_packed|512b_packed)_(single|double)$")
_AMD = re.compile(r"^fp_ret_sse_avx_ops[.:]all$")
# The umasks .all sums (an FMA already counts 2 in .mac_flops and in .all).
_AMD_SUBSET = re.compile(r"^fp_ret_sse_avx_ops[.:](?:add_sub|mult|div|mac|bfloat_mac)_flops$")
_PRECISION_DTYPE = {"single": "float32", "double": "float64"}


def normalise_event(name: str) -> str:
    """'cpu_core/FP_ARITH_INST_RETIRED.SCALAR_DOUBLE/:u' -> 'fp_arith_inst_retired.scalar_double'."""
    name = name.strip().lower().rstrip("/")
    if "/" in name:
        name = name.split("/", 1)[1].rstrip("/")
    return re.sub(r":[ukhpGH]+$", "", name)


def _counted(metrics: Iterable[Metric]) -> list[tuple[str, float]]:
    """(normalised event, count) of every numeric event count (not ':running' or perf's ratios)."""
    return [
        (normalise_event(m.name), float(m.value))
        for m in metrics
        if m.unit == "event" and isinstance(m.value, (int, float))
    ]


def flops_by_dtype(metrics: Iterable[Metric]) -> dict[str, float]:
    """Counted FLOPs per dtype ('float32', 'float64'; 'any' for AMD's undivided count)."""
    out: dict[str, float] = {}
    for event, count in _counted(metrics):
        intel = _INTEL.match(event)
        if intel:
            dtype = _PRECISION_DTYPE[intel.group(2)]
            out[dtype] = out.get(dtype, 0.0) + INTEL_WEIGHTS[(intel.group(1), intel.group(2))] * count
        elif _AMD.match(event):
            out["any"] = out.get("any", 0.0) + count
    return out


def flops_from_events(metrics: Iterable[Metric]) -> tuple[float, str] | None:
    """Total counted FLOPs (origin: measured) and the basis to print beside them; None without FP events."""
    metrics = list(metrics)
    by_dtype = flops_by_dtype(metrics)
    if not by_dtype:
        return None
    parts = []
    if "float32" in by_dtype or "float64" in by_dtype:
        parts.append(
            "FP_ARITH_INST_RETIRED × lanes (single 1/4/8/16, double 1/2/4/8 per scalar/128b/256b/512b; "
            "an FMA counts twice)"
        )
    if "any" in by_dtype:
        parts.append("fp_ret_sse_avx_ops.all (AMD counts FLOPs directly)")
        subsets = sorted({event for event, _ in _counted(metrics) if _AMD_SUBSET.match(event)})
        if subsets:
            parts.append(f"{', '.join(subsets)} also counted: part of .all, not added again")
    running = [
        float(m.value)
        for m in metrics
        if m.name.endswith(":running")
        and isinstance(m.value, (int, float))
        and (_INTEL.match(normalise_event(m.name[:-8])) or _AMD.match(normalise_event(m.name[:-8])))
    ]
    if running:
        parts.append(f"multiplexed: perf scaled counts seen {min(running):g}% of the time")
    return sum(by_dtype.values()), "; ".join(parts)


def launch_columns(run: Run) -> dict[str, list[float]] | None:
    """Per launch of a CPU run, the counted FLOPs (``sp``, ``dp``, and ``total``, which for AMD's
    undivided count is all there is), the wall time perf measured and the basis text; None when no
    launch has FP events. FLOPs keep origin measured: the lane weights are in the basis."""
    rows = []
    for launch in run.launches:
        by_dtype = flops_by_dtype(launch.metrics)
        found = flops_from_events(launch.metrics)
        elapsed = next(
            (float(m.value) for m in launch.metrics if m.name == "time elapsed" and isinstance(m.value, (int, float))),
            float("nan"),
        )
        nan = float("nan")
        rows.append(
            (
                by_dtype.get("float32", nan),
                by_dtype.get("float64", nan),
                found[0] if found else nan,
                elapsed,
                f"counted FLOPs: {found[1]}" if found else "",
            )
        )
    if not any(row[4] for row in rows):
        return None
    sp, dp, total, elapsed, basis = (list(column) for column in zip(*rows))
    return {"sp": sp, "dp": dp, "total": total, "time": elapsed, "basis": basis}


def matmul_validation(run: Run) -> pd.DataFrame | None:
    """The DL-Prof study's validation row for a square matrix product: n, 2n³ (multiplies and adds,
    the convention gpuprof's analytic FLOPs use), n²(2n−1) (no add for each sum's first term) and
    the FLOPs counted by FP events, or why none were; None for any other workload."""
    import pandas as pd

    shape = run.workload.get("shape") or ()
    if run.workload.get("op") != "dot" or len(shape) != 3 or len(set(shape)) != 1 or not run.launches:
        return None
    n = int(shape[0])
    found = flops_from_events(run.launches[0].metrics)
    if found is not None:
        counted, basis = f"{found[0]:,.0f}", f"measured: {found[1]}"
    else:
        no_pmu = any("no PMU" in note or "<not supported>" in note for note in run.notes)
        counted, basis = ("not counted: no PMU" if no_pmu else "not counted: no FP events read"), "-"
    return pd.DataFrame(
        [
            {
                "engine": run.workload.get("engine", ""),
                "n": n,
                "2n³ (analytic)": f"{2 * n**3:,}",
                "n²(2n−1) (analytic)": f"{n * n * (2 * n - 1):,}",
                "counted FLOPs": counted,
                "basis": basis,
            }
        ]
    )
