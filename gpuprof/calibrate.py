"""Measured ceilings of this machine, the yardstick when theoretical peaks are guesses.

In a VM the clock, the FMA units and the memory system are hidden, so ``gpuprof calibrate`` times
what NumPy can reach: a large matrix product per dtype (FLOP/s, BLAS on all cores) and ``np.add``
into a preallocated output over arrays far larger than the last-level cache (byte/s counting the
two arrays read and the one written; the write-allocate read that a cached store also costs is
not counted, as STREAM does not count it). Each is timed until it is stable (the fastest calls
agree within :data:`STABLE_WITHIN`) and reported as the fastest call. The result is a Run (kind
``calibration``) in the results store.

One bad calibration (another process held a core) must not poison every later run, so nothing
takes the newest calibration on trust: :func:`best_calibration` gives, per ceiling, the highest
*stable* value among all calibrations of the host; an unstable ceiling, or one under half the
theoretical peak at the clock probed after it (:data:`FAR_BELOW`), is stored but never used. The
command compares each new value with the theoretical peak and with those earlier calibrations
and says which value stays in use.
"""

from __future__ import annotations

import platform
import statistics
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from gpuprof.devices import cpu
from gpuprof.devices.clock_probe import probe
from gpuprof.devices.peaks import Peaks
from gpuprof.errors import InputError
from gpuprof.model import ANALYTIC, CALIBRATED, CALIBRATION, TIMED, Launch, Metric, Run
from gpuprof.model.sizes import format_bytes
from gpuprof.store import Store
from gpuprof.workloads.timing import Progress, time_calls

KIND = CALIBRATION
FAR_BELOW = 50.0  # % of the theoretical peak at the probed clock below which a ceiling is stored, not used
FORMAT = "cpu-calibrate"
MATMUL_DTYPES = ("float32", "float64")
_FALLBACK_LLC = 64 * 2**20
STABLE_CALLS = 3  # the fastest this many calls ...
STABLE_WITHIN = 0.05  # ... within 5 % of each other: a stable ceiling
LOW_SHARE = 0.6  # a matmul below this share of the theoretical peak: the host was probably busy


@dataclass(frozen=True)
class CalibrationPlan:
    """How hard to calibrate: matrix order, array bytes for the stream kernel, repeats (at least
    ``repeats`` timed calls, more until stable while their time stays under ``budget_s``)."""

    matmul_n: int
    stream_array_bytes: int
    warmup: int
    repeats: int
    budget_s: float = 6.0


