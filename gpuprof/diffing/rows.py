"""The rows of a diff: per matched kernel and metric, A against B with a verdict; the time-weighted
totals over matched kernels; the kernels only one side has.

Per kernel the values are medians over launches (a tool's aggregate row counts once) and the
verdict comes from :func:`gpuprof.derive.significance.compare`. Totals of profiles use means, because
totals are sums: launches × mean per launch with A's launch counts on both sides (so a profile that
caught more launches does not read as slower), rates as ratios of those sums, efficiencies and
occupancy weighted by each kernel's time on its side; a measured run counts one call, its median
repeat. Their 95 % interval comes from resampling every kernel's launches together.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from gpuprof.derive import significance as sig
from gpuprof.diffing import metrics as m
from gpuprof.model import catalog

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = (
    "kernel",
    "metric",
    "unit",
    "A",
    "B",
    "change",
    "change %",
    "CI low %",
    "CI high %",
    "verdict",
    "test",
    "n A",
    "n B",
    "p",
    "gate",
    "basis",
)
TOTAL = "(matched kernels, time-weighted)"
TOP_STALLS = 3
TOTAL_TEST = "bootstrap CI of the ratio of totals"
# How verdicts are reached, said once under a table (the "test" column names the test per row).
STATISTICS = (
    f"Verdicts per kernel: Mann–Whitney U, two-sided, alpha = {sig.ALPHA} (exact up to {sig.EXACT_LIMIT} "
    "values a side without ties, else the normal approximation with tie and continuity corrections) on "
    "the per-launch (per-repeat) values; a change must also exceed the smaller side's spread (interquartile "
    "range / median, as nvbench's compare calls a change within the smaller noise the same) and "
    "--min-change (a gate's limit for its metric, where smaller), since repeats within one run cannot show "
    "the drift between runs. A and B are medians; the 95% CI is a percentile bootstrap of the median ratio "
    f"B/A ({sig.RESAMPLES} resamples a side, seed {sig.SEED}, at most {sig.BOOTSTRAP_ROWS} values a side). "
    "Totals: launches x mean per launch at A's launch counts on both sides (a measured run counts one "
    "call, its median repeat), rates as ratios of those sums, efficiencies and occupancy weighted by each "
    "kernel's time; their CI resamples every kernel's launches together, and a total changed when its CI "
    "excludes no change and the change exceeds the kernels' time-weighted spread. One value on a side: "
    "the verdict rests on that single measurement."
)


@dataclass
class Pair:
    """One matched kernel: its launches on each side."""

    label: str
    a: pd.DataFrame
    b: pd.DataFrame
    family: str

    def count(self, side: pd.DataFrame) -> float:
        """Launches on ``side`` for totals: invocations of a kernel, one call of a measured run."""
        return float(side["weight"].sum()) if self.family != "run" else 1.0


def _values(frame: pd.DataFrame, name: str) -> np.ndarray:
    if name not in frame:
        return np.empty(0)
    values = frame[name].to_numpy(dtype=float)
    return values[~np.isnan(values)]


def _word(spec: m.Spec, ratio: float) -> str:
    if spec.better == 0:
        return "higher" if ratio > 1 else "lower"
    return "improved" if (ratio > 1) == (spec.better > 0) else "regressed"


def _unsure(change: sig.Change, minimum: float) -> str:
    """Why a change that passed the statistical test is still not called one."""
    moved = 100 * (change.ratio - 1)
    if abs(change.ratio - 1) <= (change.noise or 0):
        return f"{moved:+.1f}% within noise {100 * (change.noise or 0):.1f}%"
    return f"{moved:+.1f}% under the {100 * minimum:.3g}% minimum change"


def verdict(spec: m.Spec, change: sig.Change, minimum: float) -> str:
    """What a change means, with the test and the number of values behind it; changes smaller than
    ``minimum`` (a fraction) are not called changes."""
    counts = f"n={change.n_a}/{change.n_b}"
    if change.test is None:
        if change.single and change.a != change.b:
            return f"single measurement ({counts})"
        return f"unchanged ({counts})"
    p = f"p={change.test.p:.2g}"
    if change.significant and abs(change.ratio - 1) >= minimum:
        return f"{_word(spec, change.ratio)} ({p}, {counts})"
    if change.test.p < sig.ALPHA:
        return f"no significant change ({_unsure(change, minimum)}, {p}, {counts})"
    return f"no significant change ({p}, {counts})"


def row(
    kernel: str,
    spec: m.Spec,
    change: sig.Change | None,
    verdict_text: str,
    basis: str,
    a: float = math.nan,
    b: float = math.nan,
) -> dict[str, Any]:
    """One output row; ``change`` None for a value on one side only."""
    out: dict[str, Any] = dict.fromkeys(COLUMNS, math.nan)
    out.update(kernel=kernel, metric=spec.name, unit=spec.unit, verdict=verdict_text, basis=basis, gate="", test="")
    if change is None:
        out.update({"A": a, "B": b})
        return out
    ratio = change.ratio
    out.update(
        {
            "A": change.a,
            "B": change.b,
            "change": change.b - change.a,
            "change %": 100 * (ratio - 1) if math.isfinite(ratio) else math.nan,
            "n A": change.n_a,
            "n B": change.n_b,
            "p": change.test.p if change.test else math.nan,
        }
    )
    if change.ci is not None:
        out.update({"CI low %": 100 * (change.ci[0] - 1), "CI high %": 100 * (change.ci[1] - 1)})
    out.update(_change=change, _significant=change.significant, _single=change.single)
    return out


def _names(pair: Pair, gated: Iterable[str]) -> list[str]:
    """The metrics shown for a pair: derived ones either side has, catalog ones both sides have,
    the top stall reasons, and every gated one."""
    either = {c for f in (pair.a, pair.b) for c in f.columns if f[c].notna().any()}
    both = {c for c in either if c in pair.a and c in pair.b and pair.a[c].notna().any() and pair.b[c].notna().any()}
    names = [s.name for s in m.DERIVED if s.name in either or s.name == "launches"]
    names += sorted(c for c in both if c not in m.derived() and not c.startswith("stall_") and c in _catalog())
    stalls = [c for c in either if c.startswith("stall_")]
    share = {c: max(np.median(v) if len(v := _values(f, c)) else 0.0 for f in (pair.a, pair.b)) for c in stalls}
    names += sorted(stalls, key=lambda c: -share[c])[:TOP_STALLS]
    # a gated metric neither side has is a row too (the gate cannot pass on it), but not for copies
    kernel = all(str(f["activity"].iat[0]) in ("", "kernel", "nan") for f in (pair.a, pair.b) if "activity" in f)
    return names + sorted(g for g in gated if (g in either or kernel) and g not in names)


def _basis(a: str, b: str) -> str:
    return f"A and B: {a}" if a == b else f"A: {a or 'none'}; B: {b or 'none'}"


def _catalog() -> set[str]:
    return set(catalog.entries())


def pair_rows(
    pair: Pair, origins: tuple[dict[str, str], dict[str, str]], minimum: dict[str, float]
) -> list[dict[str, Any]]:
    """Every metric row of one matched kernel; ``minimum`` is the smallest change called a change,
    per metric (gated metrics) and under the key "" (the rest)."""
    rows = []
    for name in _names(pair, [g for g in minimum if g]):
        spec = m.stall_spec(name) if name.startswith("stall_") else m.spec(name)
        basis = _basis(origins[0].get(name, ""), origins[1].get(name, ""))
        if name == "launches":
            a, b = pair.a["weight"].sum(), pair.b["weight"].sum()
            rows.append(
                row(
                    pair.label,
                    spec,
                    None,
                    "" if a == b else "different launch counts",
                    "counted by the tools (repeats for a measured run)",
                    a,
                    b,
                )
            )
            continue
        a, b = _values(pair.a, name), _values(pair.b, name)
        if not len(a) and not len(b):
            rows.append(
                row(
                    pair.label,
                    spec,
                    None,
                    "not in A or B",
                    "neither side counted it (see the other rows' notes, e.g. tensor work without a FLOP count)",
                )
            )
            continue
        if not len(a) or not len(b):
            has, lacks = ("B", "A") if len(b) else ("A", "B")
            medians = [float(np.median(v)) if len(v) else math.nan for v in (a, b)]
            rows.append(
                row(
                    pair.label,
                    spec,
                    None,
                    f"not in {lacks}",
                    f"{has}: {origins['AB'.index(has)].get(name, '')}",
                    *medians,
                )
            )
            continue
        change = sig.compare(a, b)
        out = row(pair.label, spec, change, verdict(spec, change, minimum.get(name, minimum[""])), basis)
        if name == "time" and change.single and change.a != change.b:
            out["_within"] = within = _within_range(pair, change)
            out["verdict"] = out["verdict"][:-1] + f"; {within})" if within else out["verdict"]
        out["test"] = f"Mann–Whitney U ({change.test.method})" if change.test else ""
        rows.append(out)
    return rows


def _within_range(pair: Pair, change: sig.Change) -> str:
    """When one side is a single aggregate with the tool's min..max over its calls and the other
    side's median lies inside that range, the words saying so; else ''."""
    for side, frame, other in (("A", pair.a, change.b), ("B", pair.b, change.a)):
        if len(frame) == 1 and "time_min" in frame and frame["time_min"].iat[0] <= other <= frame["time_max"].iat[0]:
            calls = int(frame["weight"].iat[0])
            return f"{'AB'.replace(side, '')}'s median within {side}'s min..max of {calls} calls"
    return ""


