"""The CPU a run used, and its theoretical FLOP/s peaks.

Everything is parsed from text (``/proc/cpuinfo``, ``lscpu``, sysfs values) passed to
:func:`parse`, so recorded machines can be tested; :func:`describe` reads this machine's files.
The peak is ``cores × f × (SIMD bits / element bits) × FMA units × 2`` (gpu_peaks_notes §2.4),
with the FMA-unit count from :data:`FP_UNITS`, chosen by ISA flags first and family/model second:
a hypervisor often shows a made-up model number (the build VMs say 6/167, Rocket Lake, yet expose
AMX, which only server parts have), but it cannot show instructions the host lacks.
"""

from __future__ import annotations

import functools
import os
import platform
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gpuprof.devices.peaks import Peaks
from gpuprof.model import DERIVED

SYS_CPU = Path("/sys/devices/system/cpu")
# ISA flags worth recording (x86 names from /proc/cpuinfo "flags", Arm names from "Features").
ISA_FLAGS = (
    "amx_tile",
    "avx512_fp16",
    "avx512f",
    "avx2",
    "fma",
    "avx",
    "f16c",
    "sse4_2",
    "sse2",
    "sve",
    "asimdhp",
    "asimd",
)
ELEMENT_BITS = {"float64": 64, "float32": 32, "float16": 16}


@dataclass(frozen=True)
class FpUnits:
    """Floating-point vector pipes of one core: ``fma_units`` pipes of ``vector_bits`` each."""

    label: str
    vector_bits: int
    fma_units: int
    source: str
    assumed: bool = False  # True when the count is a guess or not confirmed by the source


_NOTES = "gpu_peaks_notes §2.4"
# Intel client cores with AVX-512 but (widely reported, unconfirmed) one 512-bit FMA pipe:
# Ice Lake (0x7D, 0x7E), Tiger Lake (0x8C, 0x8D), Rocket Lake (0xA7).
_INTEL_CLIENT_AVX512 = {0x7D, 0x7E, 0x8C, 0x8D, 0xA7}
# Arm "CPU part" -> vector pipes (Neoverse cores).
_ARM_PARTS = {
    0xD0C: FpUnits("Arm Neoverse N1", 128, 2, _NOTES),
    0xD49: FpUnits("Arm Neoverse N2", 128, 2, _NOTES),
    0xD40: FpUnits("Arm Neoverse V1", 256, 2, _NOTES),
    0xD4F: FpUnits("Arm Neoverse V2", 128, 4, _NOTES),
}
FP_UNITS = {
    "intel-amx": FpUnits(
        "Intel Sapphire Rapids+ (AMX)", 512, 2, f"{_NOTES}: 2 × 512-bit FMA (count not re-verified)", assumed=True
    ),
    "intel-avx512-client": FpUnits(
        "Intel Ice/Tiger/Rocket Lake client", 512, 1, f"{_NOTES}: 1 × 512-bit FMA (unconfirmed)", assumed=True
    ),
    "intel-avx512": FpUnits(
        "Intel Xeon Skylake-SP to Ice Lake-SP (AVX-512)",
        512,
        2,
        f"{_NOTES}: 2 × 512-bit FMA; some Silver/Bronze/Gold 5xxx have 1",
        assumed=True,
    ),
    "intel-avx2": FpUnits("Intel Haswell to Coffee Lake class (AVX2+FMA)", 256, 2, _NOTES),
    "intel-avx": FpUnits(
        "Intel Sandy/Ivy Bridge class (AVX, no FMA)",
        256,
        1,
        "one 256-bit add + one 256-bit multiply pipe, counted as one FMA",
        assumed=True,
    ),
    "amd-zen5": FpUnits("AMD Zen 5", 512, 2, f"{_NOTES}: native 512-bit datapath (count unconfirmed)", assumed=True),
    "amd-zen4": FpUnits("AMD Zen 4", 256, 2, f"{_NOTES}: AVX-512 double-pumped on 2 × 256-bit FMA"),
    "amd-zen1": FpUnits("AMD Zen 1", 128, 2, f"{_NOTES}: 2 × 128-bit FMA"),
    "amd-zen2": FpUnits("AMD Zen 2/3", 256, 2, f"{_NOTES}: 2 × 256-bit FMA"),
    "sse2": FpUnits(
        "x86 SSE2 (no AVX)", 128, 1, "one 128-bit add + one multiply pipe, counted as one FMA", assumed=True
    ),
    "unknown": FpUnits("unknown", 128, 1, "no table entry: one 128-bit FMA pipe assumed", assumed=True),
}


