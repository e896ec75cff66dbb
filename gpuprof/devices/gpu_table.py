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
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any

from gpuprof.devices.peaks import Peaks
from gpuprof.errors import DeviceError, InputError
from gpuprof.model import PEAK_TABLE

if TYPE_CHECKING:
    import pandas as pd

TABLE_FILE = "devices.toml"
_VENDOR_WORDS = ("nvidia", "tesla", "geforce")


@dataclass(frozen=True)
class Lanes:
    """FP32 and FP64 results per clock per SM for one compute capability."""

    cc: str
    fp32: int
    fp64: int
    examples: str
    status: dict[str, str] = field(default_factory=dict)


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


def _spec(row: dict[str, Any]) -> GpuSpec:
    row = dict(row)
    meta = {k: row.pop(k) for k in ("key", "name", "variant", "cc", "source")}
    return GpuSpec(**meta, aliases=tuple(row.pop("aliases", ())), notes=row.pop("notes", ""),
                   status=row.pop("status", {}), values=row)


@functools.cache
def load() -> Table:
    """The packaged device table."""
    text = resources.files("gpuprof.data").joinpath(TABLE_FILE).read_text(encoding="utf-8")
    data = tomllib.loads(text)
    lanes = {cc: Lanes(cc=cc, fp32=v["fp32"], fp64=v["fp64"], examples=v["examples"],
                       status=v.get("status", {}))
             for cc, v in data["lanes"].items()}
    return Table(gpus=tuple(_spec(row) for row in data["gpu"]), lanes=lanes)


def lanes_for(cc: str) -> Lanes:
    """Per-SM FP32/FP64 rates of compute capability ``cc`` ("8.0")."""
    table = load().lanes
    if cc not in table:
        raise DeviceError(f"no per-SM lane count for compute capability {cc} in the device table",
                          f"add it to gpuprof/data/{TABLE_FILE} [lanes] (known: {', '.join(table)})")
    return table[cc]


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
        raise InputError(f"no GPU '{query}' in the device table",
                         "list the known GPUs with 'gpuprof peaks'")
    keys = ", ".join(g.key for g in found)
    raise InputError(f"'{query}' matches several GPUs in the device table: {keys}",
                     "give the variant, e.g. one of those keys")


# --- formulas ------------------------------------------------------------------------------------

def fp32_formula(gpu: GpuSpec, clock_mhz: float | None = None) -> float | None:
    """SMs x FP32 lanes x 2 x clock, in FLOP/s (clock defaults to the datasheet's peak clock)."""
    clock = clock_mhz or gpu.get("peak_clock_mhz")
    sms, lanes = gpu.get("sm_count"), gpu.get("fp32_lanes_per_sm")
    if not (clock and sms and lanes):
        return None
    return sms * lanes * 2 * clock * 1e6


def fp64_formula(gpu: GpuSpec, clock_mhz: float | None = None) -> float | None:
    """SMs x FP64 lanes (from the compute capability) x 2 x clock, in FLOP/s."""
    clock = clock_mhz or gpu.get("peak_clock_mhz")
    sms = gpu.get("sm_count")
    if not (clock and sms) or gpu.cc not in load().lanes:
        return None
    return sms * load().lanes[gpu.cc].fp64 * 2 * clock * 1e6


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
    columns = {"float32": ("fp32_gflops", 1e9, fp32_formula(gpu)),
               "float64": ("fp64_gflops", 1e9, fp64_formula(gpu)),
               "float16-tensor": ("tensor_fp16_tflops", 1e12, None),
               "tf32-tensor": ("tensor_tf32_tflops", 1e12, None)}
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
    return Peaks(device=gpu.title, flops=flops, bandwidth=bandwidth,
                 clock_hz=clock * 1e6 if clock else None, origin=PEAK_TABLE,
                 source=f"{formulas_text(gpu)}; device table row '{gpu.key}': {gpu.source}",
                 notes=tuple(notes))


