"""One GPU measurement: detect the device, pick a profiler, run the workload child under it, keep
every file in ``reports/<run-id>/``, read the profiler's output back with gpuprof's own readers,
and return one :class:`gpuprof.model.Run`.

The Run holds two kinds of launches, told apart by ``attributes["phase"]``:

* ``timed``: one per ``--repeat``, the CUDA-event time per call of a batch of unprofiled calls
  (origin ``timed``; the batch size is in ``attributes["batch"]``, how it was issued in
  ``environment["timer"]``);
* ``profiled``: what the profiler reported for the ``--profiled`` calls inside the NVTX range
  (origin ``measured``: kernel duration at the profiler's clocks, FLOP counts, DRAM bytes, stalls),
  read back by :mod:`gpuprof.launch.gpu_readback`.

A third, ``energy``, is one launch over all timed repeats holding NVML's energy and power, when
the child could meter them (otherwise ``Run.notes`` says why).

When counters are unavailable (no profiler installed, ``--profiler none``, ``--no-counters``,
ERR_NVGPUCTRPERM, or a profiler that failed) the run still has its timed launches, FLOPs stay
analytic, and ``Run.notes`` says in one line why and what would enable counters. A profiler that
stops before the workload wrote its result (ncu refusing an unknown metric name, say) makes the
workload run again without it, so the event timing is kept. Subprocesses get a list argv (never a shell) and a timeout; their
stdout and stderr are kept in the run folder.
"""

from __future__ import annotations

import dataclasses
import json
import platform
import shlex
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuprof import errors
from gpuprof.devices import gpu_detect, gpu_table
from gpuprof.energy import from_record
from gpuprof.errors import DeviceError, GpuprofError, InputError, ProfilerError
from gpuprof.launch import process, profilers
from gpuprof.launch.gpu_readback import collect, error_lines, failed, profiler_text
from gpuprof.launch.settings import RunSettings
from gpuprof.model import TIMED, Launch, Metric, Run
from gpuprof.workloads import CUDA_INSTALL, compile_time, engine_names, gpu_only, ops

if TYPE_CHECKING:
    from gpuprof.devices.gpu_detect import GpuInfo

DEFAULT_TIMEOUT_S = 1800.0
DEFAULT_PROFILED = 3  # calls run under the profiler: each is replayed once per pass, so few are enough
RESULT_NAME = "child.json"
RETRY_DIR = "without-profiler"
NO_COUNTERS = profilers.Choice("none", "hardware counters off (--no-counters): time from CUDA events, FLOPs analytic")


@dataclass(frozen=True)
class GpuOptions:
    """The GPU-only options of ``gpuprof run`` (``RunSettings.gpu``), validated."""

    profiler: str = "auto"  # auto, ncu, nvprof, none, or the path to an ncu/nvprof executable
    profiled: int = DEFAULT_PROFILED
    batch: int = 0  # calls per timed repeat; 0 lets the child pick (launch/child.py)
    clock_control: str = "base"
    cache_control: str = "all"
    replay_mode: str = "kernel"
    reports_dir: Path = Path("reports")
    timeout: float = DEFAULT_TIMEOUT_S

    @classmethod
    def from_dict(cls, given: dict[str, Any]) -> GpuOptions:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(given) - known)
        if unknown:
            raise InputError(f"unknown GPU option(s): {', '.join(unknown)}", f"use: {', '.join(sorted(known))}")
        values = {k: v for k, v in given.items() if v is not None}
        if "reports_dir" in values:
            values["reports_dir"] = Path(values["reports_dir"])
        options = cls(**values)
        if options.profiled < 1 or options.batch < 0:
            raise InputError("--profiled must be at least 1 and the batch size at least 0", "e.g. --profiled 3")
        if options.timeout <= 0:
            raise InputError("the GPU run timeout must be positive", "give a number of seconds, e.g. 600")
        return options