def plan(thorough: bool, llc_bytes: int | None, available_bytes: int | None) -> CalibrationPlan:
    """Quick: 2048² matrices, the three stream arrays together 2× the LLC (≥ 192 MiB), at least 5
    calls and up to 6 s of them per ceiling; thorough: 4096², 4× (≥ 768 MiB), 10 calls, up to 30 s.
    A budget in seconds, not calls, gives cheap calls (np.add) as many more tries as they need. A
    sequential stream over more than the cache
    gets no LRU hits. The arrays never take more than a quarter (thorough: a third) of free memory."""
    llc = llc_bytes or _FALLBACK_LLC
    factor, floor, share = (4, 768 * 2**20, 3) if thorough else (2, 192 * 2**20, 4)
    total = max(factor * llc, floor)
    if available_bytes:
        total = min(total, available_bytes // share)
    return CalibrationPlan(
        4096 if thorough else 2048, total // 3, 2 if thorough else 1, 10 if thorough else 5, 30.0 if thorough else 6.0
    )


def spread_of_fastest(times: list[float]) -> float | None:
    """How far apart the :data:`STABLE_CALLS` fastest calls are (slowest of them / fastest - 1)."""
    fastest = sorted(times)[:STABLE_CALLS]
    return fastest[-1] / fastest[0] - 1 if len(fastest) == STABLE_CALLS and fastest[0] > 0 else None


def stable_times(
    call: Callable[[], object], steps: CalibrationPlan, progress: Progress | None = None
) -> tuple[list[float], bool]:
    """Times of at least ``steps.repeats`` calls, more until the fastest agree or the calls have
    taken ``steps.budget_s``; ``progress`` hears of each call (after the repeats: seconds spent of
    the budget)."""
    times = time_calls([call], steps.warmup, steps.repeats, progress=progress)
    while sum(times) < steps.budget_s and not _settled(times):
        times += time_calls([call], 0, 1)
        if progress:
            progress("until stable (seconds)", min(int(sum(times)), int(steps.budget_s)), int(steps.budget_s))
    return times, _settled(times)


def _settled(times: list[float]) -> bool:
    spread = spread_of_fastest(times)
    return spread is not None and spread <= STABLE_WITHIN


def _rate_metrics(
    rate: str, rate_unit: str, amount: str, per_call: float, unit: str, times: list[float]
) -> list[Metric]:
    """Best and median rate (calibrated), fastest call (timed) and the work per call (analytic)."""
    return [
        Metric(rate, per_call / min(times), rate_unit, origin=CALIBRATED),
        Metric(f"{rate} (median)", per_call / statistics.median(times), rate_unit, origin=CALIBRATED),
        Metric("wall_time (min)", min(times), "second", origin=TIMED),
        Metric(amount, per_call, unit, origin=ANALYTIC),
    ]


def _timing_attributes(times: list[float], stable: bool, warmup: int) -> dict[str, str]:
    spread = spread_of_fastest(times)
    return {
        "warmup": str(warmup),
        "repeats": str(len(times)),
        "statistic": f"best of {len(times)}",
        "stable": "yes" if stable else "no",
        "spread_of_fastest": f"{100 * spread:.1f} %" if spread is not None else "n/a",
    }


def _step(progress: Progress | None, what: str) -> Progress | None:
    """``progress`` with each step named after the ceiling being measured."""
    if progress is None:
        return None
    return lambda phase, done, total: progress(f"{what}: {phase}", done, total)


def matmul_ceiling(dtype: str, steps: CalibrationPlan, index: int = 0, progress: Progress | None = None) -> Launch:
    """FLOP/s of an n×n×n NumPy matrix product (2·n³ FLOPs per call) into a preallocated output,
    with the core clock probed right after it."""
    import numpy as np

    n = steps.matmul_n
    say = _step(progress, f"{dtype} matmul {n}²")
    if say:
        say("operands", 0, 1)
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, n)).astype(dtype)
    b = rng.uniform(-1, 1, (n, n)).astype(dtype)
    c = np.empty((n, n), dtype=dtype)
    times, stable = stable_times(lambda: np.matmul(a, b, out=c), steps, say)
    clock = probe()
    return Launch(
        "numpy.matmul",
        index,
        "cpu",
        1,
        {
            "dtype": dtype,
            "shape": f"{n}x{n}x{n}",
            **_timing_attributes(times, stable, steps.warmup),
            "threads": "BLAS threads (all cores)",
            "clock_hz": str(clock.hz) if clock.hz else "",
            "clock_source": clock.method,
        },
        _rate_metrics("flop_rate", "FLOP/second", "flops", 2.0 * n**3, "FLOP", times),
    )


def stream_ceiling(steps: CalibrationPlan, index: int = 0, progress: Progress | None = None) -> Launch:
    """byte/s of ``np.add(a, b, out=c)`` in float32, counting 2 arrays read + 1 written per call."""
    import numpy as np

    count = max(1, steps.stream_array_bytes // 4)
    say = _step(progress, "np.add")
    if say:
        say(f"arrays (3 × {format_bytes(4 * count)})", 0, 1)
    a = np.full(count, 1.0, dtype=np.float32)
    b = np.full(count, 2.0, dtype=np.float32)
    c = np.zeros(count, dtype=np.float32)
    times, stable = stable_times(lambda: np.add(a, b, out=c), steps, say)
    return Launch(
        "numpy.add",
        index,
        "cpu",
        1,
        {
            "dtype": "float32",
            "elements": str(count),
            "array_bytes": str(4 * count),
            **_timing_attributes(times, stable, steps.warmup),
            "threads": "1 (NumPy ufuncs are single-threaded)",
            "bytes_counted": "2 arrays read + 1 written (write-allocate not counted)",
        },
        _rate_metrics("bandwidth", "byte/second", "bytes", 3.0 * 4 * count, "byte", times),
    )


def _blas() -> str:
    import numpy as np

    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas.get('name')} {blas.get('version')}"
    except (KeyError, TypeError, ValueError):
        return "unknown"


