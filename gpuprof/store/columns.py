"""A run's two tables as BLOBs for the store, one per column, and back.

Whole columns are what makes a million-row run cheap to keep: one SQLite row per column instead of
one per metric. Every encoding is plain data that loads without executing anything (no pickle),
so a foreign or damaged store can at worst fail to decode:

- ``npy``: a numeric column in NumPy's ``.npy`` format (``allow_pickle=False`` on reading);
- ``category``: repeated strings as a JSON list of the distinct values, a newline, then the
  ``.npy`` codes (-1 for a missing value);
- ``sparse``: an object column that is mostly None as a JSON list of ``[row, string]`` pairs;
- ``nan``: a float column with no value at all (most runs' ``minimum``/``maximum``), stored empty;
- ``counts``: the metric table's launch column (sorted) as ``.npy`` rows per launch;
- ``keyed``: the launch attributes (dicts of strings) as a JSON header of the keys and each key's
  distinct values, a newline, then ``.npy`` codes (launches × keys, -1 where a launch lacks the
  key): a profile repeats the same host, process and device on every launch;
- ``json``: a JSON list of one value per row, for attributes the keyed form cannot hold.
"""

from __future__ import annotations

import functools
import io
import itertools
import json
import tempfile
from collections.abc import Iterator

from gpuprof.errors import StoreError
from gpuprof.model import catalog, tables

# (table, column, encoding) in the order they are written; the tables' layout is gpuprof.model.tables'.
LAYOUT = (
    ("launches", "kernel", "category"),
    ("launches", "index", "npy"),
    ("launches", "device", "category"),
    ("launches", "invocations", "npy"),
    ("launches", "attributes", "keyed"),
    ("metrics", "launch", "counts"),
    ("metrics", "metric", "category"),
    ("metrics", "canonical", "category"),
    ("metrics", "value", "npy"),
    ("metrics", "text", "sparse"),
    ("metrics", "unit", "category"),
    ("metrics", "origin", "category"),
    ("metrics", "minimum", "npy"),
    ("metrics", "maximum", "npy"),
)


_ALTERNATIVES = {"npy": ("nan",), "keyed": ("json",)}  # what encode() falls back to


def _npy(array: object) -> bytes:
    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _from_npy(data: bytes) -> object:
    """The array of an ``.npy`` blob. Its header (dtype, shape) is parsed by NumPy once per distinct
    header: ``np.load`` parses it with ``ast`` every time, which was a fifth of decoding a small run."""
    import numpy as np

    size = _NPY_PREFIX + int.from_bytes(data[8:_NPY_PREFIX], "little") if data[6:7] == b"\x01" else len(data)
    dtype, shape, order = _npy_header(data[:size])
    count = int(np.prod(shape, dtype=np.int64))
    return np.frombuffer(data, dtype, count, offset=size).reshape(shape, order=order)


_NPY_PREFIX = 10  # magic (6), version (2), header length (2) of a version-1 .npy header


@functools.lru_cache(maxsize=512)
def _npy_header(header: bytes) -> tuple[object, tuple[int, ...], str]:
    """(dtype, shape, order) of an ``.npy`` header, refusing object arrays as ``np.load`` does without pickle."""
    import numpy as np

    stream = io.BytesIO(header)
    version = np.lib.format.read_magic(stream)
    if version != (1, 0):  # written by np.save only for headers over 64 KiB: read the long way
        raise ValueError(f"npy format version {version} is not the one gpuprof writes")
    shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
    if dtype.hasobject:
        raise ValueError("an object array in a stored column (gpuprof writes none)")
    return dtype, shape, "F" if fortran else "C"


@functools.lru_cache(maxsize=512)
def _categories(head: bytes) -> object:
    """The categorical dtype of a stored category list: runs repeat the same metric, unit and origin
    names, and pandas checks a new dtype's categories (unique, hashable) each time it builds one."""
    import pandas as pd

    return pd.CategoricalDtype(json.loads(head))


def _category(data: bytes) -> object:
    import numpy as np
    import pandas as pd

    head, _, body = data.partition(b"\n")
    dtype, codes = _categories(head), _from_npy(body)
    if codes.dtype.kind not in "iu" or (len(codes) and (codes.min() < -1 or codes.max() >= len(dtype.categories))):
        raise ValueError("category codes out of range")
    return pd.Categorical.from_codes(np.asarray(codes), dtype=dtype, validate=False)