def _cupy_state() -> tuple[bool, str]:
    """Can CuPy reach a GPU? (usable, what was found)."""
    try:
        import cupy
    except ImportError:
        return False, f"CuPy: not installed ({CUDA_INSTALL})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as error:
        return False, f"CuPy {cupy.__version__}: {error}"
    if count == 0:
        return False, f"CuPy {cupy.__version__}: no CUDA device"
    return True, f"CuPy {cupy.__version__}: {count} CUDA device(s)"


def _nvml_gpu() -> tuple[GpuInfo | None, str]:
    """The first GPU NVML reports, or None with what NVML said."""
    try:
        info = gpu_detect.detect()[0]
    except DeviceError as error:
        return None, error.problem
    return info, f"NVML: {info.name}, compute capability {info.cc}, driver {info.driver}"


def _matching_gpu(info: GpuInfo | None, cuda_bus_id: str | None) -> GpuInfo | None:
    """NVML's record of the GPU the child ran on (CUDA's device 0, named by its PCI bus ID): NVML's
    first GPU unless the bus IDs say otherwise, as they can when CUDA orders GPUs by speed or
    CUDA_VISIBLE_DEVICES renumbers them."""
    if info is None or not cuda_bus_id or gpu_detect.same_bus(info.pci_bus_id, cuda_bus_id):
        return info
    try:
        found = [gpu for gpu in gpu_detect.detect() if gpu_detect.same_bus(gpu.pci_bus_id, cuda_bus_id)]
    except DeviceError:
        return info
    return found[0] if found else info


def probe_gpu() -> tuple[bool, str]:
    """(usable, reason): is there a GPU gpuprof can run workloads on? For ``--device auto``."""
    _, nvml_text = _nvml_gpu()
    cupy_ok, cupy_text = _cupy_state()
    return cupy_ok, f"{nvml_text}; {cupy_text}"


def nvtx_range(op: str, shape: tuple[int, ...], dtype: str) -> str:
    """The NVTX start/end range around each profiled call, e.g. ``gpuprof:dot:1024x1024x1024:float32``."""
    return f"gpuprof:{op}:{ops.shape_text(shape)}:{dtype}"


def child_command(
    settings: RunSettings, shape: tuple[int, ...], engine: str, profiled: int, result: Path, batch: int = 0
) -> list[str]:
    """The workload child's argv (run directly, or after the profiler's own options)."""
    return [
        sys.executable,
        "-m",
        "gpuprof.launch.child",
        "--op",
        settings.op,
        "--shape",
        ops.shape_text(shape),
        "--dtype",
        settings.dtype,
        "--engine",
        engine,
        "--repeat",
        str(settings.repeat),
        "--warmup",
        str(settings.warmup),
        "--profiled",
        str(profiled),
        "--batch",
        str(batch),
        "--range",
        nvtx_range(settings.op, shape, settings.dtype),
        "--seed",
        str(settings.seed),
        "--result",
        str(result),
    ]


def _execute(argv: list[str], run_dir: Path, timeout: float) -> int:
    """Run ``argv`` with stdout/stderr kept in the run folder (its own session, so a timeout or
    Ctrl-C stops the profiler together with the workload it launched); its exit code. A stopped
    workload child leaves no result to read, so it is killed at once (no grace)."""
    try:
        finished = process.run_group(argv, run_dir, timeout, grace=0)
    except OSError:
        raise ProfilerError(f"cannot execute {argv[0]}", "check the installation, or use --profiler none") from None
    if finished.stopped == process.INTERRUPTED:
        raise KeyboardInterrupt
    if finished.stopped == process.TIMEOUT:
        raise ProfilerError(
            f"{Path(argv[0]).name} did not finish within {timeout:g} s (files in {run_dir})",
            "give a smaller --size or --shape, or a longer GPU timeout",
        )
    return int(finished.code or 0)


def _child_record(run_dir: Path, code: int) -> dict[str, Any]:
    """The child's result; the child's own error re-raised; ProfilerError when there is none."""
    path = run_dir / RESULT_NAME
    if not path.is_file():
        raise ProfilerError(
            f"the workload process wrote no result (exit code {code}); stderr: "
            f"{process.tail(run_dir / process.STDERR)}",
            f"see the files in {run_dir}",
        )
    record = json.loads(path.read_text())
    failure = record.get("error")
    if failure:
        kind = getattr(errors, failure["type"], GpuprofError)
        raise kind(failure["problem"], failure.get("fix"))
    return record


