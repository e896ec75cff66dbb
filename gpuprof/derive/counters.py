"""Values derived from measured counters: FLOPs, time, FLOP/s, DRAM traffic, clock and the FLOP/s
peak at that clock.

Each derivation is a column expression over a launch × key pivot of a run's metric table
(:class:`Counters`): it returns one value per launch, NaN where the launch lacks the inputs, so the
same code serves one launch and a hundred thousand. Called with a single
:class:`gpuprof.model.Launch` instead, each returns ``(value, unit)`` in base units, or None. None
of them raises on missing data. Metrics are read by canonical name (see
``gpuprof/data/metrics.toml``), so the same function serves nvprof (direct ``flop_count_sp``) and
Nsight Compute (weighted instruction sums) imports.

Nsight Compute formulas used (as in its roofline section):
- FLOPs = fadd + fmul + 2 * ffma (thread instructions, predicated on), per precision, read under
  ncu's ``smsp__`` names or NERSC's ``sm__`` ones (the same sums);
- when only the ``.sum.per_cycle_elapsed`` rates were collected (the roofline set), FLOP/s =
  (fadd + fmul + 2 * ffma).per_cycle_elapsed * SM clock;
- peak FLOP/s at the measured clock = ``sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained``
  (FMA thread instructions per cycle for the whole GPU) * SM clock * 2 FLOP per FMA.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

from gpuprof.derive import cpu_flops
from gpuprof.model import catalog
from gpuprof.model import Launch, Run

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

Quantity = tuple[float, str]

PRECISIONS = {"sp": "f", "dp": "d", "hp": "h"}  # study's suffix -> SASS op letter
_PER_CYCLE = ".per_cycle_elapsed"
_ELAPSED = ("smsp__cycles_elapsed.avg", "sm__cycles_elapsed.avg")


def _peak_names(letter: str) -> tuple[str, ...]:
    return tuple(f"{unit}__sass_thread_inst_executed_op_{letter}fma_pred_on.sum.peak_sustained"
                 for unit in ("sm", "smsp"))


def aliases(key: str) -> tuple[str, ...]:
    """The names a key may appear under, in the catalog's order of preference
    (``smsp__cycles_elapsed.avg.per_second`` before the GPC clock), not the tool's order."""
    entry = catalog.entries().get(key)
    return (*entry.ncu, *entry.also, *entry.labels, *entry.nvprof, key) if entry else (key,)


def spellings(key: str) -> tuple[str, ...]:
    """The ncu names of a canonical key: ncu's own first, then the other spellings files carry."""
    entry = catalog.entries()[key]
    return (*entry.ncu, *entry.also)


@functools.cache
def _keys() -> tuple[str, ...]:
    """Every name the derivations below may read, so one pass over a run's table fetches them all."""
    names: list[str] = []
    for key in ("kernel_duration", "sm_clock", "dram_bytes", "dram_read_bytes", "dram_write_bytes",
                "dram_throughput", *_ELAPSED):
        names += aliases(key)
    for precision, letter in PRECISIONS.items():
        names += aliases(f"flop_count_{precision}")
        for key in _flop_weights(precision):
            names += [*aliases(key), *(name + _PER_CYCLE for name in spellings(key))]
        names += [alias for name in _peak_names(letter) for alias in aliases(name)]
    return tuple(dict.fromkeys(names))


