"""The whole-run frame: every counter derivation for each launch of a run, one row per launch.

It assembles :mod:`gpuprof.derive.counted` (time, FLOPs, FLOP/s, DRAM traffic, clock, peaks),
:mod:`~gpuprof.derive.tensor` (tensor-pipe FLOPs), :mod:`~gpuprof.derive.levels` (L1/L2 bytes and the
hierarchical roofline) and :mod:`~gpuprof.derive.skew` (unchecked cycle times) over one
:class:`~gpuprof.derive.pivot.Counters` pivot. The derivations are re-exported here, so
``counters.flops(...)`` and ``counters.frame(run)`` read as one vocabulary.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gpuprof.derive import cpu_flops, levels, skew, tensor
from gpuprof.derive.counted import (
    SUFFIXES,
    TIME_RULES,
    UNCHECKED,
    cycle_time,
    dram_bandwidth,
    dram_bytes,
    flop_efficiency,
    flop_rate,
    flops,
    kernel_time,
    keys,
    peak_dram_bandwidth,
    peak_flop_rate,
    sm_clock,
    time_parts,
)
from gpuprof.derive.pivot import Counters, aliases, also_per_launch, choose, launch_device_names
from gpuprof.model import Run, tables

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

__all__ = [
    "HALF_NOTE",
    "SUFFIXES",
    "TIME_RULES",
    "UNCHECKED",
    "Counters",
    "aliases",
    "also_per_launch",
    "choose",
    "cycle_time",
    "dram_bandwidth",
    "dram_bytes",
    "flop_efficiency",
    "flop_rate",
    "flops",
    "frame",
    "kernel_time",
    "launch_device_names",
    "launch_columns",
    "launch_keys",
    "launch_values",
    "peak_dram_bandwidth",
    "peak_flop_rate",
    "sm_clock",
    "RATE_RULE",
    "rate_total",
    "time_parts",
    "total_flops",
    "with_rule",
]


def total_flops(vector: Sequence[np.ndarray], tensor_work: np.ndarray, rule: np.ndarray) -> np.ndarray:
    """Vector FLOPs of every precision counted plus tensor FLOPs (NERSC's total); NaN where the
    tensor pipe ran but its work was not counted, or where nothing was counted."""
    import numpy as np

    stacked = np.vstack([*vector, tensor_work])
    total = np.where(np.isnan(stacked).all(axis=0), np.nan, np.nansum(stacked, axis=0))
    return np.where(np.isin(rule, tensor.NOT_COUNTED), np.nan, total)


RATE_RULE = (
    "no FLOP count or kernel time: FLOP/s = (fadd + fmul + 2 ffma).per_cycle_elapsed x SM clock, and AI DRAM "
    "= FLOP/s / dram__bytes.sum.per_second (Nsight Compute's roofline section formulas)"
)


def rate_total(vector: Sequence[np.ndarray], rates: Sequence[np.ndarray], rule: np.ndarray) -> np.ndarray:
    """FLOP/s of all vector work from the rates alone (per-cycle rates x SM clock), where no
    precision's FLOPs were counted (a file of ncu's roofline-section rates: no counts, no kernel
    time); NaN where a count exists (FLOPs / time serves there), where no rate was measured, or
    where the tensor pipe ran uncounted (the total would leave that work out)."""
    import numpy as np

    stacked = np.vstack(rates)
    total = np.where(np.isnan(stacked).all(axis=0), np.nan, np.nansum(stacked, axis=0))
    counted = ~np.isnan(np.vstack(vector)).all(axis=0)
    return np.where(counted | np.isin(rule, tensor.NOT_COUNTED), np.nan, total)


def frame(run: Run, extra: Sequence[str] = ()) -> pd.DataFrame:
    """Every derivation for each launch of ``run``, one row per launch (NaN where a launch
    lacks the inputs), with the raw values of ``extra`` metric names after them.

    Besides time, FLOPs, FLOP/s and peaks per precision, DRAM traffic and the clock, the
    hierarchical roofline: ``flops_tensor`` and ``flops_total`` (FLOP), ``flop_rate_total``
    (FLOP/s), ``l1_bytes`` and ``l2_bytes`` (byte), ``ai_l1``/``ai_l2``/``ai_dram`` (FLOP/byte),
    ``ai_check`` (text: which byte counter looks wrong, "" when consistent), ``tensor_kind`` and
    ``dominant`` (the ceiling kind of the tensor work and of all work, "fp16/tensor"),
    ``binding_ceiling`` (FLOP/s), ``binding_name`` (text) and ``binding_percent`` (%); ``basis``
    (text) says which rule gave the time, the tensor FLOPs and the cache bytes.
    """
    values = launch_values(run, extra)
    roofline = levels.roofline_columns(values, launch_device_names(run))
    at = values.columns.get_loc("basis")
    out = values.iloc[:, :at].join(roofline).join(values.iloc[:, at:])
    out.attrs["units"] = values.attrs["units"]
    return out


def launch_values(run: Run, extra: Sequence[str] = ()) -> pd.DataFrame:
    """:func:`frame` without the columns that combine a launch's values into its roofline point
    (FLOP/s total, intensities, the AI check, the binding ceiling): what a per-kernel table sums
    before it places each kernel's own point."""
    import pandas as pd

    columns, units = launch_columns(run, extra)
    out = pd.DataFrame(columns)
    out.attrs["units"] = units
    return out


