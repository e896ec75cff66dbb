"""The device table as DataFrames for `gpuprof peaks`: the summary, one GPU's fields, and the
ceilings (every roof with its origin, clock and source) in long form and as a one-line-per-GPU view.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuprof.devices import gpu_table
from gpuprof.devices.gpu_table import DERIVED, UNCONFIRMED, Ceiling, GpuSpec

if TYPE_CHECKING:
    import pandas as pd


def _flag_counts(gpu: GpuSpec) -> str:
    """'2 derived, 1 unconfirmed': how many fields are not plain facts (`peaks NAME` names them)."""
    kinds = list(gpu.status.values())
    return ", ".join(f"{kinds.count(k)} {k}" for k in ("derived", "unconfirmed") if k in kinds)


def _rounded(value: float | None, scale: float) -> float | None:
    return None if value is None else round(value / scale, 1)


def summary_frame(gpus: list[GpuSpec] | tuple[GpuSpec, ...]) -> pd.DataFrame:
    """One row per GPU: datasheet peaks next to what the formulas give, and the flagged fields."""
    import pandas as pd

    rows = [
        {
            "key": g.key,
            "name": g.name,
            "variant": g.variant,
            "cc": g.cc,
            "SMs": g.get("sm_count"),
            "lanes/SM": g.get("fp32_lanes_per_sm"),
            "peak clock MHz": g.get("peak_clock_mhz"),
            "FP32 GFLOP/s": _rounded(g.get("fp32_gflops"), 1),
            "FP32 formula": _rounded(gpu_table.fp32_formula(g), 1e9),
            "FP64 GFLOP/s": _rounded(g.get("fp64_gflops"), 1),
            "FP64 formula": _rounded(gpu_table.fp64_formula(g), 1e9),
            "GB/s": _rounded(g.get("bandwidth_gbs"), 1),
            "GB/s formula": _rounded(gpu_table.bandwidth_formula(g), 1e9),
            "flags": _flag_counts(g),
        }
        for g in gpus
    ]
    return pd.DataFrame(rows)


_UNITS = {
    "clock_mhz": "MHz",
    "_gbs": "GB/s",
    "_gflops": "GFLOP/s",
    "_tflops": "TFLOP/s",
    "_bits": "bit",
    "_mb": "MB",
    "_gb": "GB",
    "_w": "W",
    "_tops": "TOP/s",
    "_per_clk": "byte/clk",
}


def _unit(field_name: str) -> str:
    return next((unit for suffix, unit in _UNITS.items() if field_name.endswith(suffix)), "")


def detail_frame(gpu: GpuSpec) -> pd.DataFrame:
    """Every field of one GPU with its unit and status, then the formulas and the sources."""
    import pandas as pd

    names = list(gpu.values) + [n for n in gpu.status if n not in gpu.values]
    rows = [{"field": n, "value": gpu.values.get(n, ""), "unit": _unit(n), "status": gpu.flag(n)} for n in names]
    rows.append(
        {
            "field": "fp32/fp64 lanes per SM (CC table)",
            "value": _lanes_text(gpu.cc),
            "unit": "",
            "status": _flags_of_lanes(gpu.cc),
        }
    )
    rows += [
        {"field": "formula", "value": text, "unit": "", "status": ""}
        for text in gpu_table.formulas_text(gpu).split("; ")
    ]
    rows += [
        {"field": "notes", "value": gpu.notes, "unit": "", "status": ""},
        *({"field": "source", "value": part.strip(), "unit": "", "status": ""} for part in gpu.source.split(" ; ")),
    ]
    frame = pd.DataFrame(rows)
    frame["value"] = frame["value"].astype(str)
    return frame


def _lanes_text(cc: str) -> str:
    lanes = gpu_table.load().lanes.get(cc)
    return f"{lanes.fp32} / {lanes.fp64} (CC {cc})" if lanes else f"unknown for CC {cc}"


def _flags_of_lanes(cc: str) -> str:
    lanes = gpu_table.load().lanes.get(cc)
    return "; ".join(f"{k} {v}" for k, v in lanes.status.items()) if lanes else ""


# --- ceilings ------------------------------------------------------------------------------------


def ceilings_frame(gpus: list[GpuSpec] | tuple[GpuSpec, ...]) -> pd.DataFrame:
    """Every ceiling of every GPU, one row each, in base units with its origin, clock and source."""
    import pandas as pd

    rows = [
        {
            "key": g.key,
            "ceiling": c.name,
            "precision": c.precision,
            "kind": c.kind,
            "value": c.value,
            "unit": c.unit,
            "origin": c.origin,
            "clock MHz": c.clock_mhz,
            "clock": c.clock,
            "formula": c.formula,
            "source": c.source,
        }
        for g in gpus
        for c in gpu_table.ceilings(g)
    ]
    frame = pd.DataFrame(rows)
    if len(frame):  # whole MHz, so 1980 stays 1980 (not 1980.0) beside a missing clock (GH200's DRAM)
        frame["clock MHz"] = pd.array(
            [None if r["clock MHz"] is None else round(r["clock MHz"]) for r in rows], dtype="Int64"
        )
    return frame


def ceiling_detail_frame(gpu: GpuSpec) -> pd.DataFrame:
    """One GPU's ceilings in table units (TFLOP/s, TOP/s, GB/s), citations in a `source` column."""
    import pandas as pd

    rows = []
    for c in gpu_table.ceilings(gpu):
        value, unit = c.display
        rows.append(
            {
                "ceiling": c.name,
                "value": f"{_short(value)} {unit}",
                "origin": c.origin,
                "clock": f"{c.clock_mhz:g} MHz {c.clock}" if c.clock_mhz else c.clock,
                "formula": c.formula,
                "source": c.source,
            }
        )
    return pd.DataFrame(rows)