def formulas_text(gpu: GpuSpec) -> str:
    """The formulas with this GPU's numbers, as printed beside its peaks."""
    parts = []
    fp32 = fp32_formula(gpu)
    if fp32:
        parts.append(f"FP32 = {gpu.get('sm_count')} SM x {gpu.get('fp32_lanes_per_sm')} lanes x 2 x "
                     f"{gpu.get('peak_clock_mhz')} MHz = {fp32 / 1e9:.1f} GFLOP/s")
    fp64 = fp64_formula(gpu)
    if fp64:
        parts.append(f"FP64 = {gpu.get('sm_count')} SM x {load().lanes[gpu.cc].fp64} lanes x 2 x "
                     f"{gpu.get('peak_clock_mhz')} MHz = {fp64 / 1e9:.1f} GFLOP/s")
    bandwidth = bandwidth_formula(gpu)
    if bandwidth:
        parts.append(f"BW = 2 x {gpu.get('memory_clock_mhz')} MHz x {gpu.get('bus_width_bits')} bit / 8"
                     f" = {bandwidth / 1e9:.1f} GB/s")
    return "; ".join(parts)


# --- tables for `gpuprof peaks` ------------------------------------------------------------------

def _flag_counts(gpu: GpuSpec) -> str:
    """'2 derived, 1 unconfirmed': how many fields are not plain facts (`peaks NAME` names them)."""
    kinds = list(gpu.status.values())
    return ", ".join(f"{kinds.count(k)} {k}" for k in ("derived", "unconfirmed") if k in kinds)


def _rounded(value: float | None, scale: float) -> float | None:
    return None if value is None else round(value / scale, 1)


def summary_frame(gpus: list[GpuSpec] | tuple[GpuSpec, ...]) -> pd.DataFrame:
    """One row per GPU: datasheet peaks next to what the formulas give, and the flagged fields."""
    import pandas as pd

    rows = [{
        "key": g.key, "name": g.name, "variant": g.variant, "cc": g.cc,
        "SMs": g.get("sm_count"), "lanes/SM": g.get("fp32_lanes_per_sm"),
        "peak clock MHz": g.get("peak_clock_mhz"),
        "FP32 GFLOP/s": _rounded(g.get("fp32_gflops"), 1), "FP32 formula": _rounded(fp32_formula(g), 1e9),
        "FP64 GFLOP/s": _rounded(g.get("fp64_gflops"), 1), "FP64 formula": _rounded(fp64_formula(g), 1e9),
        "GB/s": _rounded(g.get("bandwidth_gbs"), 1), "GB/s formula": _rounded(bandwidth_formula(g), 1e9),
        "flags": _flag_counts(g),
    } for g in gpus]
    return pd.DataFrame(rows)


_UNITS = {"clock_mhz": "MHz", "_gbs": "GB/s", "_gflops": "GFLOP/s", "_tflops": "TFLOP/s", "_bits": "bit",
          "_mb": "MB", "_gb": "GB", "_w": "W"}


def _unit(field_name: str) -> str:
    return next((unit for suffix, unit in _UNITS.items() if field_name.endswith(suffix)), "")


def detail_frame(gpu: GpuSpec) -> pd.DataFrame:
    """Every field of one GPU with its unit and status, then the formulas and the sources."""
    import pandas as pd

    names = list(gpu.values) + [n for n in gpu.status if n not in gpu.values]
    rows = [{"field": n, "value": gpu.values.get(n, ""), "unit": _unit(n), "status": gpu.flag(n)}
            for n in names]
    rows.append({"field": "fp32/fp64 lanes per SM (CC table)", "value": _lanes_text(gpu.cc), "unit": "",
                 "status": _flags_of_lanes(gpu.cc)})
    rows += [{"field": "formula", "value": text, "unit": "", "status": ""}
             for text in formulas_text(gpu).split("; ")]
    rows += [{"field": "notes", "value": gpu.notes, "unit": "", "status": ""},
             *({"field": "source", "value": part.strip(), "unit": "", "status": ""}
               for part in gpu.source.split(" ; "))]
    frame = pd.DataFrame(rows)
    frame["value"] = frame["value"].astype(str)
    return frame


def _lanes_text(cc: str) -> str:
    lanes = load().lanes.get(cc)
    return f"{lanes.fp32} / {lanes.fp64} (CC {cc})" if lanes else f"unknown for CC {cc}"


def _flags_of_lanes(cc: str) -> str:
    lanes = load().lanes.get(cc)
    return "; ".join(f"{k} {v}" for k, v in lanes.status.items()) if lanes else ""
