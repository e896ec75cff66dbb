"""The GPU device table (``gpuprof/data/devices.toml``): load it, find a GPU by name, compute peaks.

The table ships inside the package (like the metric catalog), so an installed gpuprof finds it.
Every row cites its sources; values the research could not confirm are named in the row's
``status`` and carried into the :class:`~gpuprof.devices.peaks.Peaks` notes, so a printed peak
never hides that it is a lead rather than a fact.

Formulas (CUDA C Programming Guide throughput table; CUDA Best Practices Guide bandwidth):

* peak FLOP/s = SMs x lanes per SM x 2 (an FMA is a multiply and an add) x SM clock
* peak bandwidth = 2 (double data rate) x memory clock x bus width / 8, with the memory clock in
  the CUDA/NVML convention (``cudaDevAttrMemoryClockRate``).
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any

from gpuprof.devices.peaks import Peaks
from gpuprof.errors import InputError
from gpuprof.model import PEAK_TABLE

TABLE_FILE = "devices.toml"
_VENDOR_WORDS = ("nvidia", "tesla", "geforce")


@dataclass(frozen=True)
class Lanes:
    """Per-SM rates per clock of one compute capability (or of its GeForce boards).

    ``fp32``/``fp64`` are FMA lanes (``status`` flags them); ``rates`` holds the others: ``fp16``
    lanes, ``tensor_*`` dense FLOP (int8: OP) per clock, ``l1_bytes`` (flags in ``rate_status``).
    ``cite`` maps a rate to its [sources] id.
    """

    cc: str
    fp32: int
    fp64: int
    examples: str
    status: dict[str, str] = field(default_factory=dict)
    rates: dict[str, float] = field(default_factory=dict)
    cite: dict[str, str] = field(default_factory=dict)
    rate_status: dict[str, str] = field(default_factory=dict)

    def flag(self, rate: str) -> str:
        """'derived' or 'unconfirmed' when the table marks ``rate`` so, else ''."""
        return self.status.get(rate) or self.rate_status.get(rate, "")


@dataclass(frozen=True)
class GpuSpec:
    """One row of the device table; numbers in the table's units (MHz, GB/s, GFLOP/s, TFLOP/s)."""

    key: str
    name: str
    variant: str
    cc: str
    source: str
    values: dict[str, Any]
    status: dict[str, str]
    aliases: tuple[str, ...] = ()
    notes: str = ""
    cite: dict[str, str] = field(default_factory=dict)
    rates: str = ""  # the [lanes] entry of its per-SM rates when not its cc

    @property
    def title(self) -> str:
        return f"{self.name}, {self.variant}"

    def get(self, name: str) -> Any:
        return self.values.get(name)

    def flag(self, name: str) -> str:
        """'derived' or 'unconfirmed' when the table marks ``name`` so, else ''."""
        return self.status.get(name, "")


@dataclass(frozen=True)
class Table:
    gpus: tuple[GpuSpec, ...]
    lanes: dict[str, Lanes]
    sources: dict[str, str] = field(default_factory=dict)


def _spec(row: dict[str, Any]) -> GpuSpec:
    row = dict(row)
    meta = {k: row.pop(k) for k in ("key", "name", "variant", "cc", "source")}
    return GpuSpec(
        **meta,
        aliases=tuple(row.pop("aliases", ())),
        notes=row.pop("notes", ""),
        status=row.pop("status", {}),
        cite=row.pop("cite", {}),
        rates=row.pop("rates", ""),
        values=row,
    )


def _lanes(name: str, entries: dict[str, dict[str, Any]]) -> Lanes:
    """One [lanes] entry; an ``extends`` entry ("8.6 GeForce") starts from its base's rates."""
    entry = dict(entries[name])
    base = _lanes(entry.pop("extends"), entries) if "extends" in entry else None
    flags = {**(base.status | base.rate_status if base else {}), **entry.pop("status", {})}
    fp32, fp64 = entry.pop("fp32", base and base.fp32), entry.pop("fp64", base and base.fp64)
    return Lanes(
        cc=name,
        fp32=fp32,
        fp64=fp64,
        examples=entry.pop("examples"),
        status={k: v for k, v in flags.items() if k in ("fp32", "fp64")},
        rate_status={k: v for k, v in flags.items() if k not in ("fp32", "fp64")},
        cite={**(base.cite if base else {}), **entry.pop("cite", {})},
        rates={**(base.rates if base else {}), **entry},
    )


