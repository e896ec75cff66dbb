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
import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from gpuprof.errors import InputError
from gpuprof.model import MEASURED, Launch, Metric, Run

if TYPE_CHECKING:
    import pandas as pd

NVPROF, RATIO, PCT, PCSAMP = "nvprof", "ratio", "pct", "pcsamp"
# Preferred basis when a launch carries several (ncu's own Warp State section uses the ratios).
# nvprof-named values in an ncu file are sums a reader derived, so ncu bases come first.
PREFERENCE = (RATIO, PCT, PCSAMP, NVPROF)

BASIS_TEXT = {
    NVPROF: "nvprof issue-stall percentages (share of all stalls, as nvprof reports them)",
    RATIO: "ncu warp-state ratios (warp cycles per issued instruction) normalised to shares of stall "
           "cycles; 'selected' (issuing) excluded",
    PCT: "ncu warp-state percentages of warp-active cycles normalised to shares of stall cycles; "
         "'selected' excluded",
    PCSAMP: "PC-sampling sample counts normalised to shares of stalled samples; 'selected' excluded",
}
# What a share is a share of, per basis, for the explanation sentences.
SHARE_OF = {NVPROF: "of all stalls", RATIO: "of stall cycles", PCT: "of stall cycles",
            PCSAMP: "of stalled samples"}
UNIT = {NVPROF: "% of stalls", RATIO: "cycles/issue", PCT: "% warp-active", PCSAMP: "samples"}
UNNAMED = "device not named in the file"  # the column of a profile without a device (ncu text, source page)

