"""Stall ranking as column expressions (issue #25 items 5 and 6) against the loop it replaced, in the same run.

Builds runs of 10,000 and 50,000 launches from a real fixture's stall rows (the A100 ``ncu
--print-summary per-gpu`` excerpt: warp-state ratios and PC-sampling counts, some given as
identical Minimum/Maximum; each launch a copy of its rows under a new launch ID) and times

* the ranking: :func:`gpuprof.derive.stalls.stall_table` against the pre-#25 ``stall_profiles``;
* the whole ``gpuprof stalls FILE`` command after the file is read, per ``--format``: gathering
  (:func:`gpuprof.stalls.analyze_run`) and the report (:func:`gpuprof.stalls.report.stall_report`:
  the output and the explanation lines) against what the command did before: the loop's objects, a
  frame per launch, the standard library's indenting JSON encoder, CSV through ``DataFrame.map``.

The baseline is the code before, copied below. Each side starts from the run as a reader returns it
(no Launch objects built yet); the new side best of three, the baseline once (it takes minutes). Before
timing it checks that both give the same shares (to 1e-12) on every basis, and the same output, byte
for byte, in every format on the first 300 launches. The table format's baseline prints one table per
launch (about 20 ms each under load): it is timed only with ``--table`` (about 4 minutes at 10,000
launches, 20 at 50,000). Targets: >= 10x at both sizes for the ranking and for the whole command.
Not part of the test suite: ``python benchmarks/bench_stalls.py [--sizes 10000 50000] [--table]``
(about 6 minutes on a quiet 2-core machine without ``--table``).
"""

from __future__ import annotations

import argparse
import html
import io
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import astuple, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gpuprof.derive import stalls
from gpuprof.derive.stalls import (
    _TRANSCENDENTAL,
    BASIS_TEXT,
    NVPROF,
    PREFERENCE,
    SHARE_OF,
    UNIT,
    StallProfile,
    classify,
    describe,
)
from gpuprof.model import MEASURED, Launch, Metric, Run
from gpuprof.readers import read
from gpuprof.render import table_width, text
from gpuprof.stalls import analyze_run
from gpuprof.stalls.report import _fit as fit
from gpuprof.stalls.report import stall_report

FIXTURE = (
    Path(__file__).resolve().parent.parent
    / "tests"
    / "fixtures"
    / "profiler-outputs"
    / "ncu_text_print_summary_per_gpu_a100_roofline_EXCERPT.log"
)


# ---- BASELINE: the implementation before issue #25 (gpuprof/derive/stalls.py at 145f390), verbatim ----


@dataclass(frozen=True)
class StallShare:  # a named tuple since
    reason: str
    label: str
    metric: str
    value: float
    share: float


def old_metric_value(metric: Metric) -> float | None:
    if metric.minimum is not None and metric.minimum == metric.maximum:
        return float(metric.minimum)
    return float(metric.value) if isinstance(metric.value, int | float) else None


def old_stall_metrics(launch: Launch) -> dict[str, dict[str, tuple[Metric, float]]]:
    found: dict[str, dict[str, tuple[Metric, float]]] = {}
    for metric in launch.metrics:
        kind = classify(metric.name) or (classify(metric.canonical) if metric.canonical else None)
        value = old_metric_value(metric)
        if kind is None or value is None or metric.origin != MEASURED:
            continue
        basis, reason = kind
        found.setdefault(basis, {}).setdefault(reason, (metric, value))
    return found


def old_profile(launch: Launch, device: str, basis: str, values: dict[str, tuple[Metric, float]]) -> StallProfile:
    family = NVPROF if basis == NVPROF else "ncu"
    stalls_ = {r: mv for r, mv in values.items() if describe(family, r).get("stall", True)}
    if basis == NVPROF:
        shares = {r: v / 100.0 for r, (_, v) in stalls_.items()}
        coverage = sum(shares.values())
    else:
        total = sum(v for _, v in stalls_.values())
        shares = {r: (v / total if total > 0 else 0.0) for r, (_, v) in stalls_.items()}
        coverage = 1.0
    items = sorted(
        (StallShare(r, describe(family, r)["label"], m.name, v, shares[r]) for r, (m, v) in stalls_.items()),
        key=lambda s: (-s.share, s.reason),
    )
    return StallProfile(launch.kernel, device, launch.index, basis, tuple(items), coverage)


def old_stall_profiles(run: Run, basis: str | None = None) -> list[StallProfile]:
    if basis is not None and basis not in PREFERENCE:
        raise ValueError(f"unknown basis {basis!r}")
    profiles = []
    for launch in run.launches:
        found = old_stall_metrics(launch)
        chosen = basis if basis is not None else next((b for b in PREFERENCE if b in found), None)
        if chosen in found:
            device = launch.device or str(run.device.get("name", ""))
            profiles.append(old_profile(launch, device, chosen, found[chosen]))
    return profiles