@functools.cache
def load() -> Table:
    """The packaged device table."""
    text = resources.files("gpuprof.data").joinpath(TABLE_FILE).read_text(encoding="utf-8")
    data = tomllib.loads(text)
    lanes = {name: _lanes(name, data["lanes"]) for name in data["lanes"]}
    return Table(gpus=tuple(_spec(row) for row in data["gpu"]), lanes=lanes, sources=data["sources"])


def rates_of(gpu: GpuSpec) -> Lanes | None:
    """The per-SM rates that apply to ``gpu``: its rate class ("8.6 GeForce") or its cc."""
    return load().lanes.get(gpu.rates or gpu.cc)


# --- name matching -------------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    words = re.split(r"[^a-z0-9.]+", text.lower())
    return [w for w in words if w and w not in _VENDOR_WORDS]


def _compact(text: str) -> str:
    return "".join(_words(text))


def _names(gpu: GpuSpec) -> list[str]:
    return [gpu.key, gpu.name, f"{gpu.name} {gpu.variant}", *gpu.aliases]


def find(query: str) -> list[GpuSpec]:
    """Rows matching ``query``: an exact name, alias or key ("Tesla K40c", "NVIDIA A100-SXM4-40GB")
    gives one row; otherwise every row whose words contain all the query's words ("a100" gives the
    four A100 variants, "h100 sxm" the H100 SXM5). Vendor words (NVIDIA, Tesla, GeForce) are ignored."""
    gpus = load().gpus
    compact = _compact(query)
    if not compact:
        return []
    exact = [g for g in gpus if any(_compact(n) == compact for n in _names(g))]
    if exact:
        return exact
    wanted = _words(query)
    return [g for g in gpus if all(_word_matches(w, _vocabulary(g)) for w in wanted)]


def _vocabulary(gpu: GpuSpec) -> set[str]:
    names = _names(gpu)
    return {w for n in names for w in _words(n)} | {_compact(n) for n in names}


def _word_matches(word: str, vocabulary: set[str]) -> bool:
    """Equal, or a prefix ending in a letter ("sxm" of "sxm5"); a prefix ending in a digit is
    another model ("a10" is not "a100")."""
    return word in vocabulary or (word[-1].isalpha() and any(v.startswith(word) for v in vocabulary))


def match(query: str) -> GpuSpec:
    """The one row ``query`` names, or an error listing the candidates."""
    found = find(query)
    if len(found) == 1:
        return found[0]
    if not found:
        raise InputError(f"no GPU '{query}' in the device table", "list the known GPUs with 'gpuprof peaks'")
    keys = ", ".join(g.key for g in found)
    raise InputError(
        f"'{query}' matches several GPUs in the device table: {keys}", "give the variant, e.g. one of those keys"
    )


# --- formulas ------------------------------------------------------------------------------------

_LANE_RATES = ("fp32", "fp64", "fp16")  # FMA lanes: 2 FLOP per lane per clock


def per_sm_rate(gpu: GpuSpec, rate: str) -> tuple[float, str] | None:
    """FLOP (int8: OP; l1_bytes: byte) per clock per SM of ``rate`` and how it reads
    ("64 lanes x 2", "2048 FLOP"); None where the table has no such rate for the GPU."""
    lanes = rates_of(gpu)
    if rate == "fp32":
        count = gpu.get("fp32_lanes_per_sm")
    elif lanes is None:
        return None
    else:
        count = lanes.fp64 if rate == "fp64" else lanes.rates.get(rate)
    if not count:
        return None
    if rate in _LANE_RATES:
        return count * 2, f"{count} lanes x 2"
    unit = "byte" if rate == "l1_bytes" else "OP" if rate.endswith("int8") else "FLOP"
    return count, f"{count} {unit}"