_PATTERNS = (
    (RATIO, re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")),
    (PCT, re.compile(r"^smsp__warp_issue_stalled_(\w+?)_per_warp_active\.pct$")),
    (PCSAMP, re.compile(r"^smsp__pcsamp_warps_issue_stalled_(\w+)$")),
)
# Words that mark a transcendental-heavy op, whose short-scoreboard stalls are special-function-unit waits.
_TRANSCENDENTAL = re.compile(r"(?<![a-z])(sigmoid|tanh|expf?|erf|logf?|softmax|gelu)(?![a-z])", re.IGNORECASE)


@functools.cache
def vocabulary() -> dict[str, dict[str, dict[str, Any]]]:
    """The parsed ``stalls.toml``: sections ``ncu``, ``nvprof`` and ``topdown``."""
    text = resources.files("gpuprof.data").joinpath("stalls.toml").read_text()
    return tomllib.loads(text)


@functools.cache
def _pcsamp_tokens() -> dict[str, str]:
    """PC-sampling and source-page names -> ncu reason (``no_instructions`` -> ``no_instruction``)."""
    table: dict[str, str] = {}
    for reason, spec in vocabulary()["ncu"].items():
        table[spec.get("pcsamp", reason)] = reason
        for column in spec.get("source", ()):
            table[column] = reason
    return table


def reason_for_token(token: str) -> str:
    """The ncu reason a metric token or source-page column names; unknown tokens pass through."""
    return _pcsamp_tokens().get(token, token)


def classify(name: str) -> tuple[str, str] | None:
    """(basis, reason) for a stall metric name, or None when ``name`` is not a stall metric."""
    if name in vocabulary()["nvprof"]:
        return NVPROF, name
    for basis, pattern in _PATTERNS:
        match = pattern.match(name)
        if match and not match.group(1).endswith("_not_issued"):
            return basis, reason_for_token(match.group(1))
    return None


def known_reason(reason: str) -> str:
    """``reason`` when it is an ncu stall reason (as ``--reason`` takes them); InputError listing
    the known ones otherwise."""
    known = sorted(vocabulary()["ncu"])
    if reason not in known:
        raise InputError(f"unknown stall reason '{reason}'", f"choose one of: {', '.join(known)}")
    return reason


def describe(family: str, reason: str) -> dict[str, Any]:
    """Vocabulary entry for a reason; a bare entry naming the token when stalls.toml lacks it."""
    section = "nvprof" if family == NVPROF else "ncu"
    return vocabulary()[section].get(reason, {"label": reason, "description": "", "fix": "",
                                               "suggests": f"stalls of type '{reason}'"})


@dataclass(frozen=True)
class StallShare:
    """One reason's value as the tool reported it and its share of the kernel's stall cycles."""

    reason: str        # ncu reason token or nvprof metric name
    label: str
    metric: str        # the tool's metric name
    value: float       # in the basis' unit (UNIT[basis])
    share: float       # 0..1 of stall cycles (nvprof: its own percentage / 100)


@dataclass(frozen=True)
class StallProfile:
    """One launch's ranked stall reasons on one basis."""

    kernel: str
    device: str
    launch: int
    basis: str
    reasons: tuple[StallShare, ...]            # ranked, largest share first
    coverage: float = 1.0      # nvprof: share of all stalls the collected reasons cover

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


def _stall_metrics(launch: Launch) -> dict[str, dict[str, tuple[Metric, float]]]:
    """basis -> reason -> (metric, value) for every stall metric of a launch."""
    found: dict[str, dict[str, tuple[Metric, float]]] = {}
    for metric in launch.metrics:
        kind = classify(metric.name) or (classify(metric.canonical) if metric.canonical else None)
        value = metric_value(metric)
        if kind is None or value is None or metric.origin != MEASURED:
            continue
        basis, reason = kind
        found.setdefault(basis, {}).setdefault(reason, (metric, value))
    return found


def _profile(launch: Launch, device: str, basis: str,
             values: dict[str, tuple[Metric, float]]) -> StallProfile:
    family = NVPROF if basis == NVPROF else "ncu"
    stalls = {r: mv for r, mv in values.items() if describe(family, r).get("stall", True)}
    if basis == NVPROF:
        shares = {r: v / 100.0 for r, (_, v) in stalls.items()}
        coverage = sum(shares.values())
    else:
        total = sum(v for _, v in stalls.values())
        shares = {r: (v / total if total > 0 else 0.0) for r, (_, v) in stalls.items()}
        coverage = 1.0
    items = sorted(
        (StallShare(r, describe(family, r)["label"], m.name, v, shares[r]) for r, (m, v) in stalls.items()),
        key=lambda s: (-s.share, s.reason))
    return StallProfile(launch.kernel, device, launch.index, basis, tuple(items), coverage)


def stall_profiles(run: Run, basis: str | None = None) -> list[StallProfile]:
    """One ranked profile per launch that has stall metrics, on ``basis`` or the preferred one present."""
    if basis is not None and basis not in PREFERENCE:
        raise ValueError(f"unknown basis {basis!r}")
    profiles = []
    for launch in run.launches:
        found = _stall_metrics(launch)
        chosen = basis if basis is not None else next((b for b in PREFERENCE if b in found), None)
        if chosen in found:
            device = launch.device or str(run.device.get("name", ""))
            profiles.append(_profile(launch, device, chosen, found[chosen]))
    return profiles


def available_bases(run: Run) -> list[str]:
    """Which bases the run's launches carry, in order of preference."""
    present = {b for launch in run.launches for b in _stall_metrics(launch)}
    return [b for b in PREFERENCE if b in present]


def _pct(share: float) -> str:
    return f"{100 * share:.1f}%"


def explain(profile: StallProfile, hint: str = "") -> str:
    """Two or three sentences: what dominates, what it suggests, what usually helps.

    ``hint`` is extra context such as the op name ("sigmoid"): short-scoreboard stalls in a
    transcendental op point at the special-function unit rather than shared memory.
    """
    ranked = [s for s in profile.reasons if s.share > 0]
    if not ranked:
        return f"{profile.kernel}: no stall cycles recorded on this basis ({BASIS_TEXT[profile.basis]})."
    top = ranked[0]
    spec = describe(profile.family, top.reason)
    suggests = spec["suggests"]
    transcendental = _TRANSCENDENTAL.search(f"{hint} {profile.kernel}")
    if top.reason in ("short_scoreboard", "stall_exec_dependency") and transcendental:
        suggests = (f"the {transcendental.group(0)} arithmetic waits on the special-function unit "
                    f"(MUFU exp/rcp/tanh results), not on memory")
    if len(ranked) > 1 and ranked[1].share >= 0.8 * top.share:
        second = ranked[1]
        lead = (f"{top.label} ({_pct(top.share)}) and {second.label} ({_pct(second.share)}) "
                f"stalls share the lead")
        suggests += f", together with {describe(profile.family, second.reason)['suggests']}"
    else:
        lead = f"{top.label} stalls dominate ({_pct(top.share)} {SHARE_OF[profile.basis]})"
        if len(ranked) > 1:
            lead += f", then {ranked[1].label} ({_pct(ranked[1].share)})"
    if profile.family == NVPROF and profile.coverage < 0.95:
        lead = (f"of the {len(profile.reasons)} nvprof stall reasons collected (together "
                f"{_pct(profile.coverage)} of all stalls): {lead}")
    sentences = [f"{profile.kernel}: {lead[0].upper()}{lead[1:]}.", f"This suggests {suggests}."]
    if spec.get("fix"):
        sentences.append(f"What usually helps: {spec['fix'][0].lower()}{spec['fix'][1:]}")
    return " ".join(sentences)


def profiles_frame(profiles: Sequence[StallProfile], include_zero: bool = False) -> pd.DataFrame:
    """Long table for rendering: one row per kernel x reason, with value, unit, share and basis."""
    import pandas as pd

    rows = [
        {"device": p.device, "kernel": p.kernel, "rank": rank, "reason": s.reason, "label": s.label,
         "value": s.value, "unit": UNIT[p.basis], "share_pct": round(100 * s.share, 2),
         "basis": p.basis, "origin": "measured"}
        for p in profiles
        for rank, s in enumerate((s for s in p.reasons if include_zero or s.share > 0), start=1)
    ]
    columns = ["device", "kernel", "rank", "reason", "label", "value", "unit", "share_pct", "basis", "origin"]
    return pd.DataFrame(rows, columns=columns)


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


def stall_comparison(runs_or_profiles: Iterable[Run | StallProfile], kernel: str | None = None,
                     basis: str | None = None) -> pd.DataFrame:
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
        if name in columns:   # the same device and kernel from several runs
            name = f"{name} #{sum(1 for c in columns if c.startswith(name)) + 1}"
        shares = fold_to_nvprof(p) if mixed else {s.reason: s.share for s in p.reasons}
        labels.update({r: describe(NVPROF if r in vocabulary()["nvprof"] else "ncu", r)["label"]
                       for r in shares})
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
class InstructionSamples:
    """PC-sampling counts at one SASS instruction (all samples, issued or not), by ncu reason."""

    address: int
    source: str
    samples: dict[str, float]


@dataclass(frozen=True)
class HotSpot:
    address: int
    source: str
    samples: float              # all samples at this instruction ("Warp Stall Sampling (All ...)")
    kernel_share: float         # of all samples in the kernel
    reason: str                 # dominant stall reason here ('selected' excluded); "" when none
    reason_samples: float


def hot_spots(instructions: Iterable[InstructionSamples], top: int = 10,
              reason: str | None = None) -> list[HotSpot]:
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
        spots.append(HotSpot(item.address, item.source.strip(), count,
                             count / total if total else 0.0, dominant, item.samples.get(dominant, 0.0)))
    if reason:
        spots.sort(key=lambda s: (-s.reason_samples, s.address))
    else:
        spots.sort(key=lambda s: (-s.samples, s.address))
    return spots[:top]


def hot_spots_frame(spots: Sequence[HotSpot], kernel: str = "") -> pd.DataFrame:
    import pandas as pd

    rows = [{"kernel": kernel, "address": f"0x{s.address:x}", "instruction": s.source,
             "samples": s.samples, "kernel_pct": round(100 * s.kernel_share, 2),
             "dominant_stall": describe("ncu", s.reason)["label"] if s.reason else "",
             "stall_samples": s.reason_samples, "origin": "measured"} for s in spots]
    columns = ["kernel", "address", "instruction", "samples", "kernel_pct", "dominant_stall",
               "stall_samples", "origin"]
    return pd.DataFrame(rows, columns=columns)
