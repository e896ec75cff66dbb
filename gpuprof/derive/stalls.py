"""Warp-stall drill-down: which reasons keep a kernel's warps from issuing, ranked, and what that suggests.

Works on any reader's :class:`~gpuprof.model.Run` by recognising stall metrics by name, using the one
vocabulary in ``gpuprof/data/stalls.toml``. Four bases, each stated with the result:

* ``nvprof``     nvprof ``stall_*`` metrics: already percentages of all stalls; kept as reported.
* ``ratio``      ncu ``smsp__average_warps_issue_stalled_<r>_per_issue_active.ratio`` (warp cycles per
                 issued instruction), normalised to shares of stall cycles.
* ``pct``        ncu ``smsp__warp_issue_stalled_<r>_per_warp_active.pct``, normalised likewise.
* ``pcsamp``     ncu PC-sampling counts ``smsp__pcsamp_warps_issue_stalled_<r>``, normalised likewise.

The ``selected`` state (the warp issuing) is not a stall and is left out of the shares. Reasons a
profile does not contain are never invented: an architecture or tool version without a state simply
has no row for it. Pure functions: no files, no subprocesses.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from gpuprof.model import MEASURED, Metric, Run
from gpuprof.model.stalls import (
    NVPROF,
    PCSAMP,
    PCT,
    RATIO,
    InstructionSamples,
    classify,
    describe,
    reason_for_token,
    vocabulary,
)

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

__all__ = [
    "NVPROF",
    "PCSAMP",
    "PCT",
    "RATIO",
    "InstructionSamples",
    "classify",
    "describe",
    "reason_for_token",
    "vocabulary",
]  # the vocabulary lives in the model (readers use it too); named here as before

# Preferred basis when a launch carries several (ncu's own Warp State section uses the ratios).
# nvprof-named values in an ncu file are sums a reader derived, so ncu bases come first.
PREFERENCE = (RATIO, PCT, PCSAMP, NVPROF)

BASIS_TEXT = {
    NVPROF: "nvprof issue-stall percentages (share of all stalls, as nvprof reports them)",
    RATIO: "ncu warp-state ratios (warp cycles per issued instruction) normalised to shares of stall "
    "cycles; 'selected' (issuing) excluded",
    PCT: "ncu warp-state percentages of warp-active cycles normalised to shares of stall cycles; 'selected' excluded",
    PCSAMP: "PC-sampling sample counts normalised to shares of stalled samples; 'selected' excluded",
}
# What a share is a share of, per basis, for the explanation sentences.
SHARE_OF = {NVPROF: "of all stalls", RATIO: "of stall cycles", PCT: "of stall cycles", PCSAMP: "of stalled samples"}
UNIT = {NVPROF: "% of stalls", RATIO: "cycles/issue", PCT: "% warp-active", PCSAMP: "samples"}
UNNAMED = "device not named in the file"  # the column of a profile without a device (ncu text, source page)

# Words that mark a transcendental-heavy op, whose short-scoreboard stalls are special-function-unit waits.
_TRANSCENDENTAL = re.compile(r"(?<![a-z])(sigmoid|tanh|expf?|erf|logf?|softmax|gelu)(?![a-z])", re.IGNORECASE)


class StallShare(NamedTuple):
    """One reason's value as the tool reported it and its share of the kernel's stall cycles (a named
    tuple: a run of 50,000 launches makes a million of them, five times faster than a frozen dataclass)."""

    reason: str  # ncu reason token or nvprof metric name
    label: str
    metric: str  # the tool's metric name
    value: float  # in the basis' unit (UNIT[basis])
    share: float  # 0..1 of stall cycles (nvprof: its own percentage / 100)


@dataclass(frozen=True)
class StallProfile:
    """One launch's ranked stall reasons on one basis."""

    kernel: str
    device: str
    launch: int
    basis: str
    reasons: tuple[StallShare, ...]  # ranked, largest share first
    coverage: float = 1.0  # nvprof: share of all stalls the collected reasons cover

    @property
    def family(self) -> str:
        return NVPROF if self.basis == NVPROF else "ncu"

    def share(self, reason: str) -> float | None:
        for item in self.reasons:
            if item.reason == reason:
                return item.share
        return None