def rate_formula(gpu: GpuSpec, rate: str, clock_mhz: float | None = None) -> float | None:
    """SMs x per-SM rate x clock, per second (clock defaults to the datasheet's peak clock)."""
    clock = clock_mhz or gpu.get("peak_clock_mhz")
    sms, per_sm = gpu.get("sm_count"), per_sm_rate(gpu, rate)
    if not (clock and sms and per_sm):
        return None
    return sms * per_sm[0] * clock * 1e6


def fp32_formula(gpu: GpuSpec, clock_mhz: float | None = None) -> float | None:
    """SMs x FP32 lanes x 2 x clock, in FLOP/s (clock defaults to the datasheet's peak clock)."""
    return rate_formula(gpu, "fp32", clock_mhz)


def fp64_formula(gpu: GpuSpec, clock_mhz: float | None = None) -> float | None:
    """SMs x FP64 lanes (from the compute capability) x 2 x clock, in FLOP/s."""
    return rate_formula(gpu, "fp64", clock_mhz)


def bandwidth_formula(gpu: GpuSpec) -> float | None:
    """2 x memory clock (CUDA convention) x bus width / 8, in byte/s."""
    clock, bus = gpu.get("memory_clock_mhz"), gpu.get("bus_width_bits")
    if not (clock and bus):
        return None
    return 2 * clock * 1e6 * bus / 8


def _scaled(value: float | None, scale: float) -> float | None:
    return None if value is None else value * scale


def peaks(gpu: GpuSpec) -> Peaks:
    """The row's peaks: the table (datasheet) values, else the formula; flags in the notes.

    FLOP peaks are at ``peak_clock_mhz`` (``clock_hz``); tensor peaks of Hopper are quoted at a
    lower tensor clock, which the notes say.
    """
    flops: dict[str, float] = {}
    notes: list[str] = []
    columns = {
        "float32": ("fp32_gflops", 1e9, fp32_formula(gpu)),
        "float64": ("fp64_gflops", 1e9, fp64_formula(gpu)),
        "float16-tensor": ("tensor_fp16_tflops", 1e12, None),
        "tf32-tensor": ("tensor_tf32_tflops", 1e12, None),
    }
    for dtype, (column, scale, formula) in columns.items():
        value = _scaled(gpu.get(column), scale) or formula
        if value:
            flops[dtype] = value
            if gpu.get(column) is None:
                notes.append(f"{dtype} peak from the formula (the table has no value)")
        if gpu.flag(column):
            notes.append(f"{dtype} peak is {gpu.flag(column)}")
    for column in ("sm_count", "peak_clock_mhz", "fp32_lanes_per_sm"):
        if gpu.flag(column):
            notes.append(f"{column} is {gpu.flag(column)}")
    if gpu.get("tensor_clock_mhz"):
        notes.append(f"tensor peaks are quoted at {gpu.get('tensor_clock_mhz')} MHz")
    bandwidth = _scaled(gpu.get("bandwidth_gbs"), 1e9) or bandwidth_formula(gpu)
    if gpu.flag("bandwidth_gbs"):
        notes.append(f"bandwidth is {gpu.flag('bandwidth_gbs')}")
    clock = gpu.get("peak_clock_mhz")
    return Peaks(
        device=gpu.title,
        flops=flops,
        bandwidth=bandwidth,
        clock_hz=clock * 1e6 if clock else None,
        origin=PEAK_TABLE,
        source=f"{formulas_text(gpu)}; device table row '{gpu.key}': {gpu.source}",
        notes=tuple(notes),
    )


