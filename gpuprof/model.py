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
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_VERSION = 1

# Where a number came from. Every printed number carries one of these.
MEASURED = "measured"      # read from a profiler's counters
TIMED = "timed"            # wall-clock or event timing by gpuprof
ANALYTIC = "analytic"      # from the op's formula
PEAK_TABLE = "peak-table"  # from configs/ device table or a datasheet formula
CALIBRATED = "calibrated"  # measured ceiling from `gpuprof calibrate`
DERIVED = "derived"        # computed from other values (named in the metric)
ORIGINS = (MEASURED, TIMED, ANALYTIC, PEAK_TABLE, CALIBRATED, DERIVED)

MetricValue = float | str | None


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
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


@dataclass
class Run:
    """Everything one measurement or one imported file produced, stored once, rendered many times."""

    kind: str                      # "run" (gpuprof measured it) or "import" (read from a file)
    format: str                    # reader or launcher name: "ncu-csv", "nvprof-csv-metrics", "cpu-numpy"
    source: str                    # exact command line, or the imported file's path
    device: dict[str, Any] = field(default_factory=dict)
    workload: dict[str, Any] | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    launches: list[Launch] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    created: str = field(default_factory=_now)
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Run:
        launches = [
            Launch(**{**launch, "metrics": [Metric(**m) for m in launch["metrics"]]})
            for launch in data.get("launches", [])
        ]
        return cls(**{**data, "launches": launches})

    def metrics_frame(self) -> pd.DataFrame:
        """Long format: one row per launch × metric, with unit and origin on every row."""
        import pandas as pd

        rows = [
            {
                "run_id": self.run_id,
                "device": launch.device or self.device.get("name", ""),
                "kernel": launch.kernel,
                "launch": launch.index,
                "invocations": launch.invocations,
                "metric": m.name,
                "canonical": m.canonical,
                "value": m.value,
                "unit": m.unit,
                "origin": m.origin,
                "minimum": m.minimum,
                "maximum": m.maximum,
            }
            for launch in self.launches
            for m in launch.metrics
        ]
        columns = ["run_id", "device", "kernel", "launch", "invocations", "metric", "canonical",
                   "value", "unit", "origin", "minimum", "maximum"]
        return pd.DataFrame(rows, columns=columns)
