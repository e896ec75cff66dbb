"""One measurement: settings in, a :class:`gpuprof.model.Run` out.

This is the session the ``run`` command (and sweeps) call. It picks the device, builds the workload
with the chosen engine, checks the engine's answer against a float64 reference before timing
anything, times warm-up and repeats, counts hardware events where the machine allows, and records
everything needed to reproduce and judge the numbers. Deriving FLOP/s and efficiencies from the
Run is :mod:`gpuprof.derive.summary`'s job.
"""

from __future__ import annotations

import dataclasses
import math
import os
import platform
import sys
import time
from typing import Any

from gpuprof import workloads
from gpuprof.calibrate import load_calibration
from gpuprof.devices import clock_probe, cpu
from gpuprof.devices.cpu import available_memory, last_level_cache_bytes
from gpuprof.energy import open_energy
from gpuprof.errors import InputError
from gpuprof.launch import gpu_session
from gpuprof.launch.perf import open_counters
from gpuprof.launch.settings import CACHE_MODES, DEVICES, RunSettings
from gpuprof.model import TIMED, Launch, Metric, Run
from gpuprof.model.sizes import format_bytes
from gpuprof.store import default_path, open_store
from gpuprof.workloads import compile_time, gpu_only, numpy_engine, ops
from gpuprof.workloads.reference import SCALAR, check_result, make_inputs, reference
from gpuprof.workloads.timing import time_calls

__all__ = ["CACHE_MODES", "DEVICES", "MEMORY_SHARE", "RunSettings", "choose_device", "measure"]

# Refuse sizes that would need more than this share of the memory available now.
MEMORY_SHARE = 0.8


SLOW_SAMPLE_BYTES = 256 * 1024  # the small float16 sample timed to predict a run's length


def slow_dtype_warning(settings: RunSettings) -> str | None:
    """For float16 on the CPU with NumPy (which computes it in software loops, minutes where float32
    takes seconds): the expected time of the whole run, from a small sample timed now."""
    import numpy as np

    if settings.dtype != "float16" or (settings.engine or "numpy") != "numpy" or settings.device == "cuda":
        return None
    shape = settings.resolved_shape()
    sample = ops.shape_for_size(settings.op, SLOW_SAMPLE_BYTES, "float16")
    inputs = make_inputs(settings.op, sample, "float16", np.random.default_rng(0))
    out = np.zeros((sample[0], sample[2]) if settings.op == "dot" else sample, dtype="float16")
    call = numpy_engine.prepare(settings.op, inputs, SCALAR, out)
    call()
    started = time.perf_counter()
    call()
    rate = ops.flops(settings.op, sample) / max(time.perf_counter() - started, 1e-9)
    calls = settings.warmup + settings.repeat + 1  # the first call is checked against a reference
    expected = ops.flops(settings.op, shape) * calls / rate
    if expected < 10:
        return None
    return (
        f"float16 on the CPU: NumPy computes it in software loops ({rate / 1e6:,.0f} MFLOP/s on a small "
        f"sample just now), so these {calls} calls take about {expected:,.0f} s. float32 runs in hardware: "
        "--dtype float32"
    )


def choose_device(requested: str) -> tuple[str, str]:
    """The device to use and why: ``auto`` takes CUDA when a GPU is usable, else the CPU."""
    if requested == "cpu":
        return "cpu", "requested with --device cpu"
    usable, reason = gpu_session.probe_gpu()
    if requested == "cuda":
        return "cuda", "requested with --device cuda"
    if usable:
        return "cuda", f"--device auto found a usable GPU ({reason})"
    return "cpu", f"--device auto found no usable GPU ({reason})"


def _requested_device(settings: RunSettings) -> str:
    """``auto`` with a GPU-only engine (cupy, cuda-kernels) means the GPU: the engine decides."""
    if settings.device == "auto" and gpu_only(settings.engine):
        return "cuda"
    return settings.device


