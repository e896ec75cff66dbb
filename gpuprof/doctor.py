"""``gpuprof doctor``: what profiling needs on this machine, one check at a time, each with the fix.

Every check reads what the machine says (NVML, ``/proc``, ``/sys``, the profilers' ``--version``,
``perf stat -- true``) and writes nothing. The file system is read below ``root`` (``/`` by default)
so tests can point it at a made-up tree. A check is ``ok``, ``fail`` (with the fix), ``warn``,
``info`` (a fact that matters only together with others) or ``n/a`` (nothing to check: no GPU).

Which checks a path needs (``--for``):

* ``cpu``: CPU hardware counters for ``gpuprof run --device cpu`` and ``gpuprof profile --device
  cpu`` (perf, perf_event_paranoid, a PMU);
* ``cuda``: ``gpuprof run --device cuda`` (a driver with GPUs, CuPy for the driver's CUDA line);
* ``profile``: ``gpuprof profile`` on a GPU (a driver with GPUs, counter permission, ncu or nvprof
  for every GPU).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuprof.devices import gpu_detect
from gpuprof.energy import open_energy
from gpuprof.energy.rapl import POWERCAP_ENV, find_domains
from gpuprof.errors import DeviceError
from gpuprof.launch import discovery, perf, profilers
from gpuprof.workloads import CUDA_INSTALL

if TYPE_CHECKING:
    from gpuprof.devices.gpu_detect import GpuInfo

OK, FAIL, WARN, INFO, NA = "ok", "fail", "warn", "info", "n/a"
PATHS = ("cpu", "cuda", "profile")
NEEDS = {
    "cpu": ("perf", "perf_event_paranoid", "CPU PMU"),
    "cuda": ("NVIDIA driver and GPUs", "CuPy"),
    "profile": ("NVIDIA driver and GPUs", "counter permission", "GPU profiler"),
}
PMU_NAMES = re.compile(r"^(cpu|cpu_core|cpu_atom|armv[78]\w*|arm_\w+pmu\w*)$")
CONTAINER_MARKS = re.compile(r"docker|kubepods|containerd|lxc|libpod")
TRIAL_TIMEOUT_S = 120
_VERSION = re.compile(r"version\s+(\S+)", re.IGNORECASE)
MIG_SOURCE = (
    "CUPTI 'Special Configurations' (profiling works on isolated compute instances only; clocks "
    "cannot be locked on MIG devices), https://docs.nvidia.com/cupti/special-configurations/special-configurations.html"
)
VM_PMU_FIX = (
    "run on bare metal, or give the VM a virtual PMU (KVM/libvirt: host-passthrough CPU with the PMU "
    "on; VMware: 'virtualize CPU performance counters'); or record perf stat elsewhere and import it"
)


@dataclass(frozen=True)
class Check:
    """One line of the doctor's report."""

    name: str
    status: str
    found: str
    fix: str = ""


@dataclass
class Machine:
    """What the checks share, read once: NVML's GPUs (or why there are none) and the file-system root."""

    root: Path = Path("/")
    gpus: list[GpuInfo] = field(default_factory=list)
    no_gpu: str = ""

    def path(self, *parts: str) -> Path:
        return self.root.joinpath(*parts)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def _cc(info: GpuInfo) -> tuple[int, int] | None:
    if not info.cc:
        return None
    major, _, minor = info.cc.partition(".")
    return int(major), int(minor or 0)


def driver(machine: Machine) -> Check:
    name = "NVIDIA driver and GPUs"
    if not machine.gpus:
        return Check(
            name,
            FAIL,
            f"NVML: {machine.no_gpu}",
            f"install the NVIDIA driver and NVML's bindings ({CUDA_INSTALL}); without a GPU use "
            "--device cpu, or 'gpuprof import' profiles recorded elsewhere",
        )
    listed = "; ".join(f"GPU {g.index} {g.name} (compute capability {g.cc})" for g in machine.gpus)
    return Check(
        name, OK, f"driver {machine.gpus[0].driver or 'version unknown'}, {len(machine.gpus)} GPU(s): {listed}"
    )