def calibrate(
    thorough: bool = False,
    command: str = "gpuprof calibrate",
    steps: CalibrationPlan | None = None,
    progress: Progress | None = None,
) -> Run:
    """Measure this machine's ceilings; the Run is ready to store. ``progress`` hears of each step."""
    import numpy as np

    info = cpu.describe()
    steps = steps or plan(thorough, info.get("llc_bytes"), cpu.available_memory())
    if steps.matmul_n < 1 or steps.stream_array_bytes < 4 or steps.repeats < 1 or steps.warmup < 0:
        raise InputError(
            f"calibration plan {steps} has an empty size or no repeats", "give positive sizes and at least one repeat"
        )
    launches = [matmul_ceiling(dtype, steps, i, progress) for i, dtype in enumerate(MATMUL_DTYPES)]
    launches.append(stream_ceiling(steps, len(launches), progress))
    run = Run(
        kind=KIND,
        format=FORMAT,
        source=command,
        device={**info, "kind": "cpu"},
        environment={
            "host": info["host"],
            "platform": platform.platform(),
            "python": sys.version.split()[0],
            "numpy": np.__version__,
            "blas": _blas(),
            "timer": "time.perf_counter_ns around each call",
            "plan": "thorough" if thorough else "quick",
        },
        launches=launches,
    )
    run.notes += _notes(run, cpu.theoretical_peaks(info), steps)
    return run


def _notes(run: Run, theoretical: Peaks, steps: CalibrationPlan) -> list[str]:
    """What to know about this calibration on its own: arrays inside the cache, ceilings that did
    not settle, and matmul rates far from the theoretical peak at the clock probed after them."""
    notes = []
    llc = run.device.get("llc_bytes")
    if llc and 3 * steps.stream_array_bytes < 2 * llc:
        notes.append(
            f"stream arrays ({format_bytes(3 * steps.stream_array_bytes)} in all) are under 2× the "
            f"last-level cache ({format_bytes(llc)}): the bandwidth may include cache hits"
        )
    for ceiling in ceilings(run):
        if not ceiling.stable:
            notes.append(
                f"{ceiling.what} did not settle: its {STABLE_CALLS} fastest of "
                f"{ceiling.launch.attributes['repeats']} calls differ by "
                f"{ceiling.launch.attributes['spread_of_fastest']} (a busy or shared host), so this "
                "ceiling is not used: "
                + (
                    "rerun when the host is idle"
                    if run.environment.get("plan") == "thorough"
                    else "rerun when the host is idle, or use --thorough"
                )
            )
        peak, clock = theoretical_at_probe(ceiling, theoretical)
        if peak is None:
            continue
        share = ceiling.value / peak
        if share > 1:
            notes.append(
                f"{ceiling.what} {ceiling.text} exceeds the theoretical {peak / 1e9:.1f} GFLOP/s at "
                f"{clock}: the cores ran faster than that clock, or the FMA-unit count is assumed"
            )
        elif share < LOW_SHARE:
            notes.append(
                f"{ceiling.what} {ceiling.text} is only {100 * share:.0f} % of the theoretical "
                f"{peak / 1e9:.1f} GFLOP/s at {clock}: another process may have held a core, or BLAS "
                "used fewer threads than cores; rerun when the host is idle"
            )
    return notes


@dataclass(frozen=True)
class CalibratedCeiling:
    """One measured ceiling of one calibration run: matmul FLOP/s of a dtype, or np.add bandwidth."""

    key: str  # "float32", "float64" or "bandwidth"
    value: float  # FLOP/s or byte/s, the fastest call
    stable: bool  # its fastest calls agreed (runs stored before stability was checked count as stable)
    run: Run
    launch: Launch

    @property
    def label(self) -> str:
        return "np.add bandwidth" if self.key == "bandwidth" else f"{self.key} matmul"

    @property
    def what(self) -> str:
        if self.key == "bandwidth":
            return f"np.add 3 × {format_bytes(int(self.launch.attributes['array_bytes']))} (1 thread)"
        return f"{self.key} matmul {self.launch.attributes['shape']}"

    @property
    def text(self) -> str:
        return f"{self.value / 1e9:.1f} {'GB/s' if self.key == 'bandwidth' else 'GFLOP/s'}"