def metric_value(metric: Metric) -> float | None:
    """The value to rank on: for one-invocation aggregates whose min equals max, that value.

    ncu's ``--print-summary`` text prints some PC-sampling Averages as twice the identical
    Minimum/Maximum (9552 / 9552 / 19104); min == max is then the true single value.
    """
    if metric.minimum is not None and metric.minimum == metric.maximum:
        return float(metric.minimum)
    return float(metric.value) if isinstance(metric.value, int | float) else None


def _classified(names: Sequence[object], reasons: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """Per name (a category of the metric table) and one more for "no name": the position in
    :data:`PREFERENCE` of its basis (-1: not a stall metric) and the number of its reason in
    ``reasons`` (added there when new); each distinct name classified once."""
    import numpy as np

    found = [classify(name) if isinstance(name, str) else None for name in names]
    ranks = [PREFERENCE.index(kind[0]) if kind else -1 for kind in found]
    codes = [reasons.setdefault(kind[1], len(reasons)) if kind else -1 for kind in found]
    return np.array([*ranks, -1], dtype=np.int64), np.array([*codes, -1], dtype=np.int64)


def _stall_rows(run: Run) -> tuple[dict[str, np.ndarray], list[str]]:
    """Every measured stall value of the run that is a number, the first row per (launch, basis,
    reason) as a tool that gave a value twice meant its first: columns ``row`` (in the metric
    table), ``launch``, ``basis`` (position in :data:`PREFERENCE`), ``reason`` (a number: its
    position in the sorted reason names also returned) and ``value`` (:func:`metric_value`'s rule).
    Column expressions over the metric table: names are classified per category, not per row."""
    import numpy as np
    import pandas as pd

    metrics = run.metric_table
    reasons: dict[str, int] = {}
    name_rank, name_reason = _classified(list(metrics["metric"].cat.categories), reasons)
    canonical_rank, canonical_reason = _classified(list(metrics["canonical"].cat.categories), reasons)
    name_codes, canonical_codes = metrics["metric"].cat.codes.to_numpy(), metrics["canonical"].cat.codes.to_numpy()
    rank = name_rank[name_codes]  # code -1 (no name) picks the trailing "not a stall metric"
    reason = name_reason[name_codes]
    by_canonical = rank < 0  # a tool name that is no stall metric may have a canonical one that is
    rank = np.where(by_canonical, canonical_rank[canonical_codes], rank)
    reason = np.where(by_canonical, canonical_reason[canonical_codes], reason)
    low, high = metrics["minimum"].to_numpy(), metrics["maximum"].to_numpy()
    value = np.where(low == high, low, metrics["value"].to_numpy())  # NaN == NaN is False
    origin = metrics["origin"].cat
    measured = origin.codes.to_numpy() == (
        list(origin.categories).index(MEASURED) if MEASURED in origin.categories else -2
    )
    rows = np.flatnonzero((rank >= 0) & ~np.isnan(value) & measured)
    names = sorted(reasons)
    order = np.array([reasons[name] for name in names], dtype=np.int64)
    to_sorted = np.empty(len(names), dtype=np.int64)
    to_sorted[order] = np.arange(len(names))
    launch = metrics["launch"].to_numpy()[rows].astype(np.int64)
    rank, reason = rank[rows], to_sorted[reason[rows]] if len(names) else reason[rows]
    cell = (launch * len(PREFERENCE) + rank) * max(len(names), 1) + reason
    first = ~pd.Series(cell).duplicated().to_numpy()  # rows are in launch order, a launch's in the tool's
    return (
        {
            "row": rows[first],
            "launch": launch[first],
            "basis": rank[first],
            "reason": reason[first],
            "value": value[rows[first]],
        },
        names,
    )


@functools.cache
def _is_stall(family: str, reason: str) -> bool:
    return bool(describe(family, reason).get("stall", True))


def stall_table(run: Run, basis: str | None = None) -> pd.DataFrame:
    """The ranked stall reasons of every launch that has stall metrics, on ``basis`` or the preferred
    one it carries, as one long table: ``launch`` (row in the launch table), ``kernel``, ``device``,
    ``index`` (the tool's launch ID), ``basis``, ``reason``, ``label``, ``metric`` (the tool's name),
    ``value`` (in the basis' unit), ``share`` (0..1 of stall cycles; nvprof: its own percentage /
    100) and ``coverage`` (nvprof: the share of all stalls its reasons cover; 1 otherwise).

    Rows are ranked within a launch, largest share first (ties by reason). A launch whose chosen
    basis holds only the issuing state has one row with no ``reason`` (NaN) and NaN share, so it
    is not lost. Column expressions over the metric table: the cost follows its rows, not Python
    objects per launch (benchmarks/bench_stalls.py)."""
    import numpy as np
    import pandas as pd

    if basis is not None and basis not in PREFERENCE:
        raise ValueError(f"unknown basis {basis!r}")
    found, names = _stall_rows(run)
    launch, rank = found["launch"], found["basis"]
    count = len(run.launch_table)
    none = len(PREFERENCE)
    chosen = np.full(count, none, dtype=np.int64)
    if basis is None:
        np.minimum.at(chosen, launch, rank)
    else:
        chosen[launch[rank == PREFERENCE.index(basis)]] = PREFERENCE.index(basis)
    nvprof_rank = PREFERENCE.index(NVPROF)
    stall = np.array(
        [[_is_stall("ncu", r) for r in names] + [False], [_is_stall(NVPROF, r) for r in names] + [False]], dtype=bool
    )
    keep = (rank == chosen[launch]) & stall[(rank == nvprof_rank).astype(np.int64), found["reason"]]
    row, launch, reason, value = found["row"][keep], launch[keep], found["reason"][keep], found["value"][keep]
    nvprof = chosen[launch] == nvprof_rank
    total = np.bincount(launch, weights=value, minlength=count)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(nvprof, value / 100.0, np.where(total[launch] > 0, value / total[launch], 0.0))
    coverage = np.where(
        chosen == nvprof_rank, np.bincount(launch, weights=np.where(nvprof, share, 0.0), minlength=count), 1.0
    )
    # a launch whose chosen basis held only non-stall states keeps a placeholder row
    empty = np.flatnonzero((chosen < none) & (np.bincount(launch, minlength=count) == 0))
    launch = np.concatenate([launch, empty])
    reason = np.concatenate([reason, np.full(len(empty), len(names))])
    share = np.concatenate([share, np.full(len(empty), np.nan)])
    value = np.concatenate([value, np.full(len(empty), np.nan)])
    row = np.concatenate([row, np.full(len(empty), -1)])
    order = np.lexsort((reason, -np.nan_to_num(share, nan=0.0), launch))
    launch, reason, row = launch[order], reason[order], row[order]
    family = (chosen[launch] == nvprof_rank).astype(np.int64)
    labels = [describe("ncu", r)["label"] for r in names] + [describe(NVPROF, r)["label"] for r in names]
    label_codes, label_names = pd.factorize(np.array(labels, dtype=object))
    label_codes = np.append(label_codes, -1)
    table = run.launch_table
    kernel_codes, kernels = pd.factorize(table["kernel"])
    default = str(run.device.get("name", ""))
    device_codes, devices = pd.factorize(table["device"].where(table["device"] != "", default).fillna(default))
    metric = run.metric_table["metric"].cat
    metric_codes = np.append(metric.codes.to_numpy(), -1)[row]
    return pd.DataFrame(
        {
            "launch": launch,
            "kernel": pd.Categorical.from_codes(kernel_codes[launch], kernels),
            "device": pd.Categorical.from_codes(device_codes[launch], devices),
            "index": table["index"].to_numpy()[launch],
            "basis": pd.Categorical.from_codes(chosen[launch], PREFERENCE),
            "reason": pd.Categorical.from_codes(np.where(reason < len(names), reason, -1), names),
            "label": pd.Categorical.from_codes(
                label_codes[np.where(reason < len(names), reason + family * len(names), len(labels))], label_names
            ),
            "metric": pd.Categorical.from_codes(metric_codes, metric.categories),
            "value": value[order],
            "share": share[order],
            "coverage": coverage[launch],
        }
    )


def stall_profiles(run: Run, basis: str | None = None) -> list[StallProfile]:
    """One ranked profile per launch that has stall metrics, on ``basis`` or the preferred one present
    (:func:`stall_table` as objects, for the explanations)."""
    import numpy as np

    table = stall_table(run, basis)
    launch = table["launch"].to_numpy()
    starts = np.flatnonzero(np.r_[True, launch[1:] != launch[:-1]]) if len(launch) else np.array([], dtype=int)
    items = list(
        map(StallShare._make, zip(*(table[c].tolist() for c in ("reason", "label", "metric", "value", "share"))))
    )
    heads = table.iloc[starts]
    return [
        StallProfile(kernel, device, index, chosen, () if math.isnan(share) else tuple(items[start:end]), coverage)
        for kernel, device, index, chosen, coverage, share, start, end in zip(
            heads["kernel"].tolist(),
            heads["device"].tolist(),
            heads["index"].tolist(),
            heads["basis"].tolist(),
            heads["coverage"].tolist(),
            heads["share"].tolist(),
            starts.tolist(),
            [*starts[1:].tolist(), len(table)],
        )
    ]  # a NaN share: the placeholder of a launch without stalls


def available_bases(run: Run) -> list[str]:
    """Which bases the run's launches carry, in order of preference."""
    import numpy as np

    present = set(np.unique(_stall_rows(run)[0]["basis"]).tolist())
    return [b for i, b in enumerate(PREFERENCE) if i in present]


def _pct(share: float) -> str:
    return f"{100 * share:.1f}%"


def explain(profile: StallProfile, hint: str = "") -> str:
    """Two or three sentences: what dominates, what it suggests, what usually helps.

    ``hint`` is extra context such as the op name ("sigmoid"): short-scoreboard stalls in a
    transcendental op point at the special-function unit rather than shared memory.
    """
    ranked = [s for s in profile.reasons if s.share > 0][:2]
    shared = len(ranked) > 1 and ranked[1].share >= 0.8 * ranked[0].share
    covered = _pct(profile.coverage) if profile.family == NVPROF and profile.coverage < 0.95 else None
    return _sentences(
        profile.kernel,
        profile.basis,
        [(s.reason, s.label, _pct(s.share)) for s in ranked],
        shared,
        len(profile.reasons),
        covered,
        hint,
    )


def _sentences(
    kernel: str,
    basis: str,
    ranked: list[tuple[str, str, str]],
    shared: bool,
    reasons: int,
    covered: str | None,
    hint: str,
) -> str:
    """:func:`explain` from what it reads: the first two (reason, label, percent) with stall cycles,
    whether they share the lead, the number of reasons collected and, for nvprof reasons that cover
    less than 95 % of stalls, the percent they cover."""
    family = NVPROF if basis == NVPROF else "ncu"
    if not ranked:
        return f"{kernel}: no stall cycles recorded on this basis ({BASIS_TEXT[basis]})."
    (top, top_label, top_pct), second = ranked[0], ranked[1] if len(ranked) > 1 else None
    spec = describe(family, top)
    suggests = spec["suggests"]
    transcendental = top in ("short_scoreboard", "stall_exec_dependency") and _TRANSCENDENTAL.search(f"{hint} {kernel}")
    if transcendental:
        suggests = (
            f"the {transcendental.group(0)} arithmetic waits on the special-function unit "
            f"(MUFU exp/rcp/tanh results), not on memory"
        )
    if second is not None and shared:
        lead = f"{top_label} ({top_pct}) and {second[1]} ({second[2]}) stalls share the lead"
        suggests += f", together with {describe(family, second[0])['suggests']}"
    else:
        lead = f"{top_label} stalls dominate ({top_pct} {SHARE_OF[basis]})"
        if second is not None:
            lead += f", then {second[1]} ({second[2]})"
    if covered is not None:
        lead = f"of the {reasons} nvprof stall reasons collected (together {covered} of all stalls): {lead}"
    sentences = [f"{kernel}: {lead[0].upper()}{lead[1:]}.", f"This suggests {suggests}."]
    if spec.get("fix"):
        sentences.append(f"What usually helps: {spec['fix'][0].lower()}{spec['fix'][1:]}")
    return " ".join(sentences)


def launch_groups(table: pd.DataFrame) -> np.ndarray:
    """Per row of a :func:`stall_table`, the number of its launch's profile (0, 1, ...): rows of one
    launch are consecutive."""
    import numpy as np

    launch = table["launch"].to_numpy()
    return np.cumsum(np.r_[True, launch[1:] != launch[:-1]]) - 1 if len(launch) else np.zeros(0, dtype=np.int64)


def explanations(table: pd.DataFrame, hint: str = "") -> list[str]:
    """:func:`explain` for every launch of a :func:`stall_table`, in its order, read from the columns
    (the first two reasons with stall cycles picked by array indexing, not through objects)."""
    import numpy as np

    group = launch_groups(table)
    count = int(group[-1]) + 1 if len(group) else 0
    share = table["share"].to_numpy()
    positive = np.flatnonzero(share > 0)  # NaN (a launch without stalls) is not
    first, second = np.full(count, -1), np.full(count, -1)
    owner = group[positive]  # rows are ranked within a launch: its first two positive rows lead
    lead = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]]) if len(owner) else owner
    first[owner[lead]] = positive[lead]
    after = lead[(lead + 1 < len(owner))]
    after = after[owner[np.minimum(after + 1, len(owner) - 1)] == owner[after]]
    second[owner[after]] = positive[after + 1]
    reasons = np.bincount(group, weights=~np.isnan(share), minlength=count).astype(int).tolist()
    heads = np.flatnonzero(np.r_[True, group[1:] != group[:-1]]) if len(group) else group
    kernel, basis, coverage = (table[c].take(heads).tolist() for c in ("kernel", "basis", "coverage"))
    reason, label = (table[c].to_numpy() for c in ("reason", "label"))
    with np.errstate(invalid="ignore"):
        top, runner_up = np.where(first >= 0, share[first], np.nan), np.where(second >= 0, share[second], np.nan)
        shared = (runner_up >= 0.8 * top).tolist()
    tops, seconds = ([_pct(v) for v in values.tolist()] for values in (top, runner_up))
    unsafe = {k for k in set(kernel) if any(mark in f"{k}{hint}" for mark in _MARKS)}
    sentences: dict[tuple, tuple[str, ...]] = {}  # per kernel and leading reasons: its text, the marks apart
    out = []
    for g, (one, two) in enumerate(zip(first.tolist(), second.tolist())):
        rows = (one, two) if two >= 0 else (one,) if one >= 0 else ()
        covered = basis[g] == NVPROF and coverage[g] < 0.95
        fill = dict(zip(_MARKS, (tops[g], seconds[g], _pct(coverage[g]) if covered else "")))
        key = (kernel[g], basis[g], *(reason[i] for i in rows), shared[g], covered and reasons[g])
        if key not in sentences or kernel[g] in unsafe:
            marks = _MARKS if kernel[g] not in unsafe else tuple(fill.values())
            ranked = [(reason[i], label[i], mark) for i, mark in zip(rows, marks)]
            text = _sentences(kernel[g], basis[g], ranked, shared[g], reasons[g], marks[2] if covered else None, hint)
            if kernel[g] in unsafe:  # a name holding a mark: written whole
                out.append(text)
                continue
            sentences[key] = tuple(re.split("([\x00-\x02])", text))
        out.append("".join([fill.get(part, part) for part in sentences[key]]))
    return out