# The rendering ``gpuprof stalls`` did on those objects before (gpuprof/stalls/report.py, derive/stalls.py and
# render/text.py at 067baf8), verbatim but for the names: a frame per launch, a table per frame.


def old_pct(share: float) -> str:
    return f"{100 * share:.1f}%"


def old_explain(profile: StallProfile, hint: str = "") -> str:
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
        suggests = (
            f"the {transcendental.group(0)} arithmetic waits on the special-function unit "
            f"(MUFU exp/rcp/tanh results), not on memory"
        )
    if len(ranked) > 1 and ranked[1].share >= 0.8 * top.share:
        second = ranked[1]
        lead = f"{top.label} ({old_pct(top.share)}) and {second.label} ({old_pct(second.share)}) stalls share the lead"
        suggests += f", together with {describe(profile.family, second.reason)['suggests']}"
    else:
        lead = f"{top.label} stalls dominate ({old_pct(top.share)} {SHARE_OF[profile.basis]})"
        if len(ranked) > 1:
            lead += f", then {ranked[1].label} ({old_pct(ranked[1].share)})"
    if profile.family == NVPROF and profile.coverage < 0.95:
        lead = (
            f"of the {len(profile.reasons)} nvprof stall reasons collected (together "
            f"{old_pct(profile.coverage)} of all stalls): {lead}"
        )
    sentences = [f"{profile.kernel}: {lead[0].upper()}{lead[1:]}.", f"This suggests {suggests}."]
    if spec.get("fix"):
        sentences.append(f"What usually helps: {spec['fix'][0].lower()}{spec['fix'][1:]}")
    return " ".join(sentences)


def old_profiles_frame(profiles: Sequence[StallProfile], include_zero: bool = False) -> pd.DataFrame:
    rows = [
        {
            "device": p.device,
            "kernel": p.kernel,
            "rank": rank,
            "reason": s.reason,
            "label": s.label,
            "value": s.value,
            "unit": UNIT[p.basis],
            "share_pct": round(100 * s.share, 2),
            "basis": p.basis,
            "origin": "measured",
        }
        for p in profiles
        for rank, s in enumerate((s for s in p.reasons if include_zero or s.share > 0), start=1)
    ]
    columns = ["device", "kernel", "rank", "reason", "label", "value", "unit", "share_pct", "basis", "origin"]
    return pd.DataFrame(rows, columns=columns)


def old_json(frame: pd.DataFrame, title: str | None = None) -> str:
    records = json.loads(frame.to_json(orient="records", double_precision=15))
    return json.dumps(records, indent=2, ensure_ascii=False)


def old_csv(frame: pd.DataFrame, title: str | None = None, terminal: bool = False) -> str:
    import csv as _csv

    safe = frame.map(text._csv_safe) if len(frame) else frame
    buffer = io.StringIO()
    safe.to_csv(buffer, index=False, quoting=_csv.QUOTE_NONNUMERIC)
    return buffer.getvalue().rstrip("\n")


def old_emit(frame: pd.DataFrame, fmt: str, title: str | None = None) -> str:
    if fmt == "json":
        return old_json(frame)
    if fmt == "csv":
        return old_csv(frame)
    return text.table(frame, title, table_width()) if fmt == "table" else text.markdown(frame, title)


def old_command(run: Run, fmt: str, basis: str | None = None, show_zero: bool = False) -> tuple[str, list[str]]:
    """What ``gpuprof stalls FILE`` did with a file's run: profiles as objects, then the report."""
    profiles = old_stall_profiles(run, basis)
    explanations = [old_explain(p) for p in profiles]
    if fmt in ("csv", "json"):
        return old_emit(old_profiles_frame(profiles, show_zero), fmt), explanations
    blocks = []
    for profile in profiles:
        frame = old_profiles_frame([profile], show_zero)
        frame = frame.drop(columns=["device", "kernel", "basis", "origin", "unit"]).rename(
            columns={"value": f"value ({frame['unit'].iloc[0]})" if len(frame) else "value", "share_pct": "share %"}
        )
        where = f"{profile.device}: " if profile.device else ""
        blocks.append(old_emit(frame, fmt, title=f"Warp stall reasons (measured), {where}{profile.kernel}"))
    bases = sorted({p.basis for p in profiles})
    blocks.append("\n".join(fit(f"Basis ({b}): {BASIS_TEXT[b]}.") for b in bases))
    if explanations:
        if fmt == "markdown":
            explanations = [html.escape(line, quote=False) for line in explanations]
        blocks.append("\n".join(map(fit, explanations)))
    return "\n\n".join(blocks), []


