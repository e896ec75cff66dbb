"""``gpuprof diff``: two sets of results side by side, kernel by kernel, with noise-aware verdicts
and regression gates.

Stages: :mod:`inputs` reads what each side names into Runs; :mod:`values` turns every run into
per-launch values column-wise; :mod:`matching` pairs kernels; :mod:`rows` compares each pair and
forms the time-weighted totals; :mod:`gates` decides ``--fail-if``. :func:`diff` returns the one
DataFrame every output format renders.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuprof.derive.stalls import describe
from gpuprof.devices import gpu_table
from gpuprof.diffing import gates, rows, values
from gpuprof.diffing.gates import exit_code
from gpuprof.diffing.inputs import Side, resolve
from gpuprof.diffing.matching import KERNEL, MATCHES, RUN, group
from gpuprof.diffing.metrics import stall_names
from gpuprof.diffing.rows import impact
from gpuprof.diffing.values import workload_key
from gpuprof.errors import InputError
from gpuprof.importing import name_device
from gpuprof.model import Run
from gpuprof.model.units import human

if TYPE_CHECKING:
    import pandas as pd

    from gpuprof.diffing.gates import Outcome

SideSpec = str | Path | Run | Sequence[Run]
# Below this, a statistically clear change is still "no significant change": two runs of the same
# work drift by a few percent (another process, the clock), which repeats within one run cannot
# show. airspeed velocity's compare uses 10 % by default; gpuprof asks for 5 %, and a gate's limit
# where it is smaller.
MIN_CHANGE = 0.05
FOLDED = (
    "measured by the profiler: ncu warp-state shares of the stall cycles summed into nvprof's stall "
    "reasons (NVIDIA's nvprof-to-ncu mapping, gpuprof/data/stalls.toml)"
)


@dataclass
class DiffResult:
    frame: pd.DataFrame
    sides: tuple[Side, Side]
    matched: int
    only: tuple[int, int]
    notes: list[str] = field(default_factory=list)
    gates: list[Outcome] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 2 if not self.matched else exit_code(self.gates)


def _side(spec: SideSpec, store: str | Path | None) -> Side:
    if isinstance(spec, Run):
        return Side(spec.source if spec.kind == "import" else f"run {spec.run_id[:8]}", "run", [spec])
    if isinstance(spec, (str, Path)):
        return resolve(str(spec), store)
    return Side(f"{len(spec)} run(s)", "runs", list(spec))


def _frames(side: Side, device: str | None) -> tuple[list[pd.DataFrame], dict[str, str]]:
    """Every launch (or timed repeat) of a side's runs, one frame per run, and where each quantity
    came from."""
    frames, origins = [], {}
    skipped = [r for r in side.runs if r.kind not in ("import", "run")]
    if skipped:
        side.notes.append(f"{side.label}: {len(skipped)} {skipped[0].kind} run(s) left out: they hold no kernels")
    for run in _newest(side):
        if run.kind not in ("import", "run"):
            continue
        frame = values.imported(_named(run, device)) if run.kind == "import" else values.measured(run)
        frame.insert(0, "family", KERNEL if run.kind == "import" else RUN)
        for name, origin in frame.attrs.pop("origins").items():
            origins[name] = origin if origins.get(name, origin) == origin else f"{origins[name]}; {origin}"
        frames.append(frame)
    if not frames:
        raise InputError(
            f"{side.label}: no imported kernels or measured runs to compare",
            "give profiler output, a store or run file with runs, or a run id",
        )
    return frames, origins


def _newest(side: Side) -> list[Run]:
    """The side's runs, with only the newest measured run of each (op, shape, dtype, engine): an
    older one may have had other settings (cache, repeats), and its repeats are not the same sample.
    The ones left out are named in a note."""
    newest: dict[tuple[str, ...], Run] = {}
    for run in sorted((r for r in side.runs if r.kind == "run"), key=lambda r: r.created):
        newest[workload_key(run)] = run
    older = [r for r in side.runs if r.kind == "run" and newest[workload_key(r)] is not r]
    if older:
        side.notes.append(
            f"{side.label}: {len(older)} older run(s) of the same op, shape, dtype and engine left "
            f"out, the newest kept: {', '.join(r.run_id[:8] for r in older)}"
        )
    return [r for r in side.runs if r.kind != "run" or newest[workload_key(r)] is r]


def _named(run: Run, gpu: str | None) -> Run:
    """``run`` with the GPU ``gpu`` names where the file names none, as ``gpuprof import --gpu`` does
    (a copy: the caller's run stays as it was)."""
    if not gpu:
        return run
    named = run.replaced(device=dict(run.device), notes=list(run.notes))
    name_device(named, gpu_table.match(gpu))
    return named


def _folded(frame: pd.DataFrame) -> pd.DataFrame:
    """ncu stall columns summed into nvprof's reasons (NVIDIA's mapping), so both sides mean the same."""
    if frame.attrs.get("stalls") != "ncu":
        return frame
    ncu = [c for c in frame.columns if c.startswith("stall_")]
    targets: dict[str, list[str]] = {}
    for column in ncu:
        targets.setdefault(describe("ncu", column[6:]).get("nvprof", column), []).append(column)
    folded = {target: frame[columns].sum(axis=1, min_count=1) for target, columns in targets.items()}
    return frame.drop(columns=ncu).assign(**folded)


def _clock(side: Side, frame: pd.DataFrame) -> str:
    """The clock a side's numbers were taken at: recorded with a measured run, or the SM clock
    the profiler measured (median over launches)."""
    found = [
        f"{human(r.device['clock_during_run_hz'], 'hertz')} ({r.device.get('clock_during_run_source', 'recorded')})"
        for r in side.runs
        if r.kind == "run" and r.device.get("clock_during_run_hz")
    ]
    if "sm_clock" in frame and frame["sm_clock"].notna().any():
        found.append(f"SM {human(float(frame['sm_clock'].median()), 'hertz')} median (measured by the profiler)")
    return "; ".join(dict.fromkeys(found))


def _launches(
    sides: tuple[Side, Side], gpus: tuple[str | None, str | None]
) -> tuple[tuple[pd.DataFrame, dict[str, str]], tuple[pd.DataFrame, dict[str, str]]]:
    """Both sides' launches as one frame each, with where each quantity came from; ncu's stall
    reasons folded into nvprof's when one side is nvprof and the other ncu."""
    import pandas as pd

    found = [_frames(side, gpu) for side, gpu in zip(sides, gpus)]
    fold = len({f.attrs.get("stalls") for frames, _ in found for f in frames} - {None}) > 1
    out = []
    for side, (frames, origins) in zip(sides, found):
        if fold and any(f.attrs.get("stalls") == "ncu" for f in frames):
            origins.update(dict.fromkeys(stall_names(), FOLDED))
        frame = pd.concat([_folded(f) if fold else f for f in frames], ignore_index=True)
        side.clock = _clock(side, frame)
        out.append((frame, origins))
    return out[0], out[1]


def _by_impact(pair: Any) -> tuple[float, str]:
    """Largest change in total time first; kernels without time last, by name."""
    change = impact(pair)
    return (-abs(change) if change == change else 1.0, pair.label)


def diff(
    a: SideSpec,
    b: SideSpec,
    match: str = "config",
    fail_if: Sequence[str] = (),
    store: str | Path | None = None,
    gpus: tuple[str | None, str | None] = (None, None),
    min_change: float = MIN_CHANGE,
) -> DiffResult:
    """Compare ``a`` with ``b`` (paths, run ids, ``sweep:NAME``, Runs); see the module docstring.
    ``gpus`` names each side's GPU where its files name none (as ``gpuprof import --gpu``).
    ``min_change``: the smallest relative change a verdict calls a change (0.05 = 5 %)."""
    import pandas as pd

    if match not in MATCHES:
        raise InputError(f"unknown --match '{match}'", f"choose one of: {', '.join(MATCHES)}")
    if not 0 <= min_change < 10:
        raise InputError(f"--min-change {100 * min_change:g}% is out of range", "give a percentage from 0 to 1000")
    parsed = [gates.parse(text) for text in fail_if]
    sides = (_side(a, store), _side(b, store))
    (frame_a, origins_a), (frame_b, origins_b) = _launches(sides, gpus)
    grouping = group(frame_a, frame_b, match)
    index_a, index_b = (f.groupby(ids).indices for f, ids in ((frame_a, grouping.a), (frame_b, grouping.b)))
    matched = [k for k in index_a if k in index_b]
    pairs = [
        rows.Pair(
            grouping.labels[k], frame_a.iloc[index_a[k]], frame_b.iloc[index_b[k]], frame_a["family"].iat[index_a[k][0]]
        )
        for k in matched
    ]
    pairs.sort(key=_by_impact)
    notes = [
        f"{p.label} was measured differently: A {p.a['settings'].iat[0]}; B {p.b['settings'].iat[0]}"
        for p in pairs
        if p.family == "run" and p.a["settings"].iat[0] != p.b["settings"].iat[0]
    ]
    minimum = {"": min_change}
    for g in parsed:
        minimum[g.metric] = min(minimum.get(g.metric, min_change), abs(g.limit))
    kernel_rows = [r for p in pairs for r in rows.pair_rows(p, (origins_a, origins_b), minimum)]
    found = rows.total_rows(pairs, kernel_rows, minimum) + kernel_rows
    for key in index_a:
        if key not in index_b:
            found += rows.only_rows(grouping.labels[key], frame_a.iloc[index_a[key]], "A", origins_a)
    for key in index_b:
        if key not in index_a:
            found += rows.only_rows(grouping.labels[key], frame_b.iloc[index_b[key]], "B", origins_b)
    outcomes = [gates.evaluate(g, found) for g in parsed]
    for outcome in outcomes:
        for i, (status, why) in outcome.rows.items():
            found[i]["gate"] = "; ".join(filter(None, [found[i]["gate"], f"{outcome.gate.text} {status}"]))
    frame = pd.DataFrame([{c: r[c] for c in rows.COLUMNS} for r in found], columns=list(rows.COLUMNS))
    notes = grouping.notes + notes + [n for s in sides for n in s.notes]
    only = (len([k for k in index_a if k not in index_b]), len([k for k in index_b if k not in index_a]))
    return DiffResult(frame, sides, len(matched), only, notes, outcomes)
