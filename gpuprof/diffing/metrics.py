"""The quantities a diff compares, by name: what each means, its unit, which direction is better
and how the time-weighted total over kernels is formed.

Names are the catalog's vocabulary (``gpuprof/data/metrics.toml``: one name for nvprof's and Nsight
Compute's spelling of the same value) plus the derived names below and the stall reasons of
``gpuprof/data/stalls.toml`` (``stall_sync``, ``stall_long_scoreboard``). ``--fail-if`` takes any of them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from gpuprof.derive.stalls import vocabulary
from gpuprof.errors import InputError
from gpuprof.model import catalog

# How a metric's total over several kernels is formed.
SUM = "sum"  # extensive: launches × mean per launch, summed (time, FLOPs, bytes)
RATE = "rate"  # a ratio of two sums (FLOP/s = FLOPs / time)
WEIGHTED = "weighted"  # mean weighted by each kernel's time on that side (efficiencies, occupancy, clock)


@dataclass(frozen=True)
class Spec:
    name: str
    unit: str
    better: int  # +1 higher is better, -1 lower is better, 0 neither (a change is only "higher"/"lower")
    total: str = ""  # SUM, RATE or WEIGHTED; "" for no total
    of: tuple[str, str] = ("", "")  # RATE: (numerator, denominator)
    meaning: str = ""


DERIVED = (
    Spec("time", "second", -1, SUM, meaning="kernel time per launch (per repeat for a measured run)"),
    Spec("launches", "", 0, meaning="launches (invocations) counted by the tool"),
    Spec("flops", "FLOP", 0, SUM, meaning="floating-point operations per launch, every precision"),
    Spec("flops_tensor", "FLOP", 0, SUM, meaning="tensor-core FLOPs per launch, where counted (part of flops)"),
    Spec("flop_rate", "FLOP/second", +1, RATE, ("flops", "time"), "FLOPs / time"),
    Spec(
        "bytes", "byte", 0, SUM, meaning="DRAM bytes per launch (measured); bytes moved (analytic) for a measured run"
    ),
    Spec("bandwidth", "byte/second", +1, RATE, ("bytes", "time"), "bytes / time"),
    Spec("intensity", "FLOP/byte", 0, RATE, ("flops", "bytes"), "arithmetic intensity: FLOPs / DRAM bytes"),
    Spec("l2_bytes", "byte", 0, SUM, meaning="L2 bytes per launch (lts__t_bytes)"),
    Spec("intensity_l2", "FLOP/byte", 0, RATE, ("flops", "l2_bytes"), "FLOPs / L2 bytes"),
    Spec("l1_bytes", "byte", 0, SUM, meaning="L1 bytes per launch (l1tex__t_bytes)"),
    Spec("intensity_l1", "FLOP/byte", 0, RATE, ("flops", "l1_bytes"), "FLOPs / L1 bytes"),
    Spec(
        "flop_efficiency",
        "%",
        +1,
        WEIGHTED,
        meaning="FLOP/s of the main precision over its peak at the clock the kernel ran at",
    ),
    Spec(
        "datasheet_efficiency",
        "%",
        +1,
        WEIGHTED,
        meaning="FLOP/s of the main precision over the device table's (or a CPU's theoretical) peak",
    ),
    Spec("bandwidth_efficiency", "%", +1, WEIGHTED, meaning="bandwidth over the device's peak bandwidth"),
    Spec(
        "roofline_efficiency",
        "%",
        +1,
        WEIGHTED,
        meaning="FLOP/s over the binding ceiling of the hierarchical roofline (gpuprof.derive.levels; compute, "
        "L1 and L2 ceilings at the SM clock measured, where the file gives it), else min(peak FLOP/s, "
        "intensity × peak bandwidth)",
    ),
    Spec("peak_flop_rate", "FLOP/second", 0, WEIGHTED, meaning="the peak datasheet_efficiency divides by"),
    Spec("peak_bandwidth", "byte/second", 0, WEIGHTED, meaning="the peak bandwidth_efficiency divides by"),
    Spec("sm_clock", "hertz", 0, WEIGHTED, meaning="SM clock during the kernel, as the profiler measured it"),
    Spec("achieved_occupancy", "%", +1, WEIGHTED, meaning="achieved occupancy (catalog: nvprof and ncu names)"),
)
# Catalog names a derived row above already shows (a gate on either name means the same row).
ALIASES = {
    "kernel_duration": "time",
    "dram_bytes": "bytes",
    "dram_throughput": "bandwidth",
    "ai_dram": "intensity",
    "ai_l2": "intensity_l2",
    "ai_l1": "intensity_l1",
}
# Catalog entries that are inputs of derived rows, not rows of their own unless gated.
INPUTS = ("flop_count_sp_", "flop_count_dp_", "flop_count_hp_", "fma_peak_")
STALL_UNIT = "% of stalls"


@functools.cache
def derived() -> dict[str, Spec]:
    return {spec.name: spec for spec in DERIVED}


def catalog_spec(name: str) -> Spec:
    """A catalog metric shown as the profiler gave it: no direction, no total."""
    entry = catalog.entries()[name]
    return Spec(name, entry.unit, 0, meaning=entry.description)


def stall_spec(name: str) -> Spec:
    return Spec(name, STALL_UNIT, -1, meaning="share of the kernel's stall cycles (or nvprof's share of stalls)")


@functools.cache
def stall_names() -> frozenset[str]:
    """Every stall row name: nvprof's ``stall_*`` metrics and ``stall_<ncu reason>``."""
    vocab = vocabulary()
    return frozenset(
        [*vocab["nvprof"], *(f"stall_{reason}" for reason, spec in vocab["ncu"].items() if spec.get("stall", True))]
    )


def spec(name: str) -> Spec:
    """The Spec of a row or gate name (aliases resolved); InputError for an unknown name."""
    name = ALIASES.get(name, name)
    if name in derived():
        return derived()[name]
    if name in stall_names():  # before the catalog, which lists nvprof's stall_* metrics too
        return stall_spec(name)
    if name in catalog.entries():
        return catalog_spec(name)
    raise InputError(
        f"unknown metric '{name}'",
        f"use a derived name ({', '.join(derived())}), a catalog metric (e.g. flop_count_sp, "
        "dram_read_throughput; see gpuprof/data/metrics.toml) or a stall reason (e.g. stall_sync)",
    )
