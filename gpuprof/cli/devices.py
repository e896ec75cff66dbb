"""``gpuprof devices`` (what this machine has) and ``gpuprof peaks`` (the GPU device table)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from gpuprof.cli.common import echo, format_option, handle_errors, note

if TYPE_CHECKING:
    import pandas as pd

    from gpuprof.devices.peaks import Peaks


def _peak_columns(peaks: Peaks | None) -> dict[str, Any]:
    flops = peaks.flops if peaks else {}
    return {
        "FP32 GFLOP/s": round(flops["float32"] / 1e9, 1) if "float32" in flops else None,
        "FP64 GFLOP/s": round(flops["float64"] / 1e9, 1) if "float64" in flops else None,
        "GB/s": round(peaks.bandwidth / 1e9, 1) if peaks and peaks.bandwidth else None,
        "peak origin": peaks.origin if peaks else "",
        "peak basis": peaks.source if peaks else "",
    }


def _cpu_row() -> tuple[dict[str, Any], list[str]]:
    try:
        from gpuprof.devices import cpu
    except ImportError:  # written in parallel; the GPU part works without it
        return {"device": "cpu", "name": "(CPU description not available in this build)"}, []
    info = cpu.describe()
    peaks = cpu.theoretical_peaks(info)
    clock = info.get("clock_hz")
    row = {
        "device": "cpu",
        "name": info.get("name", ""),
        "units": f"{info.get('physical_cores')} cores / {info.get('logical_cpus')} threads",
        "clock MHz": round(clock / 1e6) if clock else None,
        "clock source": info.get("clock_source", ""),
        **_peak_columns(peaks),
    }
    return row, [f"cpu: {n}" for n in peaks.notes]


def _gpu_rows() -> tuple[list[dict[str, Any]], list[str]]:
    from gpuprof.devices.gpu_detect import detect, runtime_peaks
    from gpuprof.errors import DeviceError

    try:
        found = detect()
    except DeviceError as error:
        return [], [f"gpu: {error.problem}"]
    rows = []
    for info in found:
        peaks = runtime_peaks(info)
        rows.append(
            {
                "device": f"gpu{info.index}",
                "name": info.name,
                "units": f"{info.sm_count} SM (CC {info.cc}; {info.sm_count_source})",
                "clock MHz": round(info.max_sm_clock_hz / 1e6) if info.max_sm_clock_hz else None,
                "clock source": "NVML max SM clock"
                + (f", now {info.sm_clock_hz / 1e6:.0f} MHz" if info.sm_clock_hz else ""),
                **_peak_columns(peaks),
            }
        )
    return rows, []


def _devices_frame() -> tuple[pd.DataFrame, list[str]]:
    import pandas as pd

    cpu_row, cpu_notes = _cpu_row()
    gpu_rows, gpu_notes = _gpu_rows()
    return pd.DataFrame([cpu_row, *gpu_rows]), gpu_notes + cpu_notes


@click.command()
@format_option
@handle_errors
def devices(fmt: str) -> None:
    """List this machine's CPU and NVIDIA GPUs with their peaks and where each number came from."""
    from gpuprof.render import emit

    frame, problems = _devices_frame()
    echo(emit(frame, fmt))
    for problem in problems:
        note(problem)


@click.command()
@click.argument("name", required=False)
@click.option(
    "--ceilings",
    "show_ceilings",
    is_flag=True,
    help="Every ceiling: FP64/FP32/FP16 with and without FMA, each tensor type, L1/L2/DRAM "
    "bandwidth, with origin, clock and source.",
)
@format_option
@handle_errors
def peaks(name: str | None, show_ceilings: bool, fmt: str) -> None:
    """Peaks of the GPUs in the device table, or of the GPU(s) NAME matches ("a100", "Tesla K40c").

    One match prints every field with its status (derived / unconfirmed), the formulas and sources.
    """
    from gpuprof.devices import gpu_table, table_frames
    from gpuprof.errors import InputError
    from gpuprof.render import emit

    found = gpu_table.find(name) if name else list(gpu_table.load().gpus)
    if not found:
        raise InputError(f"no GPU '{name}' in the device table", "list the known GPUs with 'gpuprof peaks'")
    if show_ceilings:
        _print_ceilings(found, fmt)
        return
    if not name:
        echo(emit(table_frames.summary_frame(found), fmt))
        note(
            "peaks in GFLOP/s and GB/s (decimal); 'formula' columns: SMs x lanes x 2 x peak clock, "
            "2 x memory clock x bus/8. 'gpuprof peaks NAME' shows one GPU's sources and flags."
        )
        return
    if len(found) == 1:
        echo(emit(table_frames.detail_frame(found[0]), fmt, title=found[0].title))
        return
    echo(emit(table_frames.summary_frame(found), fmt))
    note(f"'{name}' matches {len(found)} GPUs; give a key (first column) for one GPU's details")


def _print_ceilings(gpus: list[Any], fmt: str) -> None:
    """One GPU: each ceiling (its long sources become numbered notes where the terminal is too
    narrow); several: one line each; CSV/JSON: all, long."""
    from gpuprof.devices import table_frames
    from gpuprof.render import emit

    if fmt in ("csv", "json"):
        echo(emit(table_frames.ceilings_frame(gpus), fmt))
    elif len(gpus) == 1:
        echo(emit(table_frames.ceiling_detail_frame(gpus[0]), fmt, title=gpus[0].title))
    else:
        echo(emit(table_frames.ceilings_overview(gpus), fmt))
        note(table_frames.OVERVIEW_LEGEND)