def device_record(info: GpuInfo | None, child_device: dict[str, Any] | None = None) -> dict[str, Any]:
    """NVML's view (name, clocks, driver) with the peaks, and the CUDA runtime's (versions) when the
    workload child reported it."""
    child_device = child_device or {}
    device: dict[str, Any] = {"kind": "gpu", "name": child_device.get("name"), "cc": child_device.get("cc")}
    peaks = []
    if info is not None:
        device.update(info.to_dict())
        table = gpu_table.find(info.name)
        if len(table) == 1:
            peaks.append(gpu_table.peaks(table[0]))
        peaks.append(gpu_detect.runtime_peaks(info))
    if child_device:
        device["cuda_runtime"] = child_device
    device["peaks"] = [dataclasses.asdict(p) for p in peaks]
    return device


def _timed_launches(record: dict[str, Any], kernel: str, device: str) -> tuple[list[Launch], list[str]]:
    """One launch per timed repeat (its time per call), then the energy metered around all the timed
    calls; the energy notes."""
    batch = int(record.get("batch", 1))
    launches = [
        Launch(
            kernel,
            i,
            device,
            1,
            {"phase": "timed", "batch": str(batch)},
            [Metric("cuda_event_time", t, "second", "kernel_duration", TIMED)],
        )
        for i, t in enumerate(record["times"])
    ]

    metrics, notes = from_record(record.get("energy"))
    if metrics:
        launches.append(
            Launch(
                kernel,
                len(launches),
                device,
                len(record["times"]) * batch,
                {"phase": "energy", "scope": "all timed calls (energy)"},
                metrics,
            )
        )
    return launches, notes


def _first_error(module: profilers.ProfilerBackend, run_dir: Path, code: int) -> str:
    found = error_lines(profiler_text(module.log_path(run_dir), run_dir))
    return found[0] if found else f"exit code {code}, stderr: {process.tail(run_dir / process.STDERR)}"


def _measured_record(
    module: profilers.ProfilerBackend | None, run_dir: Path, code: int, again: list[str], timeout: float
) -> tuple[dict[str, Any], list[str]]:
    """The child's result; when a profiler stopped before the child wrote it, the result of the child
    run again without the profiler (in ``RETRY_DIR``), with a note saying why."""
    if module is None or (run_dir / RESULT_NAME).is_file():
        return _child_record(run_dir, code), []
    why = _first_error(module, run_dir, code)
    retry_dir = run_dir / RETRY_DIR
    retry_dir.mkdir(exist_ok=True)
    argv = [*again[: again.index("--result") + 1], str(retry_dir / RESULT_NAME)]
    record = _child_record(retry_dir, _execute(argv, retry_dir, timeout))
    return record, [
        f"{module.NAME} stopped before the workload finished ({why}); measured again without a "
        f"profiler, so time is from CUDA events and FLOPs are analytic (files in {run_dir})"
    ]


def _cc(info: GpuInfo | None) -> tuple[int, int] | None:
    if info is None or not info.cc:
        return None
    major, _, minor = info.cc.partition(".")
    return int(major), int(minor or 0)


