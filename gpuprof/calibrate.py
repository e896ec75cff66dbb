"""Measured ceilings of this machine, the yardstick when theoretical peaks are guesses.

In a VM the clock, the FMA units and the memory system are hidden, so ``gpuprof calibrate`` times
what NumPy can reach: a large matrix product per dtype (FLOP/s, BLAS on all cores) and ``np.add``
into a preallocated output over arrays far larger than the last-level cache (byte/s counting the
two arrays read and the one written; the write-allocate read that a cached store also costs is
not counted, as STREAM does not count it). Each is the best of several repeats after warm-up. The
result is a Run (kind ``calibration``) in the results store; :func:`load_calibration` turns the
newest one for a host into :class:`~gpuprof.devices.peaks.Peaks` for efficiency reporting.
"""

from __future__ import annotations

import platform
import statistics
import sys
from dataclasses import dataclass
from typing import Any

from gpuprof.devices.peaks import Peaks
from gpuprof.errors import InputError
from gpuprof.model import ANALYTIC, CALIBRATED, TIMED, Launch, Metric, Run
from gpuprof.sizes import format_bytes
from gpuprof.store import Store
from gpuprof.timing import time_calls

KIND = "calibration"
FORMAT = "cpu-calibrate"
MATMUL_DTYPES = ("float32", "float64")
_FALLBACK_LLC = 64 * 2**20
UNSTABLE = 1.25  # best/median ratio above which a ceiling is flagged


@dataclass(frozen=True)
class Plan:
    """How hard to calibrate: matrix order, array bytes for the stream kernel, repeats."""

    matmul_n: int
    stream_array_bytes: int
    warmup: int
    repeats: int


def plan(thorough: bool, llc_bytes: int | None, available_bytes: int | None) -> Plan:
    """Quick: 2048² matrices, the three stream arrays together 2× the LLC (≥ 192 MiB), 5 repeats;
    thorough: 4096², 4× (≥ 768 MiB), 10 repeats. A sequential stream over more than the cache
    gets no LRU hits. The arrays never take more than a quarter (thorough: a third) of free memory."""
    llc = llc_bytes or _FALLBACK_LLC
    factor, floor, share = (4, 768 * 2**20, 3) if thorough else (2, 192 * 2**20, 4)
    total = max(factor * llc, floor)
    if available_bytes:
        total = min(total, available_bytes // share)
    return Plan(4096 if thorough else 2048, total // 3, 2 if thorough else 1, 10 if thorough else 5)


def _rate_metrics(rate: str, rate_unit: str, amount: str, per_call: float, unit: str,
                  times: list[float]) -> list[Metric]:
    """Best and median rate (calibrated), fastest call (timed) and the work per call (analytic)."""
    return [
        Metric(rate, per_call / min(times), rate_unit, origin=CALIBRATED),
        Metric(f"{rate} (median)", per_call / statistics.median(times), rate_unit, origin=CALIBRATED),
        Metric("wall_time (min)", min(times), "second", origin=TIMED),
        Metric(amount, per_call, unit, origin=ANALYTIC),
    ]


def matmul_ceiling(dtype: str, n: int, warmup: int, repeats: int, index: int = 0) -> Launch:
    """FLOP/s of an n×n×n NumPy matrix product (2·n³ FLOPs per call) into a preallocated output."""
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, n)).astype(dtype)
    b = rng.uniform(-1, 1, (n, n)).astype(dtype)
    c = np.empty((n, n), dtype=dtype)
    times = time_calls([lambda: np.matmul(a, b, out=c)], warmup, repeats)
    return Launch("numpy.matmul", index, "cpu", 1,
                  {"dtype": dtype, "shape": f"{n}x{n}x{n}", "warmup": str(warmup), "repeats": str(repeats),
                   "statistic": f"best of {repeats}", "threads": "BLAS threads (all cores)"},
                  _rate_metrics("flop_rate", "FLOP/second", "flops", 2.0 * n**3, "FLOP", times))


def stream_ceiling(array_bytes: int, warmup: int, repeats: int, index: int = 0) -> Launch:
    """byte/s of ``np.add(a, b, out=c)`` in float32, counting 2 arrays read + 1 written per call."""
    import numpy as np

    count = max(1, array_bytes // 4)
    a = np.full(count, 1.0, dtype=np.float32)
    b = np.full(count, 2.0, dtype=np.float32)
    c = np.zeros(count, dtype=np.float32)
    times = time_calls([lambda: np.add(a, b, out=c)], warmup, repeats)
    return Launch("numpy.add", index, "cpu", 1,
                  {"dtype": "float32", "elements": str(count), "array_bytes": str(4 * count),
                   "warmup": str(warmup), "repeats": str(repeats), "statistic": f"best of {repeats}",
                   "threads": "1 (NumPy ufuncs are single-threaded)",
                   "bytes_counted": "2 arrays read + 1 written (write-allocate not counted)"},
                  _rate_metrics("bandwidth", "byte/second", "bytes", 3.0 * 4 * count, "byte", times))


def _blas() -> str:
    import numpy as np

    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas.get('name')} {blas.get('version')}"
    except (KeyError, TypeError, ValueError):
        return "unknown"