def encode(
    launch_table: object,
    metric_table: object,
    tables: tuple[str, ...] = ("launches", "metrics"),
    text_rows: object = None,
) -> Iterator[tuple[str, str, str, bytes]]:
    """(table, column, encoding, data) for every column of a run's ``tables``; ``text_rows``: the
    metric rows holding a text, where known (:meth:`gpuprof.model.Run.text_rows`)."""
    import numpy as np
    import pandas as pd

    frames = {"launches": launch_table, "metrics": metric_table}
    for table, column, encoding in (entry for entry in LAYOUT if entry[0] in tables):
        series = frames[table][column]
        if encoding == "npy" and series.isna().all() and len(series) and series.dtype.kind == "f":
            encoding, data = "nan", b""
        elif encoding == "npy":
            data = _npy(series.to_numpy())
        elif encoding == "counts":
            data = _npy(np.bincount(series.to_numpy(), minlength=len(launch_table)))
        elif encoding == "keyed":
            encoding, data = _keyed(series.tolist())
        elif encoding == "category":
            values = series.array if isinstance(series.dtype, pd.CategoricalDtype) else _categorical(series)
            categories = json.dumps([str(c) for c in values.categories]).encode()
            data = categories + b"\n" + _npy(values.codes)
        elif encoding == "sparse":
            texts = series.to_numpy()
            rows = (series.notna().to_numpy().nonzero()[0] if text_rows is None else text_rows).tolist()
            data = json.dumps([[row, texts[row]] for row in rows]).encode()
        else:
            data = json.dumps(series.tolist()).encode()
        yield table, column, encoding, data


def _categorical(series: object) -> object:
    """``pandas.Categorical(series)`` (categories sorted), for a column of texts (kernel names over
    100,000 launches) by Python's cached string hashes (:func:`gpuprof.model.tables.distinct`)
    where pandas hashes each string's characters."""
    import numpy as np
    import pandas as pd

    if series.dtype == object:
        codes, found = tables.distinct(series.to_numpy())
        if all(isinstance(value, str) for value in found):
            order = sorted(range(len(found)), key=found.__getitem__)
            rank = np.empty(len(found), dtype=np.intp)
            rank[order] = np.arange(len(found))
            return pd.Categorical.from_codes(rank[codes], [found[i] for i in order], validate=False)
    return pd.Categorical(series)


_ABSENT = object()  # a launch's attributes lack the key


def _keyed(attributes: list[dict[str, str]]) -> tuple[str, bytes]:
    """("keyed", data) for the attribute dicts; ("json", data) when a value is not a string."""
    import numpy as np
    import pandas as pd

    # Launches with the same attributes share one dict (the readers intern them): each dict is
    # encoded once, in the order of its first launch, so the codes are those of a launch-by-launch pass.
    ids = np.fromiter(map(id, attributes), dtype=np.uintp, count=len(attributes))
    rows = pd.factorize(ids)[0]
    shared = [attributes[i] for i in np.flatnonzero(~pd.Series(ids).duplicated().to_numpy()).tolist()]
    keys = list(dict.fromkeys(itertools.chain.from_iterable(shared)))
    codes = np.full((len(shared), len(keys)), -1, dtype=np.int32)
    values = []
    for column, key in enumerate(keys):
        found, distinct = pd.factorize(np.array([attrs.get(key, _ABSENT) for attrs in shared], dtype=object))
        distinct = list(distinct)
        if (found == -1).any() or not all(v is _ABSENT or isinstance(v, str) for v in distinct):
            return "json", json.dumps(attributes).encode()  # a None, NaN or number: kept as it is
        if _ABSENT in distinct:  # launches without the key get code -1
            slot = distinct.index(_ABSENT)
            found = np.where(found == slot, -1, found - (found > slot))
            del distinct[slot]
        codes[:, column] = found
        values.append(distinct)
    return "keyed", json.dumps({"keys": keys, "values": values}).encode() + b"\n" + _npy(codes[rows])


def _from_keyed(data: bytes) -> list[dict[str, str]]:
    import numpy as np

    head, _, body = data.partition(b"\n")
    header, codes = json.loads(head), _from_npy(body)
    columns = [
        np.array([*values, None], dtype=object)[codes[:, column]] for column, values in enumerate(header["values"])
    ]  # code -1 takes the trailing None
    keys = header["keys"]
    return (
        [{key: value for key, value in zip(keys, row) if value is not None} for row in zip(*columns)]
        if keys
        else [{} for _ in range(len(codes))]
    )


