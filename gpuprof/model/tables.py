"""The two columnar tables behind every :class:`~gpuprof.model.Run`.

A run's measurements are one long pandas table with a row per launch × metric, and its launches
a second, small one with a row per launch (nsight-python's and hatchet's layout): readers of big
files fill the columns directly, derived metrics are column expressions over a launch × key pivot
(:func:`lookup`), and the store writes and reads whole columns. Small producers keep building
:class:`~gpuprof.model.Launch` objects, which :func:`gpuprof.model.from_launches` turns into the same
tables; :func:`gpuprof.model.launch_views` gives the object view back for code that reads a few launches.

Metric table, sorted by launch (a launch's rows in the order the tool gave them):

=========  ===========  =============================================================
column     dtype        meaning
=========  ===========  =============================================================
launch     int32        the launch's row in the launch table
metric     category     the tool's own metric name
canonical  category     the catalog's name for it, or NaN
value      float64      the value in base units; NaN when missing or a string
text       object       the value when the tool gave a string, else None
unit       category     base unit of ``value`` (the tool's unit for a string)
origin     category     measured, timed, analytic, peak-table, calibrated, derived or simulated
minimum    float64      lowest of several invocations when the tool aggregated them
maximum    float64      highest of them
=========  ===========  =============================================================

Launch table: ``kernel`` (object), ``index`` (int64: the tool's launch ID), ``device`` (object),
``invocations`` (int64), ``attributes`` (object: a dict of strings per launch).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import repeat
from typing import TYPE_CHECKING

try:  # the pivot's pass in C: built by pip where a C compiler is found
    from gpuprof.model._lookup_native import fill as _native_fill
except ImportError:
    _native_fill = None

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

METRIC_COLUMNS = ("launch", "metric", "canonical", "value", "text", "unit", "origin", "minimum", "maximum")
LAUNCH_COLUMNS = ("kernel", "index", "device", "invocations", "attributes")
CATEGORY_COLUMNS = ("metric", "canonical", "unit", "origin")


def metric_table(
    launch: np.ndarray | Sequence[int],
    metric: Sequence[str] | pd.Categorical,
    canonical: Sequence[str | None] | pd.Categorical,
    value: np.ndarray | Sequence[float],
    text: Sequence[str | None] | None,
    unit: Sequence[str] | pd.Categorical,
    origin: Sequence[str] | pd.Categorical | str,
    minimum: np.ndarray | Sequence[float] | None = None,
    maximum: np.ndarray | Sequence[float] | None = None,
) -> pd.DataFrame:
    """The metric table from its columns (``origin`` may be one value for every row; ``text``,
    ``minimum`` and ``maximum`` may be None for none), stably sorted by launch."""
    import numpy as np
    import pandas as pd

    launches = np.array(launch, dtype=np.int32)  # each column a copy, the table's own
    rows = len(launches)
    if isinstance(origin, str):
        origin = pd.Categorical.from_codes(np.zeros(rows, dtype=np.int8), [origin]) if rows else []

    def floats(values: np.ndarray | Sequence[float] | None) -> np.ndarray:
        return np.full(rows, np.nan) if values is None else np.array(values, dtype=np.float64)

    frame = pd.DataFrame(  # on those copies: pandas would copy them again, the floats into one new block
        {
            "launch": launches,
            "metric": _category(metric),
            "canonical": _category(canonical),
            "value": floats(value),
            "text": pd.Series(
                objects(text) if text is not None else np.full(rows, None, dtype=object), dtype=object, copy=False
            ),
            "unit": _category(unit),
            "origin": _category(origin),
            "minimum": floats(minimum),
            "maximum": floats(maximum),
        },
        copy=False,
    )
    if rows and (np.diff(launches) < 0).any():
        frame = frame.iloc[np.argsort(launches, kind="stable")].reset_index(drop=True)
    return frame


def _category(values: Sequence[str | None] | pd.Categorical) -> pd.Categorical:
    import pandas as pd

    return values.copy() if isinstance(values, pd.Categorical) else pd.Categorical(values)  # codes: small


def owned(columns: dict[str, object]) -> dict[str, object]:
    """``columns`` with each array one that can be written and that no other column's array shares
    (a copy where it is read-only, such as a buffer a parser handed over or a pivot's column, or
    another column's, or a view of one): a frame built on them without pandas' copy is then like
    any other."""
    import numpy as np

    roots: set[int] = set()
    out = {}
    for key, values in columns.items():
        if isinstance(values, np.ndarray):
            root = values
            while isinstance(root.base, np.ndarray):
                root = root.base
            if not values.flags.writeable or id(root) in roots:
                values = root = values.copy()
            roots.add(id(root))
        out[key] = values
    return out


def launch_table(
    kernel: Sequence[str],
    index: Sequence[int],
    device: Sequence[str],
    invocations: Sequence[int],
    attributes: Sequence[dict[str, str]],
) -> pd.DataFrame:
    import numpy as np
    import pandas as pd

    return pd.DataFrame(
        {
            "kernel": pd.Series(objects(kernel), dtype=object),
            "index": np.asarray(index, dtype=np.int64),
            "device": pd.Series(objects(device), dtype=object),
            "invocations": np.asarray(invocations, dtype=np.int64),
            "attributes": pd.Series(objects(attributes), dtype=object),
        }
    )


def attribute(launches: pd.DataFrame, key: str, default: object = None) -> list[object]:
    """Each launch's ``key`` attribute, ``default`` where it has none (one ``dict.get`` per
    launch through ``map``: a list comprehension over 100,000 launches costs several times more)."""
    return list(map(dict.get, launches["attributes"].tolist(), repeat(key), repeat(default)))


def row_codes(columns: Sequence[np.ndarray], rows: int) -> np.ndarray:
    """Each of ``rows`` rows' code among the distinct rows of the integer ``columns`` (codes from
    0), in order of first appearance: factorized a column at a time, where numpy's unique over
    rows sorts them (60 ms for the rule rows of a million-row file)."""
    import numpy as np
    import pandas as pd

    key = np.zeros(rows, dtype=np.int64)
    for column in columns:
        base = int(column.max()) + 1 if len(column) else 1
        key = pd.factorize(key * base + column)[0]
    return key


def same_text(values: Sequence[str]) -> bool:
    """Whether every one of ``values`` is the first one (cheap on a column of one repeated string)."""
    return not len(values) or values.count(values[0]) == len(values)


def objects(values: Sequence[object]) -> np.ndarray:
    """An object array holding each of ``values`` as it is (numpy would unpack sequences)."""
    import numpy as np

    if isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1:
        return values.copy()  # a million texts' column: no list of them between
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


def distinct(values: Sequence[object]) -> tuple[np.ndarray, list[object]]:
    """Each of ``values``' code and the distinct values, in order of first appearance, None and
    NaN one value (the first met): ``pandas.factorize(values, use_na_sentinel=False)``, by
    Python's own (cached) string hashes where pandas hashes each string's characters again, which
    made a column of a few long texts repeated over 100,000 launches cost tens of milliseconds."""
    import numpy as np

    values = values.tolist() if isinstance(values, np.ndarray) else list(values)
    if values and values.count(values[0]) == len(values):  # one value (compared by identity first): cheap
        return np.zeros(len(values), dtype=np.intp), [values[0]]
    index = dict.fromkeys(values)
    found: list[object] = []
    missing = None  # the code of None and NaN
    for value in index:
        if value is None or value != value:
            if missing is None:
                missing = len(found)
                found.append(value)
            index[value] = missing
        else:
            index[value] = len(found)
            found.append(value)
    return np.fromiter(map(index.__getitem__, values), dtype=np.intp, count=len(values)), found


def category_objects(values: pd.Categorical) -> np.ndarray:
    """``np.asarray(values, dtype=object)`` (NaN where missing), taken through NumPy: pandas goes
    through Arrow for each row's string, which was most of building a small run's launches."""
    import numpy as np

    return np.append(np.asarray(values.categories, dtype=object), np.nan)[values.codes]  # code -1: the NaN


def category_values(series: pd.Series) -> list[object]:
    """``series.tolist()``, through :func:`category_objects` for a categorical column."""
    import pandas as pd

    return category_objects(series.array).tolist() if isinstance(series.dtype, pd.CategoricalDtype) else series.tolist()


def split_value(name: str, value: object) -> tuple[float, str | None]:
    """(number, text) columns for one metric value; a value of any other type is a bug upstream."""
    if value is None:
        return math.nan, None
    if isinstance(value, str):
        return math.nan, value
    if isinstance(value, (int, float)):
        return float(value), None
    raise TypeError(f"metric {name}: value of type {type(value).__name__} cannot be stored")


def nan_to_none(number: float) -> float | None:
    return None if number != number else number  # NaN -> None


def metric_values(metrics: pd.DataFrame) -> list[float | str | None]:
    """Each row's value as :class:`~gpuprof.model.Metric` holds it: the string, the number or None."""
    texts = metrics["text"].tolist()
    return [
        text if isinstance(text, str) else nan_to_none(number) for number, text in zip(metrics["value"].tolist(), texts)
    ]


