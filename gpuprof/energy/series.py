"""Power of every device over a whole command (``gpuprof profile --energy``), sampled in the parent.

Every ``interval`` seconds a background thread reads each RAPL package and DRAM domain (cumulative
``energy_uj``, wraps undone as :mod:`gpuprof.energy.rapl` does) and each GPU NVML reports (its total
energy counter where the GPU has one, and its power), with a ``CLOCK_MONOTONIC`` timestamp: the clock
the program's regions are stamped with, so any window of the run can be metered afterwards.

Energy over a window [a, b] (:func:`window_energy`) is the cumulative counter interpolated at a and b
where the device has one, else the power samples integrated by trapezoids, the window's edges
interpolated. A GPU is "in use" when NVML lists the command or a process under it (its parent chain
reaches the command) on it at any sample; CPU packages and DRAM always are (the host runs the program). Sums are given with every
device and with the devices in use only.
"""

from __future__ import annotations

import itertools
import threading
import time
from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuprof.energy.rapl import Domain, counter_delta, open_rapl, powercap_root
from gpuprof.workloads import CUDA_INSTALL

MICROJOULE, MILLIJOULE, MILLIWATT = 1e-6, 1e-3, 1e-3
COUNTER, INTEGRATED = "counter", "integrated power"


def now_s() -> float:
    """CLOCK_MONOTONIC in seconds (gpuprof.regions stamps regions with it in nanoseconds)."""
    return time.clock_gettime(time.CLOCK_MONOTONIC)


@dataclass
class Trace:
    """One device's samples: cumulative energy since the first sample (None where unknown) and power."""

    name: str
    kind: str  # "cpu", "dram" or "gpu"
    method: str  # where the numbers come from
    in_use: bool = True
    t: list[float] = field(default_factory=list)  # CLOCK_MONOTONIC seconds of each reading
    energy_j: list[float | None] = field(default_factory=list)
    power_w: list[float | None] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "method": self.method,
            "in_use": self.in_use,
            "t": self.t,
            "energy_j": self.energy_j,
            "power_w": self.power_w,
            "problems": self.problems,
        }


def _interpolate(times: list[float], values: list[float], at: float) -> float:
    """``values`` linearly interpolated at ``at`` (held constant outside the samples)."""
    if at <= times[0]:
        return values[0]
    if at >= times[-1]:
        return values[-1]
    i = bisect_left(times, at)
    t0, t1 = times[i - 1], times[i]
    return values[i - 1] + (values[i] - values[i - 1]) * (at - t0) / (t1 - t0)


def window_energy(
    times: list[float], energy_j: list[float | None], power_w: list[float | None], start: float, end: float
) -> tuple[float | None, str]:
    """Joules over [start, end] and how: the cumulative counter where every sample has it, else the
    power samples (power[i] covers (t[i-1], t[i]] for RAPL, the instant t[i] for NVML) integrated."""
    if len(times) < 2 or end < start:
        return None, "fewer than two samples"
    if all(e is not None for e in energy_j):
        counter = [float(e) for e in energy_j]  # type: ignore[arg-type]
        return _interpolate(times, counter, end) - _interpolate(times, counter, start), COUNTER
    known = [(t, p) for t, p in zip(times, power_w) if p is not None]
    if len(known) < 2:
        return None, "no energy counter and fewer than two power samples"
    ts, ps = [t for t, _ in known], [p for _, p in known]
    inside = [start, *(t for t in ts if start < t < end), end]
    joules = sum(
        (b - a) * (_interpolate(ts, ps, a) + _interpolate(ts, ps, b)) / 2 for a, b in itertools.pairwise(inside)
    )
    return joules, INTEGRATED


class _Rapl:
    """Package and DRAM domains: cumulative joules since the first read, power over each interval."""

    def __init__(self, domains: list[Domain]) -> None:
        self.domains = domains
        self.last: list[int | None] = [None] * len(domains)
        self.totals = [0.0] * len(domains)
        self.traces = [
            Trace(
                d.label,
                "dram" if d.label.startswith("dram") else "cpu",
                f"RAPL {d.zone}/energy_uj (whole socket, idle and other processes included)",
            )
            for d in domains
        ]

    def sample(self) -> None:
        for i, (domain, trace) in enumerate(zip(self.domains, self.traces)):
            try:
                value: int | None = int(domain.energy_file.read_text())
            except (OSError, ValueError):
                value = None
            now = now_s()  # each reading stamped when it was taken: a loaded machine delays the next
            dt = now - trace.t[-1] if trace.t else None
            trace.t.append(now)
            before, self.last[i] = self.last[i], value
            if value is None:
                trace.problems.append("energy_uj became unreadable")
                trace.energy_j.append(None)
                trace.power_w.append(None)
                continue
            delta = counter_delta(before, value, domain.max_range_uj) if before is not None else 0
            if delta is None:
                trace.problems.append(f"counter went down ({before} -> {value} uJ) with no known wrap point")
                delta = 0
            self.totals[i] += delta * MICROJOULE
            trace.energy_j.append(self.totals[i])
            trace.power_w.append(delta * MICROJOULE / dt if dt and before is not None else None)


