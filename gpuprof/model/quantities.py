"""One name per quantity: the stable keys that ``gpuprof run`` (its JSON and CSV), ``show``, ``compare``,
``diff`` and the library use for the same number.

Each reported number (:class:`gpuprof.derive.quantity.Quantity`) carries its key. A key is the name
``diff`` compares and ``--fail-if`` takes (``time``, ``flops``, ``flop_rate``, ``bytes``, ``bandwidth``,
``intensity``: :mod:`gpuprof.diffing.metrics`), the ``key`` of each quantity in ``run --format json``,
and, through :data:`COLUMNS`, the one column a summary table (``show``, ``compare``, ``gpuprof.runs()``)
gives it, in that column's unit. The words ``gpuprof run`` prints (``label``) are for people and may
change; the keys do not. Producers are listed in the order ``run`` reports them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Key:
    """A quantity's stable key, the words ``gpuprof run`` prints for it and its unit."""

    key: str
    label: str
    unit: str


@dataclass(frozen=True)
class Column:
    """The column a summary table gives a quantity: its name, and what the quantity is divided by for
    the column's unit (MFLOP/s: 1e6)."""

    name: str
    per: float = 1.0


# Every fixed quantity of a measured run, in the order ``gpuprof run`` reports them. Efficiencies have
# keys made by :func:`efficiency_key` (one per ceiling and kind), counted FLOPs one per precision.
KEYS = (
    Key("time", "time (median)", "second"),
    Key("time_min", "time (min)", "second"),
    Key("time_spread", "time spread", "%"),
    Key("flops", "FLOPs", "FLOP"),
    Key("flops_counted", "FLOPs (counted)", "FLOP"),
    Key("flop_rate", "FLOP/s", "FLOP/second"),
    Key("flop_rate_mflops", "MFLOP/s", "MFLOP/s"),
    Key("bytes", "bytes moved", "byte"),
    Key("bandwidth", "bandwidth", "byte/second"),
    Key("intensity", "arithmetic intensity", "FLOP/byte"),
    Key("clock", "core clock during run", "hertz"),
    Key("peak_flop_rate", "peak FLOP/s", "FLOP/second"),
    Key("peak_bandwidth", "peak bandwidth", "byte/second"),
    # a GPU run's profiled kernels (derive/profiled.py)
    Key("kernels_per_call", "kernels per call", ""),
    Key("time_profiled", "time (profiler)", "second"),
    Key("flops_counted_tensor", "FLOPs counted (tensor cores)", "FLOP"),
    Key("flops_counted_ratio", "FLOPs counted / analytic", ""),
    Key("dram_bytes", "DRAM bytes (counted)", "byte"),
    Key("sm_clock", "SM clock (profiled)", "hertz"),
    # a framework engine's compilation (derive/compile.py)
    Key("compile_time", "compile + first call", "second"),
    # a metered run (derive/energy.py)
    Key("energy", "energy (timed repeats)", "joule"),
    Key("energy_per_call", "energy per call", "joule"),
    Key("power", "average power", "watt"),
    Key("energy_per_flop", "energy per FLOP", "pJ/FLOP"),
    Key("flop_rate_per_watt", "GFLOP/s per watt", "GFLOP/s/W"),
)
BY_KEY = {k.key: k for k in KEYS}

# The summary tables' column of each quantity that has one (show, compare, gpuprof.runs()); an efficiency's
# column is its key and '_%' (:func:`column`), the roofline's bound has the column 'bound'.
COLUMNS = {
    "time": Column("time_s"),
    "flop_rate": Column("MFLOP/s", 1e6),
    "bandwidth": Column("GB/s", 1e9),
    "intensity": Column("FLOP/byte"),
    "energy_per_call": Column("J/call"),
    "power": Column("W"),
    "energy_per_flop": Column("pJ/FLOP"),
    "flop_rate_per_watt": Column("GFLOP/s/W"),
}
EFFICIENCY = "eff_"  # the prefix of every efficiency's key
# diff compares kernels and measured runs alike, so it names an efficiency by what it divides by, whatever
# ceiling set gave it (a run's first set of each kind, in the order run reports them): by ``against``.
DIFF_EFFICIENCY = {
    "run_clock": "flop_efficiency",
    "": "datasheet_efficiency",
    "bandwidth": "bandwidth_efficiency",
    "roofline": "roofline_efficiency",
}


def efficiency_key(ceiling: str, against: str = "") -> str:
    """The key of an efficiency against a ``ceiling`` set ('theoretical', 'datasheet', 'calibrated'):
    ``against`` is 'roofline', 'run_clock' (the FLOP peak at the clock measured), 'bandwidth' or ''
    (the FLOP peak as listed). One roofline key whatever the ceiling: the first one a run has."""
    if against == "roofline":
        return f"{EFFICIENCY}roofline"
    return f"{EFFICIENCY}{ceiling}{f'_{against}' if against else ''}"


def column(key: str) -> Column | None:
    """The summary column of ``key``, or None when summary tables do not show it."""
    if key.startswith(EFFICIENCY):
        return Column(f"{key}_%")
    return COLUMNS.get(key)