def _trial(machine: Machine) -> Check | None:
    """Profile one tiny CuPy kernel under ncu (output captured, nothing written, clocks left alone:
    ncu's default would lock them to base, and a check must not change the machine); None when it cannot run."""
    found = profilers.probe("ncu")
    if not found.usable or not found.path:
        return None
    program = [sys.executable, "-c", "import cupy; print(int((cupy.arange(4) + 1).sum()))"]
    try:
        done = subprocess.run(
            [
                found.path,
                "--clock-control",
                "none",
                "--metrics",
                "gpu__time_duration.sum",
                "--launch-count",
                "1",
                *program,
            ],
            capture_output=True,
            text=True,
            timeout=TRIAL_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return Check(
            "counter permission",
            WARN,
            f"no RmProfilingAdminOnly setting readable, and the ncu trial could not run ({error})",
            "run 'gpuprof profile' and read its message",
        )
    output = done.stdout + done.stderr
    if profilers.counters_refused(output):
        return Check(
            "counter permission",
            FAIL,
            "ncu trial: ERR_NVGPUCTRPERM (only admin users may read GPU performance counters)",
            f"to enable counters {profilers.PERMISSION_FIX}",
        )
    if "gpu__time_duration.sum" in output:
        return Check("counter permission", OK, "ncu trial: a CuPy kernel's gpu__time_duration.sum was read")
    return None


def counter_permission(machine: Machine) -> Check:
    name = "counter permission"
    params = machine.path("proc", "driver", "nvidia", "params")
    text = _read(params)
    if text is None and not machine.gpus:
        return Check(name, NA, f"no NVIDIA driver ({params} absent)")
    setting = re.search(r"^RmProfilingAdminOnly:\s*(\d+)", text or "", re.MULTILINE)
    if setting is None:
        trial = _trial(machine)
        return trial or Check(
            name,
            WARN,
            f"{params} has no RmProfilingAdminOnly line and no ncu trial could run (needs ncu and CuPy)",
            "install ncu, or let 'gpuprof profile' find out",
        )
    if setting.group(1) == "0":
        return Check(name, OK, f"RmProfilingAdminOnly: 0 in {params} (every user may read GPU counters)")
    if os.geteuid() == 0:
        return Check(name, OK, f"RmProfilingAdminOnly: 1 in {params}, and gpuprof runs as root")
    return Check(
        name,
        FAIL,
        f"RmProfilingAdminOnly: 1 in {params}: only admin users may read GPU performance counters "
        "(ncu and nvprof fail with ERR_NVGPUCTRPERM)",
        f"to enable counters {profilers.PERMISSION_FIX}",
    )


def _supported(name: str, gpus: list[GpuInfo]) -> str:
    if not gpus:
        return "no GPU here to profile"
    fits = [g for g in gpus if name in profilers.candidates(_cc(g))]
    if not fits:
        return "supports none of this machine's GPUs"
    return "supports " + ", ".join(f"GPU {g.index} (CC {g.cc})" for g in fits)


def _nsys(machine: Machine) -> Check:
    found = discovery.locate("nsys")
    if found is None:
        return Check(
            "nsys",
            INFO,
            f"not found (searched {discovery.searched('nsys')}); gpuprof only reads nsys "
            "output ('gpuprof import'), so it is not needed here",
        )
    try:
        done = subprocess.run(
            [found.path, "--version"], capture_output=True, text=True, timeout=profilers.PROBE_TIMEOUT_S
        )
        version = _VERSION.search(done.stdout + done.stderr)
    except (OSError, subprocess.SubprocessError):
        version = None
    return Check(
        "nsys",
        OK,
        f"{found.path} (found by {found.where}), version {version.group(1) if version else 'unknown'}; "
        "gpuprof reads its stats output; GPU support: see the Nsight Systems release notes",
    )


def profilers_found(machine: Machine) -> list[Check]:
    """ncu and nvprof (where, version, which GPUs each supports), the GPU profiler verdict, and nsys."""
    checks, usable = [], []
    for name in ("ncu", "nvprof"):
        probe = profilers.probe(name)
        if not probe.usable:
            checks.append(Check(name, INFO, probe.problem or "not usable"))
            continue
        supports = _supported(name, machine.gpus)
        usable += [g.index for g in machine.gpus if name in profilers.candidates(_cc(g))]
        checks.append(Check(name, OK, f"{probe.path} (found by {probe.found_by}), version {probe.version}; {supports}"))
    if not machine.gpus:
        checks.append(Check("GPU profiler", NA, "no GPU to profile"))
    elif all(g.index in usable for g in machine.gpus):
        checks.append(Check("GPU profiler", OK, "every GPU has a profiler that supports it"))
    else:
        missing = [g for g in machine.gpus if g.index not in usable]
        first = profilers.candidates(_cc(missing[0]))[0]
        checks.append(
            Check(
                "GPU profiler",
                FAIL,
                "no profiler for "
                + ", ".join(f"GPU {g.index} (CC {g.cc})" for g in missing)
                + "; ncu profiles CC 7.0 and newer, nvprof below 8.0",
                profilers.INSTALL[first],
            )
        )
    return checks + [_nsys(machine)]


def cupy(machine: Machine) -> Check:
    try:
        import cupy as cp
    except ImportError:
        return Check("CuPy", FAIL, "not installed", CUDA_INSTALL)
    runtime = cp.cuda.runtime.runtimeGetVersion()
    try:
        served = cp.cuda.runtime.driverGetVersion()
    except cp.cuda.runtime.CUDARuntimeError:
        served = 0
    built = f"CuPy {cp.__version__} for CUDA {runtime // 1000}.{runtime % 1000 // 10}"
    if not served:
        return Check(
            "CuPy",
            FAIL,
            f"{built}; no NVIDIA driver answers (cudaDriverGetVersion = 0)",
            "install the NVIDIA driver; CuPy runs only with one",
        )
    drives = f"the driver serves CUDA {served // 1000}.{served % 1000 // 10}"
    if served // 1000 < runtime // 1000:
        return Check("CuPy", FAIL, f"{built}, but {drives}", CUDA_INSTALL)
    return Check("CuPy", OK, f"{built}; {drives}")


def _nvml() -> Any:
    import pynvml

    pynvml.nvmlInit()
    return pynvml


def mig(machine: Machine) -> Check:
    if not machine.gpus:
        return Check("MIG mode", NA, "no GPU")
    try:
        nvml = _nvml()
    except Exception as error:  # no bindings or no driver: each raises its own type
        return Check("MIG mode", WARN, f"NVML could not be asked ({error})")
    enabled = []
    try:
        for gpu in machine.gpus:
            try:
                current, _ = nvml.nvmlDeviceGetMigMode(nvml.nvmlDeviceGetHandleByIndex(gpu.index))
            except nvml.NVMLError:
                continue  # the GPU has no MIG
            if current:
                enabled.append(gpu)
    finally:
        nvml.nvmlShutdown()
    if not enabled:
        return Check("MIG mode", OK, "off on every GPU (or not supported)")
    return Check(
        "MIG mode",
        WARN,
        "on for " + ", ".join(f"GPU {g.index}" for g in enabled) + f": {MIG_SOURCE}",
        "profile a whole (isolated) compute instance with --clock-control none; do not change the MIG layout to profile",
    )


def container(machine: Machine) -> Check:
    marks = [str(p) for p in (machine.path(".dockerenv"), machine.path("run", ".containerenv")) if p.exists()]
    cgroup = _read(machine.path("proc", "1", "cgroup")) or ""
    if CONTAINER_MARKS.search(cgroup):
        marks.append("/proc/1/cgroup names " + CONTAINER_MARKS.search(cgroup).group(0))  # type: ignore[union-attr]
    if os.environ.get("container"):
        marks.append(f"$container={os.environ['container']}")
    if not marks:
        return Check("container", INFO, "not in a container (no /.dockerenv, /run/.containerenv or container cgroup)")
    return Check(
        "container",
        INFO,
        f"in a container ({'; '.join(marks)}): GPU counters follow the host driver's "
        "setting (or --cap-add SYS_ADMIN), perf the host's perf_event_paranoid (or --cap-add PERFMON)",
    )


def paranoid(machine: Machine) -> Check:
    name = "perf_event_paranoid"
    path = machine.path("proc", "sys", "kernel", "perf_event_paranoid")
    text = _read(path)
    if text is None or not text.strip().lstrip("-").isdigit():
        return Check(name, WARN, f"{path} not readable", "perf may still work; 'gpuprof doctor --for cpu' checks it")
    level = int(text)
    meaning = {
        -1: "no restriction",
        0: "CPU events of all processes",
        1: "user and kernel events of own processes",
        2: "user-space events of own processes",
    }.get(min(level, 3), "no unprivileged events at all")
    if os.geteuid() == 0:
        return Check(
            name, OK, f"{level} ({meaning} for unprivileged users); gpuprof runs as root, which it does not restrict"
        )
    if level <= 2:
        return Check(name, OK, f"{level}: {meaning} (enough for perf stat around a command)")
    return Check(name, FAIL, f"{level}: {meaning}", "sudo sysctl kernel.perf_event_paranoid=2 (or run as root)")


def perf_tool(machine: Machine) -> Check:
    found = perf.probe(perf.HARDWARE)
    if found.perf is None:
        return Check("perf", FAIL, "not installed", perf.INSTALL)
    return Check("perf", OK, f"{found.perf}, {found.version or 'version unknown'}")


def pmu(machine: Machine) -> Check:
    devices = machine.path("sys", "bus", "event_source", "devices")
    listed = sorted(p.name for p in devices.iterdir()) if devices.is_dir() else []
    cores = [name for name in listed if PMU_NAMES.match(name)]
    found = perf.probe(perf.HARDWARE)
    found = found if found.perf else None
    counted = found is not None and set(perf.HARDWARE) <= set(found.usable)
    if found is None or counted:
        trial = "" if found is None else f"; perf counts {', '.join(perf.HARDWARE)}"
    elif found.error:
        trial = f"; perf: {found.error}"
    else:
        trial = (
            f"; perf reports {', '.join(found.unsupported)} <not supported>"
            if found.unsupported
            else (f"; perf does not know {', '.join(found.unknown)}")
        )
    if cores and (found is None or counted):
        return Check("CPU PMU", OK, f"{', '.join(cores)} in {devices}{trial}")
    return Check(
        "CPU PMU", FAIL, f"no CPU PMU in {devices} ({', '.join(listed) or 'nothing listed'}){trial}", VM_PMU_FIX
    )


def rapl(machine: Machine) -> Check:
    given = os.environ.get(POWERCAP_ENV, "").strip()
    root = Path(given) if given else machine.path("sys", "class", "powercap")
    meter, notes = open_energy("cpu", powercap_root=root)
    if meter is None:
        return Check(
            "RAPL energy",
            FAIL,
            notes[0] if notes else f"no RAPL zones in {root}",
            "run on bare metal as root (RAPL is hidden in VMs and containers), or set "
            f"${POWERCAP_ENV} to the host's powercap folder",
        )
    return Check("RAPL energy", OK, f"readable in {root}: {', '.join(d.label for d in find_domains(root))}")


def nvml_energy(machine: Machine) -> Check:
    if not machine.gpus:
        return Check("NVML energy", NA, "no GPU")
    readable, problems = [], []
    for gpu in machine.gpus:
        meter, notes = open_energy("cuda", gpu_index=gpu.index)
        (readable if meter is not None else problems).append(f"GPU {gpu.index}" if meter is not None else notes[0])
    if problems:
        return Check("NVML energy", FAIL, "; ".join(problems), "check the driver with nvidia-smi -q -d POWER")
    return Check("NVML energy", OK, f"board power readable through NVML for {', '.join(readable)}")


def machine(root: Path = Path("/")) -> Machine:
    """NVML's GPUs (or why there are none) and the root the checks read."""
    try:
        return Machine(root, gpu_detect.detect())
    except DeviceError as error:
        return Machine(root, [], error.problem)


def checks(root: Path = Path("/")) -> list[Check]:
    """Every check, in the order the report prints them."""
    found = machine(root)
    return [
        driver(found),
        counter_permission(found),
        *profilers_found(found),
        cupy(found),
        mig(found),
        container(found),
        perf_tool(found),
        paranoid(found),
        pmu(found),
        rapl(found),
        nvml_energy(found),
    ]


def verdict(found: list[Check], path: str) -> tuple[bool, list[str]]:
    """Whether ``path`` can work, and the failed checks it needs."""
    failed = [c.name for c in found if c.name in NEEDS[path] and c.status in (FAIL, NA)]
    return not failed, failed