def run_gpu(settings: RunSettings, shape: tuple[int, ...]) -> Run:
    """Measure ``settings.op`` at ``shape`` on GPU 0 under the chosen profiler; the Run says how."""
    options = GpuOptions.from_dict(dict(settings.gpu))
    requested = settings.engine or "cupy"
    if requested not in engine_names("cuda"):
        raise InputError(
            f"engine '{requested}' does not run on the GPU", f"choose one of: {', '.join(engine_names('cuda'))}"
        )
    info, nvml_text = _nvml_gpu()
    cupy_ok, cupy_text = _cupy_state()
    if not cupy_ok:
        raise DeviceError(
            f"--device cuda: no usable NVIDIA GPU ({nvml_text}; {cupy_text})",
            "use --device cpu"
            if settings.engine is None or not gpu_only(requested)
            else f"engine {requested} needs a GPU; measure on the CPU with --engine numpy (or pytensor)",
        )
    choice = profilers.choose(options.profiler, _cc(info)) if settings.counters else NO_COUNTERS
    run_id = uuid.uuid4().hex
    run_dir = options.reports_dir / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    profile = profilers.ProfileOptions(
        nvtx_range(settings.op, shape, settings.dtype),
        options.clock_control,
        options.cache_control,
        options.replay_mode,
        cc=_cc(info),
        nvtx_start_end=True,
    )
    profiled = options.profiled if choice.backend != "none" else 0
    child = child_command(settings, shape, requested, profiled, run_dir / RESULT_NAME, options.batch)
    module = choice.module() if choice.backend != "none" else None
    exe = choice.probe.path if choice.probe else ""
    argv = module.command(exe, child, run_dir, profile) if module else child
    code = _execute(argv, run_dir, options.timeout)
    unprofiled = child_command(settings, shape, requested, 0, run_dir / RESULT_NAME, options.batch)
    record, retried = _measured_record(module, run_dir, code, unprofiled, options.timeout)
    engine = record["engine"]  # what the child resolved 'pytensor' or 'theano' to

    notes = list(record.get("notes", []))
    notes += [choice.reason] if choice.fallback or choice is NO_COUNTERS else []
    notes += [f"profiler: {choice.probe.described}"] if choice.probe else []
    environment: dict[str, Any] = {
        "host": platform.node(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "command": settings.command,
        "timer": record["timer"],
        "engine_version": record["engine_version"],
        "run_folder": str(run_dir),
        "profiler": choice.backend,
        "profiler_reason": choice.reason,
        "profiler_command": argv,
        "profiler_exit_code": code,
        "nvtx_range": profile.nvtx_range,
    }
    device_name = record["device"].get("name", "")
    kernel = record.get("kernel") or f"{engine}:{settings.op}"
    launches, energy_notes = _timed_launches(record, kernel, device_name)
    compiled = record.get("compile") or {}
    launches += compile_time.launch(
        compiled.get("compiler"),
        kernel,
        device_name,
        len(launches),
        compiled.get("prepare_s", 0.0),
        compiled.get("first_call_s", 0.0),
    )
    notes += energy_notes
    if module is not None and choice.probe is not None:
        environment.update(
            profiler_path=exe,
            profiler_version=choice.probe.version,
            profiler_found_by=choice.probe.found_by,
            profiler_settings=module.settings(profile),
        )
        back = (
            failed(module.NAME, "stopped before the workload finished", module.log_path(run_dir, profile))
            if retried
            else collect(module, exe, profile, run_dir, len(launches), profiled, record.get("kernel"))
        )
        launches += back.launches
        environment.update(back.environment)
        notes += retried or back.notes
    if settings.cache == "cold":
        notes.append("--cache cold applies to the CPU path; GPU timed launches reuse one set of buffers (warm L2)")
    workload = {
        "op": settings.op,
        "formula": ops.get_op(settings.op).formula,
        "dtype": settings.dtype,
        "shape": list(shape),
        "size_bytes": ops.footprint(settings.op, shape, settings.dtype),
        "requested": settings.size or settings.shape,
        "engine": engine,
        "requested_engine": requested,
        "repeat": settings.repeat,
        "warmup": settings.warmup,
        "profiled": profiled,
        "batch": record.get("batch", 1),
        "cache": "warm",
        "relative_error": record["relative_error"],
        "seed": settings.seed,
    }
    return Run(
        kind="run",
        format=f"cuda-{engine}",
        source=settings.command or shlex.join(argv),
        device=device_record(_matching_gpu(info, record["device"].get("pci_bus_id")), record["device"]),
        workload=workload,
        environment=environment,
        launches=launches,
        notes=notes,
        run_id=run_id,
    )