def measure(settings: RunSettings, store_path: str | None = None) -> Run:
    """Measure one op at one size; the Run says which device and why.

    ``store_path`` is only read here (for this host's calibrated ceilings); storing the Run is the
    caller's choice.
    """
    shape = settings.resolved_shape()
    device, why = choose_device(_requested_device(settings))
    if settings.device == "auto" and device == "cuda" and _requested_device(settings) == "cuda":
        why = f"engine {settings.engine} runs only on a GPU (--device auto)"  # not typed: --device cuda
    if device == "cuda":
        run = gpu_session.run_gpu(settings, shape)
    else:
        run = _measure_cpu(settings, shape, store_path)
    run.device["chosen_because"] = why
    return run


def _buffer_sets(settings: RunSettings, footprint: int) -> int:
    """How many operand sets the timed loop rotates through: 1 warm; enough to exceed 2× LLC cold."""
    if settings.cache == "warm":
        return 1

    llc = last_level_cache_bytes() or 64 * 2**20
    return max(2, math.ceil(2 * llc / footprint) + 1)


def _check_memory(settings: RunSettings, shape: tuple[int, ...], sets: int) -> None:
    footprint = ops.footprint(settings.op, shape, settings.dtype)
    reference = ops.footprint(settings.op, shape, "float64")
    needed = footprint * sets + reference

    available = available_memory()
    if available is not None and needed > MEMORY_SHARE * available:
        raise InputError(
            f"{settings.op} at shape {ops.shape_text(shape)} needs about {format_bytes(needed)} of memory "
            f"(operands, reference check{', cold-cache copies' if sets > 1 else ''}); "
            f"{format_bytes(available)} is available",
            "give a smaller --size or --shape",
        )


def _load_engine(settings: RunSettings) -> tuple[Any, list[str]]:
    """The engine module, with a note when ``theano`` fell back to PyTensor."""
    return workloads.resolve(settings.engine or workloads.DEFAULT["cpu"], "cpu")