def formulas_text(gpu: GpuSpec) -> str:
    """The formulas with this GPU's numbers, as printed beside its peaks."""
    parts = []
    fp32 = fp32_formula(gpu)
    if fp32:
        parts.append(
            f"FP32 = {gpu.get('sm_count')} SM x {gpu.get('fp32_lanes_per_sm')} lanes x 2 x "
            f"{gpu.get('peak_clock_mhz')} MHz = {fp32 / 1e9:.1f} GFLOP/s"
        )
    fp64 = fp64_formula(gpu)
    if fp64:
        parts.append(
            f"FP64 = {gpu.get('sm_count')} SM x {rates_of(gpu).fp64} lanes x 2 x "
            f"{gpu.get('peak_clock_mhz')} MHz = {fp64 / 1e9:.1f} GFLOP/s"
        )
    bandwidth = bandwidth_formula(gpu)
    if bandwidth:
        parts.append(
            f"BW = 2 x {gpu.get('memory_clock_mhz')} MHz x {gpu.get('bus_width_bits')} bit / 8"
            f" = {bandwidth / 1e9:.1f} GB/s"
        )
    return "; ".join(parts)


# --- ceilings ------------------------------------------------------------------------------------
# Every roof a kernel can be judged against, each with its value, unit, origin, source and clock.

PUBLISHED, DERIVED, UNCONFIRMED = "published", "derived", "unconfirmed"
FMA, NO_FMA, TENSOR, TENSOR_F16ACC = "fma", "no-fma", "tensor", "tensor-f16acc"
MEMORY_LEVELS = ("l1", "l2", "dram")

# (precision, kind) -> (display name, table column, per-SM rate in [lanes]); in display order.
_COMPUTE: dict[tuple[str, str], tuple[str, str, str]] = {
    ("fp64", FMA): ("FP64 FMA", "fp64_gflops", "fp64"),
    ("fp32", FMA): ("FP32 FMA", "fp32_gflops", "fp32"),
    ("fp16", FMA): ("FP16 FMA (half2)", "fp16_tflops", "fp16"),
    ("fp16", TENSOR): ("FP16 tensor, FP32 acc", "tensor_fp16_tflops", "tensor_fp16"),
    ("fp16", TENSOR_F16ACC): ("FP16 tensor, FP16 acc", "tensor_fp16_fp16acc_tflops", "tensor_fp16_f16acc"),
    ("bf16", TENSOR): ("BF16 tensor", "tensor_bf16_tflops", "tensor_bf16"),
    ("tf32", TENSOR): ("TF32 tensor", "tensor_tf32_tflops", "tensor_tf32"),
    ("fp64", TENSOR): ("FP64 tensor (DMMA)", "tensor_fp64_tflops", "tensor_fp64"),
    ("fp8", TENSOR): ("FP8 tensor, FP32 acc", "tensor_fp8_tflops", "tensor_fp8"),
    ("fp8", TENSOR_F16ACC): ("FP8 tensor, FP16 acc", "tensor_fp8_fp16acc_tflops", "tensor_fp8_f16acc"),
    ("int8", TENSOR): ("INT8 tensor", "tensor_int8_tops", "tensor_int8"),
}
_SCALES = {"gflops": (1e9, "FLOP/s"), "tflops": (1e12, "FLOP/s"), "tops": (1e12, "OP/s")}
_PREFIX = {"FLOP/s": "TFLOP/s", "OP/s": "TOP/s", "byte/s": "GB/s"}


@dataclass(frozen=True)
class Ceiling:
    """One roof of one GPU in base units (FLOP/s, OP/s, byte/s).

    ``origin`` is how the device table knows it: ``published`` (a vendor figure), ``derived``
    (``formula`` over cited specs and per-SM rates, or half the FMA roof) or ``unconfirmed``.
    ``source`` cites the figure or the per-SM rate; ``clock_mhz`` is the clock the value assumes
    and ``clock`` says which one it is.
    """

    name: str
    precision: str  # "fp16", ... ; "" for a memory level
    kind: str  # "fma", "no-fma", "tensor", "tensor-f16acc", or "l1" / "l2" / "dram"
    value: float
    unit: str
    origin: str
    source: str
    clock_mhz: float | None
    clock: str
    formula: str = ""  # "132 SM x 4096 FLOP x 1830 MHz"; empty for a published figure

    @property
    def display(self) -> tuple[float, str]:
        """The value in TFLOP/s, TOP/s or GB/s, as tables print it."""
        return self.value / (1e12 if self.unit != "byte/s" else 1e9), _PREFIX[self.unit]