_MARKS = ("\x00", "\x01", "\x02")  # where the top, second and coverage percents go in a shared sentence


def ranked_frame(table: pd.DataFrame, include_zero: bool = False) -> pd.DataFrame:
    """Long table for rendering: one row per launch x reason of a :func:`stall_table` with value, unit,
    share and basis, ranked within the launch; reasons without stall cycles only with ``include_zero``."""
    import numpy as np
    import pandas as pd

    share = table["share"].to_numpy()
    keep = ~np.isnan(share) if include_zero else share > 0
    group = launch_groups(table)[keep]
    new = np.r_[True, group[1:] != group[:-1]] if len(group) else np.zeros(0, dtype=bool)
    rank = np.arange(len(group)) - np.flatnonzero(new)[np.cumsum(new) - 1] + 1
    kept = table[keep]
    columns = {
        "device": kept["device"].array,
        "kernel": kept["kernel"].array,
        "rank": rank.astype(np.int64),
        "reason": kept["reason"].array,
        "label": kept["label"].array,
        "value": kept["value"].to_numpy(dtype=float),
        "unit": kept["basis"].map(UNIT).array,
        "share_pct": percent(share[keep]),
        "basis": kept["basis"].array,
        "origin": pd.Categorical.from_codes(np.zeros(len(kept), dtype=np.int8), [MEASURED]),
    }
    if not len(kept):
        return pd.DataFrame(columns=list(columns))
    return pd.DataFrame(columns)