def fp_units(
    vendor: str, family: int | None, model: int | None, flags: frozenset[str], arm_part: int | None = None
) -> FpUnits:
    """The vector pipes of one core, decided by ISA flags first, then family/model."""
    if vendor == "GenuineIntel":
        if "amx_tile" in flags:
            return FP_UNITS["intel-amx"]
        if "avx512f" in flags:
            client = family == 6 and model in _INTEL_CLIENT_AVX512
            return FP_UNITS["intel-avx512-client" if client else "intel-avx512"]
        if {"avx2", "fma"} <= flags:
            return FP_UNITS["intel-avx2"]
        return FP_UNITS["intel-avx" if "avx" in flags else "sse2"]
    if vendor == "AuthenticAMD":
        if family == 0x1A:
            return FP_UNITS["amd-zen5"]
        if "avx512f" in flags:
            return FP_UNITS["amd-zen4"]
        if family == 0x17 and model is not None and model < 0x30:
            return FP_UNITS["amd-zen1"]
        if {"avx2", "fma"} <= flags:
            return FP_UNITS["amd-zen2"]
        return FP_UNITS["sse2"]
    if arm_part in _ARM_PARTS:
        return _ARM_PARTS[arm_part]
    return FP_UNITS["unknown"]


def _fields(cpuinfo: str) -> list[dict[str, str]]:
    """/proc/cpuinfo as one dict per processor block."""
    blocks: list[dict[str, str]] = [{}]
    for line in cpuinfo.splitlines():
        if not line.strip():
            if blocks[-1]:
                blocks.append({})
            continue
        key, sep, value = line.partition(":")
        if sep:
            blocks[-1].setdefault(key.strip(), value.strip())
    return [b for b in blocks if b]