def compute_kinds() -> list[tuple[str, str]]:
    """Every (precision, kind) ``ceiling`` answers, in display order."""
    kinds = []
    for precision, kind in _COMPUTE:
        kinds.append((precision, kind))
        if kind == FMA:
            kinds.append((precision, NO_FMA))
    return kinds


def _check_kind(precision: str, kind: str) -> None:
    if (precision, kind) not in compute_kinds():
        choices = ", ".join(f"{p}/{k}" for p, k in compute_kinds())
        raise InputError(f"no ceiling '{precision}/{kind}' in the device table", f"choose one of: {choices}")


def _clock(gpu: GpuSpec, rate: str) -> tuple[float | None, str]:
    """The clock a ceiling assumes: the tensor clock for tensor rates where the row has one
    (Hopper), except FP64 DMMA, whose published H100 figures are at the vector boost clock."""
    field_name = "peak_clock_mhz"
    if rate.startswith("tensor_") and rate != "tensor_fp64" and gpu.get("tensor_clock_mhz"):
        field_name = "tensor_clock_mhz"
    mhz = gpu.get(field_name)
    labels = {"tensor_clock_mhz": "tensor boost", "boost_clock_mhz": "boost", "base_clock_mhz": "base"}
    label = next((name for f, name in labels.items() if mhz and gpu.get(f) == mhz), "peak (row notes)")
    return mhz, f"{label}, {gpu.flag(field_name)}" if gpu.flag(field_name) else label


def _cited(gpu: GpuSpec, name: str, ids: dict[str, str]) -> str:
    """The [sources] text a ``cite`` entry names, else the row's own sources."""
    if name in ids:
        return load().sources[ids[name]]
    return f"device table row '{gpu.key}': {gpu.source}"


def _origin(*flags: str) -> str:
    return UNCONFIRMED if UNCONFIRMED in flags else DERIVED


def _from_rate(gpu: GpuSpec, name: str, precision: str, kind: str, rate: str, unit: str) -> Ceiling | None:
    """SMs x the per-SM ``rate`` x the clock it runs at; unconfirmed if any input is."""
    clock, label = _clock(gpu, rate)
    value, per_sm, lanes = rate_formula(gpu, rate, clock), per_sm_rate(gpu, rate), rates_of(gpu)
    if value is None or per_sm is None or lanes is None:
        return None
    inputs = ["sm_count", "tensor_clock_mhz" if label.startswith("tensor boost") else "peak_clock_mhz"]
    inputs += ["fp32_lanes_per_sm"] if rate == "fp32" else []
    source = (
        _cited(gpu, rate, lanes.cite)
        if rate in lanes.cite
        else f'CUDA C Programming Guide throughput table as read for [lanes."{lanes.cc}"] (device table)'
    )
    return Ceiling(
        name,
        precision,
        kind,
        value,
        unit,
        _origin(lanes.flag(rate), *map(gpu.flag, inputs)),
        source,
        clock,
        label,
        f"{gpu.get('sm_count')} SM x {per_sm[1]} x {clock} MHz",
    )


def formula_ceiling(gpu: GpuSpec, precision: str, kind: str) -> Ceiling | None:
    """The ceiling as SMs x per-SM rate x clock (no-FMA: half the FMA one), whatever the table
    publishes; None where the GPU lacks the unit or the table lacks a rate."""
    _check_kind(precision, kind)
    if kind == NO_FMA:
        return _halved(formula_ceiling(gpu, precision, FMA))
    name, column, rate = _COMPUTE[precision, kind]
    return _from_rate(gpu, name, precision, kind, rate, _scale(column)[1])


def _scale(column: str) -> tuple[float, str]:
    """Factor to base units and the unit of a table column ("fp16_tflops" -> 1e12, "FLOP/s")."""
    return _SCALES[column.rsplit("_", 1)[1]]