def decode(
    parts: dict[tuple[str, str], tuple[str, bytes]], launches: int, metrics: int, where: str
) -> tuple[object, object]:
    """The (launch table, metric table) of a run from its stored columns; StoreError naming
    ``where`` when a column is missing or does not decode."""
    import numpy as np
    import pandas as pd

    sizes = {"launches": launches, "metrics": metrics}
    columns: dict[str, dict[str, object]] = {"launches": {}, "metrics": {}}
    for table, column, expected in LAYOUT:
        encoding, data = parts.get((table, column), ("", b""))
        try:
            if encoding not in (expected, *_ALTERNATIVES.get(expected, ())):
                raise ValueError(f"column {table}.{column} is {'missing' if not encoding else encoding}")
            if encoding == "npy":
                values = _from_npy(data)
            elif encoding == "nan":
                values = np.full(sizes[table], np.nan)
            elif encoding == "counts":
                counts = _from_npy(data)
                values = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
            elif encoding == "keyed":
                values = tables.objects(_from_keyed(data))
            elif encoding == "category":
                values = _category(data)
            elif encoding == "sparse":
                values = np.full(sizes[table], None, dtype=object)
                for row, text in json.loads(data):
                    values[row] = text
            else:
                values = tables.objects(json.loads(data))
            if len(values) != sizes[table]:
                raise ValueError(f"column {table}.{column} has {len(values)} rows, not {sizes[table]}")
        except (ValueError, TypeError, IndexError, KeyError, AttributeError, RecursionError) as error:
            raise StoreError(
                f"run {where} in the results store cannot be read: {error}",
                "the store was damaged; give another path with --store or $GPUPROF_STORE",
            ) from None
        columns[table][column] = values
    for table, column in (
        ("launches", "kernel"),
        ("launches", "device"),
        ("launches", "attributes"),
        ("metrics", "text"),
    ):
        values = columns[table][column]
        objects = (
            tables.category_objects(values) if isinstance(values, pd.Categorical) else np.asarray(values, dtype=object)
        )
        columns[table][column] = pd.Series(objects, dtype=object)
    return (  # in the tables' column order, without columns=: pandas then looks up no column by name
        pd.DataFrame({name: columns["launches"][name] for name in tables.LAUNCH_COLUMNS}),
        pd.DataFrame({name: columns["metrics"][name] for name in tables.METRIC_COLUMNS}),
    )


def _npy_header_of(dtype: object, rows: int) -> bytes:
    """The ``.npy`` header of a column of ``rows`` values of ``dtype``, for its data to follow."""
    import numpy as np

    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buffer, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False, "shape": (rows,)}
    )
    return buffer.getvalue()


# A column streamed into the store: (table, column, encoding, size in bytes, its bytes in pieces).
Streamed = tuple[str, str, str, int, Iterator[bytes]]
_PIECE_ROWS = 1 << 21  # rows per piece read back from a spill file: memory stays a few MB per column


