"""The device table as DataFrames for `gpuprof peaks`: the summary and one GPU's fields."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuprof.devices import gpu_table
from gpuprof.devices.gpu_table import GpuSpec

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

    rows = [{
        "key": g.key, "name": g.name, "variant": g.variant, "cc": g.cc,
        "SMs": g.get("sm_count"), "lanes/SM": g.get("fp32_lanes_per_sm"),
        "peak clock MHz": g.get("peak_clock_mhz"),
        "FP32 GFLOP/s": _rounded(g.get("fp32_gflops"), 1), "FP32 formula": _rounded(gpu_table.fp32_formula(g), 1e9),
        "FP64 GFLOP/s": _rounded(g.get("fp64_gflops"), 1), "FP64 formula": _rounded(gpu_table.fp64_formula(g), 1e9),
        "GB/s": _rounded(g.get("bandwidth_gbs"), 1), "GB/s formula": _rounded(gpu_table.bandwidth_formula(g), 1e9),
        "flags": _flag_counts(g),
    } for g in gpus]
    return pd.DataFrame(rows)


_UNITS = {"clock_mhz": "MHz", "_gbs": "GB/s", "_gflops": "GFLOP/s", "_tflops": "TFLOP/s", "_bits": "bit",
          "_mb": "MB", "_gb": "GB", "_w": "W",
          "_tops": "TOP/s", "_per_clk": "byte/clk"}


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
             for text in gpu_table.formulas_text(gpu).split("; ")]
    rows += [{"field": "notes", "value": gpu.notes, "unit": "", "status": ""},
             *({"field": "source", "value": part.strip(), "unit": "", "status": ""}
               for part in gpu.source.split(" ; "))]
    frame = pd.DataFrame(rows)
    frame["value"] = frame["value"].astype(str)
    return frame


def _lanes_text(cc: str) -> str:
    lanes = gpu_table.load().lanes.get(cc)
    return f"{lanes.fp32} / {lanes.fp64} (CC {cc})" if lanes else f"unknown for CC {cc}"


def _flags_of_lanes(cc: str) -> str:
    lanes = gpu_table.load().lanes.get(cc)
    return "; ".join(f"{k} {v}" for k, v in lanes.status.items()) if lanes else ""

