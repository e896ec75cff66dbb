"""Counter maths per region instance: the instruction mix, counted FLOPs by vector width, Top-Down
level 1 and the consistency of children against their parent, as column expressions.

Input is a counts frame: one row per region instance (or block of a counter file), the columns
``name`` and ``parent`` (the parent's row label, NA at the top) and one column per event, named as
:func:`gpuprof.derive.cpu_flops.normalise_event` spells it (``instructions``,
``fp_arith_inst_retired.512b_packed_single`` ...). Counts keep origin measured; every ratio here is
derived. "Arithmetic" instructions are instructions − loads − stores − branches: everything that is
not a memory access or a branch (integer, address and FP work alike), named so because that is all
the subtraction can say.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from gpuprof.derive.cpu_flops import INTEL_WEIGHTS, normalise_event
from gpuprof.model import Run

# Generic quantities -> the event spellings that count them (perf generic, PAPI presets, Intel, AMD).
ALIASES: dict[str, tuple[str, ...]] = {
    "instructions": ("instructions", "perf_count_hw_instructions", "papi_tot_ins", "inst_retired.any", "ex_ret_instr"),
    "cycles": (
        "cycles",
        "cpu-cycles",
        "perf_count_hw_cpu_cycles",
        "papi_tot_cyc",
        "cpu_clk_unhalted.thread",
        "ls_not_halted_cyc",
    ),
    "loads": ("l1-dcache-loads", "mem_inst_retired.all_loads", "papi_ld_ins", "ls_dispatch.ld_dispatch"),
    "stores": ("l1-dcache-stores", "mem_inst_retired.all_stores", "papi_sr_ins", "ls_dispatch.store_dispatch"),
    "branches": (
        "branches",
        "branch-instructions",
        "perf_count_hw_branch_instructions",
        "papi_br_ins",
        "br_inst_retired.all_branches",
        "ex_ret_brn",
    ),
}
_FP = re.compile(r"^fp_arith(?:_inst_retired)?[.:](scalar|128b_packed|256b_packed|512b_packed)_(single|double)$")
WIDTHS = ("scalar", "128b_packed", "256b_packed", "512b_packed")
# Top-Down level 1 from the slot events (Intel's generic perf names; the ICL+ fixed counter names).
_TOPDOWN_OLD = (
    "topdown-total-slots",
    "topdown-slots-issued",
    "topdown-slots-retired",
    "topdown-fetch-bubbles",
    "topdown-recovery-bubbles",
)
_TOPDOWN_NEW = ("slots", "topdown-retiring", "topdown-bad-spec", "topdown-fe-bound", "topdown-be-bound")


def counts_from_regions(run: Run) -> pd.DataFrame:
    """The counts frame of a profile's region instances: per instance, end − begin of the cumulative
    counts the counter hook wrote on its two lines (:mod:`gpuprof.counting`), or the event counts
    stored with it (``perf stat -I`` intervals attributed by time); empty without either.
    ``counted fraction``: the smallest share of time the kernel counted (below 1: multiplexed, scaled)."""
    rows, names, parents, fractions = {}, {}, {}, {}
    for launch in run.launches:
        attributes = launch.attributes
        if attributes.get("kind") != "region":
            continue
        extra = json.loads(attributes["extra"]) if attributes.get("extra") else {}
        begin, end = extra.get("begin", {}).get("c"), extra.get("end", {}).get("c")
        if begin and end:
            rows[launch.index] = {event: float(end[event]) - float(begin.get(event, 0.0)) for event in end}
            fractions[launch.index] = min(float(extra["begin"].get("cm", 1.0)), float(extra["end"].get("cm", 1.0)))
        else:
            stored = {m.name: float(m.value) for m in launch.metrics if m.unit == "event"}  # type: ignore[arg-type]
            if not stored:
                continue
            rows[launch.index], fractions[launch.index] = stored, 1.0
        names[launch.index] = attributes.get("name", launch.kernel)
        parent = attributes.get("parent")
        parents[launch.index] = int(parent) if parent not in (None, "") else pd.NA
    frame = pd.DataFrame.from_dict(rows, orient="index")
    if frame.empty:
        return pd.DataFrame(columns=["name", "parent", "counted fraction"])
    frame.columns = [normalise_event(str(c)) for c in frame.columns]
    frame.insert(0, "counted fraction", [fractions[i] for i in frame.index])
    frame.insert(0, "parent", pd.array([parents[i] for i in frame.index], dtype="Int64"))
    frame.insert(0, "name", [names[i] for i in frame.index])
    return frame


def _column(counts: pd.DataFrame, quantity: str) -> pd.Series:
    """The first alias of ``quantity`` the frame has, else NaN (not counted)."""
    for spelling in ALIASES[quantity]:
        if spelling in counts.columns:
            return counts[spelling].astype(float)
    return pd.Series(np.nan, index=counts.index)


def flops_by_width(counts: pd.DataFrame) -> pd.DataFrame:
    """Counted FLOPs per vector width (lanes × instructions, single and double together) and their
    total, plus the FP instruction count; NaN where no FP event of that width was counted."""
    out = pd.DataFrame(index=counts.index)
    instructions = pd.Series(0.0, index=counts.index)
    seen = False
    for column in counts.columns:
        match = _FP.match(str(column))
        if not match:
            continue
        seen = True
        width = f"FLOPs {match.group(1).replace('_packed', '')}"
        weighted = counts[column].astype(float) * INTEL_WEIGHTS[(match.group(1), match.group(2))]
        out[width] = out[width] + weighted if width in out else weighted
        instructions = instructions + counts[column].astype(float)
    out = out.reindex(
        columns=[
            f"FLOPs {w.replace('_packed', '')}" for w in WIDTHS if f"FLOPs {w.replace('_packed', '')}" in out.columns
        ]
    )
    out["FLOPs"] = out.sum(axis=1) if seen else np.nan
    out["FP instructions"] = instructions if seen else np.nan
    return out


def topdown_level1(counts: pd.DataFrame) -> pd.DataFrame:
    """Top-Down level 1 in % of slots from slot counts; NaN columns when the slot events are absent."""
    c = counts
    out = pd.DataFrame(index=counts.index)
    if all(e in c.columns for e in _TOPDOWN_NEW):
        slots = c["slots"].astype(float)
        parts = {
            "retiring": c["topdown-retiring"],
            "bad speculation": c["topdown-bad-spec"],
            "frontend bound": c["topdown-fe-bound"],
            "backend bound": c["topdown-be-bound"],
        }
    elif all(e in c.columns for e in _TOPDOWN_OLD):
        slots = c["topdown-total-slots"].astype(float)
        retiring = c["topdown-slots-retired"].astype(float)
        bad = c["topdown-slots-issued"] - c["topdown-slots-retired"] + c["topdown-recovery-bubbles"]
        frontend = c["topdown-fetch-bubbles"].astype(float)
        parts = {
            "retiring": retiring,
            "bad speculation": bad,
            "frontend bound": frontend,
            "backend bound": slots - retiring - bad - frontend,
        }
    else:
        return pd.DataFrame(
            {f"{k} (%)": np.nan for k in ("retiring", "bad speculation", "frontend bound", "backend bound")},
            index=counts.index,
        )
    for key, value in parts.items():
        out[f"{key} (%)"] = 100.0 * value.astype(float) / slots
    return out


def mix_frame(counts: pd.DataFrame) -> pd.DataFrame:
    """Per row: IPC, instructions / loads+stores / branches per FP instruction, arithmetic
    instructions, counted FLOPs by width and Top-Down level 1 (all derived from the counts)."""
    instructions, cycles = _column(counts, "instructions"), _column(counts, "cycles")
    loads, stores, branches = _column(counts, "loads"), _column(counts, "stores"), _column(counts, "branches")
    flops = flops_by_width(counts)
    fp = flops["FP instructions"].where(flops["FP instructions"] > 0)
    out = pd.DataFrame(
        {
            "name": counts["name"],
            "instructions": instructions,
            "IPC": instructions / cycles,
            "instructions per FP instruction": instructions / fp,
            "loads+stores per FP instruction": (loads + stores) / fp,
            "branches per FP instruction": branches / fp,
            "arithmetic instructions (instructions - loads - stores - branches)": instructions
            - loads
            - stores
            - branches,
        },
        index=counts.index,
    )
    return pd.concat([out, flops, topdown_level1(counts)], axis=1)


def consistency_frame(counts: pd.DataFrame) -> pd.DataFrame:
    """One row per parent that has children: Σ children / parent − 1 for every event column (0 when
    the children account for all of the parent's counts; negative: work outside the children)."""
    events = [c for c in counts.columns if c not in ("name", "parent", "counted fraction")]
    children = counts[counts["parent"].notna()]
    if children.empty:
        return pd.DataFrame(columns=["parent", "name", "children", *events])
    sums = children.groupby(children["parent"].astype(int))[events].sum()
    parents = counts.loc[sums.index, events].astype(float)
    gap = sums / parents.where(parents != 0) - 1.0
    gap.insert(0, "children", children.groupby(children["parent"].astype(int)).size())
    gap.insert(0, "name", counts.loc[sums.index, "name"])
    gap.insert(0, "parent", sums.index)
    return gap.reset_index(drop=True)


def interval_basis(interval_s: float) -> str:
    """The basis of counts attributed from ``perf stat -I``: their resolution is the interval."""
    return (
        f"perf stat -I {interval_s * 1e3:g} ms intervals around the command, each interval's counts shared among "
        f"regions by overlap in time (resolution {interval_s * 1e3:g} ms: a region shorter than that gets a "
        f"pro-rata share, not its own count)"
    )


def counts_from_intervals(intervals: pd.DataFrame, regions: pd.DataFrame, interval_s: float) -> pd.DataFrame:
    """The fallback that needs nothing in the program: counts of ``perf stat -I`` intervals
    (``intervals``: one row per interval, ``end (s)`` on the regions' clock, optionally ``begin (s)``
    (else ``end`` − ``interval_s``), then one column per event) attributed to ``regions`` (``name``,
    ``parent``, ``begin (s)``, ``end (s)``) by the share of each interval that the region covers; NaN
    where a covered interval was not counted."""
    ends = intervals["end (s)"].to_numpy(dtype=float)
    starts = intervals["begin (s)"].to_numpy(dtype=float) if "begin (s)" in intervals else ends - interval_s
    events = [c for c in intervals.columns if c not in ("begin (s)", "end (s)")]
    values = intervals[events].to_numpy(dtype=float)
    begin = regions["begin (s)"].to_numpy(dtype=float)[:, None]
    end = regions["end (s)"].to_numpy(dtype=float)[:, None]
    lengths = np.where(ends > starts, ends - starts, np.inf)
    overlap = np.clip(np.minimum(end, ends[None, :]) - np.maximum(begin, starts[None, :]), 0.0, None) / lengths
    counted = overlap @ np.nan_to_num(values)
    counted[(overlap > 0) @ np.isnan(values)] = np.nan  # an interval perf did not count: unknown, not 0
    out = pd.DataFrame(counted, columns=events, index=regions.index)
    out.insert(0, "parent", regions["parent"])
    out.insert(0, "name", regions["name"])
    return out