class Counters:
    """Counter values per launch, by canonical or tool name: the pivot every derivation reads.

    Built from a run (one pass over its metric table for every name the derivations need, plus
    ``extra`` names) or from Launch objects. ``raw(key)`` finds a value as :meth:`Launch.value`
    does; ``number(key)`` also tries the catalog's aliases of a canonical name. ``cc`` is each
    launch's compute capability ("7.0", "" when unknown), which some counting rules depend on
    (given as a list, or a function that makes it when a rule first asks). ``tensor_flop_per_inst``
    is a FLOP-per-tensor-instruction factor the user gave for chips with no documented one (a run's
    ``environment["tensor_flop_per_inst"]``; :mod:`gpuprof.derive.tensor`).

    The derivations try many spellings of each value, most of which a given file lacks: names the
    table does not hold (``present``, when known) are not looked up, and columns no launch has are
    skipped when alternatives are tried, so the cost follows the counters a file has.
    """

    def __init__(self, lookup: Callable[[Sequence[str]], tuple[np.ndarray, list[str | None]]], launches: int,
                 extra: Sequence[str] = (), cc: Sequence[str] | Callable[[], Sequence[str]] | None = None,
                 present: Collection[str] | None = None, tensor_flop_per_inst: float | None = None) -> None:
        import numpy as np

        self.launches = launches
        self.tensor_flop_per_inst = tensor_flop_per_inst
        self._cc = cc
        self._lookup = lookup
        self._present = present
        self._columns: dict[str, np.ndarray] = {}
        self._units: dict[str, str | None] = {}
        self._empty: set[str] = set()  # keys no launch has a number for
        self._nothing = np.full(launches, np.nan)
        self._nothing.flags.writeable = False
        self.fetch((*_keys(), *extra))

    @classmethod
    def of_run(cls, run: Run, extra: Sequence[str] = ()) -> Counters:
        metrics = run.metric_table
        present = {*metrics["metric"].cat.categories, *metrics["canonical"].cat.categories}
        return cls(run.lookup, len(run.launch_table), extra, lambda: launch_cc(run), present,
                   run.environment.get("tensor_flop_per_inst"))

    @classmethod
    def of_launches(cls, launches: Sequence[Launch], extra: Sequence[str] = (),
                    cc: Sequence[str] | None = None) -> Counters:
        """From Launch objects; ``cc`` overrides their ``cc`` attributes (a GPU run knows its device's)."""
        def lookup(keys: Sequence[str]) -> tuple[np.ndarray, list[str | None]]:
            import numpy as np

            values = np.full((len(launches), len(keys)), np.nan)
            units: list[str | None] = [None] * len(keys)
            for row, launch in enumerate(launches):
                for column, key in enumerate(keys):
                    found = launch.metric(key)
                    if found is not None and isinstance(found.value, (int, float)):
                        values[row, column] = found.value
                    if found is not None and units[column] is None:
                        units[column] = found.unit
            return values, units

        return cls(lookup, len(launches), extra,
                   cc if cc is not None else [launch.attributes.get("cc", "") for launch in launches])

    @functools.cached_property
    def cc(self) -> np.ndarray:
        import numpy as np

        found = self._cc() if callable(self._cc) else self._cc
        return np.array(list(found) if found is not None else [""] * self.launches, dtype=object)

    def fetch(self, keys: Sequence[str]) -> None:
        """Read ``keys`` (tool or canonical names) in one pass over the table, where not read yet."""
        import numpy as np

        missing = [key for key in dict.fromkeys(keys) if key not in self._columns]
        wanted = [key for key in missing if self._present is None or key in self._present]
        for key in set(missing).difference(wanted):
            self._columns[key], self._units[key] = self._nothing, None
            self._empty.add(key)
        if wanted:
            values, units = self._lookup(wanted)
            for column, key in enumerate(wanted):
                self._columns[key] = np.ascontiguousarray(values[:, column])
                self._units[key] = units[column]
                if np.isnan(self._columns[key]).all():
                    self._empty.add(key)

    def raw(self, key: str) -> np.ndarray:
        """The value of the first metric whose canonical or tool name is ``key``, NaN where none."""
        self.fetch((key,))
        return self._columns[key]

    def unit(self, key: str) -> str | None:
        """The unit of ``key``'s values (that of the first launch having it), None when no launch has it."""
        self.fetch((key,))
        return self._units[key]

    def number(self, key: str) -> np.ndarray:
        """A number by canonical or tool name; for a canonical name the catalog's aliases are tried
        in its order of preference, launch by launch."""
        return self.first_of(aliases(key))

    def first_of(self, names: Sequence[str]) -> np.ndarray:
        """Per launch, the value of the first of ``names`` (tool or canonical) it has."""
        self.fetch(names)
        found = [self._columns[name] for name in names if name not in self._empty]
        return _first(*found) if found else self._nothing