class _Nvml:
    """Every GPU NVML lists: total-energy counter (where it has one) and power; which are in use."""

    def __init__(self, nvml: Any, handles: list[Any], names: list[str]) -> None:
        self.nvml, self.handles = nvml, handles
        self.first: list[int | None] = [self._energy_mj(h) for h in handles]
        self.traces = [
            Trace(
                f"GPU {i} ({name})",
                "gpu",
                "NVML "
                + (
                    "nvmlDeviceGetTotalEnergyConsumption"
                    if first is not None
                    else "nvmlDeviceGetPowerUsage integrated (no energy counter)"
                )
                + "; whole board",
                in_use=False,
            )
            for i, (name, first) in enumerate(zip(names, self.first))
        ]
        self.root: int | None = None  # the command's pid

    def _energy_mj(self, handle: Any) -> int | None:
        try:
            return int(self.nvml.nvmlDeviceGetTotalEnergyConsumption(handle))
        except self.nvml.NVMLError:
            return None

    def _used(self, handle: Any) -> bool:
        if self.root is None:
            return False
        try:
            found = self.nvml.nvmlDeviceGetComputeRunningProcesses(handle)
        except self.nvml.NVMLError:
            return False
        return any(descends(int(process.pid), self.root) for process in found)

    def sample(self) -> None:
        for handle, first, trace in zip(self.handles, self.first, self.traces):
            now = self._energy_mj(handle) if first is not None else None
            trace.t.append(now_s())
            trace.energy_j.append((now - first) * MILLIJOULE if now is not None and first is not None else None)
            try:
                trace.power_w.append(int(self.nvml.nvmlDeviceGetPowerUsage(handle)) * MILLIWATT)
            except self.nvml.NVMLError as error:
                trace.power_w.append(None)
                trace.problems.append(f"power reading failed: {error}")
            trace.in_use = trace.in_use or self._used(handle)

    def close(self) -> None:
        try:
            self.nvml.nvmlShutdown()
        except self.nvml.NVMLError:
            pass


def descends(pid: int, root: int) -> bool:
    """Whether ``pid`` is ``root`` or runs under it (its parent chain in /proc reaches it): torchrun
    starts its ranks in sessions of their own, so the process group alone would miss them."""
    for _ in range(64):
        if pid == root:
            return True
        if pid <= 1:
            return False
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state: the parent's pid
    return False


def _open_nvml() -> tuple[_Nvml | None, list[str]]:
    try:
        import pynvml
    except ImportError:
        return None, [f"no GPU meter: nvidia-ml-py is not installed ({CUDA_INSTALL})"]
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as error:
        return None, [f"no GPU meter: NVML did not start ({error}; is the NVIDIA driver installed?)"]
    try:
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        names = [pynvml.nvmlDeviceGetName(h) for h in handles]
        for handle in handles:
            pynvml.nvmlDeviceGetPowerUsage(handle)
    except pynvml.NVMLError as error:
        pynvml.nvmlShutdown()
        return None, [f"no GPU meter: NVML cannot read GPU power ({error})"]
    if not handles:
        pynvml.nvmlShutdown()
        return None, ["no GPU meter: NVML lists no GPU"]
    return _Nvml(pynvml, handles, [n if isinstance(n, str) else n.decode() for n in names]), []


class PowerSeries:
    """Samples every meter found until :meth:`stop`; :meth:`watch` names the command's process."""

    def __init__(self, rapl: _Rapl | None, nvml: _Nvml | None, interval: float) -> None:
        self.rapl, self.nvml, self.interval = rapl, nvml, interval
        self.times: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="gpuprof-power", daemon=True)

    @property
    def traces(self) -> list[Trace]:
        return [*(self.rapl.traces if self.rapl else []), *(self.nvml.traces if self.nvml else [])]

    def watch(self, pid: int) -> None:
        if self.nvml:
            self.nvml.root = pid

    def _sample(self) -> None:
        self.times.append(now_s())
        for meter in (self.rapl, self.nvml):
            if meter:
                meter.sample()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def start(self) -> None:
        self._sample()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        if self.nvml:
            self.nvml.close()

    def record(self) -> dict[str, Any]:
        """The series as stored with the run (times: CLOCK_MONOTONIC seconds; ``t`` when each round of
        samples began, each device's own ``t`` when its reading was taken)."""
        return {
            "interval_s": self.interval,
            "clock": "CLOCK_MONOTONIC",
            "t": self.times,
            "devices": {trace.name: trace.record() for trace in self.traces},
        }


def open_series(interval: float, root: Path | None = None) -> tuple[PowerSeries | None, list[str]]:
    """A sampler over every meter readable here, or None; and one line per meter missing and why."""
    if root is None:
        root, hint = powercap_root()
        meter, notes = open_rapl(root, interval, hint)
    else:
        meter, notes = open_rapl(root, interval)
    rapl = _Rapl(meter.domains) if meter else None
    nvml, gpu_notes = _open_nvml()
    notes = [note.replace("; energy not measured", "") for note in notes] + gpu_notes
    if rapl is None and nvml is None:
        return None, [*notes, "no meter readable: regions and times are kept, energy is not measured"]
    return PowerSeries(rapl, nvml, interval), notes


def energies(record: dict[str, Any], start: float, end: float) -> dict[str, Any]:
    """Energy of every device over [start, end] (CLOCK_MONOTONIC seconds) from a stored series: per
    device (joules, method), all devices, devices in use; None where a device gives no number."""
    per: dict[str, tuple[float | None, str]] = {}
    for name, trace in record["devices"].items():
        per[name] = window_energy(trace["t"], trace["energy_j"], trace["power_w"], start, end)
    known = [value for value, _ in per.values() if value is not None]
    complete = len(known) == len(per)
    in_use = [per[name][0] for name, trace in record["devices"].items() if trace["in_use"]]
    return {
        "devices": per,
        "all_j": sum(known) if complete and known else None,
        "in_use_j": sum(in_use) if in_use and all(v is not None for v in in_use) else None,
    }  # type: ignore[misc]