def launch_keys(extra: Sequence[str] = ()) -> tuple[str, ...]:
    """Every name :func:`launch_columns` reads (with ``extra``): what a caller fetches in one pass
    over a run's metric table (:meth:`Counters.of_run`) before the notes and the per-kernel table."""
    return (*keys(), *extra, *tensor.names(), *levels.names())


def launch_columns(run: Run, extra: Sequence[str] = ()) -> tuple[dict[str, np.ndarray], dict[str, str | None]]:
    """:func:`launch_values` as arrays (the texts as objects, each distinct text one string), and
    the units of ``extra``: what :func:`gpuprof.derive.kernels.launch_frame` reads without a
    frame between (pandas would turn the texts into its own strings and back)."""
    import numpy as np

    c = Counters.of_run(run, launch_keys(extra))  # one pass over the table
    time, time_rule = time_parts(c)
    unchecked = (time_rule > 0) & skew.cycles_unchecked(run)
    columns: dict[str, np.ndarray] = {"time": time}
    for p in SUFFIXES:
        columns[f"flops_{p}"] = flops(c, p)
    tensor_flops, tensor_rule, tensor_kind = tensor.parts(c)
    columns["flops_tensor"] = tensor_flops
    columns["flops_total"] = total_flops([columns[f"flops_{p}"] for p in SUFFIXES], tensor_flops, tensor_rule)
    for p in SUFFIXES:
        columns[f"flop_rate_{p}"] = flop_rate(c, p)
        columns[f"peak_flop_rate_{p}"] = peak_flop_rate(c, p)
        columns[f"flop_efficiency_{p}"] = flop_efficiency(c, p)
    columns["flop_rate_from_rates"] = rate_total(
        [columns[f"flops_{p}"] for p in SUFFIXES], [columns[f"flop_rate_{p}"] for p in SUFFIXES], tensor_rule
    )
    columns.update(dram_bytes=dram_bytes(c), dram_bandwidth=dram_bandwidth(c), sm_clock=sm_clock(c))
    columns["peak_dram_bandwidth"] = peak_dram_bandwidth(c)
    l1, l1_rule = levels.level_parts(c, "l1")
    l2, l2_rule = levels.level_parts(c, "l2")
    columns.update(l1_bytes=l1, l2_bytes=l2, tensor_kind=tensor_kind)
    reads_only = c.l2_definition == "l1-reads"  # L2 counts reads only: checked against DRAM reads
    columns["dram_check_bytes"] = c.number("dram_read_bytes") if reads_only else columns["dram_bytes"]
    counted = ~np.isnan(np.vstack([columns[f"flops_{p}"] for p in SUFFIXES])).all(axis=0)
    tensor_said = np.where(counted | (tensor_rule != tensor.NONE), tensor_rule, -1)
    columns["basis"] = _bases(
        time_rule,
        unchecked,
        tensor_said,
        tensor.sparse(c),
        columns["flops_hp"] > 0,
        l1_rule,
        l2_rule,
        [tensor.rule_text(rule, c) for rule in range(len(tensor.RULES))],
    )
    columns["basis"] = with_rule(columns["basis"], ~np.isnan(columns["flop_rate_from_rates"]), RATE_RULE)
    columns.update({name: c.raw(name) for name in extra})
    if run.device.get("kind") == "cpu":
        _cpu_counted(run, columns)
    return columns, {name: c.unit(name) for name in extra}


def with_rule(basis: np.ndarray, where: np.ndarray, rule: str) -> np.ndarray:
    """The ``basis`` texts with ``rule`` added (after a '; ', or alone where a text is empty) at
    the launches ``where``; each distinct text is joined once (a run repeats a few texts)."""
    import numpy as np

    rows = np.flatnonzero(where)
    if not len(rows):
        return basis
    codes, texts = tables.distinct(np.asarray(basis, dtype=object)[rows])
    out = np.array(basis, dtype=object)
    out[rows] = np.array([f"{b}; {rule}" if b else rule for b in texts], dtype=object)[codes]
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
        columns[f"flop_rate_{p}"] = np.where(
            np.isnan(columns[f"flop_rate_{p}"]), values / time, columns[f"flop_rate_{p}"]
        )
    columns["flops_total"] = np.where(
        np.isnan(columns["flops_total"]), np.asarray(counted["total"]), columns["flops_total"]
    )
    columns["basis"] = np.array(
        [
            f"{basis}; {extra}" if basis and extra else basis or extra
            for basis, extra in zip(columns["basis"].tolist(), counted["basis"])
        ],
        dtype=object,
    )


HALF_NOTE = (
    "FP16 FLOPs = hadd + hmul + 2 hfma (nvprof's mapping, NERSC); ncu's 2025 half-precision roofline "
    "counts 2 hadd + 2 hmul + 4 hfma (each a half2), twice this for packed code"
)


def _bases(
    time_rule: np.ndarray,
    unchecked: np.ndarray,
    tensor_rule: np.ndarray,
    sparse: np.ndarray,
    half: np.ndarray,
    l1_rule: np.ndarray,
    l2_rule: np.ndarray,
    tensor_texts: list[str],
) -> np.ndarray:
    """Per launch, the rules its time, tensor FLOPs (``tensor_texts``, by rule) and cache bytes
    came from, as one text (NERSC's own byte counters, the first rule of each level, go unsaid), and
    the FP16 weights where it ran FP16 instructions (docs/tensor-cores.md section 6)."""
    import numpy as np

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
        parts += [levels.LEVEL_RULES[level][code] for level, code in (("l1", l1), ("l2", l2)) if code > 0]
        texts.append("; ".join(parts))
    return np.array(texts, dtype=object)[inverse.ravel()]