# Columns of the one-line-per-GPU view: (header, precision, kind). BF16 equals the FP16 tensor
# (FP32 accumulate) column wherever BF16 exists; accumulate variants are in `peaks NAME --ceilings`.
OVERVIEW = (
    ("FP64", "fp64", "fma"),
    ("FP32", "fp32", "fma"),
    ("FP16", "fp16", "fma"),
    ("TC-FP16", "fp16", "tensor"),
    ("TC-TF32", "tf32", "tensor"),
    ("TC-FP64", "fp64", "tensor"),
    ("TC-INT8", "int8", "tensor"),
    ("TC-FP8", "fp8", "tensor"),
    ("L1", "", "l1"),
    ("L2", "", "l2"),
    ("DRAM", "", "dram"),
)
MARKS = {DERIVED: "*", UNCONFIRMED: "?"}
OVERVIEW_LEGEND = """\
ceilings in TFLOP/s (TC-INT8: TOP/s) and GB/s; dense tensor rates; tensor FP16/FP8 with FP32 accumulate.
No mark: published; * derived (SMs x per-SM rate x clock); ? unconfirmed; blank: not on the chip or not known.
'gpuprof peaks NAME --ceilings': each value's source and clock, and the no-FMA, BF16, FP16-accumulate ceilings."""


def ceilings_overview(gpus: list[GpuSpec] | tuple[GpuSpec, ...]) -> pd.DataFrame:
    """One row per GPU: the headline ceilings, each marked with how the table knows it."""
    import pandas as pd

    rows = []
    for g in gpus:
        row = {"key": g.key}
        for header, precision, kind in OVERVIEW:
            found = gpu_table.memory_ceiling(g, kind) if not precision else gpu_table.ceiling(g, precision, kind)
            row[header] = _marked(found)
        rows.append(row)
    return pd.DataFrame(rows)


def _marked(found: Ceiling | None) -> str:
    if found is None:
        return ""
    return _short(found.display[0]) + MARKS.get(found.origin, "")


def _short(value: float) -> str:
    """Three significant digits, no exponent: 989, 19.5, 0.0248."""
    if value >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}"