def percent(share: np.ndarray) -> np.ndarray:
    """``round(100 * share, 2)`` of each share, as Python rounds (to the nearest hundredth, ties as the
    decimal value says): NumPy's faster rounding differs only next to a tie, where Python's is taken."""
    import numpy as np

    scaled = 100 * share
    out = np.round(scaled, 2)
    hundredths = scaled * 100
    near = np.flatnonzero(np.abs(hundredths - np.floor(hundredths) - 0.5) < 1e-6)
    out[near] = [round(v, 2) for v in scaled[near].tolist()]
    return out


def fold_to_nvprof(profile: StallProfile) -> dict[str, float]:
    """An ncu profile's shares regrouped into nvprof reasons by NVIDIA's nvprof->ncu metric table.

    States nvprof never had (branch_resolving, or newer ones) keep their own ncu name.
    """
    if profile.family == NVPROF:
        return {s.reason: s.share for s in profile.reasons}
    groups: dict[str, float] = {}
    for item in profile.reasons:
        target = describe("ncu", item.reason).get("nvprof", item.reason)
        groups[target] = groups.get(target, 0.0) + item.share
    return groups


def stall_comparison(
    runs_or_profiles: Iterable[Run | StallProfile], kernel: str | None = None, basis: str | None = None
) -> pd.DataFrame:
    """The same kernel's stall shares from several devices side by side (percent of stall cycles).

    Accepts Runs (every launch with stall metrics) and/or StallProfiles; ``kernel`` keeps profiles
    whose kernel name contains it. One column per profile, named by device (``device | kernel``
    when a device contributes several kernels); one row per reason, largest first. When nvprof and
    ncu profiles are mixed, ncu warp states are folded into nvprof reasons (NVIDIA's mapping) so
    rows mean the same thing. ``frame.attrs["basis"]`` maps each column to its basis.
    """
    import pandas as pd

    profiles: list[StallProfile] = []
    for item in runs_or_profiles:
        profiles.extend(stall_profiles(item, basis) if isinstance(item, Run) else [item])
    if kernel:
        profiles = [p for p in profiles if kernel in p.kernel]
    mixed = len({p.family for p in profiles}) > 1
    devices = [p.device or UNNAMED for p in profiles]
    columns: dict[str, dict[str, float]] = {}
    bases: dict[str, str] = {}
    labels: dict[str, str] = {}
    for p, device in zip(profiles, devices):
        name = device if devices.count(device) == 1 else f"{device} | {p.kernel}"
        if name in columns:  # the same device and kernel from several runs
            name = f"{name} #{sum(1 for c in columns if c.startswith(name)) + 1}"
        shares = fold_to_nvprof(p) if mixed else {s.reason: s.share for s in p.reasons}
        labels.update({r: describe(NVPROF if r in vocabulary()["nvprof"] else "ncu", r)["label"] for r in shares})
        columns[name] = {r: round(100 * v, 2) for r, v in shares.items()}
        bases[name] = p.basis
    frame = pd.DataFrame(columns)
    if frame.empty:
        return pd.DataFrame(columns=["reason", "label"])
    frame = frame.loc[frame.max(axis=1).sort_values(ascending=False, kind="stable").index]
    frame.insert(0, "label", [labels.get(r, r) for r in frame.index])
    frame = frame.rename_axis("reason").reset_index()
    frame.attrs["basis"] = bases
    return frame


