"""The one per-kernel aggregation step: per-launch derived values, then one row per kernel.

:func:`launch_frame` gives one row per launch (or per tool aggregate of ``launches`` invocations)
with every value derived from its counters (:mod:`gpuprof.derive.counters`, :mod:`levels`,
:mod:`tensor`): time, FLOPs per precision (``fp64``, ``fp32``, ``fp16``), tensor FLOPs and their
total, FLOP/s and the peak at the clock it ran at, bytes at L1, L2 and DRAM, intensities, the SM
clock and the rule each came from (``basis``). :func:`kernel_frame` aggregates exactly those rows
per :data:`KEYS`; the import table, ``compare --import``, ``roofline`` and ``diff`` all read these
two frames. Both are column expressions over a run's launch × metric pivot.

How per-kernel values are aggregated (each launch weighted by its invocations):

============================  ==================================================================
quantity                      per-kernel rule
============================  ==================================================================
launches                      invocations counted
time, FLOPs, bytes            summed over the launches that have the value (``<q>``); ``<q>_complete``
                              says whether every launch had it, ``<q>_per_launch`` is the sum over
                              the invocations that had it
FLOP/s, bandwidth, peak,      time-weighted: sum(rate x time) / sum(time) over the launches with
SM clock                      both, so a counted rate is total FLOPs (bytes, cycles) / total time;
                              where no launch of the kernel has a time (a file of rates alone),
                              the mean weighted by invocations
efficiency                    FLOP/s / peak FLOP/s at the clock the kernel ran at, both as above
FLOP/s total, intensities     sum over sum (FLOPs / time, FLOPs / bytes) over the launches with both
profiler-reported metrics     mean weighted by invocations, over the launches that report them (the
(occupancy, efficiencies)     profiler's own Avg over invocations)
tensor kind, basis            the first launch's kind; every distinct basis text, in launch order
============================  ==================================================================

A caller that must not mix launches with and without a count (the roofline places a kernel only
from complete sums) masks with the ``_complete`` flags.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuprof.derive import counters, levels
from gpuprof.model import Run, tables

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

KEYS = ("run_id", "file", "session", "device", "kernel")
COUNTER_SUFFIX = {"fp64": "dp", "fp32": "sp", "fp16": "hp"}  # the frames' precision names -> derive.counters' suffixes
FLOPS = (*(f"flops_{p}" for p in COUNTER_SUFFIX), "flops_tensor", "flops_total")
BYTES = tuple(f"{level}_bytes" for level in levels.LEVELS)
EXTENSIVE = ("time", *FLOPS, *BYTES, "dram_check_bytes")  # summed; the last: what the AI check holds L2 to
RATES = (
    *(f"flop_rate_{p}" for p in COUNTER_SUFFIX),
    *(f"peak_flop_rate_{p}" for p in COUNTER_SUFFIX),
    "dram_bandwidth",
    "sm_clock",
    "flop_rate_from_rates",
    "peak_dram_bandwidth",
)  # time-weighted
DRAM_FROM_RATE = "DRAM bytes = dram__bytes.sum.per_second x kernel time"


def launch_frame(run: Run, extra: Sequence[str] = (), roofline: bool = True) -> pd.DataFrame:
    """One row per launch of ``run``: :data:`KEYS`, ``index`` (the tool's launch ID), ``launches``
    (invocations), then :data:`EXTENSIVE`, :data:`RATES`, ``flop_efficiency_<p>`` (%), with
    ``roofline`` the hierarchical roofline of the launch alone (``flop_rate_total``,
    ``ai_l1/l2/dram``, ``ai_check``, ``binding_*``: :func:`aggregate` places a kernel's own point
    from its sums instead), ``tensor_kind``, ``basis``, and the raw values of ``extra`` metric names
    (their units in ``attrs["units"]``). NaN where a launch lacks the inputs. DRAM bytes are the
    counted ones, else the measured DRAM bandwidth x the kernel time (as ncu's roofline takes them)."""
    import numpy as np
    import pandas as pd

    values, units = counters.launch_columns(run, extra)
    launches = run.launch_table
    time = np.asarray(values["time"], dtype=float)
    counted = np.asarray(values["dram_bytes"], dtype=float)
    from_rate = np.isnan(counted) & ~np.isnan(np.asarray(values["dram_bandwidth"], dtype=float) * time)
    basis = counters.with_rule(values["basis"], from_rate, DRAM_FROM_RATE)
    dram = np.where(from_rate, np.asarray(values["dram_bandwidth"], dtype=float) * time, counted)
    reads_only = run.environment.get("l2_bytes") == "l1-reads"

    def texts(values: object) -> pd.Series:  # kept as Python strings: pandas' Arrow strings cost a conversion each way
        return pd.Series(values, dtype=object)

    out = {
        "run_id": run.run_id,
        "file": Path(run.source).name,
        "session": texts(tables.attribute(launches, "report", "")),
        "device": texts(counters.launch_device_names(run)),
        "kernel": texts(launches["kernel"].to_numpy(dtype=object)),
        "index": launches["index"].to_numpy(),
        "launches": launches["invocations"].to_numpy(dtype=np.int64),
        "time": time,
        **{f"flops_{p}": values[f"flops_{s}"] for p, s in COUNTER_SUFFIX.items()},
        "flops_tensor": values["flops_tensor"],
        "flops_total": values["flops_total"],
        "l1_bytes": values["l1_bytes"],
        "l2_bytes": values["l2_bytes"],
        "dram_bytes": dram,
        "dram_check_bytes": np.asarray(values["dram_check_bytes"], dtype=float) if reads_only else dram,
        **{f"flop_rate_{p}": values[f"flop_rate_{s}"] for p, s in COUNTER_SUFFIX.items()},
        **{f"peak_flop_rate_{p}": values[f"peak_flop_rate_{s}"] for p, s in COUNTER_SUFFIX.items()},
        **{f"flop_efficiency_{p}": values[f"flop_efficiency_{s}"] for p, s in COUNTER_SUFFIX.items()},
        "dram_bandwidth": values["dram_bandwidth"],
        "sm_clock": values["sm_clock"],
        "flop_rate_from_rates": values["flop_rate_from_rates"],
        "peak_dram_bandwidth": values["peak_dram_bandwidth"],
        "tensor_kind": texts(_plain_texts(values["tensor_kind"])),
    }
    if roofline:
        out.update(levels.roofline_columns(_counter_names(out), list(out["device"])).drop(columns="dominant"))
    out = {**out, "basis": texts(basis), **{name: values[name] for name in extra}}
    # on the arrays as they are (tables.owned): pandas would copy every number column into one new block
    out = pd.DataFrame(tables.owned(out), copy=False)
    out.attrs["units"] = units
    return out


def _plain_texts(values: np.ndarray) -> np.ndarray:
    """Each value as text, '' for a missing one, as objects (each distinct value converted once)."""
    import numpy as np

    codes, distinct = tables.distinct(values)
    return np.array(["" if text is None or text != text else str(text) for text in distinct], dtype=object)[codes]


def _counter_names(columns: dict[str, Any]) -> dict[str, Any]:
    """The columns under :func:`gpuprof.derive.levels.roofline_columns`' names (dp/sp/hp)."""
    names = {
        f"{q}_{p}": f"{q}_{s}" for q in ("flops", "flop_rate", "peak_flop_rate") for p, s in COUNTER_SUFFIX.items()
    }
    return {names.get(name, name): column for name, column in columns.items()}


class _Sums:
    """Per kernel (:data:`KEYS`), the sums :func:`aggregate` divides and weighs, folded over launch
    frames given one after another (consecutive launches): a run of a million launches need not
    be held as one frame. Each sum is added launch by launch in launch order, across frames as
    within one (``np.bincount`` for the first frame, ``np.add.at`` onto the running sums after), so
    the result is bit for bit that of one frame of every launch."""

    # the ratios of sums the per-kernel roofline divides (aggregate's own and levels.roofline_columns')
    PAIRS = tuple((f"flops_{p}", bottom) for p in (*COUNTER_SUFFIX, "tensor", "total") for bottom in ("time", *BYTES))

    def __init__(self, extra: Sequence[str]) -> None:
        self.extra = extra
        self.groups: dict[tuple, int] = {}  # a kernel's keys -> its code, in order of first launch
        self.first: list[tuple] = []  # each kernel's keys as its first launch has them
        self.sums: dict[str, np.ndarray] = {}
        self.texts: dict[str, list[dict[str, None]]] = {"tensor_kind": [], "basis": []}  # distinct, in order
        # each bincount of the frame being added, by its (codes, weights) arrays
        self.made: dict[tuple[int, int], tuple[np.ndarray, np.ndarray | None, np.ndarray]] = {}

    def add(self, launches: pd.DataFrame) -> None:
        """Fold one :func:`launch_frame`'s launches (those after the frames before) into the sums."""
        import numpy as np

        keys = launches[list(KEYS)]
        local = _groups(keys)
        firsts = np.unique(local, return_index=True)[1]
        to_code = np.empty(len(firsts), dtype=np.int64)
        for group, row in enumerate(zip(*(keys[key].iloc[firsts].tolist() for key in KEYS))):
            found = tuple(_NAN if value != value else value for value in row)  # NaN keys are one group
            if found not in self.groups:
                self.groups[found] = len(self.first)
                self.first.append(row)
            to_code[group] = self.groups[found]
        codes = to_code[local] if len(local) else np.zeros(0, dtype=np.int64)
        weight = launches["launches"].to_numpy(dtype=float)
        self._sum("launches", codes, weight)
        once = bool((weight == 1).all())  # one invocation each (x 1 changes no value): nothing to weigh
        taken: dict[str, np.ndarray] = {}  # each column once: sums of the same arrays are made once

        def raw(name: str) -> np.ndarray:
            if name not in taken:
                taken[name] = launches[name].to_numpy(dtype=float)
            return taken[name]

        def weighted(name: str) -> np.ndarray:
            if once:
                return raw(name)
            if f"{name}*" not in taken:
                taken[f"{name}*"] = weight * raw(name)
            return taken[f"{name}*"]

        def weight_where(values: np.ndarray, missing: float) -> np.ndarray:  # ``missing`` where NaN
            nan = np.isnan(values)
            return np.where(nan, missing, weight) if nan.any() else weight

        time = weighted("time")
        for name in EXTENSIVE:
            value = weighted(name)
            self._sum(f"{name}.having", codes, weight_where(value, 0.0))
            self._known(name, value, codes)
        for name in RATES:
            rate = raw(name)
            self._over(f"{name}.timed", rate * time, time, codes)
            self._over(f"{name}.mean", weighted(name), weight_where(rate, np.nan), codes)
        for top, bottom in self.PAIRS:
            self._over(f"{top}/{bottom}", weighted(top), weighted(bottom), codes)
        for name in self.extra:
            self._over(name, weighted(name), weight_where(raw(name), np.nan), codes)
        for name, found in self.texts.items():
            _distinct_texts(launches[name].to_numpy(dtype=object), codes, found, len(self.first))
        self.made.clear()

    def _sum(self, name: str, codes: np.ndarray, weights: np.ndarray | None) -> None:
        import numpy as np

        count = len(self.first)
        sums = self.sums.get(name)
        if sums is None:  # the first frame's: many sums are of the same arrays (a count, the times)
            key = (id(codes), id(weights))
            made = self.made.get(key)
            if made is None or made[0] is not codes or made[1] is not weights:
                made = self.made[key] = (codes, weights, np.bincount(codes, weights=weights, minlength=count))
            self.sums[name] = made[2].copy()
            return
        if len(sums) < count:
            sums = self.sums[name] = np.concatenate([sums, np.zeros(count - len(sums), dtype=sums.dtype)])
        np.add.at(sums, codes, 1 if weights is None else weights)

    def _known(self, name: str, values: np.ndarray, codes: np.ndarray) -> None:
        """The sum of ``values`` where not NaN, and how many there are."""
        import numpy as np

        codes, values = _at(~np.isnan(values), codes, values)
        self._sum(name, codes, values)
        self._sum(f"{name}.known", codes, None)

    def _over(self, name: str, top: np.ndarray, bottom: np.ndarray, codes: np.ndarray) -> None:
        """The sums of ``top`` and ``bottom`` over the launches that have both."""
        import numpy as np

        codes, top, bottom = _at(~(np.isnan(top) | np.isnan(bottom)), codes, top, bottom)
        self._sum(f"{name}.top", codes, top)
        self._sum(f"{name}.bottom", codes, bottom)
        self._sum(f"{name}.both", codes, None)

    def total(self, name: str, suffix: str = "") -> np.ndarray:
        """Per kernel, the sum of ``name`` over the launches that have it; NaN where none has."""
        import numpy as np

        return np.where(self._of(f"{name}{suffix}.known") > 0, self._of(f"{name}{suffix}"), np.nan)

    def ratio(self, name: str) -> np.ndarray:
        """Per kernel, the sum of the tops over the sum of the bottoms (:meth:`_over`), NaN where
        the bottoms' sum is not above zero or no launch has both."""
        import numpy as np

        have = self._of(f"{name}.both") > 0
        tops = np.where(have, self._of(f"{name}.top"), np.nan)
        bottoms = np.where(have, self._of(f"{name}.bottom"), np.nan)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(bottoms > 0, tops / bottoms, np.nan)

    def _of(self, name: str) -> np.ndarray:
        import numpy as np

        sums = self.sums[name]
        return np.concatenate([sums, np.zeros(len(self.first) - len(sums), dtype=sums.dtype)])


_NAN = object()  # a NaN key of a kernel, as one value (NaN is not equal to itself)


def _at(rows: np.ndarray, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """``arrays`` at the ``rows`` (a mask) that are True: the arrays themselves where all are (a
    column with no NaN, as most are), none of them where none is (a counter the file lacks)."""
    if rows.all():
        return arrays
    if not rows.any():
        return tuple(array[:0] for array in arrays)
    return tuple(array[rows] for array in arrays)


def _groups(keys: pd.DataFrame) -> np.ndarray:
    """``keys.groupby(every column, sort=False, dropna=False).ngroup()``: each row's group, numbered
    in order of first appearance, from each column's codes (object columns through
    :func:`gpuprof.model.tables.distinct`: pandas would hash each long kernel name's characters)."""
    import numpy as np
    import pandas as pd

    combined = np.zeros(len(keys), dtype=np.int64)
    for name in keys.columns:
        column = keys[name]
        if column.dtype == object:
            codes, distinct = tables.distinct(column.to_numpy())
            missing = any(value is None or value != value for value in distinct)
        else:
            codes, distinct = pd.factorize(column)
            missing = bool((codes < 0).any())
        if missing or len(distinct) and combined.max(initial=0) > (1 << 62) // len(distinct):
            return keys.groupby(list(keys.columns), sort=False, dropna=False).ngroup().to_numpy()
        combined = combined * len(distinct) + codes
    return pd.factorize(combined)[0]


def _distinct_texts(texts: np.ndarray, codes: np.ndarray, found: list[dict[str, None]], count: int) -> None:
    """Add to ``found`` (per group, its distinct non-empty texts so far, in launch order) those of
    ``texts``, the texts of launches of the groups ``codes``."""
    import numpy as np

    found.extend({} for _ in range(count - len(found)))
    text_codes, uniques = tables.distinct(texts)
    pairs, first = np.unique(codes.astype(np.int64) * max(len(uniques), 1) + text_codes, return_index=True)
    for pair in pairs[np.argsort(first, kind="stable")].tolist():
        text = uniques[pair % max(len(uniques), 1)]
        if text:
            found[pair // max(len(uniques), 1)][str(text)] = None


def aggregate(launches: pd.DataFrame, extra: Sequence[str] = ()) -> pd.DataFrame:
    """One row per :data:`KEYS` of a :func:`launch_frame` (or several concatenated), by the rules of
    this module's docstring; ``extra`` columns (profiler-reported values) as invocation-weighted
    means. Each kind of work's own point: ``flop_rate_tensor`` and ``ai_<level>_<p>`` (``p`` one of
    fp64, fp32, fp16, tensor; sums over sums). Then the kernel's roofline point for all its work
    (``flop_rate_total``, ``ai_l1/l2/dram``, ``ai_check``, ``binding_*``) from those sums; the total
    counts every launch only where ``flops_total_complete``."""
    return aggregate_frames([launches], extra)


def aggregate_frames(frames: Iterable[pd.DataFrame], extra: Sequence[str] = ()) -> pd.DataFrame:
    """:func:`aggregate` of the launch frames ``frames`` (consecutive launches; at least one frame,
    which may be empty) as if they were one, folded a frame at a time (:class:`_Sums`): exactly the
    same table, with only one frame held."""
    import numpy as np
    import pandas as pd

    sums = _Sums(extra)
    for launches in frames:
        sums.add(launches)
    out: dict[str, Any] = {key: np.array([row[i] for row in sums.first], dtype=object) for i, key in enumerate(KEYS)}
    out["launches"] = sums._of("launches").astype(np.int64)
    for name in EXTENSIVE:
        having = sums._of(f"{name}.having")
        out[name] = sums.total(name)
        with np.errstate(divide="ignore", invalid="ignore"):
            out[f"{name}_per_launch"] = out[name] / having
        out[f"{name}_complete"] = having == out["launches"]
    for name in RATES:
        timed = sums.ratio(f"{name}.timed")
        out[name] = np.where(np.isnan(timed), sums.ratio(f"{name}.mean"), timed)
    for p in COUNTER_SUFFIX:
        with np.errstate(divide="ignore", invalid="ignore"):
            peak = out[f"peak_flop_rate_{p}"]
            out[f"flop_efficiency_{p}"] = np.where(peak > 0, 100.0 * out[f"flop_rate_{p}"] / peak, np.nan)

    def ratio(top: str, bottom: str) -> np.ndarray:
        return sums.ratio(f"{top}/{bottom}")

    out["flop_rate_tensor"] = ratio("flops_tensor", "time")
    for p in (*COUNTER_SUFFIX, "tensor"):  # each kind of work's own roofline point
        for level in levels.LEVELS:
            out[f"ai_{level}_{p}"] = ratio(f"flops_{p}", f"{level}_bytes")
    for p in COUNTER_SUFFIX:  # no counts or no time: FLOP/s / DRAM byte/s, as ncu's roofline section
        with np.errstate(divide="ignore", invalid="ignore"):
            by_rate = out[f"flop_rate_{p}"] / np.where(out["dram_bandwidth"] > 0, out["dram_bandwidth"], np.nan)
        out[f"ai_dram_{p}"] = np.where(np.isnan(out[f"ai_dram_{p}"]), by_rate, out[f"ai_dram_{p}"])
    for name in extra:
        out[name] = sums.ratio(name)
    # a kernel of several kinds: its first launch's
    out["tensor_kind"] = [" | ".join(kinds).split(" | ")[0] for kinds in sums.texts["tensor_kind"]]
    roofline = levels.roofline_columns(_counter_names(out), out["device"].tolist(), ratio)
    out.update((name, roofline[name].to_numpy()) for name in roofline.columns if name != "dominant")
    out["basis"] = [" | ".join(texts) for texts in sums.texts["basis"]]
    return pd.DataFrame(out)  # made once: pandas copies a frame per column added or joined


def kernel_frame(runs: Iterable[Run], extra: Sequence[str] = ()) -> pd.DataFrame:
    """:func:`aggregate` of the :func:`launch_frame` of every run: one row per kernel."""
    import pandas as pd

    frames = [launch_frame(run, extra, roofline=False) for run in runs]
    if not frames:
        return aggregate(launch_frame(Run("import", "", ""), extra, roofline=False), extra)
    return aggregate(pd.concat(frames, ignore_index=True), extra)