def _environment(settings: RunSettings, engine: Any) -> dict[str, Any]:
    import numpy as np

    env: dict[str, Any] = {
        "host": platform.node(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "engine_version": engine.version(),
        "command": settings.command,
        "timer": "time.perf_counter_ns around each call"
        + (f", which waits for {engine.WAITS['cpu']}" if hasattr(engine, "WAITS") else ""),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
    }
    try:
        from threadpoolctl import threadpool_info

        env["thread_pools"] = [
            {k: p.get(k) for k in ("internal_api", "version", "num_threads")} for p in threadpool_info()
        ]
    except ImportError:
        pass
    return env


def _measure_cpu(settings: RunSettings, shape: tuple[int, ...], store_path: str | None) -> Run:
    import numpy as np

    footprint = ops.footprint(settings.op, shape, settings.dtype)
    sets = _buffer_sets(settings, footprint)
    _check_memory(settings, shape, sets)
    engine, notes = _load_engine(settings)
    if settings.gpu:  # --device auto found no GPU
        notes.append(f"{settings.gpu_options()} ignored: no GPU was used, so no GPU profiler ran")
    rng = np.random.default_rng(settings.seed)
    out_shape = (shape[0], shape[2]) if settings.op == "dot" else shape
    say = settings.progress or (lambda phase, done, total: None)  # the silent steps before the timed calls
    say(f"operands ({format_bytes(footprint * sets)})", 0, 3)
    operand_sets = [make_inputs(settings.op, shape, settings.dtype, rng) for _ in range(sets)]
    # written once now, so no timed call pays for first-touch page faults of its output
    outputs = [np.full(out_shape, 0, dtype=settings.dtype) for _ in range(sets)]
    placed = [workloads.place(engine, ins, "cpu") for ins in operand_sets]
    started = time.perf_counter()
    calls = [
        workloads.blocking(engine, engine.prepare(settings.op, ins, SCALAR, out)) for ins, out in zip(placed, outputs)
    ]
    prepare_s = time.perf_counter() - started
    say("first call", 1, 3)
    result, first_s = compile_time.first_call(engine, calls[0], settings.op, settings.dtype, "cpu")
    say("float64 reference check", 2, 3)
    error = check_result(
        settings.op,
        settings.dtype,
        engine.NAME,
        workloads.to_host(engine, result),
        reference(settings.op, operand_sets[0]),
    )

    counters, counter_notes = _counters(settings)
    meter, energy_notes = open_energy("cpu")
    notes += counter_notes + energy_notes
    try:
        times = time_calls(
            calls,
            settings.warmup,
            settings.repeat,
            around=[c for c in (counters, meter) if c is not None],
            progress=settings.progress,
        )
    finally:
        if counters is not None:  # stops perf and removes its FIFOs and log, Ctrl-C or not
            counters.close()
    probed = clock_probe.probe()  # at once, while the cores are still at the clock of the repeats

    info = cpu.describe()
    kernel = f"{engine.NAME}:{settings.op}"
    launches = [
        Launch(
            kernel,
            i,
            info.get("name", "cpu"),
            1,
            {"buffer_set": str((settings.warmup + i) % sets)},
            [Metric("wall_time", t, "second", "kernel_duration", TIMED)],
        )
        for i, t in enumerate(times)
    ]
    launches += compile_time.launch(
        getattr(engine, "COMPILER", None), kernel, info.get("name", "cpu"), len(launches), prepare_s, first_s
    )
    clock = (probed.hz, f"{probed.method} (measured)") if probed.hz else None
    for session, scope in ((counters, "perf stat"), (meter, "energy")):
        if session is None:
            continue
        recorded = session.metrics()
        if recorded:
            launches.append(
                Launch(
                    kernel,
                    len(launches),
                    info.get("name", "cpu"),
                    settings.repeat,
                    {"scope": f"all timed repeats ({scope})"},
                    recorded,
                )
            )
            clock = _counted_clock(recorded) or clock
        notes += session.notes
    peaks = [cpu.theoretical_peaks(info)]
    calibrated = _calibrated_peaks(info, store_path)
    if calibrated is not None:
        peaks.append(calibrated)
    device = {**info, "kind": "cpu", "peaks": [dataclasses.asdict(p) for p in peaks]}
    if clock is not None:
        device["clock_during_run_hz"], device["clock_during_run_source"] = clock
    else:
        device["clock_during_run_source"] = f"unknown: perf counted no cycles here, and {probed.method}"
    workload = {
        "op": settings.op,
        "formula": ops.get_op(settings.op).formula,
        "dtype": settings.dtype,
        "shape": list(shape),
        "size_bytes": footprint,
        "requested": settings.size or settings.shape,
        "engine": engine.NAME,
        "requested_engine": settings.engine or engine.NAME,
        "repeat": settings.repeat,
        "warmup": settings.warmup,
        "cache": settings.cache,
        "buffer_sets": sets,
        "relative_error": error,
        "seed": settings.seed,
    }
    return Run(
        kind="run",
        format=f"cpu-{engine.NAME}",
        source=settings.command,
        device=device,
        workload=workload,
        environment=_environment(settings, engine),
        launches=launches,
        notes=notes,
    )


def _counters(settings: RunSettings) -> tuple[Any, list[str]]:
    """A perf counter session for the timed region, or None with the reason in a note."""
    if not settings.counters:
        return None, ["hardware counters off (--no-counters); FLOPs are analytic"]

    return open_counters()


def _counted_clock(metrics: list[Metric]) -> tuple[float, str] | None:
    """The average core clock over the timed repeats: counted cycles / task-clock seconds."""
    values = {m.name.split("/")[-1].split(":")[0]: m.value for m in metrics if isinstance(m.value, (int, float))}
    cycles, busy = values.get("cycles"), values.get("task-clock")
    if cycles and busy:
        return cycles / busy, "perf: cycles / task-clock over the timed repeats (measured)"
    return None


def _calibrated_peaks(info: dict[str, Any], store_path: str | None) -> Any:
    from pathlib import Path

    path = Path(store_path) if store_path else default_path()
    if not path.exists():  # no store yet: nothing calibrated
        return None
    with open_store(path, read_only=True) as store:
        return load_calibration(store, info.get("host") or platform.node(), info.get("name"))
