"""The hierarchical roofline of a launch or a kernel: bytes at L1, L2 and DRAM, the arithmetic
intensity at each, whether they are consistent, and the ceiling that binds.

Bytes per level are read as NERSC's method counts them (``l1tex__t_bytes.sum``, ``lts__t_bytes.sum``,
``dram__bytes.sum``), else from the narrower traffic ncu's own hierarchical roofline sections plot
(writeback cycles x bytes per cycle, or their rates x kernel time); :data:`LEVEL_RULES` says which.

Every level a request passes is one it passed through the level before, so bytes should fall from
L1 to L2 to DRAM and intensity rise: ``AI(L1) <= AI(L2) <= AI(DRAM)``. Where that fails,
:func:`consistency` names the counter that looks wrong. The binding ceiling is the lowest of the
compute ceiling of the kernel's dominant work (the precision or tensor type with the most FLOPs) and
each level's bandwidth x that level's intensity, all from the device table
(:mod:`gpuprof.devices.gpu_table`); where the profiler measured the SM clock, the ceilings that
follow it (compute, L1, L2: all but DRAM) are taken at that clock, as ncu's own roofline takes its
peaks (per-cycle peak x the cycles per second measured), not at the table's boost clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from gpuprof.derive.counted import kernel_time
from gpuprof.derive.pivot import Counters, aliases, also_per_launch, choose
from gpuprof.devices import gpu_table
from gpuprof.errors import InputError
from gpuprof.model import catalog

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

LEVELS = ("l1", "l2", "dram")
LABELS = {"l1": "L1", "l2": "L2", "dram": "DRAM"}
# Per level, its alternatives in order: (catalog key, measured per second?); a count is x bytes_per_cycle.
_SOURCES = {
    "l1": (
        ("l1_bytes", False),
        ("l1_writeback_cycles", False),
        ("l1_writeback_rate", True),
        ("l1_writeback_cycle_rate", True),
    ),
    "l2": (
        ("l2_bytes", False),
        ("l2_sectors", False),
        ("l2_xbar_cycles", False),
        ("l2_xbar_rate", True),
        ("l2_xbar_cycle_rate", True),
        ("l2_l1_read_sectors", False),
    ),
}
# Which L2 traffic a run counts ('import --l2-bytes'), and the rules of _SOURCES["l2"] each may use:
# NERSC's bytes through L2's tag stage (every request, reads and writes, from any unit: the default;
# ncu's crossbar forms where the file has no tag-stage count), or the L1/TEX unit's reads from L2 (the
# L2 -> L1 arrow of Nsight Compute's memory chart), checked against DRAM reads (dram__bytes_read.sum).
L2_DEFINITIONS = {"lts": (0, 1, 2, 3, 4), "l1-reads": (5,)}
# The vector work of each precision and the ceiling it meets (gpu_table's "precision/kind").
VECTOR_KINDS = {"flops_dp": "fp64/fma", "flops_sp": "fp32/fma", "flops_hp": "fp16/fma"}
# Bytes of an inner level may fall short of the outer one's by this much before the check says so:
# counters taken in different passes, and L2 write-backs of lines earlier kernels left dirty, move
# a few percent (a V100 transpose in the NERSC fixtures: DRAM 1.2 % above L2).
SLACK = 0.05


def _rule(level: str, key: str, per_second: bool) -> str:
    entry = catalog.entries()[key]
    name = (entry.ncu or entry.also)[0]
    factor = f"{entry.bytes_per_cycle:g} x " if entry.bytes_per_cycle else ""
    said = f"{LABELS[level]} bytes = {factor}{name}" + (" x kernel time" if per_second else "")
    return said + (_CHOSEN.get(key) or "")


_CHOSEN = {  # rules a user picks ('import --l2-bytes'): the basis says so
    "l2_l1_read_sectors": " (L2 -> L1 reads, Nsight Compute's memory chart; --l2-bytes l1-reads: the AI check "
    "compares them with DRAM reads, dram__bytes_read.sum)"
}


LEVEL_RULES = {level: tuple(_rule(level, key, rate) for key, rate in sources) for level, sources in _SOURCES.items()}


def names() -> list[str]:
    """Every name the level rules read, for one pass over a run's table."""
    return [name for sources in _SOURCES.values() for key, _ in sources for name in aliases(key)]


def level_parts(c: Counters, level: str) -> tuple[np.ndarray, np.ndarray]:
    """Bytes at L1 or L2 per launch (NaN where none) and which rule of :data:`LEVEL_RULES` gave them."""
    import numpy as np

    c.fetch(names())
    time = kernel_time(c)
    allowed = L2_DEFINITIONS[c.l2_definition] if level == "l2" else range(len(_SOURCES[level]))
    columns = []
    for i, (key, per_second) in enumerate(_SOURCES[level]):
        factor = catalog.entries()[key].bytes_per_cycle or 1.0
        value = c.number(key) * factor * (time if per_second else 1.0)
        columns.append(value if i in allowed else np.full(c.launches, np.nan))
    return choose(*columns)