def ceilings(run: Run) -> list[CalibratedCeiling]:
    """The ceilings one calibration run measured, stable or not."""
    found = []
    for launch in run.launches:
        stable = launch.attributes.get("stable", "yes") != "no"
        if launch.kernel == "numpy.matmul" and isinstance(launch.value("flop_rate"), float):
            found.append(
                CalibratedCeiling(
                    launch.attributes["dtype"],
                    float(launch.value("flop_rate")),  # type: ignore[arg-type]
                    stable,
                    run,
                    launch,
                )
            )
        elif launch.kernel == "numpy.add" and isinstance(launch.value("bandwidth"), float):
            bandwidth = float(launch.value("bandwidth"))  # type: ignore[arg-type]
            found.append(CalibratedCeiling("bandwidth", bandwidth, stable, run, launch))
    return found


def theoretical_at_probe(ceiling: CalibratedCeiling, theoretical: Peaks) -> tuple[float | None, str]:
    """The theoretical peak for a matmul ceiling at the clock probed right after it (else at the
    peak's own clock), and that clock in words; None for bandwidth or without a peak."""
    peak = theoretical.flops_for(ceiling.key)
    if ceiling.key == "bandwidth" or not peak or not theoretical.clock_hz:
        return None, ""
    probed = float(ceiling.launch.attributes.get("clock_hz") or 0)
    if probed:
        return peak * probed / theoretical.clock_hz, f"the {probed / 1e9:.3g} GHz probed after it"
    source = ceiling.run.device.get("clock_source", "clock source unknown")
    return peak, f"{theoretical.clock_hz / 1e9:.3g} GHz ({source})"


def not_used(ceiling: CalibratedCeiling) -> str:
    """Why ``ceiling`` is stored but never used ('' when it may be): its fastest calls did not
    agree, or it is under :data:`FAR_BELOW` % of the theoretical peak at the clock probed after it
    (a busy host or a throttled core measured it: runs judged against it would read far above 100 %)."""
    if not ceiling.stable:
        return "unstable"
    if ceiling.key == "bandwidth" or "fp_units" not in ceiling.run.device:
        return ""
    peak, clock = theoretical_at_probe(ceiling, cpu.theoretical_peaks(ceiling.run.device))
    if peak and ceiling.value < FAR_BELOW / 100 * peak:
        return (
            f"{100 * ceiling.value / peak:.0f} % of the theoretical {peak / 1e9:.4g} GFLOP/s at {clock}, "
            f"under {FAR_BELOW:.0f} %: a busy host or a throttled core"
        )
    return ""


def best_ceilings(runs: Iterable[Run]) -> dict[str, CalibratedCeiling]:
    """Per ceiling, the highest usable value among ``runs`` (:func:`not_used`): a busy host only
    ever measures less, so the best stable value is the machine's, and one bad calibration cannot
    replace it."""
    best: dict[str, CalibratedCeiling] = {}
    for run in runs:
        for ceiling in ceilings(run):
            if not not_used(ceiling) and (ceiling.key not in best or ceiling.value > best[ceiling.key].value):
                best[ceiling.key] = ceiling
    return best


def calibrations(runs: Iterable[Run], host: str, device: str | None = None) -> list[Run]:
    """The calibration runs of ``host`` (and of the CPU named ``device``, when given)."""
    return [
        run
        for run in runs
        if run.kind == KIND
        and run.environment.get("host") == host
        and (device is None or run.device.get("name") == device)
    ]


def peaks_from_runs(runs: list[Run]) -> Peaks | None:
    """The best stable ceilings of some calibration runs (of one host) as Peaks, saying which run
    each came from; None when none of them has a stable ceiling."""
    best = best_ceilings(runs)
    if not best:
        return None
    parts = [
        f"{c.what} {c.text} ({c.run.run_id[:8]}, {c.run.created[:10]}, {c.launch.attributes.get('statistic', 'best')})"
        for c in best.values()
    ]
    first = next(iter(best.values())).run
    return Peaks(
        device=first.device.get("name", "cpu"),
        flops={key: c.value for key, c in best.items() if key != "bandwidth"},
        bandwidth=best["bandwidth"].value if "bandwidth" in best else None,
        clock_hz=None,
        origin=CALIBRATED,
        source=(
            f"gpuprof calibrate on {first.environment.get('host', '?')}, best stable value of "
            f"{len(runs)} calibration(s): {'; '.join(parts)}"
        ),
        notes=(
            "measured at whatever clock the cores ran (not controlled)",
            "float16 not calibrated: NumPy has no half-precision BLAS",
        ),
    )


