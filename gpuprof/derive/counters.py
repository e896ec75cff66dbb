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
- FLOPs = fadd + fmul + 2 * ffma (thread instructions, predicated on), per precision;
- when only the ``.sum.per_cycle_elapsed`` rates were collected (the roofline set), FLOP/s =
  (fadd + fmul + 2 * ffma).per_cycle_elapsed * SM clock;
- peak FLOP/s at the measured clock = ``sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained``
  (FMA thread instructions per cycle for the whole GPU) * SM clock * 2 FLOP per FMA.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from gpuprof import catalog
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


def _aliases(key: str) -> tuple[str, ...]:
    """The names a key may appear under, in the catalog's order of preference
    (``smsp__cycles_elapsed.avg.per_second`` before the GPC clock), not the tool's order."""
    entry = catalog.entries().get(key)
    return (*entry.ncu, *entry.labels, *entry.nvprof, key) if entry else (key,)


@functools.cache
def _keys() -> tuple[str, ...]:
    """Every name the derivations below may read, so one pass over a run's table fetches them all."""
    names: list[str] = []
    for key in ("kernel_duration", "sm_clock", "dram_bytes", "dram_read_bytes", "dram_write_bytes",
                "dram_throughput", *_ELAPSED):
        names += _aliases(key)
    for precision, letter in PRECISIONS.items():
        names += _aliases(f"flop_count_{precision}")
        for name in _flop_weights(precision):
            names += [*_aliases(name), *_aliases(name + _PER_CYCLE)]
        names += [alias for name in _peak_names(letter) for alias in _aliases(name)]
    return tuple(dict.fromkeys(names))


class Counters:
    """Counter values per launch, by canonical or tool name: the pivot every derivation reads.

    Built from a run (one pass over its metric table for every name the derivations need, plus
    ``extra`` names) or from Launch objects. ``raw(key)`` finds a value as :meth:`Launch.value`
    does; ``number(key)`` also tries the catalog's aliases of a canonical name.
    """

    def __init__(self, lookup: Callable[[Sequence[str]], tuple[np.ndarray, list[str | None]]], launches: int,
                 extra: Sequence[str] = ()) -> None:
        self.launches = launches
        self._lookup = lookup
        self._columns: dict[str, np.ndarray] = {}
        self._units: dict[str, str | None] = {}
        self._fetch((*_keys(), *extra))

    @classmethod
    def of_run(cls, run: Run, extra: Sequence[str] = ()) -> Counters:
        return cls(run.lookup, len(run.launch_table), extra)

    @classmethod
    def of_launches(cls, launches: Sequence[Launch], extra: Sequence[str] = ()) -> Counters:
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

        return cls(lookup, len(launches), extra)

    def _fetch(self, keys: Sequence[str]) -> None:
        missing = [key for key in dict.fromkeys(keys) if key not in self._columns]
        if missing:
            values, units = self._lookup(missing)
            for column, key in enumerate(missing):
                self._columns[key] = values[:, column]
                self._units[key] = units[column]

    def raw(self, key: str) -> np.ndarray:
        """The value of the first metric whose canonical or tool name is ``key``, NaN where none."""
        self._fetch((key,))
        return self._columns[key]

    def unit(self, key: str) -> str | None:
        """The unit of ``key``'s values (that of the first launch having it), None when no launch has it."""
        self._fetch((key,))
        return self._units[key]

    def number(self, key: str) -> np.ndarray:
        """A number by canonical or tool name; for a canonical name the catalog's aliases are tried
        in its order of preference, launch by launch."""
        import numpy as np

        names = _aliases(key)
        self._fetch(names)
        found = self._columns[names[0]].copy()
        for name in names[1:]:
            found = np.where(np.isnan(found), self._columns[name], found)
        return found


def _also_per_launch(unit: str) -> Callable[[Callable[..., np.ndarray]], Callable[..., Any]]:
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
    import numpy as np

    found = columns[0]
    for column in columns[1:]:
        found = np.where(np.isnan(found), column, found)
    return found


def _weighted_sum(c: Counters, weights: dict[str, float], suffix: str = "") -> np.ndarray:
    """Sum of weight * metric over ``weights``' metric names (+ suffix); NaN where any is missing."""
    total = 0.0
    for name, weight in weights.items():
        total = total + weight * c.number(name + suffix)
    return total  # type: ignore[return-value]


def _op_letter(precision: str) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    return PRECISIONS[precision]


