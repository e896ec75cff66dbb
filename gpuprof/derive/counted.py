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
from typing import TYPE_CHECKING

from gpuprof.derive.pivot import Counters, aliases, also_per_launch, choose, first, nonzero, spellings
from gpuprof.model import catalog

if TYPE_CHECKING:
    import numpy as np

SASS_LETTER = {"sp": "f", "dp": "d", "hp": "h"}  # a precision's counter suffix (the study's) -> its SASS op letter
SUFFIXES = tuple(SASS_LETTER)  # the counter suffixes of the precisions: sp, dp, hp
_PER_CYCLE = ".per_cycle_elapsed"
_ELAPSED = ("smsp__cycles_elapsed.avg", "sm__cycles_elapsed.avg")


def _peak_names(letter: str) -> tuple[str, ...]:
    return tuple(
        f"{unit}__sass_thread_inst_executed_op_{letter}fma_pred_on.sum.peak_sustained" for unit in ("sm", "smsp")
    )


@functools.cache
def keys() -> tuple[str, ...]:
    """Every name the derivations below may read: give them to :class:`Counters` so that one pass over a
    run's table fetches them all."""
    names: list[str] = []
    for key in (
        "kernel_duration",
        "sm_clock",
        "dram_bytes",
        "dram_read_bytes",
        "dram_write_bytes",
        "dram_throughput",
        "dram_peak_per_cycle",
        "dram_clock",
        "dram_read_throughput",
        "dram_write_throughput",
        *_ELAPSED,
    ):
        names += aliases(key)
    for precision, letter in SASS_LETTER.items():
        names += aliases(f"flop_count_{precision}")
        for key in _flop_weights(precision):
            names += [*aliases(key), *(name + _PER_CYCLE for name in spellings(key))]
        names += [alias for name in _peak_names(letter) for alias in aliases(name)]
    return tuple(dict.fromkeys(names))


def _weighted_sum(c: Counters, weights: dict[str, float], suffix: str = "") -> np.ndarray:
    """Sum of weight * value over ``weights``' canonical names, each read under any of its
    spellings (with ``suffix``, under its ncu spellings); NaN where any is missing."""
    total = 0.0
    for key, weight in weights.items():
        value = c.first_of([name + suffix for name in spellings(key)]) if suffix else c.number(key)
        total = total + weight * value
    return total  # type: ignore[return-value]


def _op_letter(precision: str) -> str:
    if precision not in SASS_LETTER:
        raise ValueError(f"precision must be one of {', '.join(SASS_LETTER)}, not {precision!r}")
    return SASS_LETTER[precision]


def _flop_weights(precision: str) -> dict[str, float]:
    """NVIDIA's weights (add + mul + 2 fma) keyed by the canonical name of each instruction count."""
    _op_letter(precision)
    weights = catalog.entries()[f"flop_count_{precision}"].ncu_sum
    return {catalog.canonical(name) or name: weight for name, weight in weights.items()}


@also_per_launch("hertz")
def sm_clock(c: Counters) -> np.ndarray:
    """SM clock during the kernel, as the profiler measured it (hertz)."""
    return nonzero(c.number("sm_clock"))


def _elapsed_cycles(c: Counters) -> np.ndarray:
    """Average elapsed SM-subpartition cycles: what ncu's ``per_cycle_elapsed`` rates divide by."""
    return first(nonzero(c.number(_ELAPSED[0])), c.number(_ELAPSED[1]))


TIME_RULES = (
    "time measured by the profiler (gpu__time_duration.sum, Duration)",
    "time derived = elapsed cycles / SM clock (sm__cycles_elapsed.avg / sm__cycles_elapsed.avg.per_second,"
    " or their smsp__ forms)",
    "time derived = elapsed cycles / SM clock (gpc__cycles_elapsed.max, ncu's Elapsed Cycles, / SM clock)",
)
UNCHECKED = "that time unchecked: the file also counts SASS instructions (see the run's notes)"


def _cycle_times(c: Counters) -> tuple[np.ndarray, np.ndarray]:
    """Elapsed cycles / SM clock, as NERSC's method takes them and from ncu's 'Elapsed Cycles'
    (the maximum over GPCs, which a report may hold alone)."""
    elapsed = nonzero(c.first_of(("gpc__cycles_elapsed.max", "Elapsed Cycles")))
    return _elapsed_cycles(c) / sm_clock(c), elapsed / sm_clock(c)


def cycle_time(c: Counters) -> np.ndarray:
    """Elapsed cycles / SM clock: the kernel time where no duration was measured."""
    return first(*_cycle_times(c))


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
    cycles = first(_elapsed_cycles(c), sm_clock(c) * c.number("kernel_duration"))
    return first(
        c.number(f"flop_count_{precision}"), _weighted_sum(c, weights), _weighted_sum(c, weights, _PER_CYCLE) * cycles
    )


@also_per_launch("FLOP/second")
def flop_rate(c: Counters, precision: str = "sp") -> np.ndarray:
    """Achieved FLOP/s of one precision: per-cycle rate * SM clock, or FLOPs / kernel time."""
    per_cycle = _weighted_sum(c, _flop_weights(precision), _PER_CYCLE)
    return first(per_cycle * sm_clock(c), flops(c, precision) / nonzero(kernel_time(c)))


@also_per_launch("byte")
def dram_bytes(c: Counters) -> np.ndarray:
    """Bytes moved between DRAM and L2: ``dram__bytes.sum``, or read + write."""
    return first(c.number("dram_bytes"), c.number("dram_read_bytes") + c.number("dram_write_bytes"))


@also_per_launch("byte/second")
def dram_bandwidth(c: Counters) -> np.ndarray:
    """DRAM bandwidth: the measured ``dram__bytes.sum.per_second``, or DRAM bytes / kernel time, or
    the read + write throughputs where only those were given (nvprof's dram_read/write_throughput)."""
    return first(
        c.number("dram_throughput"),
        dram_bytes(c) / nonzero(kernel_time(c)),
        c.number("dram_read_throughput") + c.number("dram_write_throughput"),
    )


@also_per_launch("FLOP/second")
def peak_flop_rate(c: Counters, precision: str = "sp") -> np.ndarray:
    """Peak FLOP/s of one precision at the SM clock measured during this kernel: the FMA pipe's
    ``*.sum.peak_sustained`` (thread instructions per cycle, whole GPU) * clock * 2."""
    per_cycle = first(*(c.number(name) for name in _peak_names(_op_letter(precision))))
    return per_cycle * sm_clock(c) * 2.0


@also_per_launch("byte/second")
def peak_dram_bandwidth(c: Counters) -> np.ndarray:
    """DRAM's peak at the DRAM clock measured during this kernel, as ncu's roofline section takes it:
    ``dram__bytes.sum.peak_sustained`` (bytes per DRAM cycle) * ``dram__cycles_elapsed.avg.per_second``."""
    return c.number("dram_peak_per_cycle") * nonzero(c.number("dram_clock"))


@also_per_launch("%")
def flop_efficiency(c: Counters, precision: str = "sp") -> np.ndarray:
    """Achieved FLOP/s as a percentage of the peak at the measured clock."""
    return 100.0 * flop_rate(c, precision) / nonzero(peak_flop_rate(c, precision))