def launch_cc(run: Run) -> list[str]:
    """Each launch's compute capability: its ``cc`` attribute (ncu CSV, raw page), else the run's,
    else that of the device table's row for its device name when the name fixes one ("V100": 7.0)."""
    from gpuprof.devices import gpu_table

    names = [d or str(run.device.get("name", "")) for d in run.launch_table["device"].tolist()]
    by_name: dict[str, str] = {}
    for name in dict.fromkeys(names):
        found = {gpu.cc for gpu in gpu_table.find(name)} if name else set()
        by_name[name] = found.pop() if len(found) == 1 else ""
    fallback = str(run.device.get("cc", ""))
    return [attributes.get("cc") or fallback or by_name[name]
            for attributes, name in zip(run.launch_table["attributes"].tolist(), names)]


def also_per_launch(unit: str) -> Callable[[Callable[..., np.ndarray]], Callable[..., Any]]:
    """Let a derivation over :class:`Counters` also take one Launch and give (value, unit) or None."""
    def wrap(derive: Callable[..., np.ndarray]) -> Callable[..., Any]:
        @functools.wraps(derive)
        def either(source: Counters | Launch, *args: str) -> np.ndarray | Quantity | None:
            if isinstance(source, Counters):
                return derive(source, *args)
            value = float(derive(Counters.of_launches([source]), *args)[0])
            return None if math.isnan(value) else (value, unit)
        return either
    return wrap


def _nonzero(values: np.ndarray) -> np.ndarray:
    """NaN where a value is 0, for inputs that are only usable when non-zero (a clock, a time)."""
    import numpy as np

    return np.where(values == 0, np.nan, values)


def _first(*columns: np.ndarray) -> np.ndarray:
    """Per launch, the first of ``columns`` that is not NaN."""
    return choose(*columns)[0]


