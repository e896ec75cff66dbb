"""The pivot every counter derivation reads: counter values per launch, by canonical or tool name.

:class:`Counters` is a launch × key view of a run's metric table (or of a few Launch objects), fetched in one
pass for the names a caller asks for. The derivations over it live in :mod:`gpuprof.derive.counted`,
:mod:`~gpuprof.derive.levels`, :mod:`~gpuprof.derive.tensor` and :mod:`~gpuprof.derive.skew`; the whole-run
frame that assembles them in :mod:`gpuprof.derive.counters`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

from gpuprof.devices import gpu_table
from gpuprof.model import Launch, Run, catalog, tables

if TYPE_CHECKING:
    import numpy as np

ValueUnit = tuple[float, str]  # one launch's value and its unit


def aliases(key: str) -> tuple[str, ...]:
    """The names a key may appear under, in the catalog's order of preference
    (``smsp__cycles_elapsed.avg.per_second`` before the GPC clock), not the tool's order."""
    entry = catalog.entries().get(key)
    return (*entry.ncu, *entry.also, *entry.labels, *entry.nvprof, key) if entry else (key,)


def spellings(key: str) -> tuple[str, ...]:
    """The ncu names of a canonical key: ncu's own first, then the other spellings files carry."""
    entry = catalog.entries()[key]
    return (*entry.ncu, *entry.also)


class Counters:
    """Counter values per launch, by canonical or tool name: the pivot every derivation reads.

    Built from a run (one pass over its metric table for the ``extra`` names a caller will read: see
    :func:`gpuprof.derive.counted.keys`; any other name is fetched on first use) or from Launch objects. ``raw(key)`` finds a value as :meth:`Launch.value`
    does; ``number(key)`` also tries the catalog's aliases of a canonical name. ``cc`` is each
    launch's compute capability ("7.0", "" when unknown), which some counting rules depend on
    (given as a list, or a function that makes it when a rule first asks). ``tensor_flop_per_inst``
    is a FLOP-per-tensor-instruction factor the user gave for chips with no documented one (a run's
    ``environment["tensor_flop_per_inst"]``; :mod:`gpuprof.derive.tensor`). ``l2_definition`` is
    which L2 traffic a run counts (``environment["l2_bytes"]``: :data:`gpuprof.derive.levels.L2_DEFINITIONS`).

    The derivations try many spellings of each value, most of which a given file lacks: names the
    table does not hold (``present``, when known) are not looked up, and columns no launch has are
    skipped when alternatives are tried, so the cost follows the counters a file has.
    """

    def __init__(
        self,
        lookup: Callable[[Sequence[str]], tuple[Sequence[np.ndarray], list[str | None]]],
        launches: int,
        extra: Sequence[str] = (),
        cc: Sequence[str] | Callable[[], Sequence[str]] | None = None,
        present: Collection[str] | None = None,
        tensor_flop_per_inst: float | None = None,
        l2_definition: str = "lts",
    ) -> None:
        import numpy as np

        self.launches = launches
        self.tensor_flop_per_inst = tensor_flop_per_inst
        self.l2_definition = l2_definition
        self._cc = cc
        self._lookup = lookup
        self._present = present
        self._columns: dict[str, np.ndarray] = {}
        self._units: dict[str, str | None] = {}
        self._empty: set[str] = set()  # keys no launch has a number for
        self._derived: dict[tuple, Any] = {}  # what each derivation gave (see also_per_launch)
        self._nothing = np.full(launches, np.nan)
        self._nothing.flags.writeable = False
        self.fetch(extra)

    @classmethod
    def of_run(cls, run: Run, extra: Sequence[str] = ()) -> Counters:
        metrics = run.metric_table
        present = {*metrics["metric"].cat.categories, *metrics["canonical"].cat.categories}
        return cls(
            run.lookup_columns,
            len(run.launch_table),
            extra,
            lambda: launch_cc(run),
            present,
            run.environment.get("tensor_flop_per_inst"),
            run.environment.get("l2_bytes") or "lts",
        )

    @classmethod
    def of_launches(
        cls, launches: Sequence[Launch], extra: Sequence[str] = (), cc: Sequence[str] | None = None
    ) -> Counters:
        """From Launch objects; ``cc`` overrides their ``cc`` attributes (a GPU run knows its device's)."""

        def lookup(keys: Sequence[str]) -> tuple[list[np.ndarray], list[str | None]]:
            import numpy as np

            values = np.full((len(keys), len(launches)), np.nan)  # a row per key: each key's values contiguous
            units: list[str | None] = [None] * len(keys)
            for row, launch in enumerate(launches):
                for column, key in enumerate(keys):
                    found = launch.metric(key)
                    if found is not None and isinstance(found.value, (int, float)):
                        values[column, row] = found.value
                    if found is not None and units[column] is None:
                        units[column] = found.unit
            return list(values), units

        return cls(
            lookup,
            len(launches),
            extra,
            cc if cc is not None else [launch.attributes.get("cc", "") for launch in launches],
        )

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
                self._columns[key] = values[column]
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

    def absent(self, names: Sequence[str]) -> bool:
        """Whether no launch has a number for any of ``names`` (a derivation then has nothing to do)."""
        self.fetch(names)
        return self._empty.issuperset(names)

    def first_of(self, names: Sequence[str]) -> np.ndarray:
        """Per launch, the value of the first of ``names`` (tool or canonical) it has."""
        self.fetch(names)
        found = [self._columns[name] for name in names if name not in self._empty]
        return first(*found) if found else self._nothing