def _flop_weights(precision: str) -> dict[str, float]:
    _op_letter(precision)
    return catalog.entries()[f"flop_count_{precision}"].ncu_sum


@_also_per_launch("hertz")
def sm_clock(c: Counters) -> np.ndarray:
    """SM clock during the kernel, as the profiler measured it (hertz)."""
    return _nonzero(c.number("sm_clock"))


def _elapsed_cycles(c: Counters) -> np.ndarray:
    """Average elapsed SM-subpartition cycles: what ncu's ``per_cycle_elapsed`` rates divide by."""
    return _first(_nonzero(c.number(_ELAPSED[0])), c.number(_ELAPSED[1]))


@_also_per_launch("second")
def kernel_time(c: Counters) -> np.ndarray:
    """Kernel duration: measured (``gpu__time_duration.sum``, nvprof Duration) or elapsed cycles /
    SM clock when only those were collected."""
    return _first(c.number("kernel_duration"), _elapsed_cycles(c) / sm_clock(c))


@_also_per_launch("FLOP")
def flops(c: Counters, precision: str = "sp") -> np.ndarray:
    """Floating-point operations of one precision: nvprof's ``flop_count_<p>``, ncu's weighted
    instruction sum, or ncu's per-cycle rate * elapsed cycles (or * clock * time)."""
    weights = _flop_weights(precision)
    cycles = _first(_elapsed_cycles(c), sm_clock(c) * c.number("kernel_duration"))
    return _first(c.number(f"flop_count_{precision}"), _weighted_sum(c, weights),
                  _weighted_sum(c, weights, _PER_CYCLE) * cycles)


@_also_per_launch("FLOP/second")
def flop_rate(c: Counters, precision: str = "sp") -> np.ndarray:
    """Achieved FLOP/s of one precision: per-cycle rate * SM clock, or FLOPs / kernel time."""
    per_cycle = _weighted_sum(c, _flop_weights(precision), _PER_CYCLE)
    return _first(per_cycle * sm_clock(c), flops(c, precision) / _nonzero(kernel_time(c)))


@_also_per_launch("byte")
def dram_bytes(c: Counters) -> np.ndarray:
    """Bytes moved between DRAM and L2: ``dram__bytes.sum``, or read + write."""
    return _first(c.number("dram_bytes"), c.number("dram_read_bytes") + c.number("dram_write_bytes"))


@_also_per_launch("byte/second")
def dram_bandwidth(c: Counters) -> np.ndarray:
    """DRAM bandwidth: the measured ``dram__bytes.sum.per_second`` or DRAM bytes / kernel time."""
    return _first(c.number("dram_throughput"), dram_bytes(c) / _nonzero(kernel_time(c)))


@_also_per_launch("FLOP/second")
def peak_flop_rate(c: Counters, precision: str = "sp") -> np.ndarray:
    """Peak FLOP/s of one precision at the SM clock measured during this kernel: the FMA pipe's
    ``*.sum.peak_sustained`` (thread instructions per cycle, whole GPU) * clock * 2."""
    per_cycle = _first(*(c.number(name) for name in _peak_names(_op_letter(precision))))
    return per_cycle * sm_clock(c) * 2.0


@_also_per_launch("%")
def flop_efficiency(c: Counters, precision: str = "sp") -> np.ndarray:
    """Achieved FLOP/s as a percentage of the peak at the measured clock."""
    return 100.0 * flop_rate(c, precision) / _nonzero(peak_flop_rate(c, precision))


def frame(run: Run, extra: Sequence[str] = ()) -> pd.DataFrame:
    """Every derivation above for each launch of ``run``, one row per launch (NaN where a launch
    lacks the inputs), with the raw values of ``extra`` metric names after them."""
    import pandas as pd

    c = Counters.of_run(run, extra)
    columns: dict[str, np.ndarray] = {"time": kernel_time(c)}
    for p in PRECISIONS:
        columns[f"flops_{p}"] = flops(c, p)
    for p in PRECISIONS:
        columns[f"flop_rate_{p}"] = flop_rate(c, p)
        columns[f"peak_flop_rate_{p}"] = peak_flop_rate(c, p)
        columns[f"flop_efficiency_{p}"] = flop_efficiency(c, p)
    columns.update(dram_bytes=dram_bytes(c), dram_bandwidth=dram_bandwidth(c), sm_clock=sm_clock(c))
    columns.update({name: c.raw(name) for name in extra})
    out = pd.DataFrame(columns)
    out.attrs["units"] = {name: c.unit(name) for name in extra}
    return out