def _halved(fma: Ceiling | None) -> Ceiling | None:
    """No-FMA roof: an add or a multiply alone is one FLOP per lane per clock (NERSC's 'No-FMA')."""
    if fma is None:
        return None
    return replace(
        fma,
        name=fma.name.replace("FMA", "no-FMA"),
        kind=NO_FMA,
        value=fma.value / 2,
        origin=_origin(fma.origin),
        formula=f"{fma.name} / 2",
    )


def ceiling(gpu: GpuSpec, precision: str, kind: str) -> Ceiling | None:
    """The ceiling for ``precision`` ("fp64", "fp32", "fp16", "bf16", "tf32", "fp8", "int8") and
    ``kind`` ("fma", "no-fma", "tensor", "tensor-f16acc"): the row's published figure, else the
    formula. None where the GPU lacks the unit (V100 BF16) or nothing is known (B200 FP16)."""
    _check_kind(precision, kind)
    if kind == NO_FMA:
        return _halved(ceiling(gpu, precision, FMA))
    name, column, rate = _COMPUTE[precision, kind]
    if gpu.get(column) is None:
        derived = formula_ceiling(gpu, precision, kind)
        if derived and gpu.flag(column) == UNCONFIRMED:  # the research found no number: say so
            return replace(derived, origin=UNCONFIRMED)
        return derived
    scale, unit = _scale(column)
    clock, label = _clock(gpu, rate)
    return Ceiling(
        name,
        precision,
        kind,
        gpu.get(column) * scale,
        unit,
        gpu.flag(column) or PUBLISHED,
        _cited(gpu, column, gpu.cite),
        clock,
        label,
    )


def memory_ceiling(gpu: GpuSpec, level: str) -> Ceiling | None:
    """Bandwidth of ``level``: "dram" (published, else 2 x memory clock x bus / 8), "l2" (NVIDIA's
    L2 bytes per clock x SM clock) or "l1" (SMs x shared-memory bytes per clock x SM clock)."""
    if level not in MEMORY_LEVELS:
        raise InputError(f"no memory level '{level}'", f"choose one of: {', '.join(MEMORY_LEVELS)}")
    if level == "dram":
        return _dram(gpu)
    if level == "l1":
        return _from_rate(gpu, "L1/shared", "", level, "l1_bytes", "byte/s")
    clock, label = _clock(gpu, "")
    per_clock = gpu.get("l2_bytes_per_clk")
    if not (per_clock and clock):
        return None
    flags = (gpu.flag("l2_bytes_per_clk"), gpu.flag("peak_clock_mhz"))
    return Ceiling(
        "L2",
        "",
        level,
        per_clock * clock * 1e6,
        "byte/s",
        _origin(*flags),
        _cited(gpu, "l2_bytes_per_clk", gpu.cite),
        clock,
        label,
        f"{per_clock} byte/clk x {clock} MHz",
    )


def _dram(gpu: GpuSpec) -> Ceiling | None:
    clock = gpu.get("memory_clock_mhz")
    if gpu.get("bandwidth_gbs") is not None:
        return Ceiling(
            "DRAM",
            "",
            "dram",
            gpu.get("bandwidth_gbs") * 1e9,
            "byte/s",
            gpu.flag("bandwidth_gbs") or PUBLISHED,
            _cited(gpu, "bandwidth_gbs", gpu.cite),
            clock,
            "memory",
        )
    value = bandwidth_formula(gpu)
    if value is None:
        return None
    flags = (gpu.flag("memory_clock_mhz"), gpu.flag("bus_width_bits"))
    return Ceiling(
        "DRAM",
        "",
        "dram",
        value,
        "byte/s",
        _origin(*flags),
        _cited(gpu, "memory_clock_mhz", gpu.cite),
        clock,
        "memory",
        f"2 x {clock} MHz x {gpu.get('bus_width_bits')} bit / 8",
    )


def ceilings(gpu: GpuSpec) -> list[Ceiling]:
    """Every ceiling the table knows for ``gpu``: compute kinds, then L1, L2, DRAM."""
    found = [ceiling(gpu, precision, kind) for precision, kind in compute_kinds()]
    found += [memory_ceiling(gpu, level) for level in MEMORY_LEVELS]
    return [c for c in found if c is not None]