def launch_cc(run: Run) -> list[str]:
    """Each launch's compute capability: its ``cc`` attribute (ncu CSV, raw page), else the run's,
    else that of the device table's row for its device name when the name fixes one ("V100": 7.0)."""
    names = launch_device_names(run)
    by_name: dict[str, str] = {}
    for name in dict.fromkeys(names):
        found = {gpu.cc for gpu in gpu_table.find(name)} if name else set()
        by_name[name] = found.pop() if len(found) == 1 else ""
    fallback = str(run.device.get("cc", ""))
    stated = tables.attribute(run.launch_table, "cc")
    if stated and stated[0] and tables.same_text(stated):
        return stated  # every launch states the same one (an ncu CSV)
    return [cc or fallback or by_name[name] for cc, name in zip(stated, names)]


def launch_device_names(run: Run) -> list[str]:
    """Each launch's device name, the run's where the launch names none."""
    devices = run.launch_table["device"].tolist()
    if tables.same_text(devices) and (devices[0] if devices else None):
        return devices
    name = str(run.device.get("name", ""))
    if tables.same_text(devices):  # every launch names none
        return [name] * len(devices)
    return [d or name for d in devices]


def also_per_launch(unit: str) -> Callable[[Callable[..., np.ndarray]], Callable[..., Any]]:
    """Let a derivation over :class:`Counters` also take one Launch and give (value, unit) or None."""

    def wrap(derive: Callable[..., np.ndarray]) -> Callable[..., Any]:
        @functools.wraps(derive)
        def either(source: Counters | Launch, *args: str) -> np.ndarray | ValueUnit | None:
            if isinstance(source, Counters):  # derived once per pivot: derivations read each other's
                found = source._derived.get((derive, args))
                if found is None:
                    found = source._derived[derive, args] = _read_only(derive(source, *args))
                return found
            value = float(derive(Counters.of_launches([source]), *args)[0])
            return None if math.isnan(value) else (value, unit)

        return either

    return wrap


def _read_only(values: Any) -> Any:
    """``values`` (an array) as one no one can change in place: it is handed to every later caller."""
    import numpy as np

    if isinstance(values, np.ndarray):
        values = values.view()
        values.flags.writeable = False
    return values


def nonzero(values: np.ndarray) -> np.ndarray:
    """NaN where a value is 0, for inputs that are only usable when non-zero (a clock, a time)."""
    import numpy as np

    return np.where(values == 0, np.nan, values)


def first(*columns: np.ndarray) -> np.ndarray:
    """Per launch, the first of ``columns`` that is not NaN (the first column itself, read-only, not
    a copy, where it has every launch's value or is the only one: most names a derivation tries are
    absent from a given file, and the first one present has the values)."""
    import numpy as np

    found = np.asarray(columns[0], dtype=float)
    if len(columns) > 1 and (np.isnan(found).any() or any(np.shape(column) != found.shape for column in columns)):
        return choose(*columns)[0]
    found = found.view()  # the first column has every launch's value
    found.flags.writeable = False
    return found


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
        np.copyto(found, column, where=take)
        np.copyto(which, position, where=take)
    return found, which