# ---- end of baseline ----


def same_shares(old: list[StallProfile], new: list[StallProfile]) -> float:
    """The largest difference of any share between the two (raises when the rankings differ)."""
    assert len(old) == len(new), (len(old), len(new))
    worst = 0.0
    for a, b in zip(old, new):
        assert (a.kernel, a.device, a.launch, a.basis) == (b.kernel, b.device, b.launch, b.basis)
        assert [s.reason for s in a.reasons] == [s.reason for s in b.reasons], (a.reasons, b.reasons)
        assert [astuple(s)[:4] for s in a.reasons] == [tuple(s)[:4] for s in b.reasons]  # reason, label, metric, value
        worst = max(
            [worst, abs(a.coverage - b.coverage), *(abs(x.share - y.share) for x, y in zip(a.reasons, b.reasons))]
        )
    return worst


def stall_run(launches: int) -> Run:
    """``launches`` copies of the fixture's stall rows, each copy a launch with its own ID."""
    source = read(FIXTURE)
    metrics = source.metric_table
    kinds = [classify(str(name)) for name in metrics["metric"].cat.categories]
    stall_rows = metrics[np.array([kinds[c] is not None for c in metrics["metric"].cat.codes])]
    stall_rows = stall_rows[stall_rows["launch"] == 0]
    per = len(stall_rows)
    tiled = stall_rows.iloc[np.tile(np.arange(per), launches)].reset_index(drop=True)
    tiled["launch"] = np.repeat(np.arange(launches, dtype=np.int32), per)
    first = source.launch_table.iloc[[0]]
    table = first.iloc[np.zeros(launches, dtype=int)].reset_index(drop=True)
    table["index"] = np.arange(launches, dtype=np.int64)
    return Run("import", source.format, source.source, device=dict(source.device), tables=(table, tiled))


def best(work: Callable[[], object], repeats: int = 3) -> float:
    fastest = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        fastest = min(fastest, time.perf_counter() - start)
    return fastest


def fresh(run: Run) -> Run:
    """The run as a reader returns it: its Launch objects not built yet."""
    run._views = None
    return run


def new_command(run: Run, fmt: str, basis: str | None = None, show_zero: bool = False) -> tuple[str, list[str]]:
    """What ``gpuprof stalls FILE`` does with a file's run now."""
    return stall_report(analyze_run(run, basis), fmt, show_zero)


def same_output(run: Run) -> None:
    """The command's output and explanation lines, byte for byte, in every format and on every basis."""
    for basis in (None, *stalls.available_bases(run)):
        for fmt in ("table", "markdown", "csv", "json"):
            for show_zero in (False, True):
                assert new_command(fresh(run), fmt, basis, show_zero) == old_command(fresh(run), fmt, basis, show_zero)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000])
    parser.add_argument("--table", action="store_true", help="also time the table format (its baseline is slow)")
    args = parser.parse_args()
    same_output(stall_run(300))
    print(
        "same output as before in table, markdown, csv and json, with and without --all, on every basis (300 launches)"
    )
    for size in args.sizes:
        run = stall_run(size)
        rows = len(run.metric_table)
        for basis in (None, *(b for b in PREFERENCE if b in stalls.available_bases(run))):
            worst = same_shares(old_stall_profiles(fresh(run), basis), stalls.stall_profiles(fresh(run), basis))
            assert worst <= 1e-12, worst
        old = best(lambda run=run: old_stall_profiles(fresh(run)), 1)
        table = best(lambda run=run: stalls.stall_table(fresh(run)))
        print(
            f"{size:,} launches x {rows // size} stall rows ({rows:,} rows), bases {stalls.available_bases(run)}; "
            f"same shares on every basis (largest difference {worst:.1e})"
        )
        print(f"  ranking: baseline stall_profiles (loop over Launch objects)   {old:8.3f} s")
        print(
            f"  ranking: stall_table (column expressions)                     {table:8.3f} s   ratio {old / table:6.1f}x"
        )
        for fmt in ("json", "csv", *(("table",) if args.table else ())):
            before = best(lambda run=run, fmt=fmt: old_command(fresh(run), fmt), 1)
            now = best(lambda run=run, fmt=fmt: new_command(fresh(run), fmt))
            print(
                f"  gpuprof stalls --format {fmt:5}: before {before:8.3f} s, now {now:7.3f} s   ratio {before / now:6.1f}x"
            )


if __name__ == "__main__":
    main()