def lookup(metrics: pd.DataFrame, launches: int, keys: Sequence[str]) -> tuple[np.ndarray, list[str | None]]:
    """Per launch, the number each of ``keys`` gives, found as :meth:`Launch.metric` finds it: the
    first row whose canonical name is the key, else the first whose tool name is; NaN where there
    is none or it holds a string. Returns a (launches × keys) array and each key's unit (that of
    its first row, or None).

    One pass over the table per name column for all keys: category codes are mapped to key
    positions, and the first row per (launch, key) is kept, so the cost grows with the rows, not
    with the number of keys times the rows. The pass is C's where the extension was built
    (:mod:`gpuprof.model._lookup_native`), NumPy's otherwise (:func:`_fill`): the same arrays.
    """
    import numpy as np

    # each key's column contiguous (Fortran order): a caller takes a key's values without a copy
    out = np.full((launches, len(keys)), np.nan, order="F")
    units: list[str | None] = [None] * len(keys)
    if not len(metrics) or not keys or not launches:
        return out, units
    position = {key: i for i, key in enumerate(keys)}
    launch = np.ascontiguousarray(metrics["launch"].to_numpy())
    if launch.dtype.kind != "i":  # the C pass takes signed integers (a table's launch column is int32)
        launch = launch.astype(np.int64)
    value = np.ascontiguousarray(metrics["value"].to_numpy(dtype=np.float64))
    names = []  # per name column (canonical first: its match hides a tool-name match): codes, code -> key
    for column in ("canonical", "metric"):
        codes = metrics[column].cat
        to_key = np.array([position.get(name, -1) for name in codes.categories] + [-1], dtype=np.int32)
        names.append((np.ascontiguousarray(codes.codes), to_key))
    (canonical, to_key), (metric, metric_to_key) = names
    flat = out.ravel(order="F")  # a view: the cells in the arrays' Fortran order
    if _native_fill is not None:
        firsts = _native_fill(flat, launches, launch, value, canonical, to_key, metric, metric_to_key)
    else:
        firsts = _fill(flat, launches, launch, value, names)
    unit = metrics["unit"].array  # its codes and categories taken once, not as a Series per key
    unit_codes, unit_names = unit.codes, unit.categories
    for first_rows in firsts:  # a key's unit: its first row's by canonical name, else by tool name
        for key, row in enumerate(first_rows):
            if row >= 0 and units[key] is None:
                code = unit_codes[row]
                units[key] = unit_names[code] if code >= 0 else ""
    return out, units