def impact(pair: Pair) -> float:
    """Change in total kernel time (A's launch count × mean time per launch): what sorts kernels."""
    times = [_weighted_mean(f, "time") for f in (pair.a, pair.b)]
    return pair.count(pair.a) * (times[1] - times[0])


def _weighted_mean(frame: pd.DataFrame, name: str) -> float:
    if name not in frame:
        return math.nan
    values, weights = frame[name].to_numpy(dtype=float), frame["weight"].to_numpy(dtype=float)
    known = ~np.isnan(values)
    return float((values[known] * weights[known]).sum() / weights[known].sum()) if known.any() else math.nan


def _means(rows: np.ndarray) -> np.ndarray:
    """Invocation-weighted means of (..., launches, metrics + weight) over the launch axis, NaN-aware."""
    values, weights = rows[..., :-1], rows[..., -1:]
    known = ~np.isnan(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.nansum(values * weights, axis=-2) / (weights * known).sum(axis=-2)


def _medians(rows: np.ndarray) -> np.ndarray:
    """Medians over the repeat axis: one call of a measured run is its median repeat, as 'gpuprof run' reports."""
    with np.errstate(invalid="ignore"):
        return np.nanmedian(rows[..., :-1], axis=-2)


def _totals(
    means: np.ndarray, counts: np.ndarray, names: list[str], use: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """Each total metric from per-kernel means (kernels × metrics × resamples)."""
    col = {n: i for i, n in enumerate(names)}
    c = counts[:, None]
    time = means[:, col["time"]]
    out = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for spec in (s for s in m.DERIVED if s.total and s.name in use):
            mask = use[spec.name][:, None]
            if spec.total == m.SUM:
                out[spec.name] = np.where(mask, c * means[:, col[spec.name]], 0).sum(axis=0)
            elif spec.total == m.RATE:
                num, den = (np.where(mask, c * means[:, col[x]], 0).sum(axis=0) for x in spec.of)
                out[spec.name] = num / den
            else:
                weight = np.where(mask, c * time, 0)
                out[spec.name] = (weight * np.nan_to_num(means[:, col[spec.name]])).sum(axis=0) / weight.sum(axis=0)
    return out


def _side_means(
    pairs: list[Pair], side: str, names: list[str], rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Per kernel of one side, the mean per launch of each metric (a measured run's median repeat)
    and those of every bootstrap resample of its launches, drawn together: (kernels × metrics × 1)
    and (kernels × metrics × resamples)."""
    point, resampled = [], []
    for pair in pairs:
        frame = getattr(pair, side)
        rows = np.column_stack(
            [frame[n].to_numpy(dtype=float) if n in frame else np.full(len(frame), np.nan) for n in names]
            + [frame["weight"].to_numpy(dtype=float)]
        )
        if pair.family == "run":
            point.append(_medians(rows))
            resampled.append(sig.resample(rows, _medians, rng).T)
        else:
            point.append(_means(rows))
            resampled.append(sig.resample_means(rows[:, :-1], rows[:, -1], rng).T)
    return np.array(point)[..., None], np.array(resampled)


def total_rows(pairs: list[Pair], kernel_rows: list[dict[str, Any]], minimum: dict[str, float]) -> list[dict[str, Any]]:
    """The time-weighted totals over matched kernels that have time on both sides; none for a
    single kernel, whose own rows say it all."""
    timed = [p for p in pairs if len(_values(p.a, "time")) and len(_values(p.b, "time"))]
    if len(timed) < 2:
        return []
    names = [s.name for s in m.DERIVED if s.total and all(s.name in p.a or s.name in p.b for p in timed)]
    names = [n for n in names if n == "time" or any(n in p.a and n in p.b for p in timed)]
    rng = np.random.default_rng(sig.SEED)
    (point_a, boot_a), (point_b, boot_b) = (_side_means(timed, side, names, rng) for side in ("a", "b"))
    point, boot = [point_a, point_b], [boot_a, boot_b]
    counts = np.array([p.count(p.a) for p in timed])
    known = ~np.isnan(point[0][..., 0]) & ~np.isnan(point[1][..., 0])
    use = {}
    for spec in (m.derived()[n] for n in names):
        needed = spec.of if spec.total == m.RATE else (spec.name,)
        use[spec.name] = np.all([known[:, names.index(x)] for x in needed], axis=0)
    totals = [_totals(p, counts, names, use) for p in point]
    samples = [_totals(b, counts, names, use) for b in boot]
    single = any(min(len(_values(p.a, "time")), len(_values(p.b, "time"))) < 2 for p in timed)
    noise = _noise(timed, kernel_rows, counts)
    rows = []
    for name in totals[0]:
        spec = m.derived()[name]
        a, b = float(totals[0][name][0]), float(totals[1][name][0])
        if not (math.isfinite(a) and math.isfinite(b)) or not use[name].any():
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            ci = sig.interval(samples[1][name] / samples[0][name])
        floor = noise.get(name if spec.total == m.WEIGHTED else "time")
        change = sig.Change(a, b, int(use[name].sum()), int(use[name].sum()), ci=None if single else ci, noise=floor)
        significant = not single and (ci[0] > 1 or ci[1] < 1) and abs(change.ratio - 1) > (floor or 0)
        text = _total_verdict(spec, change, single, significant, int(use[name].sum()), minimum.get(name, minimum[""]))
        out = row(
            TOTAL,
            spec,
            change,
            text,
            "time-weighted total over the matched kernels with the metric on both sides (sums at A's launch counts)",
        )
        out.update(
            {
                "n A": math.nan,
                "n B": math.nan,
                "test": "" if single else TOTAL_TEST,
                "_significant": significant,
                "_single": single,
            }
        )
        rows.append(out)
    return rows


def _noise(pairs: list[Pair], kernel_rows: list[dict[str, Any]], counts: np.ndarray) -> dict[str, float]:
    """Per metric, the kernels' noise floors weighted by A's time per kernel."""
    weight = {p.label: c * _weighted_mean(p.a, "time") for p, c in zip(pairs, counts)}
    found: dict[str, list[tuple[float, float]]] = {}
    for r in kernel_rows:
        change = r.get("_change")
        if change is not None and change.noise is not None and r["kernel"] in weight:
            found.setdefault(r["metric"], []).append((weight[r["kernel"]], change.noise))
    return {
        k: float(np.average([n for _, n in v], weights=[w for w, _ in v]))
        for k, v in found.items()
        if sum(w for w, _ in v) > 0
    }


def _total_verdict(
    spec: m.Spec, change: sig.Change, single: bool, significant: bool, kernels: int, minimum: float
) -> str:
    if change.a == change.b:
        return f"unchanged ({kernels} kernel(s))"
    if single:
        return f"single measurement ({kernels} kernel(s); one has one value on a side)"
    if significant and abs(change.ratio - 1) >= minimum:
        return f"{_word(spec, change.ratio)} ({kernels} kernel(s))"
    if significant:
        return f"no significant change ({_unsure(change, minimum)}, {kernels} kernel(s))"
    return f"no significant change ({kernels} kernel(s))"


def only_rows(label: str, frame: pd.DataFrame, side: str, origins: dict[str, str]) -> list[dict[str, Any]]:
    """A kernel one side lacks: its launches and time, so it is listed, never dropped."""
    times = _values(frame, "time")
    value = {"launches": float(frame["weight"].sum()), "time": float(np.median(times)) if len(times) else math.nan}
    out = []
    for name in ("time", "launches"):
        if math.isnan(value[name]):
            continue
        a, b = (value[name], math.nan) if side == "A" else (math.nan, value[name])
        out.append(
            row(label, m.derived()[name], None, f"only in {side}", origins.get(name, "counted by the tool"), a, b)
        )
    return out
