"""The metric catalog: canonical names (the study's nvprof vocabulary) and their Nsight Compute
equivalents, kept as data in ``gpuprof/data/metrics.toml`` so readers, the live GPU launcher and
the stall analysis all use the same list.

An entry maps a canonical name to nvprof names (direct aliases), ncu names (direct aliases), the
titles Nsight Compute's default sections give the same value ("Duration", "SM Frequency") and,
where NVIDIA documents a formula, an ncu weighted sum (``flop_count_sp = fadd + fmul + 2·ffma``).
``also`` holds other spellings of the same value that files carry (NERSC's ``sm__`` where ncu's
sections say ``smsp__``): they are read like the others but never requested, so ``ncu --metrics``
asks for each value once. Tensor-core entries name the ceiling their work is judged against and,
where a source gives one, the FLOP per counted instruction by compute capability.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources

_NVPROF_METRIC = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Entry:
    canonical: str
    description: str
    unit: str
    nvprof: tuple[str, ...] = ()
    ncu: tuple[str, ...] = ()
    ncu_sum: dict[str, float] = field(default_factory=dict)
    labels: tuple[str, ...] = ()  # Nsight Compute details-page titles ("Duration"), not metric names
    also: tuple[str, ...] = ()  # other spellings of the same value: read, never requested
    ceiling: str = ""  # "precision/kind" of gpu_table.ceiling, for tensor-core work
    flop_per_inst: dict[str, float] = field(default_factory=dict)  # compute capability -> FLOP per instruction
    bytes_per_cycle: float = 0.0  # bytes per counted cycle (or sector) of a traffic counter
    source: str = ""


@functools.cache
def entries() -> dict[str, Entry]:
    data = tomllib.loads(resources.files("gpuprof.data").joinpath("metrics.toml").read_text())
    return {
        name: Entry(
            canonical=name,
            description=spec["description"],
            unit=spec.get("unit", ""),
            nvprof=tuple(spec.get("nvprof", ())),
            ncu=tuple(spec.get("ncu", ())),
            ncu_sum=dict(spec.get("ncu_sum", {})),
            labels=tuple(spec.get("labels", ())),
            also=tuple(spec.get("also", ())),
            ceiling=spec.get("ceiling", ""),
            flop_per_inst=dict(spec.get("flop_per_inst", {})),
            bytes_per_cycle=float(spec.get("bytes_per_cycle", 0.0)),
            source=spec.get("source", ""),
        )
        for name, spec in data.items()
    }


@functools.cache
def _aliases() -> dict[str, str]:
    table: dict[str, str] = {}
    for entry in entries().values():
        for name in (entry.canonical, *entry.nvprof, *entry.ncu, *entry.labels, *entry.also):
            table.setdefault(name, entry.canonical)
    return table


def canonical(name: str) -> str | None:
    """The canonical name of a tool's metric name, or None when the catalog does not map it."""
    return _aliases().get(name)


def ncu_metrics() -> list[str]:
    """Every ncu metric the catalog needs, for building an ``ncu --metrics`` list: each value once
    (``also`` spellings are read from files, not requested)."""
    names: list[str] = []
    for entry in entries().values():
        for name in (*entry.ncu, *entry.ncu_sum):
            if name not in names:
                names.append(name)
    return names


def ncu_metrics_of(keys: Sequence[str]) -> list[str]:
    """The part of :func:`ncu_metrics` that the entries ``keys`` name, in its order (KeyError for an
    unknown key)."""
    wanted = {name for key in keys for name in (*entries()[key].ncu, *entries()[key].ncu_sum)}
    return [name for name in ncu_metrics() if name in wanted]


def nvprof_metrics(keys: Sequence[str] | None = None) -> list[str]:
    """The nvprof metric names of the entries ``keys`` names (all by default); trace column names
    such as Duration are left out (they are not metrics ``--metrics`` accepts)."""
    chosen = entries().values() if keys is None else [entries()[key] for key in keys]
    names: list[str] = []
    for entry in chosen:
        names += [n for n in entry.nvprof if _NVPROF_METRIC.match(n) and n not in names]
    return names


@dataclass(frozen=True)
class MetricSet:
    """A ``gpuprof profile --set``: the catalog entries each profiler collects to answer one question
    (None: every entry), and whether the answer needs kernel durations."""

    name: str
    question: str
    ncu: tuple[str, ...] | None
    nvprof: tuple[str, ...] | None
    durations: bool


@functools.cache
def metric_sets() -> dict[str, MetricSet]:
    """The sets in ``gpuprof/data/metric_sets.toml``, by name."""
    data = tomllib.loads(resources.files("gpuprof.data").joinpath("metric_sets.toml").read_text())
    return {
        name: MetricSet(
            name,
            spec["question"],
            tuple(spec["ncu"]) if "ncu" in spec else None,
            tuple(spec["nvprof"]) if "nvprof" in spec else None,
            bool(spec["durations"]),
        )
        for name, spec in data.items()
    }