def _fill(
    flat: np.ndarray, launches: int, launch: np.ndarray, value: np.ndarray, names: list[tuple[np.ndarray, np.ndarray]]
) -> list[list[int]]:
    """:func:`lookup`'s passes in NumPy: whole-column steps per name column (rows that name a key,
    their cells, the first row of each cell, those no earlier pass found), writing ``flat``.
    Returns the first row each key took in each pass (-1: none)."""
    import numpy as np

    keys = len(flat) // launches
    if len(launch) and (launch.min() < 0 or launch.max() >= launches):  # as the C pass refuses it
        raise ValueError("a key or launch outside the output array")
    found = np.zeros(len(flat), dtype=bool)
    firsts = []
    canonical_keys = None
    for codes, to_key in names:
        key_of_row = to_key[codes]  # code -1 (no value) picks the trailing -1
        if canonical_keys is None:
            canonical_keys = key_of_row
        else:  # a row whose tool name is the key its canonical name is: that cell is found already
            key_of_row[key_of_row == canonical_keys] = -1
        rows = np.flatnonzero(key_of_row >= 0)
        row_keys = key_of_row[rows]
        cells = row_keys.astype(np.int64) * launches + launch[rows]
        if _repeats(cells, len(flat)):  # a launch has a key twice: its first row counts
            kept = _first_of_each(cells, len(flat))  # rows stay in table order
            rows, row_keys, cells = rows[kept], row_keys[kept], cells[kept]
        fresh = ~found[cells]
        if not fresh.all():
            rows, row_keys, cells = rows[fresh], row_keys[fresh], cells[fresh]
        flat[cells] = value[rows]
        found[cells] = True
        first_row = _first_at(row_keys, keys)  # each key's first row, as a place in rows
        firsts.append([int(rows[at]) if at < len(rows) else -1 for at in first_row.tolist()])
    return firsts