@also_per_launch("byte")
def l1_bytes(c: Counters) -> np.ndarray:
    """Bytes through L1/TEX."""
    return level_parts(c, "l1")[0]


@also_per_launch("byte")
def l2_bytes(c: Counters) -> np.ndarray:
    """Bytes through L2."""
    return level_parts(c, "l2")[0]


def _ratio(top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), np.nan)


def dominant(frame: pd.DataFrame | Mapping[str, np.ndarray]) -> np.ndarray:
    """Per row, the ceiling kind ("fp32/fma", "fp16/tensor") of the work with the most FLOPs:
    vector FLOPs per precision (``flops_dp/sp/hp``) against tensor FLOPs (``flops_tensor``, whose
    kind is ``tensor_kind``); "" where no work was counted."""
    import numpy as np

    columns = [*VECTOR_KINDS, "flops_tensor"]
    values = np.vstack([np.nan_to_num(np.asarray(frame[c], dtype=float), nan=-1.0) for c in columns])
    rates = [c.replace("flops_", "flop_rate_") for c in VECTOR_KINDS]
    if set(rates) <= set(frame):  # nothing counted: the work measured as rates
        measured = np.vstack([np.nan_to_num(np.asarray(frame[c], dtype=float), nan=-1.0) for c in rates])
        values = np.where((values < 0).all(axis=0), np.vstack([measured, np.full(values.shape[1], -1.0)]), values)
    kinds = np.array(list(VECTOR_KINDS.values()) + [""], dtype=object)[values.argmax(axis=0)]
    kinds = np.where(kinds == "", np.asarray(frame["tensor_kind"], dtype=object), kinds)
    return np.where(values.max(axis=0) > 0, kinds, "")


def consistency(l1: np.ndarray, l2: np.ndarray, dram: np.ndarray) -> np.ndarray:
    """Per row, "" when bytes fall from L1 to L2 to DRAM (AI(L1) <= AI(L2) <= AI(DRAM)) or too few
    levels were counted to tell; else which counter looks wrong: the one whose removal leaves the
    others in order, or both of a pair when either would."""
    import numpy as np

    def below(inner: np.ndarray, outer: np.ndarray) -> np.ndarray:  # NaN compares False
        return inner < outer * (1 - SLACK)

    l1_low, dram_high, l1_dram = below(l1, l2), below(l2, dram), below(l1, dram)
    no_l2 = np.isnan(l2)
    text = np.full(len(l1), "", dtype=object)
    cases = (  # later cases win
        (l1_low, "AI L1 > AI L2: L1 counted fewer bytes than L2; the L1 counter looks low or the L2 one high"),
        (l1_low & l1_dram, "AI L1 > AI L2: L1 counted fewer bytes than L2 and DRAM; the L1 counter looks low"),
        (dram_high, "AI L2 > AI DRAM: DRAM counted more bytes than L2; the DRAM counter looks high or the L2 one low"),
        (dram_high & l1_dram, "AI L2 > AI DRAM: DRAM counted more bytes than L2 and L1; the DRAM counter looks high"),
        (l1_low & dram_high, "AI falls from L1 to L2 to DRAM: the byte counters look swapped or from different runs"),
        (
            l1_dram & no_l2,
            "AI L1 > AI DRAM: L1 counted fewer bytes than DRAM; the L1 counter looks low or the DRAM one high",
        ),
    )
    for where, message in cases:
        text[where] = message
    return text


def _devices(names: Sequence[str]) -> dict[str, gpu_table.GpuSpec | None]:
    found: dict[str, gpu_table.GpuSpec | None] = {}
    for name in dict.fromkeys(names):
        try:
            found[name] = gpu_table.match(name) if name else None
        except InputError:  # unknown, or several rows (an ncu CSV's "device 0")
            found[name] = None
    return found


def _ceiling_text(ceiling: gpu_table.Ceiling, sm_hz: float | None = None) -> str:
    """The ceiling as the table states it or, given the SM clock measured, at that clock first."""
    value, unit = ceiling.display
    clock = f" at {ceiling.clock_mhz:g} MHz {ceiling.clock}" if ceiling.clock_mhz else ""
    if sm_hz and ceiling.clock_mhz:
        return (
            f"{ceiling.name} {value * sm_hz / (ceiling.clock_mhz * 1e6):.4g} {unit} at the SM clock measured, "
            f"{sm_hz / 1e6:.0f} MHz ({value:.4g} {unit} {ceiling.origin}{clock})"
        )
    return f"{ceiling.name} {value:.4g} {unit} ({ceiling.origin}{clock})"


