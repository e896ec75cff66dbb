"""Values derived from one launch's measured counters: FLOPs, time, FLOP/s, DRAM traffic,
clock and the FLOP/s peak at that clock.

Each function takes a :class:`gpuprof.model.Launch` and returns ``(value, unit)`` in base units, or
None when the launch lacks the inputs; none of them raises on missing data. They read metrics by
canonical name (see ``gpuprof/data/metrics.toml``), so the same function serves nvprof (direct
``flop_count_sp``) and Nsight Compute (weighted instruction sums) imports.

Nsight Compute formulas used (as in its roofline section):
- FLOPs = fadd + fmul + 2 * ffma (thread instructions, predicated on), per precision;
- when only the ``.sum.per_cycle_elapsed`` rates were collected (the roofline set), FLOP/s =
  (fadd + fmul + 2 * ffma).per_cycle_elapsed * SM clock;
- peak FLOP/s at the measured clock = ``sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained``
  (FMA thread instructions per cycle for the whole GPU) * SM clock * 2 FLOP per FMA.
"""

from __future__ import annotations

from gpuprof import catalog
from gpuprof.model import Launch

Quantity = tuple[float, str]

PRECISIONS = {"sp": "f", "dp": "d", "hp": "h"}  # study's suffix -> SASS op letter


def _number(launch: Launch, key: str) -> float | None:
    """A numeric metric by canonical or tool name. For a canonical name the catalog's aliases are
    tried in its order of preference (``smsp__cycles_elapsed.avg.per_second`` before the GPC clock),
    not in the order the tool happened to list them."""
    entry = catalog.entries().get(key)
    names = (*entry.ncu, *entry.labels, *entry.nvprof, key) if entry else (key,)
    for name in names:
        value = launch.value(name)
        if isinstance(value, (int, float)):
            return float(value)
    return None


def _weighted_sum(launch: Launch, weights: dict[str, float], suffix: str = "") -> float | None:
    """Sum of weight * metric over ``weights``' metric names (+ suffix); None if any is missing."""
    total = 0.0
    for name, weight in weights.items():
        value = _number(launch, name + suffix)
        if value is None:
            return None
        total += weight * value
    return total


def _op_letter(precision: str) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    return PRECISIONS[precision]


def _flop_weights(precision: str) -> dict[str, float]:
    _op_letter(precision)
    return catalog.entries()[f"flop_count_{precision}"].ncu_sum


def sm_clock(launch: Launch) -> Quantity | None:
    """SM clock during the kernel, as the profiler measured it (hertz)."""
    value = _number(launch, "sm_clock")
    return (value, "hertz") if value else None


def _elapsed_cycles(launch: Launch) -> float | None:
    """Average elapsed SM-subpartition cycles: what ncu's ``per_cycle_elapsed`` rates divide by."""
    return _number(launch, "smsp__cycles_elapsed.avg") or _number(launch, "sm__cycles_elapsed.avg")


def kernel_time(launch: Launch) -> Quantity | None:
    """Kernel duration: measured (``gpu__time_duration.sum``, nvprof Duration) or elapsed cycles /
    SM clock when only those were collected."""
    value = _number(launch, "kernel_duration")
    if value is not None:
        return value, "second"
    cycles, clock = _elapsed_cycles(launch), sm_clock(launch)
    if cycles is not None and clock is not None:
        return cycles / clock[0], "second"
    return None


def flops(launch: Launch, precision: str = "sp") -> Quantity | None:
    """Floating-point operations of one precision: nvprof's ``flop_count_<p>``, ncu's weighted
    instruction sum, or ncu's per-cycle rate * elapsed cycles (or * clock * time)."""
    weights = _flop_weights(precision)
    direct = _number(launch, f"flop_count_{precision}")
    if direct is not None:
        return direct, "FLOP"
    total = _weighted_sum(launch, weights)
    if total is not None:
        return total, "FLOP"
    per_cycle = _weighted_sum(launch, weights, ".per_cycle_elapsed")
    if per_cycle is None:
        return None
    cycles = _elapsed_cycles(launch)
    if cycles is None:
        clock, time = sm_clock(launch), _number(launch, "kernel_duration")
        if clock is None or time is None:
            return None
        cycles = clock[0] * time
    return per_cycle * cycles, "FLOP"


def flop_rate(launch: Launch, precision: str = "sp") -> Quantity | None:
    """Achieved FLOP/s of one precision: FLOPs / kernel time, or per-cycle rate * SM clock."""
    per_cycle = _weighted_sum(launch, _flop_weights(precision), ".per_cycle_elapsed")
    clock = sm_clock(launch)
    if per_cycle is not None and clock is not None:
        return per_cycle * clock[0], "FLOP/second"
    count, time = flops(launch, precision), kernel_time(launch)
    if count is None or not time:
        return None
    return count[0] / time[0], "FLOP/second"


def dram_bytes(launch: Launch) -> Quantity | None:
    """Bytes moved between DRAM and L2: ``dram__bytes.sum``, or read + write."""
    total = _number(launch, "dram_bytes")
    if total is not None:
        return total, "byte"
    read, write = _number(launch, "dram_read_bytes"), _number(launch, "dram_write_bytes")
    if read is None or write is None:
        return None
    return read + write, "byte"


def dram_bandwidth(launch: Launch) -> Quantity | None:
    """DRAM bandwidth: the measured ``dram__bytes.sum.per_second`` or DRAM bytes / kernel time."""
    measured = _number(launch, "dram_throughput")
    if measured is not None:
        return measured, "byte/second"
    moved, time = dram_bytes(launch), kernel_time(launch)
    if moved is None or not time:
        return None
    return moved[0] / time[0], "byte/second"


def peak_flop_rate(launch: Launch, precision: str = "sp") -> Quantity | None:
    """Peak FLOP/s of one precision at the SM clock measured during this kernel: the FMA pipe's
    ``*.sum.peak_sustained`` (thread instructions per cycle, whole GPU) * clock * 2."""
    op = _op_letter(precision)
    clock = sm_clock(launch)
    if clock is None:
        return None
    for unit_prefix in ("sm", "smsp"):
        per_cycle = _number(launch, f"{unit_prefix}__sass_thread_inst_executed_op_{op}fma_pred_on.sum.peak_sustained")
        if per_cycle is not None:
            return per_cycle * clock[0] * 2.0, "FLOP/second"
    return None


def flop_efficiency(launch: Launch, precision: str = "sp") -> Quantity | None:
    """Achieved FLOP/s as a percentage of the peak at the measured clock."""
    achieved, peak = flop_rate(launch, precision), peak_flop_rate(launch, precision)
    if achieved is None or not peak:
        return None
    return 100.0 * achieved[0] / peak[0], "%"