def _repeats(cells: np.ndarray, size: int) -> bool:
    """Whether a value occurs twice in ``cells`` (all in ``range(size)``): fewer values marked in an
    array of ``size`` than there are cells, where one is affordable; hashed otherwise (as
    :func:`_first_of_each`)."""
    import numpy as np
    import pandas as pd

    if size > 4 * len(cells) + (1 << 22):
        return not pd.Index(cells).is_unique
    seen = np.zeros(size, dtype=bool)
    seen[cells] = True
    return int(np.count_nonzero(seen)) < len(cells)


def _first_at(keys: np.ndarray, count: int) -> np.ndarray:
    """Where each of ``range(count)`` first occurs in ``keys`` (``len(keys)`` where it does not),
    found in blocks of growing size: a table's first launch usually holds every key."""
    import numpy as np

    first = np.full(count, len(keys), dtype=np.int64)
    left = np.bincount(keys, minlength=count) > 0  # the keys still to find
    start, block = 0, 4096
    while left.any():
        found, at = np.unique(keys[start : start + block], return_index=True)
        new = found[left[found]]
        first[new] = start + at[left[found]]
        left[new] = False
        start, block = start + block, 2 * block
    return first


def _first_of_each(cells: np.ndarray, size: int) -> np.ndarray:
    """Where each distinct value of ``cells`` (all in ``range(size)``) first occurs, in order:
    one unbuffered minimum per cell, where an array of ``size`` is affordable; hashed otherwise."""
    import numpy as np
    import pandas as pd

    if size > 4 * len(cells) + (1 << 22):
        return np.flatnonzero(~pd.Series(cells).duplicated().to_numpy())
    first = np.full(size, len(cells), dtype=np.int32 if len(cells) < 1 << 31 else np.int64)
    np.minimum.at(first, cells, np.arange(len(cells), dtype=first.dtype))
    taken = np.zeros(len(cells), dtype=bool)
    taken[first[first < len(cells)]] = True
    return np.flatnonzero(taken)