def stall_rows(comparison: pd.DataFrame) -> pd.DataFrame:
    """:func:`stall_comparison` as one row per profile and reason, with its basis: for CSV and JSON."""
    bases = comparison.attrs.get("basis", {})
    rows = comparison.melt(id_vars=["reason", "label"], var_name="profile", value_name="% of stall cycles")
    rows = rows.dropna(subset=["% of stall cycles"])[["profile", "reason", "label", "% of stall cycles"]]
    return rows.assign(basis=rows["profile"].map(bases)).reset_index(drop=True)


# ---- source-level hot spots ----


@dataclass(frozen=True)
class HotSpot:
    address: int
    source: str
    samples: float  # all samples at this instruction ("Warp Stall Sampling (All ...)")
    kernel_share: float  # of all samples in the kernel
    reason: str  # dominant stall reason here ('selected' excluded); "" when none
    reason_samples: float


def hot_spots(instructions: Iterable[InstructionSamples], top: int = 10, reason: str | None = None) -> list[HotSpot]:
    """The ``top`` instructions with the most samples, each with its dominant stall reason.

    With ``reason`` (an ncu reason such as ``wait``) they are ranked by that reason's samples instead,
    to find where one kind of stall happens.
    """
    rows = list(instructions)
    total = sum(sum(i.samples.values()) for i in rows)
    spots = []
    for item in rows:
        count = sum(item.samples.values())
        stalls = {r: v for r, v in item.samples.items() if describe("ncu", r).get("stall", True) and v > 0}
        dominant = reason or (max(stalls, key=lambda r: (stalls[r], r)) if stalls else "")
        spots.append(
            HotSpot(
                item.address,
                item.source.strip(),
                count,
                count / total if total else 0.0,
                dominant,
                item.samples.get(dominant, 0.0),
            )
        )
    if reason:
        spots.sort(key=lambda s: (-s.reason_samples, s.address))
    else:
        spots.sort(key=lambda s: (-s.samples, s.address))
    return spots[:top]


def hot_spots_frame(spots: Sequence[HotSpot], kernel: str = "") -> pd.DataFrame:
    import pandas as pd

    rows = [
        {
            "kernel": kernel,
            "address": f"0x{s.address:x}",
            "instruction": s.source,
            "samples": s.samples,
            "kernel_pct": round(100 * s.kernel_share, 2),
            "dominant_stall": describe("ncu", s.reason)["label"] if s.reason else "",
            "stall_samples": s.reason_samples,
            "origin": "measured",
        }
        for s in spots
    ]
    columns = ["kernel", "address", "instruction", "samples", "kernel_pct", "dominant_stall", "stall_samples", "origin"]
    return pd.DataFrame(rows, columns=columns)