NO_MEMORY = "bound unknown: no memory counters"
# The ceilings a file carries (Nsight Compute's roofline sections collect them), by the kind binding
# names, with the frame column that holds each and how it was measured.
FILE_CEILINGS = {
    "fp32/fma": (
        "peak_flop_rate_sp",
        "FP32 FMA",
        "2 x sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained x SM clock measured",
    ),
    "fp64/fma": (
        "peak_flop_rate_dp",
        "FP64 FMA",
        "2 x sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained x SM clock measured",
    ),
    "dram": (
        "peak_dram_bandwidth",
        "DRAM",
        "dram__bytes.sum.peak_sustained x dram__cycles_elapsed.avg.per_second",
    ),
}


def file_ceiling_text(kind: str, value: float) -> str:
    """A ceiling the file carries, as the binding column names it."""
    _, name, formula = FILE_CEILINGS[kind]
    unit, scale = ("TB/s", 1e12) if kind == "dram" else ("TFLOP/s", 1e12)
    return f"{name} {value / scale:.4g} {unit} from the file ({formula})"


def binding(
    frame: pd.DataFrame | Mapping[str, np.ndarray],
    devices: Sequence[str],
    sm_clock: np.ndarray | None = None,
    carried: pd.DataFrame | Mapping[str, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of a frame (or columns) with ``dominant``, ``ai_l1/l2/dram`` and ``flop_rate_total``, the device
    of each row and the SM clock it ran at (Hz, NaN or None where not measured): the binding ceiling
    (FLOP/s), what it is, and the achieved percent of it.

    NaN where the device is not in the table or the table has no compute ceiling for the dominant
    work: a memory roof alone would be an upper bound that hides that; and where no level's bytes
    were counted, :data:`NO_MEMORY` (the compute roof alone would hide memory in the same way).
    Above 100 % the text says so. Where ``carried`` (the input frame) holds a ceiling the file
    itself carries (:data:`FILE_CEILINGS`: the FMA pipes' and DRAM's peaks at the clocks measured),
    it replaces the table's.
    """
    import numpy as np
    import pandas as pd

    rows = len(devices)
    device_code, names = pd.factorize(np.asarray(devices, dtype=object))
    kind_code, kinds = pd.factorize(np.asarray(frame["dominant"], dtype=object))
    specs = _devices(list(names))
    sm_clock = np.full(rows, np.nan) if sm_clock is None else sm_clock
    measured = np.isfinite(sm_clock) & (sm_clock > 0)
    candidates = [np.full(rows, np.nan) for _ in range(1 + len(LEVELS))]
    labels = [np.full(rows, "", dtype=object) for _ in range(1 + len(LEVELS))]

    def place(i: int, where: np.ndarray, found: gpu_table.Ceiling, suffix: str = "") -> None:
        """Ceiling ``found`` as candidate ``i`` of the rows ``where``, at the SM clock where measured."""
        candidates[i][where], labels[i][where] = found.value, _ceiling_text(found) + suffix
        if found.clock != "memory" and found.clock_mhz:
            at_run = where & measured
            candidates[i][at_run] = found.value * sm_clock[at_run] / (found.clock_mhz * 1e6)
            clocks, which = np.unique(sm_clock[at_run], return_inverse=True)
            texts = np.array([_ceiling_text(found, hz) + suffix for hz in clocks.tolist()] or [""], dtype=object)
            labels[i][at_run] = texts[which.ravel()]

    pairs = np.unique(device_code * max(len(kinds), 1) + kind_code)
    for pair in pairs.tolist():
        name, work = names[pair // max(len(kinds), 1)], kinds[pair % max(len(kinds), 1)]
        found = gpu_table.ceiling(specs[name], *work.split("/")) if specs[name] and "/" in work else None
        if found:
            place(0, (device_code * max(len(kinds), 1) + kind_code) == pair, found)
    for i, level in enumerate(LEVELS, 1):
        for code, name in enumerate(names):
            found = gpu_table.memory_ceiling(specs[name], level) if specs[name] else None
            if found:
                place(i, device_code == code, found, f" x AI {LABELS[level]}")
        if level == "dram":
            _take_carried(candidates[i], labels[i], carried, "dram", np.full(rows, True), " x AI DRAM")
        candidates[i] = candidates[i] * np.asarray(frame[f"ai_{level}"], dtype=float)
    for work in ("fp32/fma", "fp64/fma"):
        _take_carried(candidates[0], labels[0], carried, work, np.asarray(frame["dominant"], dtype=object) == work)
    compute = candidates[0]
    stacked = np.vstack(candidates)
    lowest = np.nan_to_num(stacked, nan=np.inf).argmin(axis=0)
    # without any byte count the compute roof is only an upper bound: naming it would hide memory
    unmetered = np.isnan(np.vstack([np.asarray(frame[f"ai_{level}"], dtype=float) for level in LEVELS])).all(axis=0)
    value = np.where(np.isnan(compute) | unmetered, np.nan, stacked[lowest, np.arange(rows)])
    with np.errstate(divide="ignore", invalid="ignore"):
        percent = 100.0 * np.asarray(frame["flop_rate_total"], dtype=float) / value
    text = np.where(np.isnan(value), "", np.vstack(labels)[lowest, np.arange(rows)])
    text[unmetered & ~np.isnan(compute)] = NO_MEMORY
    over = percent > 100
    text[over] = text[over] + (
        " - above 100 %: this ceiling (at the clock named) is below what ran, or a counter is wrong (see the AI check)"
    )
    return value, text, percent


def _take_carried(
    values: np.ndarray,
    labels: np.ndarray,
    carried: pd.DataFrame | Mapping[str, np.ndarray] | None,
    kind: str,
    where: np.ndarray,
    suffix: str = "",
) -> None:
    """The file's own ceiling of ``kind`` into ``values``/``labels`` on the rows ``where`` it has one."""
    import numpy as np

    column = FILE_CEILINGS[kind][0]
    if carried is None or column not in carried:
        return
    found = np.asarray(carried[column], dtype=float)
    take = where & np.isfinite(found) & (found > 0)
    for value in np.unique(found[take]).tolist():
        rows = take & (found == value)
        values[rows], labels[rows] = value, file_ceiling_text(kind, value) + suffix


def roofline_columns(
    frame: pd.DataFrame | Mapping[str, np.ndarray],
    devices: Sequence[str],
    ratio: Callable[[str, str], np.ndarray] | None = None,
) -> pd.DataFrame:
    """The hierarchical-roofline columns of a frame of FLOPs (``flops_dp/sp/hp/tensor/total``,
    ``tensor_kind``), bytes (``l1_bytes``, ``l2_bytes``, ``dram_bytes``) and kernel ``time``, per
    launch or per kernel: FLOP/s, intensity per level, the AI check, the dominant work and the
    binding ceiling with the percent of it. ``ratio(top, bottom)`` divides two of the frame's
    columns (row by row unless given: a per-kernel table divides sums over the same launches).
    The AI check compares L2 with ``dram_check_bytes`` where the frame has them (the DRAM reads,
    when L2 counts the L1 unit's reads only). Where FLOPs or time were not counted, FLOP/s is ``flop_rate_from_rates`` and AI DRAM is FLOP/s /
    ``dram_bandwidth``: Nsight Compute's roofline section plots exactly these rates. ``frame`` may be
    its columns as arrays (a per-kernel table's, before they are made a frame)."""
    import numpy as np
    import pandas as pd

    def row_ratio(top: str, bottom: str) -> np.ndarray:
        return _ratio(np.asarray(frame[top], dtype=float), np.asarray(frame[bottom], dtype=float))

    ratio = ratio or row_ratio
    rate = ratio("flops_total", "time")
    if "flop_rate_from_rates" in frame:  # no count: the rates ncu's roofline section plots
        rate = np.where(np.isnan(rate), np.asarray(frame["flop_rate_from_rates"], dtype=float), rate)
    out = {"flop_rate_total": rate}  # the columns, made into a frame once (pandas copies a frame per column added)
    for level in LEVELS:
        out[f"ai_{level}"] = ratio("flops_total", f"{level}_bytes")
    if "dram_bandwidth" in frame:  # Nsight Compute's section formula: FLOP/s / DRAM byte/s
        by_rate = _ratio(rate, np.asarray(frame["dram_bandwidth"], dtype=float))
        out["ai_dram"] = np.where(np.isnan(out["ai_dram"]), by_rate, out["ai_dram"])
    checked = "dram_check_bytes" if "dram_check_bytes" in frame else "dram_bytes"  # DRAM reads under l1-reads
    out["ai_check"] = consistency(
        np.asarray(frame["l1_bytes"], dtype=float),
        np.asarray(frame["l2_bytes"], dtype=float),
        np.asarray(frame[checked], dtype=float),
    )
    out["dominant"] = dominant(frame)
    clock = np.asarray(frame["sm_clock"], dtype=float) if "sm_clock" in frame else None
    value, text, percent = binding(out, devices, clock, frame)
    out["binding_ceiling"], out["binding_name"], out["binding_percent"] = value, text, percent
    return pd.DataFrame(out, index=getattr(frame, "index", None))