def calibrate(thorough: bool = False, command: str = "gpuprof calibrate", steps: Plan | None = None) -> Run:
    """Measure this machine's ceilings; the Run is ready to store."""
    import numpy as np

    from gpuprof.devices import cpu

    info = cpu.describe()
    steps = steps or plan(thorough, info.get("llc_bytes"), cpu.available_memory())
    if steps.matmul_n < 1 or steps.stream_array_bytes < 4 or steps.repeats < 1 or steps.warmup < 0:
        raise InputError(f"calibration plan {steps} has an empty size or no repeats",
                         "give positive sizes and at least one repeat")
    launches = [matmul_ceiling(dtype, steps.matmul_n, steps.warmup, steps.repeats, i)
                for i, dtype in enumerate(MATMUL_DTYPES)]
    launches.append(stream_ceiling(steps.stream_array_bytes, steps.warmup, steps.repeats, len(launches)))
    run = Run(kind=KIND, format=FORMAT, source=command, device={**info, "kind": "cpu"},
              environment={"host": info["host"], "platform": platform.platform(),
                           "python": sys.version.split()[0], "numpy": np.__version__, "blas": _blas(),
                           "timer": "time.perf_counter_ns around each call",
                           "plan": "thorough" if thorough else "quick"},
              launches=launches)
    run.notes += _notes(run, cpu.theoretical_peaks(info), steps)
    return run


def _notes(run: Run, theoretical: Peaks, steps: Plan) -> list[str]:
    notes = []
    llc = run.device.get("llc_bytes")
    if llc and 3 * steps.stream_array_bytes < 2 * llc:
        notes.append(f"stream arrays ({format_bytes(3 * steps.stream_array_bytes)} in all) are under 2× the "
                     f"last-level cache ({format_bytes(llc)}): the bandwidth may include cache hits")
    for launch in run.launches:
        rate = next(m for m in launch.metrics if m.origin == CALIBRATED)
        median = launch.value(f"{rate.name} (median)")
        if isinstance(rate.value, float) and isinstance(median, float) and rate.value > UNSTABLE * median:
            notes.append(f"{launch.kernel} {launch.attributes['dtype']} is unstable: best {rate.value / 1e9:.1f} "
                         f"vs median {median / 1e9:.1f} {'GFLOP/s' if rate.unit.startswith('FLOP') else 'GB/s'} "
                         "(a busy or shared host): "
                         + ("rerun when the host is quieter" if run.environment.get("plan") == "thorough"
                            else "rerun, or use --thorough for more repeats"))
    measured = peaks_from_run(run)
    for dtype, rate in measured.flops.items():
        peak = theoretical.flops_for(dtype)
        if peak and rate > peak:
            clock = theoretical.clock_hz or 0
            notes.append(f"measured {dtype} {rate / 1e9:.1f} GFLOP/s exceeds the theoretical "
                         f"{peak / 1e9:.1f} GFLOP/s at {clock / 1e9:.3f} GHz: the cores ran at about "
                         f"{clock * rate / peak / 1e9:.2f} GHz or more (turbo above the clock gpuprof can read)")
    return notes


def peaks_from_run(run: Run) -> Peaks:
    """The calibrated ceilings stored in one calibration Run."""
    flops: dict[str, float] = {}
    bandwidth = None
    parts = []
    for launch in run.launches:
        if launch.kernel == "numpy.matmul" and isinstance(launch.value("flop_rate"), float):
            flops[launch.attributes["dtype"]] = float(launch.value("flop_rate"))  # type: ignore[arg-type]
            parts.append(f"{launch.attributes['dtype']} matmul {launch.attributes['shape']}")
        elif launch.kernel == "numpy.add" and isinstance(launch.value("bandwidth"), float):
            bandwidth = float(launch.value("bandwidth"))  # type: ignore[arg-type]
            parts.append(f"np.add 3 × {format_bytes(int(launch.attributes['array_bytes']))} (1 thread)")
    statistic = run.launches[0].attributes.get("statistic", "best") if run.launches else "best"
    source = f"gpuprof calibrate, {run.environment.get('host', '?')} {run.created[:10]}: {statistic}, {'; '.join(parts)}"
    return Peaks(device=run.device.get("name", "cpu"), flops=flops, bandwidth=bandwidth, clock_hz=None,
                 origin=CALIBRATED, source=source,
                 notes=("measured at whatever clock the cores ran (not controlled)",
                        "float16 not calibrated: NumPy has no half-precision BLAS"))


def load_calibration(store: Store, host: str) -> Peaks | None:
    """The newest stored calibration of ``host`` as Peaks, or None when it was never calibrated."""
    found = [run for run in store.runs() if run.kind == KIND and run.environment.get("host") == host]
    return peaks_from_run(found[-1]) if found else None  # runs() is oldest first


def summary_rows(run: Run) -> list[dict[str, Any]]:
    """One row per ceiling, beside the theoretical peak it can be compared with."""
    from gpuprof.devices.cpu import theoretical_peaks

    theoretical = theoretical_peaks(run.device)
    measured = peaks_from_run(run)
    rows = []
    for dtype, rate in measured.flops.items():
        peak = theoretical.flops_for(dtype)
        rows.append({"ceiling": f"FLOP/s {dtype} (matmul)", "value": rate / 1e9, "unit": "GFLOP/s",
                     "origin": CALIBRATED, "theoretical": peak / 1e9 if peak else None,
                     "% of theoretical": 100 * rate / peak if peak else None})
    if measured.bandwidth:
        rows.append({"ceiling": "bandwidth (np.add)", "value": measured.bandwidth / 1e9, "unit": "GB/s",
                     "origin": CALIBRATED, "theoretical": None, "% of theoretical": None})
    return rows