class MetricSpill:
    """A metric table written as it is read, chunk by chunk, into files in a temporary folder, then
    streamed into the store in :data:`LAYOUT`'s encodings: what lets a file larger than memory be
    imported. Per row only the value (float64) and the metric and unit codes (int32) are written;
    the categories are kept in order of first appearance (as one metric table of all the rows
    would have them), texts (few rows) in memory, and per launch its rows and useful rows."""

    def __init__(self) -> None:
        import numpy as np

        self._folder = tempfile.TemporaryDirectory(prefix="gpuprof-import-")  # removed by close()
        self.folder = folder = self._folder.name
        self.files = {name: open(f"{folder}/{name}", "wb") for name in ("value", "metric", "unit")}  # noqa: SIM115
        self.metrics: dict[str, int] = {}  # tool metric name -> its code
        self.origin = ""
        self.units: dict[str, int] = {}
        self.texts: list[list[object]] = []  # [row, text] of rows whose value is a string
        self.rows = 0
        self.counted = np.zeros(0, dtype=np.int64)  # metric rows per launch
        self.useful = np.zeros(0, dtype=np.int64)  # of them, rows with a number or a meaningful text

    def append(self, piece: dict[str, object]) -> None:
        """One chunk's metric columns (:func:`gpuprof.model.tables.metric_table`'s arguments)."""
        import numpy as np

        metric, unit, values, text = piece["metric"], piece["unit"], piece["value"], piece["text"]
        rows = len(values)
        metric_codes = self._codes(metric, self.metrics)
        self.origin = piece["origin"]  # one origin for every row (a reader's measured values)
        self.files["value"].write(np.ascontiguousarray(values, dtype=np.float64).tobytes())
        self.files["metric"].write(metric_codes.tobytes())
        self.files["unit"].write(self._codes(unit, self.units).tobytes())
        useful = np.isfinite(values)
        if text is not None:
            given = np.flatnonzero(np.not_equal(text, None))
            self.texts.extend([int(row) + self.rows, text[row]] for row in given.tolist())
            useful[given] |= [str(t).strip().lower() not in ("", "nan", "n/a") for t in text[given]]
        launch = np.asarray(piece["launch"])
        if rows:
            width = int(launch.max()) + 1
            if width > len(self.counted):
                self.counted = np.concatenate([self.counted, np.zeros(width - len(self.counted), np.int64)])
                self.useful = np.concatenate([self.useful, np.zeros(width - len(self.useful), np.int64)])
            self.counted += np.bincount(launch, minlength=len(self.counted))
            self.useful += np.bincount(launch, weights=useful, minlength=len(self.useful)).astype(np.int64)
        self.rows += rows

    @staticmethod
    def _codes(values: object, known: dict[str, int]) -> object:
        """A chunk's category codes as codes into ``known`` (grown by the chunk's new names)."""
        import numpy as np

        to_known = np.array([known.setdefault(str(name), len(known)) for name in values.categories] + [-1], np.int32)
        return to_known[values.codes]

    def columns(self, launches: int) -> Iterator[Streamed]:
        """The metric table's columns as the store writes them (:func:`encode`'s encodings),
        read back from the spill files a piece at a time."""
        import numpy as np

        for handle in self.files.values():
            handle.close()
        counted = np.zeros(launches, dtype=np.int64)
        counted[: len(self.counted)] = self.counted
        yield _whole("metrics", "launch", "counts", _npy(counted))
        metric_names = list(self.metrics)
        canonicals = [catalog.canonical(name) for name in metric_names]
        canonical_names = list(dict.fromkeys(c for c in canonicals if c))
        to_canonical = np.array([canonical_names.index(c) if c else -1 for c in canonicals] + [-1], dtype=np.int32)
        yield self._category("metric", metric_names, "metric", lambda codes: codes)
        yield self._category("canonical", canonical_names, "metric", lambda codes: to_canonical[codes])
        yield self._spilled("value", "npy", "value", np.float64, lambda values: values)
        yield _whole("metrics", "text", "sparse", json.dumps(self.texts).encode())
        yield self._category("unit", list(self.units), "unit", lambda codes: codes)
        head = json.dumps([self.origin]).encode() + b"\n" + _npy_header_of(np.int8, self.rows)
        yield "metrics", "origin", "category", len(head) + self.rows, itertools.chain([head], _zeros(self.rows))
        yield _whole("metrics", "minimum", "nan", b"")
        yield _whole("metrics", "maximum", "nan", b"")

    def _category(self, column: str, names: list[str], spilled: str, mapped: object) -> Streamed:
        import numpy as np

        head = json.dumps(names).encode() + b"\n"
        _, encoding, size, pieces = self._spilled(spilled, "category", spilled, np.int32, mapped)[1:]
        return "metrics", column, encoding, len(head) + size, itertools.chain([head], pieces)

    def _spilled(self, column: str, encoding: str, spilled: str, dtype: object, mapped: object) -> Streamed:
        """A column from its spill file: the ``.npy`` header, then ``mapped`` of each piece."""
        import numpy as np

        header = _npy_header_of(dtype, self.rows)

        def pieces() -> Iterator[bytes]:
            yield header
            with open(f"{self.folder}/{spilled}", "rb") as handle:
                while piece := handle.read(_PIECE_ROWS * np.dtype(dtype).itemsize):
                    yield mapped(np.frombuffer(piece, dtype=dtype)).astype(dtype, copy=False).tobytes()

        return "metrics", column, encoding, len(header) + self.rows * np.dtype(dtype).itemsize, pieces()

    def close(self) -> None:
        for handle in self.files.values():
            handle.close()
        self._folder.cleanup()


def _whole(table: str, column: str, encoding: str, data: bytes) -> Streamed:
    return table, column, encoding, len(data), iter([data])


def _zeros(rows: int) -> Iterator[bytes]:
    for start in range(0, rows, _PIECE_ROWS):
        yield bytes(min(_PIECE_ROWS, rows - start))