def choose(*columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per launch, the first of ``columns`` that is not NaN, and which one it was (-1: none), so a
    derivation can say which of its alternatives each launch's value came from."""
    import numpy as np

    arrays = [np.asarray(column, dtype=float) for column in columns]
    if any(array.shape != arrays[0].shape for array in arrays):  # a scalar among the columns
        shape = np.broadcast_shapes(*(array.shape for array in arrays))
        arrays = [np.broadcast_to(array, shape) for array in arrays]
    columns = tuple(arrays)
    found, which = columns[0].copy(), np.where(np.isnan(columns[0]), -1, 0)
    for position, column in enumerate(columns[1:], 1):
        take = np.isnan(found) & ~np.isnan(column)
        found[take], which[take] = column[take], position
    return found, which


def _weighted_sum(c: Counters, weights: dict[str, float], suffix: str = "") -> np.ndarray:
    """Sum of weight * value over ``weights``' canonical names, each read under any of its
    spellings (with ``suffix``, under its ncu spellings); NaN where any is missing."""
    total = 0.0
    for key, weight in weights.items():
        value = c.first_of([name + suffix for name in spellings(key)]) if suffix else c.number(key)
        total = total + weight * value
    return total  # type: ignore[return-value]


def _op_letter(precision: str) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    return PRECISIONS[precision]


def _flop_weights(precision: str) -> dict[str, float]:
    """NVIDIA's weights (add + mul + 2 fma) keyed by the canonical name of each instruction count."""
    _op_letter(precision)
    weights = catalog.entries()[f"flop_count_{precision}"].ncu_sum
    return {catalog.canonical(name) or name: weight for name, weight in weights.items()}


@also_per_launch("hertz")
def sm_clock(c: Counters) -> np.ndarray:
    """SM clock during the kernel, as the profiler measured it (hertz)."""
    return _nonzero(c.number("sm_clock"))


def _elapsed_cycles(c: Counters) -> np.ndarray:
    """Average elapsed SM-subpartition cycles: what ncu's ``per_cycle_elapsed`` rates divide by."""
    return _first(_nonzero(c.number(_ELAPSED[0])), c.number(_ELAPSED[1]))


TIME_RULES = ("time measured by the profiler (gpu__time_duration.sum, Duration)",
              "time derived = elapsed cycles / SM clock (sm__cycles_elapsed.avg / sm__cycles_elapsed.avg.per_second,"
              " or their smsp__ forms)",
              "time derived = elapsed cycles / SM clock (gpc__cycles_elapsed.max, ncu's Elapsed Cycles, / SM clock)")
UNCHECKED = "that time unchecked: the file also counts SASS instructions (see the run's notes)"


def _cycle_times(c: Counters) -> tuple[np.ndarray, np.ndarray]:
    """Elapsed cycles / SM clock, as NERSC's method takes them and from ncu's 'Elapsed Cycles'
    (the maximum over GPCs, which a report may hold alone)."""
    elapsed = _nonzero(c.first_of(("gpc__cycles_elapsed.max", "Elapsed Cycles")))
    return _elapsed_cycles(c) / sm_clock(c), elapsed / sm_clock(c)


def cycle_time(c: Counters) -> np.ndarray:
    """Elapsed cycles / SM clock: the kernel time where no duration was measured."""
    return _first(*_cycle_times(c))


def time_parts(c: Counters) -> tuple[np.ndarray, np.ndarray]:
    """Kernel duration per launch and which of :data:`TIME_RULES` gave it (-1: none)."""
    return choose(c.number("kernel_duration"), *_cycle_times(c))


@also_per_launch("second")
def kernel_time(c: Counters) -> np.ndarray:
    """Kernel duration: measured (``gpu__time_duration.sum``, nvprof Duration) or elapsed cycles /
    SM clock when only those were collected."""
    return time_parts(c)[0]


@also_per_launch("FLOP")
def flops(c: Counters, precision: str = "sp") -> np.ndarray:
    """Floating-point operations of one precision: nvprof's ``flop_count_<p>``, ncu's weighted
    instruction sum, or ncu's per-cycle rate * elapsed cycles (or * clock * time)."""
    weights = _flop_weights(precision)
    cycles = _first(_elapsed_cycles(c), sm_clock(c) * c.number("kernel_duration"))
    return _first(c.number(f"flop_count_{precision}"), _weighted_sum(c, weights),
                  _weighted_sum(c, weights, _PER_CYCLE) * cycles)


@also_per_launch("FLOP/second")
def flop_rate(c: Counters, precision: str = "sp") -> np.ndarray:
    """Achieved FLOP/s of one precision: per-cycle rate * SM clock, or FLOPs / kernel time."""
    per_cycle = _weighted_sum(c, _flop_weights(precision), _PER_CYCLE)
    return _first(per_cycle * sm_clock(c), flops(c, precision) / _nonzero(kernel_time(c)))


@also_per_launch("byte")
def dram_bytes(c: Counters) -> np.ndarray:
    """Bytes moved between DRAM and L2: ``dram__bytes.sum``, or read + write."""
    return _first(c.number("dram_bytes"), c.number("dram_read_bytes") + c.number("dram_write_bytes"))


@also_per_launch("byte/second")
def dram_bandwidth(c: Counters) -> np.ndarray:
    """DRAM bandwidth: the measured ``dram__bytes.sum.per_second`` or DRAM bytes / kernel time."""
    return _first(c.number("dram_throughput"), dram_bytes(c) / _nonzero(kernel_time(c)))


@also_per_launch("FLOP/second")
def peak_flop_rate(c: Counters, precision: str = "sp") -> np.ndarray:
    """Peak FLOP/s of one precision at the SM clock measured during this kernel: the FMA pipe's
    ``*.sum.peak_sustained`` (thread instructions per cycle, whole GPU) * clock * 2."""
    per_cycle = _first(*(c.number(name) for name in _peak_names(_op_letter(precision))))
    return per_cycle * sm_clock(c) * 2.0


@also_per_launch("%")
def flop_efficiency(c: Counters, precision: str = "sp") -> np.ndarray:
    """Achieved FLOP/s as a percentage of the peak at the measured clock."""
    return 100.0 * flop_rate(c, precision) / _nonzero(peak_flop_rate(c, precision))


def total_flops(vector: Sequence[np.ndarray], tensor: np.ndarray, rule: np.ndarray) -> np.ndarray:
    """Vector FLOPs of every precision counted plus tensor FLOPs (NERSC's total); NaN where the
    tensor pipe ran but its work was not counted, or where nothing was counted."""
    import numpy as np

    from gpuprof.derive.tensor import NOT_COUNTED

    stacked = np.vstack([*vector, tensor])
    total = np.where(np.isnan(stacked).all(axis=0), np.nan, np.nansum(stacked, axis=0))
    return np.where(np.isin(rule, NOT_COUNTED), np.nan, total)


def frame(run: Run, extra: Sequence[str] = ()) -> pd.DataFrame:
    """Every derivation above for each launch of ``run``, one row per launch (NaN where a launch
    lacks the inputs), with the raw values of ``extra`` metric names after them.

    Besides time, FLOPs, FLOP/s and peaks per precision, DRAM traffic and the clock, the
    hierarchical roofline: ``flops_tensor`` and ``flops_total`` (FLOP), ``flop_rate_total``
    (FLOP/s), ``l1_bytes`` and ``l2_bytes`` (byte), ``ai_l1``/``ai_l2``/``ai_dram`` (FLOP/byte),
    ``ai_check`` (text: which byte counter looks wrong, "" when consistent), ``tensor_kind`` and
    ``dominant`` (the ceiling kind of the tensor work and of all work, "fp16/tensor"),
    ``binding_ceiling`` (FLOP/s), ``binding_name`` (text) and ``binding_percent`` (%); ``basis``
    (text) says which rule gave the time, the tensor FLOPs and the cache bytes.
    """
    from gpuprof.derive import levels

    values = launch_values(run, extra)
    roofline = levels.roofline_columns(values, launch_device_names(run))
    at = values.columns.get_loc("basis")
    out = values.iloc[:, :at].join(roofline).join(values.iloc[:, at:])
    out.attrs["units"] = values.attrs["units"]
    return out


def launch_device_names(run: Run) -> list[str]:
    """Each launch's device name, the run's where the launch names none."""
    return [d or str(run.device.get("name", "")) for d in run.launch_table["device"].tolist()]


def launch_values(run: Run, extra: Sequence[str] = ()) -> pd.DataFrame:
    """:func:`frame` without the columns that combine a launch's values into its roofline point
    (FLOP/s total, intensities, the AI check, the binding ceiling): what a per-kernel table sums
    before it places each kernel's own point."""
    import numpy as np
    import pandas as pd

    from gpuprof.derive import levels, skew, tensor

    c = Counters.of_run(run, (*extra, *tensor.names(), *levels.names()))  # one pass over the table
    time, time_rule = time_parts(c)
    unchecked = (time_rule > 0) & skew.cycles_unchecked(run)
    columns: dict[str, np.ndarray] = {"time": time}
    for p in PRECISIONS:
        columns[f"flops_{p}"] = flops(c, p)
    tensor_flops, tensor_rule, tensor_kind = tensor.parts(c)
    columns["flops_tensor"] = tensor_flops
    columns["flops_total"] = total_flops([columns[f"flops_{p}"] for p in PRECISIONS], tensor_flops, tensor_rule)
    for p in PRECISIONS:
        columns[f"flop_rate_{p}"] = flop_rate(c, p)
        columns[f"peak_flop_rate_{p}"] = peak_flop_rate(c, p)
        columns[f"flop_efficiency_{p}"] = flop_efficiency(c, p)
    columns.update(dram_bytes=dram_bytes(c), dram_bandwidth=dram_bandwidth(c), sm_clock=sm_clock(c))
    l1, l1_rule = levels.level_parts(c, "l1")
    l2, l2_rule = levels.level_parts(c, "l2")
    columns.update(l1_bytes=l1, l2_bytes=l2, tensor_kind=tensor_kind)
    counted = ~np.isnan(np.vstack([columns[f"flops_{p}"] for p in PRECISIONS])).all(axis=0)
    tensor_said = np.where(counted | (tensor_rule != tensor.NONE), tensor_rule, -1)
    columns["basis"] = _bases(time_rule, unchecked, tensor_said, tensor.sparse(c), columns["flops_hp"] > 0,
                              l1_rule, l2_rule, [tensor.rule_text(rule, c) for rule in range(len(tensor.RULES))])
    columns.update({name: c.raw(name) for name in extra})
    if run.device.get("kind") == "cpu":
        _cpu_counted(run, columns)
    out = pd.DataFrame(columns)
    out.attrs["units"] = {name: c.unit(name) for name in extra}
    return out


def _cpu_counted(run: Run, columns: dict[str, np.ndarray]) -> None:
    """FLOPs a CPU run's FP events count (:mod:`gpuprof.derive.cpu_flops`), with FLOP/s over the
    elapsed time perf measured, where the GPU counters give none; the lane weights go in the basis."""
    import numpy as np

    counted = cpu_flops.launch_columns(run)
    if counted is None:
        return
    time = np.where(np.isnan(columns["time"]), np.asarray(counted["time"]), columns["time"])
    columns["time"] = time
    for p, key in (("sp", "sp"), ("dp", "dp")):
        values = np.asarray(counted[key])
        columns[f"flops_{p}"] = np.where(np.isnan(columns[f"flops_{p}"]), values, columns[f"flops_{p}"])
        columns[f"flop_rate_{p}"] = np.where(np.isnan(columns[f"flop_rate_{p}"]), values / time,
                                             columns[f"flop_rate_{p}"])
    columns["flops_total"] = np.where(np.isnan(columns["flops_total"]), np.asarray(counted["total"]),
                                      columns["flops_total"])
    columns["basis"] = np.array([f"{basis}; {extra}" if basis and extra else basis or extra
                                 for basis, extra in zip(columns["basis"].tolist(), counted["basis"])], dtype=object)


HALF_NOTE = ("FP16 FLOPs = hadd + hmul + 2 hfma (nvprof's mapping, NERSC); ncu's 2025 half-precision roofline "
             "counts 2 hadd + 2 hmul + 4 hfma (each a half2), twice this for packed code")


def _bases(time_rule: np.ndarray, unchecked: np.ndarray, tensor_rule: np.ndarray, sparse: np.ndarray,
           half: np.ndarray, l1_rule: np.ndarray, l2_rule: np.ndarray, tensor_texts: list[str]) -> np.ndarray:
    """Per launch, the rules its time, tensor FLOPs (``tensor_texts``, by rule) and cache bytes
    came from, as one text (NERSC's own byte counters, the first rule of each level, go unsaid), and
    the FP16 weights where it ran FP16 instructions (docs/tensor-cores.md section 6)."""
    import numpy as np

    from gpuprof.derive.levels import LEVEL_RULES

    codes = np.vstack([time_rule, unchecked, tensor_rule, sparse, half, l1_rule, l2_rule]).astype(np.int64) + 1
    key = np.zeros(len(time_rule), dtype=np.int64)
    for column in codes:  # one integer per combination: every code is below 16
        key = key * 16 + column
    found, inverse = np.unique(key, return_index=True, return_inverse=True)[1:]
    texts = []
    for time, is_unchecked, rule, is_sparse, is_half, l1, l2 in (codes[:, found] - 1).T.tolist():
        parts = [TIME_RULES[time]] if time >= 0 else []
        parts += [UNCHECKED] if is_unchecked else []
        parts += [tensor_texts[rule]] if rule >= 0 else []
        parts += ["sparse (2:4) tensor ops included as ncu counts them"] if is_sparse else []
        parts += [HALF_NOTE] if is_half else []
        parts += [LEVEL_RULES[level][code] for level, code in (("l1", l1), ("l2", l2)) if code > 0]
        texts.append("; ".join(parts))
    return np.array(texts, dtype=object)[inverse.ravel()]