def _lscpu(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out.setdefault(key.strip(), value.strip())
    return out


def _int(text: str | None, base: int = 10) -> int | None:
    try:
        return int(text, base) if text is not None else None
    except ValueError:
        return None


_CACHE_SIZE = re.compile(r"^\s*([\d.]+)\s*([KMG]?)(?:i?B)?\b", re.IGNORECASE)


def cache_bytes(text: str) -> int | None:
    """A cache size as Linux prints it ('491520K', '480 MiB', '30720 KB'); binary units."""
    match = _CACHE_SIZE.match(text)
    if not match:
        return None
    factor = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[match.group(2).upper()]
    return int(float(match.group(1)) * factor)


def llc_from_sysfs(root: Path = SYS_CPU) -> tuple[int, str] | None:
    """Total bytes of the highest cache level over all its instances, from sysfs."""
    instances: dict[str, int] = {}
    level_seen = 0
    for index in sorted(root.glob("cpu[0-9]*/cache/index[0-9]*")):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            size = cache_bytes((index / "size").read_text())
            shared = (index / "shared_cpu_list").read_text().strip()
        except (OSError, ValueError):
            continue
        if kind == "Instruction" or size is None or level < level_seen:
            continue
        if level > level_seen:
            level_seen, instances = level, {}
        instances[shared] = size
    if not instances:
        return None
    total = sum(instances.values())
    each = next(iter(instances.values()))
    return total, (f"sysfs cache L{level_seen}: {len(instances)} instance(s) of {each // 2**10} KiB")


def _llc(
    lscpu: dict[str, str], cpu: dict[str, str], sockets: int | None, sysfs: tuple[int, str] | None
) -> tuple[int | None, str]:
    if sysfs:
        return sysfs
    for key in ("L3 cache", "L2 cache"):
        if key in lscpu:
            size = cache_bytes(lscpu[key])
            if size:
                return size, f"lscpu '{key}: {lscpu[key]}'"
    size = cache_bytes(cpu.get("cache size", ""))
    if size:
        return size * (sockets or 1), f"/proc/cpuinfo 'cache size: {cpu['cache size']}' × {sockets or 1} socket(s)"
    return None, "unknown: no sysfs cache entries, lscpu cache line or /proc/cpuinfo cache size"


_MODEL_GHZ = re.compile(r"@\s*([\d.]+)\s*GHz", re.IGNORECASE)


def _clock(
    cpufreq_max_khz: str | None, lscpu: dict[str, str], cpu: dict[str, str], hypervisor: str | None
) -> tuple[float | None, str, str | None]:
    """The clock the peak assumes, where it came from, and its caveat (most authoritative first)."""
    turbo = "maximum turbo clock: sustained all-core AVX clocks are lower, so the peak is an upper bound"
    khz = _int((cpufreq_max_khz or "").strip() or None)
    if khz:
        return khz * 1e3, "cpufreq cpuinfo_max_freq", turbo
    mhz = lscpu.get("CPU max MHz")
    if mhz and float(mhz) > 0:
        return float(mhz) * 1e6, "lscpu CPU max MHz", turbo
    match = _MODEL_GHZ.search(cpu.get("model name", ""))
    if match:
        return (
            float(match.group(1)) * 1e9,
            "base clock in the model name",
            "base clock: turbo may run faster, so measured rates can exceed this peak",
        )
    mhz = cpu.get("cpu MHz")
    if mhz and float(mhz) > 0:
        caveat = (
            f"{hypervisor} guest: 'cpu MHz' is the host's nominal clock; the real clock under load "
            "is not visible and may be higher, so measured rates can exceed this peak"
            if hypervisor
            else "'cpu MHz' is the clock at the moment it was read; it changes with load"
        )
        return float(mhz) * 1e6, "/proc/cpuinfo cpu MHz", caveat
    return None, "unknown", "clock unknown: no cpufreq, lscpu 'CPU max MHz', '@ GHz' in the model name or 'cpu MHz'"


def parse(
    cpuinfo: str,
    lscpu: str = "",
    cpufreq_max_khz: str | None = None,
    llc: tuple[int, str] | None = None,
    usable_cpus: int | None = None,
) -> dict[str, Any]:
    """The CPU description from recorded texts (see :func:`describe` for the live machine)."""
    blocks = _fields(cpuinfo)
    table = _lscpu(lscpu)
    cpu = blocks[0] if blocks else {}
    flags = frozenset((cpu.get("flags") or cpu.get("Features") or table.get("Flags", "")).split())
    vendor = cpu.get("vendor_id") or table.get("Vendor ID", "")
    family = _int(cpu.get("cpu family") or table.get("CPU family"))
    model = _int(cpu.get("model") or table.get("Model"))
    arm_part = _int(cpu.get("CPU part"), 16)
    logical = len(blocks) or _int(table.get("CPU(s)"))
    pairs = {(b.get("physical id"), b.get("core id")) for b in blocks if "core id" in b}
    sockets = len({b.get("physical id") for b in blocks if "physical id" in b}) or _int(table.get("Socket(s)"))
    per_socket = _int(table.get("Core(s) per socket") or table.get("Core(s) per cluster"))
    cores = len(pairs) or (per_socket * sockets if per_socket and sockets else None)
    hypervisor = table.get("Hypervisor vendor") or ("unknown hypervisor" if "hypervisor" in flags else None)
    clock_hz, clock_source, clock_caveat = _clock(cpufreq_max_khz, table, cpu, hypervisor)
    llc_bytes, llc_source = _llc(table, cpu, sockets, llc)
    units = fp_units(vendor, family, model, flags, arm_part)
    notes = [clock_caveat] if clock_caveat else []
    if vendor == "GenuineIntel" and "amx_tile" in flags and family == 6 and model in _INTEL_CLIENT_AVX512:
        notes.append(
            f"family/model {family}/{model} names a client core without AMX, but AMX is exposed: "
            "a hypervisor CPU model; the ISA flags decide the FMA units"
        )
    return {
        "name": cpu.get("model name") or table.get("Model name") or f"{vendor or 'unknown'} CPU",
        "vendor": vendor or None,
        "family": family,
        "model": model,
        "logical_cpus": logical,
        "physical_cores": cores,
        "sockets": sockets,
        "usable_cpus": usable_cpus,
        "isa": [flag for flag in ISA_FLAGS if flag in flags],
        "clock_hz": clock_hz,
        "clock_source": clock_source,
        "llc_bytes": llc_bytes,
        "llc_source": llc_source,
        "hypervisor": hypervisor,
        "fp_units": asdict(units),
        "notes": notes,
    }


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


@functools.cache
def _host_texts() -> tuple[str, str, str | None, tuple[int, str] | None]:
    """This machine's /proc/cpuinfo, lscpu output, cpufreq max and sysfs LLC (read once)."""
    lscpu = ""
    if shutil.which("lscpu"):
        try:
            lscpu = subprocess.run(
                ["lscpu"], capture_output=True, text=True, timeout=10, env={**os.environ, "LC_ALL": "C"}
            ).stdout
        except (OSError, subprocess.SubprocessError):
            lscpu = ""
    return (
        _read(Path("/proc/cpuinfo")) or "",
        lscpu,
        _read(SYS_CPU / "cpu0" / "cpufreq" / "cpuinfo_max_freq"),
        llc_from_sysfs(),
    )


def describe() -> dict[str, Any]:
    """This machine's CPU: a JSON-ready dict for ``Run.device``."""
    cpuinfo, lscpu, max_khz, llc = _host_texts()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    info = {"host": platform.node(), **parse(cpuinfo, lscpu, max_khz, llc, usable)}
    if not cpuinfo:  # not Linux: what the standard library knows
        info["name"] = platform.processor() or info["name"]
        info["logical_cpus"] = info["logical_cpus"] or os.cpu_count()
        info["notes"].append("no /proc/cpuinfo: cores, clock and vector units unknown")
    return info


def available_memory() -> int | None:
    """Bytes of memory available now (MemAvailable, which counts reclaimable cache), or None."""
    for line in (_read(Path("/proc/meminfo")) or "").splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None


def last_level_cache_bytes(info: dict[str, Any] | None = None) -> int | None:
    """Total last-level cache of this machine (or of ``info``), for cold-cache buffer sizing."""
    return (info or describe())["llc_bytes"]


def theoretical_peaks(info: dict[str, Any]) -> Peaks:
    """FLOP/s peaks per dtype from cores × clock × SIMD lanes × FMA units × 2; no bandwidth."""
    units = FpUnits(**info["fp_units"])
    notes = list(info.get("notes", []))
    cores = info.get("physical_cores")
    if not cores:
        cores = info.get("logical_cpus") or 1
        notes.append(f"physical core count unknown: {cores} logical CPUs used as cores")
    usable = info.get("usable_cpus")
    if usable and usable < cores:
        notes.append(f"this process may run on {usable} of {cores} cores (affinity): peak uses {usable}")
        cores = usable
    if units.assumed:
        notes.append(f"FMA units assumed: {units.fma_units} × {units.vector_bits}-bit ({units.source})")
    isa = set(info.get("isa", []))
    native_half = bool(isa & {"avx512_fp16", "asimdhp"})
    notes.append(
        "float16: native half-precision FMA (twice the float32 lanes)"
        if native_half
        else "float16: no native half-precision FMA on this CPU; peak taken at the float32 rate "
        "(F16C converts to float32)"
    )
    notes.append(
        "NumPy computes float16 in software loops via float32 (no half-precision BLAS), far below any float16 peak"
    )
    notes.append(
        "theoretical memory bandwidth unknown (DIMM speed and channels are not visible, "
        "least of all in a VM): run 'gpuprof calibrate' for the measured ceiling"
    )
    clock = info.get("clock_hz")
    flops: dict[str, float] = {}
    if clock:
        for dtype, bits in ELEMENT_BITS.items():
            lane_bits = bits if dtype != "float16" or native_half else 32
            flops[dtype] = cores * clock * (units.vector_bits / lane_bits) * units.fma_units * 2
    lanes = f"{units.vector_bits // 32} float32, {units.vector_bits // 64} float64 lanes"
    source = (
        f"{cores} cores × {clock / 1e9:.3f} GHz ({info['clock_source']}) × {units.vector_bits}-bit vectors / "
        f"element bits ({lanes}) × {units.fma_units} FMA units × 2 FLOP per FMA [{units.label}]"
        if clock
        else f"clock unknown [{units.label}]"
    )
    return Peaks(
        device=info.get("name", "cpu"),
        flops=flops,
        bandwidth=None,
        clock_hz=clock,
        origin=DERIVED,
        source=source,
        notes=tuple(notes),
    )