def load_calibration(store: Store, host: str, device: str | None = None) -> Peaks | None:
    """The best stable calibrated ceilings of ``host`` as Peaks, or None when it has none."""
    return peaks_from_runs(calibrations(store.runs(KIND), host, device))


def summary_rows(run: Run, earlier: list[Run] | None = None) -> list[dict[str, Any]]:
    """One row per ceiling of ``run``: its value, the theoretical peak at the clock probed after it,
    whether it settled, and which value runs will use (``earlier``: the host's other calibrations)."""
    theoretical = cpu.theoretical_peaks(run.device)
    best = best_ceilings([*(earlier or []), run])
    rows = []
    for ceiling in ceilings(run):
        peak, _ = theoretical_at_probe(ceiling, theoretical)
        chosen = best.get(ceiling.key)
        rows.append(
            {
                "ceiling": ceiling.label,
                "value": ceiling.value / 1e9,
                "unit": "GB/s" if ceiling.key == "bandwidth" else "GFLOP/s",
                "origin": CALIBRATED,
                "theory": peak / 1e9 if peak else None,
                "% of theory": 100 * ceiling.value / peak if peak else None,
                "stable": f"{'yes' if ceiling.stable else 'NO'} "
                f"({ceiling.launch.attributes.get('spread_of_fastest', 'n/a')})",
                "in use": _in_use(ceiling, chosen),
            }
        )
    return rows


def listing_rows(runs: list[Run]) -> list[dict[str, Any]]:
    """One row per ceiling of each calibration in ``runs`` (``gpuprof show --kind calibration``):
    as :func:`summary_rows`, judged among the calibrations in ``runs`` of the same host and CPU."""
    rows = []
    for run in runs:
        if run.kind != KIND:
            continue
        host = run.environment.get("host", "")
        others = [r for r in calibrations(runs, host, run.device.get("name")) if r is not run]
        best = best_ceilings([*others, run])
        for ceiling, row in zip(ceilings(run), summary_rows(run, others)):
            used = _used(ceiling, best.get(ceiling.key))
            why = not_used(ceiling)
            rows.append(
                {
                    "run": run.run_id[:8],
                    "created": run.created[:16],
                    "host": host,
                    **row,
                    "in use": used,
                    "why not used": "" if used == "this" else _why_not(why),
                }
            )
    return rows


def _in_use(ceiling: CalibratedCeiling, chosen: CalibratedCeiling | None) -> str:
    """'this', or the calibration whose value is used instead, with why this one is not where it is not."""
    instead = _used(ceiling, chosen)
    why = not_used(ceiling)
    return f"{instead} (not this: {why})" if instead != "this" and why and why != "unstable" else instead


def _why_not(why: str) -> str:
    return {"unstable": "did not settle", "": "another stable value as high or higher is in use"}.get(why, why)


def _used(ceiling: CalibratedCeiling, chosen: CalibratedCeiling | None) -> str:
    """'this', the calibration whose value runs use instead (id: value), or 'none'."""
    if chosen is not None and chosen.launch is ceiling.launch:
        return "this"
    return f"{chosen.run.run_id[:8]}: {chosen.value / 1e9:.4g}" if chosen else "none"


def review(run: Run, earlier: list[Run]) -> list[str]:
    """How the new ceilings compare with the host's earlier calibrations, and which value stays in use."""
    best = best_ceilings([*earlier, run])
    notes = []
    for ceiling in ceilings(run):
        chosen = best.get(ceiling.key)
        if chosen is None or chosen.launch is ceiling.launch or not ceiling.stable:
            continue
        notes.append(
            f"{ceiling.what} {ceiling.text} is {100 * ceiling.value / chosen.value:.0f} % of the "
            f"{chosen.text} that calibration {chosen.run.run_id[:8]} ({chosen.run.created[:10]}) measured on "
            "this host; that one stays in use (a busy host only measures less)"
        )
    return notes
