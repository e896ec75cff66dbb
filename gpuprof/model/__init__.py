"""The one result model every reader, launcher and renderer shares.

A :class:`Run` is what one ``gpuprof run`` or one imported file produced: its environment (device,
host, tool versions, exact command), the workload when gpuprof generated it, and one
:class:`Launch` per kernel launch (or per repetition of a CPU workload), each with long-format
:class:`Metric` values in base units. Derived numbers (FLOP/s, efficiency, roofline) are not stored
here: ``gpuprof.derive`` computes them from these records, so they can never go stale.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import TYPE_CHECKING, Any

from gpuprof.model import schema as _schema
from gpuprof.model import tables as _tables

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

SCHEMA_VERSION = 2  # 2: metrics stored as whole columns per run (1: one SQLite row per metric)

# Where a number came from. Every printed number carries one of these.
MEASURED = "measured"  # read from a profiler's counters
TIMED = "timed"  # wall-clock or event timing by gpuprof
ANALYTIC = "analytic"  # from the op's formula
PEAK_TABLE = "peak-table"  # from configs/ device table or a datasheet formula
CALIBRATED = "calibrated"  # measured ceiling from `gpuprof calibrate`
DERIVED = "derived"  # computed from other values (named in the metric)
SIMULATED = "simulated"  # cycles and counts a simulator (STONNE) produced: no hardware ran

# What a stored Run is besides "run" (measured by ``gpuprof run``) and "import" (read from a file): a
# ceiling measured by ``gpuprof calibrate``, or an application profiled by ``gpuprof profile``.
CALIBRATION, PROFILE = "calibration", "profile"

MetricValue = float | str | None
LOOKUP_CELLS = 1 << 23  # values (launches x counters) a run keeps of what it looked up: 64 MB


@dataclass(slots=True)
class Metric:
    """One value as a tool reported it, converted to base units.

    ``name`` is the tool's own name (``smsp__cycles_elapsed.avg.per_second``, ``flop_count_sp``);
    ``canonical`` the study's vocabulary when the catalog maps it. ``minimum``/``maximum`` are
    kept when a tool aggregated several invocations (nvprof's Min/Max/Avg); ``value`` is then the
    average. Not frozen: readers build millions of these, and a frozen dataclass constructs ~5×
    slower (benchmarks/bench_ncu_csv_parse.py); treat them as values all the same.
    """

    name: str
    value: MetricValue
    unit: str = ""
    canonical: str | None = None
    origin: str = MEASURED
    minimum: float | None = None
    maximum: float | None = None


@dataclass
class Launch:
    """One kernel launch (``invocations == 1``) or a tool's aggregate over several launches."""

    kernel: str
    index: int
    device: str = ""
    invocations: int = 1
    attributes: dict[str, str] = field(default_factory=dict)
    metrics: list[Metric] = field(default_factory=list)

    def metric(self, key: str) -> Metric | None:
        """The first metric whose canonical or original name is ``key``."""
        for m in self.metrics:
            if m.canonical == key:
                return m
        for m in self.metrics:
            if m.name == key:
                return m
        return None

    def value(self, key: str) -> MetricValue:
        found = self.metric(key)
        return found.value if found else None


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _read_only(values: np.ndarray) -> np.ndarray:
    """``values`` as a view no one can write through (a kept lookup column that many readers share)."""
    view = values.view()
    view.flags.writeable = False
    return view


class Run:
    """Everything one measurement or one imported file produced, stored once, rendered many times.

    Its measurements live in two columnar tables (:mod:`gpuprof.model.tables`): ``metric_table``, one row
    per launch × metric, and ``launch_table``, one row per launch. Give either ``launches`` (Launch
    objects, for producers of a few launches) or ``tables`` (for readers of big files); ``launches``
    reads them back as objects. A run is a value once built: change it by building another.
    """

    def __init__(
        self,
        kind: str,
        format: str,
        source: str,
        device: dict[str, Any] | None = None,
        workload: dict[str, Any] | None = None,
        environment: dict[str, Any] | None = None,
        launches: Iterable[Launch] = (),
        notes: list[str] | None = None,
        created: str | None = None,
        run_id: str | None = None,
        schema_version: int = SCHEMA_VERSION,
        *,
        tables: tuple[pd.DataFrame, pd.DataFrame] | None = None,
    ) -> None:
        self.kind = kind  # "run" (gpuprof measured it), "import" (read from a file), "simulation"
        self.format = format  # reader or launcher name: "ncu-csv", "nvprof-csv-metrics", "cpu-numpy"
        self.source = source  # exact command line, or the imported file's path
        self.device = device if device is not None else {}
        self.workload = workload
        self.environment = environment if environment is not None else {}
        self.notes = notes if notes is not None else []
        self.created = created or _now()
        self.run_id = run_id or uuid.uuid4().hex
        self.schema_version = schema_version
        if tables is None:
            tables = from_launches(launches)
        self.launch_table, self.metric_table = tables
        self._views: list[Launch] | None = None
        self._looked_up: tuple[object, int, dict[str, tuple[np.ndarray, str | None]]] = (None, 0, {})
        self._text_rows: tuple[object, np.ndarray | None] = (None, None)

    @property
    def launches(self) -> list[Launch]:
        """The launches as objects, built from the tables on first use."""
        if self._views is None:
            self._views = launch_views(self.launch_table, self.metric_table)
        return self._views

    def replaced(self, **changes: Any) -> Run:
        """This run with some of its constructor's fields changed, the same run otherwise (its id and
        time included); its tables are shared unless ``launches`` or ``tables`` are among the changes."""
        fields = self._meta()
        if "launches" not in changes and "tables" not in changes:
            fields["tables"] = (self.launch_table, self.metric_table)
        return Run(**{**fields, **changes})

    def __repr__(self) -> str:
        return (
            f"Run(kind={self.kind!r}, format={self.format!r}, source={self.source!r}, "
            f"launches={len(self.launch_table)}, metrics={len(self.metric_table)}, run_id={self.run_id!r})"
        )

    def _meta(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "format": self.format,
            "source": self.source,
            "device": self.device,
            "workload": self.workload,
            "environment": self.environment,
            "notes": self.notes,
            "created": self.created,
            "run_id": self.run_id,
            "schema_version": self.schema_version,
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Run):
            return NotImplemented
        return self._meta() == other._meta() and self.launches == other.launches

    __hash__ = None  # type: ignore[assignment]

    def lookup(self, keys: Sequence[str]) -> tuple[np.ndarray, list[str | None]]:
        """Per launch, the number each of ``keys`` (canonical or tool metric names) gives, as
        :meth:`Launch.value` finds it, NaN where none; and each key's unit (see :func:`gpuprof.model.tables.lookup`)."""
        import numpy as np

        columns, units = self.lookup_columns(keys)
        out = np.empty((len(self.launch_table), len(keys)), order="F")
        for at, column in enumerate(columns):
            out[:, at] = column
        return out, units

    def lookup_columns(self, keys: Sequence[str]) -> tuple[list[np.ndarray], list[str | None]]:
        """:meth:`lookup` as one read-only array per key, the one kept, not a copy.

        What was found is kept (up to :data:`LOOKUP_CELLS` values) while the tables are the same
        objects (a run is a value once built): an import's notes and its per-kernel table read
        many of the same counters."""
        launches = len(self.launch_table)
        table, rows, kept = self._looked_up
        if table is not self.metric_table or rows != launches:
            kept = {}
            self._looked_up = (self.metric_table, launches, kept)
        missing = [key for key in dict.fromkeys(keys) if key not in kept]
        if (len(kept) + len(missing)) * launches > LOOKUP_CELLS or not keys:
            values, units = _tables.lookup(self.metric_table, launches, keys)  # too many to keep
            return [_read_only(values[:, at]) for at in range(len(keys))], units
        if missing:
            values, units = _tables.lookup(self.metric_table, launches, missing)  # each key's column contiguous
            kept.update((key, (_read_only(values[:, at]), units[at])) for at, key in enumerate(missing))
        return [kept[key][0] for key in keys], [kept[key][1] for key in keys]

    def text_rows(self) -> np.ndarray:
        """The metric rows whose value is a text (a string-valued metric: few rows, often none),
        found once while the metric table is the same object: the notes and the store ask too."""
        import numpy as np

        table, rows = self._text_rows
        if table is not self.metric_table or rows is None:
            rows = np.flatnonzero(self.metric_table["text"].notna().to_numpy())
            self._text_rows = (self.metric_table, rows)
        return rows

    def to_dict(self) -> dict[str, Any]:
        return {**self._meta(), "launches": [dataclasses.asdict(launch) for launch in self.launches]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Run:
        """The Run ``data`` describes; ValueError naming the first field that does not fit (:mod:`.schema`)."""
        problem = _schema.problem(data)
        if problem:
            raise ValueError(problem)
        launches = [
            Launch(**{**launch, "metrics": [Metric(**m) for m in launch["metrics"]]})
            for launch in data.get("launches", [])
        ]
        return cls(**{**data, "launches": launches})

    def metrics_frame(self) -> pd.DataFrame:
        """Long format: one row per launch × metric, with unit and origin on every row; ``value``
        is the number in base units (NaN for a string-valued metric, whose string is in ``text``)."""
        import numpy as np
        import pandas as pd

        metrics, launches = self.metric_table, self.launch_table
        position = metrics["launch"].to_numpy()
        devices = np.array([d or self.device.get("name", "") for d in launches["device"].tolist()], dtype=object)
        return pd.DataFrame(
            {
                "run_id": self.run_id,
                "device": devices[position] if len(devices) else np.array([], dtype=object),
                "kernel": launches["kernel"].to_numpy()[position],
                "launch": launches["index"].to_numpy()[position],
                "invocations": launches["invocations"].to_numpy()[position],
                **{
                    column: metrics[column].to_numpy()
                    if column in ("value", "text", "minimum", "maximum")
                    else metrics[column]
                    for column in _tables.METRIC_COLUMNS[1:]
                },
            }
        )


# The object view and the tables, both ways (the tables module knows nothing of the objects).
def from_launches(launches: Iterable[Launch]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(launch table, metric table) of Launch objects."""
    launches = list(launches)
    positions: list[int] = []
    names: list[str] = []
    values: list[float] = []
    texts: list[str | None] = []
    units: list[str] = []
    canonicals: list[str | None] = []
    origins: list[str] = []
    lows: list[float] = []
    highs: list[float] = []
    for position, launch in enumerate(launches):
        metrics = launch.metrics
        positions.extend(repeat(position, len(metrics)))
        for m in metrics:
            number, text = _tables.split_value(m.name, m.value)
            names.append(m.name)
            values.append(number)
            texts.append(text)
            units.append(m.unit)
            canonicals.append(m.canonical)
            origins.append(m.origin)
            lows.append(math.nan if m.minimum is None else m.minimum)
            highs.append(math.nan if m.maximum is None else m.maximum)
    return (
        _tables.launch_table(
            [launch.kernel for launch in launches],
            [launch.index for launch in launches],
            [launch.device for launch in launches],
            [launch.invocations for launch in launches],
            [launch.attributes for launch in launches],
        ),
        _tables.metric_table(positions, names, canonicals, values, texts, units, origins, lows, highs),
    )


def launch_views(launches: pd.DataFrame, metrics: pd.DataFrame) -> list[Launch]:
    """The tables as Launch objects (with their Metrics): new objects, so changing them changes
    nothing in the run."""
    import numpy as np

    lows = [_tables.nan_to_none(x) for x in metrics["minimum"].tolist()]
    highs = [_tables.nan_to_none(x) for x in metrics["maximum"].tolist()]
    canonicals = [c if isinstance(c, str) else None for c in _tables.category_values(metrics["canonical"])]
    made = list(
        map(
            Metric,
            _tables.category_values(metrics["metric"]),
            _tables.metric_values(metrics),
            _tables.category_values(metrics["unit"]),
            canonicals,
            _tables.category_values(metrics["origin"]),
            lows,
            highs,
        )
    )
    bounds = np.searchsorted(metrics["launch"].to_numpy(), np.arange(len(launches) + 1)).tolist()
    return [
        Launch(kernel, index, device, invocations, dict(attributes), made[start:end])
        for kernel, index, device, invocations, attributes, start, end in zip(
            launches["kernel"].tolist(),
            launches["index"].tolist(),
            launches["device"].tolist(),
            launches["invocations"].tolist(),
            launches["attributes"].tolist(),
            bounds,
            bounds[1:],
        )
    ]
