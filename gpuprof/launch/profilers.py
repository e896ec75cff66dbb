"""Which GPU profiler a run uses, and why: one backend interface for ``ncu`` and ``nvprof``.

A backend is a module (:mod:`gpuprof.launch.ncu`, :mod:`gpuprof.launch.nvprof`) that follows
:class:`ProfilerBackend`: the metrics it asks for, the exact argv, the log to read back, and what it
controlled and noticed, for the Run.
Each profiler is found in NVIDIA's standard places (:mod:`gpuprof.launch.discovery`) or given by
path (``--profiler /path/to/ncu``), probed once per executable (``--version``, whose banner also
says whether it is ncu or nvprof) and only when a run needs it, so a machine without one fails only
when that profiler is actually asked for.

Selection by compute capability (NVIDIA's support statements):
Nsight Compute profiles compute capability 7.0 (Volta) and newer; nvprof profiles up to 7.x and
"does not support devices with compute capability 8.0 and higher" (CUDA Profiler User's Guide,
https://docs.nvidia.com/cuda/profiler-users-guide/index.html). ``auto`` takes ncu from 7.0 on,
nvprof below, nvprof as the second choice on Volta/Turing, and kernel timing without counters when
neither is installed.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from gpuprof.errors import InputError, ProfilerError
from gpuprof.launch import discovery

if TYPE_CHECKING:
    from gpuprof.model import Launch

PROFILERS = ("auto", "ncu", "nvprof", "none")
CLOCK_CONTROLS = ("base", "none")
CACHE_CONTROLS = ("all", "none")
REPLAY_MODES = ("kernel", "application")
NCU_MIN_CC = (7, 0)
NVPROF_MAX_CC = (8, 0)  # exclusive
PROBE_TIMEOUT_S = 60
_VERSION = re.compile(r"(?:Release\s+)?[Vv]ersion\s+(\S+)")
INSTALL = {
    "ncu": "install Nsight Compute (it ships with the CUDA toolkit), or give its path: --profiler /path/to/ncu",
    "nvprof": "install a CUDA toolkit of version 11 or older (nvprof), or give its path: --profiler /path/to/nvprof",
}
# How each tool's --version banner names it (the stand-ins in tests/fakes print the same first lines).
_BANNERS = {"ncu": "Nsight Compute", "nvprof": "nvprof"}
PERMISSION_MARK = "ERR_NVGPUCTRPERM"
PERMISSION_FIX = (
    "run as root or load the nvidia module with NVreg_RestrictProfilingToAdminUsers=0 "
    "(https://developer.nvidia.com/ERR_NVGPUCTRPERM)"
)
PERMISSION_NOTE = (
    "counters refused (ERR_NVGPUCTRPERM: the driver lets only admin users read GPU performance "
    f"counters), so time is from CUDA events and FLOPs are analytic; to enable counters {PERMISSION_FIX}"
)


@dataclass(frozen=True)
class ProfileOptions:
    """How to profile: what ``gpuprof run`` sets for its workload child, and the filters and metric
    set ``gpuprof profile`` adds for a user's command. The defaults give ``gpuprof run``'s argv."""

    nvtx_range: str | None  # profile only inside this range (default domain)
    clock_control: str = "base"
    cache_control: str = "all"
    replay_mode: str = "kernel"
    metrics: tuple[str, ...] | None = None  # catalog entries to collect; None: the whole catalog
    kernel: str | None = None  # regular expression on the demangled kernel name
    launch_skip: int = 0  # launches (after the filters) not profiled first
    launch_count: int | None = None  # launches profiled at most
    target_processes: str | None = None  # "all": also the processes the command starts (MPI ranks)
    from_start: bool = False  # nvprof: profile from the start, not from cudaProfilerStart
    cc: tuple[int, int] | None = None  # the GPU's compute capability: ncu's chip for its metric list
    nvtx_start_end: bool = False  # nvtx_range is a start/end range (any thread), not push/pop

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("--clock-control", self.clock_control, CLOCK_CONTROLS),
            ("--cache-control", self.cache_control, CACHE_CONTROLS),
            ("--replay-mode", self.replay_mode, REPLAY_MODES),
        ):
            if value not in allowed:
                raise InputError(f"{name} '{value}' is not supported", f"choose one of: {', '.join(allowed)}")


class ProfilerBackend(Protocol):
    """What a GPU profiler backend module offers (``ncu``, ``nvprof``): probed once, used by the GPU session
    and ``gpuprof profile`` alike."""

    NAME: str

    def metrics(self, keys: tuple[str, ...] | None = None) -> list[str]:
        """The metric names it asks for, for the catalog entries ``keys`` (all by default)."""
        ...

    def to_collect(
        self, exe: str, keys: tuple[str, ...] | None = None, cc: tuple[int, int] | None = None
    ) -> tuple[list[str], list[str]]:
        """(those of :meth:`metrics` the GPU of compute capability ``cc`` offers, those it does not)."""
        ...

    def command(self, exe: str, child: list[str], run_dir: Path, options: ProfileOptions) -> list[str]:
        """The exact argv that profiles ``child`` and writes its log into ``run_dir``."""
        ...

    def log_path(self, run_dir: Path, options: ProfileOptions | None = None) -> Path:
        """The log to read back."""
        ...

    def passes(self, launches: list[Launch], log_text: str) -> tuple[list[int], str]:
        """Replay passes per profiled launch, and where that number came from."""
        ...

    def settings(self, options: ProfileOptions) -> dict[str, Any]:
        """What it controlled (clocks, caches, replay), for the Run's environment."""
        ...

    def notes(self, options: ProfileOptions, exe: str) -> list[str]:
        """What the Run's notes should say about how it measured."""
        ...


@dataclass(frozen=True)
class ProfilerProbe:
    """What ``which`` and ``--version`` found for one profiler executable."""

    name: str
    path: str | None
    version: str | None
    problem: str | None = None  # why it cannot be used; None when usable
    found_by: str = ""  # where it was found: "PATH", "--profiler", "/opt/nvidia/nsight-compute, ..."

    @property
    def described(self) -> str:
        """'ncu 2025.3.1.0 (/opt/nvidia/nsight-compute/2025.3.1/ncu, found in ...)', for the run's notes."""
        return f"{self.name} {self.version} ({self.path}, found by {self.found_by})"

    @property
    def usable(self) -> bool:
        return self.path is not None and self.problem is None


@dataclass(frozen=True)
class Choice:
    """The profiler a run uses (``none``: CUDA-event timing only) and the one-line reason."""

    backend: str
    reason: str
    probe: ProfilerProbe | None = None
    fallback: bool = False  # True when counters were wanted but no profiler could give them

    def module(self) -> ProfilerBackend:
        return cast(ProfilerBackend, importlib.import_module(f"gpuprof.launch.{self.backend}"))


def probe(name: str) -> ProfilerProbe:
    """``name`` found in the standard places, then ``--version``, once per executable."""
    found = discovery.locate(name)
    if found is None:
        return ProfilerProbe(name, None, None, f"{name} not found (searched {discovery.searched(name)})")
    probed = _probe_executable(os.path.realpath(found.path))
    if probed.usable and probed.name != name:
        return ProfilerProbe(name, found.path, None, f"{found.path} is {probed.name}, not {name}", found.where)
    return dataclasses.replace(probed, name=name, found_by=found.where)


@functools.cache
def _probe_executable(path: str) -> ProfilerProbe:
    """``path --version``: which profiler it is (from its banner) and its version."""
    guess = Path(path).name
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return ProfilerProbe(guess, path, None, f"'{path} --version' failed: {error}")
    output = done.stdout + done.stderr
    found = _VERSION.search(output)
    if done.returncode != 0 or not found:
        first = output.strip().splitlines()[:1]
        return ProfilerProbe(
            guess, path, None, f"'{path} --version' exited {done.returncode}: {first[0] if first else 'no output'}"
        )
    kind = next((name for name, mark in _BANNERS.items() if mark in output), None)
    if kind is None:
        return ProfilerProbe(guess, path, None, f"'{path} --version' does not name Nsight Compute or nvprof")
    return ProfilerProbe(kind, path, found.group(1))


def executable_version(path: str) -> str | None:
    """The version ``path --version`` reports (probed once per executable), None when it reports none."""
    return _probe_executable(os.path.realpath(path)).version


def _cc_text(cc: tuple[int, int] | None) -> str:
    return f"{cc[0]}.{cc[1]}" if cc else "unknown"


def _given_path(text: str) -> ProfilerProbe:
    """The profiler at the path ``--profiler`` gave; ProfilerError when it is not ncu or nvprof."""
    path = Path(text).expanduser()
    if not discovery.executable(path):
        raise ProfilerError(
            f"--profiler {text}: no executable file there",
            "give the path to an ncu or nvprof executable, or one of: " + ", ".join(PROFILERS),
        )
    found = _probe_executable(os.path.realpath(path))
    if not found.usable:
        raise ProfilerError(f"--profiler {text}: {found.problem}", "give the path to an ncu or nvprof executable")
    return dataclasses.replace(found, path=str(path), found_by="--profiler")


def _supports(name: str, cc: tuple[int, int] | None) -> None:
    """ProfilerError when profiler ``name`` cannot serve a GPU of compute capability ``cc``."""
    if name == "ncu" and cc is not None and cc < NCU_MIN_CC:
        raise ProfilerError(
            f"Nsight Compute (ncu) does not support compute capability {_cc_text(cc)}; "
            "it profiles 7.0 (Volta) and newer",
            "use --profiler nvprof",
        )
    if name == "nvprof" and cc is not None and cc >= NVPROF_MAX_CC:
        raise ProfilerError(
            f"nvprof does not support compute capability {_cc_text(cc)} (8.0 and newer)", "use --profiler ncu"
        )


def _require(name: str, cc: tuple[int, int] | None) -> ProfilerProbe:
    """The probe of an explicitly requested profiler; ProfilerError when it cannot serve this GPU."""
    _supports(name, cc)
    found = probe(name)
    if not found.usable:
        raise ProfilerError(
            f"--profiler {name}: {found.problem}", f"{INSTALL[name]}, or use --profiler none (CUDA-event timing only)"
        )
    return found


def candidates(cc: tuple[int, int] | None) -> list[str]:
    """Profilers that support compute capability ``cc``, preferred first."""
    if cc is None:
        return ["ncu", "nvprof"]
    if cc >= NVPROF_MAX_CC:
        return ["ncu"]
    if cc >= NCU_MIN_CC:
        return ["ncu", "nvprof"]
    return ["nvprof"]


def choose(requested: str | None, cc: tuple[int, int] | None) -> Choice:
    """The profiler for a GPU of compute capability ``cc`` and the reason, as the Run records it."""
    requested = requested or "auto"
    if requested not in PROFILERS and os.sep not in requested:
        raise InputError(
            f"unknown profiler '{requested}'",
            f"choose one of: {', '.join(PROFILERS)}, or give the path to an ncu or nvprof executable",
        )
    if requested not in PROFILERS:
        found = _given_path(requested)
        _supports(found.name, cc)
        return Choice(found.name, f"--profiler {requested}: {found.described}", found)
    if requested == "none":
        return Choice("none", "--profiler none: kernel time from CUDA events, FLOPs analytic")
    if requested != "auto":
        found = _require(requested, cc)
        return Choice(requested, f"--profiler {requested}: {found.described}", found)
    tried = []
    for name in candidates(cc):
        found = probe(name)
        if found.usable:
            return Choice(
                name,
                f"--profiler auto: compute capability {_cc_text(cc)} -> {found.described}; "
                "ncu supports CC >= 7.0, nvprof CC < 8.0",
                found,
            )
        tried.append(f"{name}: {found.problem}")
    names = " or ".join(candidates(cc))
    return Choice(
        "none",
        f"no profiler for compute capability {_cc_text(cc)} ({'; '.join(tried)}), so "
        f"time is from CUDA events and FLOPs are analytic; {INSTALL[candidates(cc)[0]]} "
        f"to get {names} counters",
        fallback=True,
    )


@functools.cache
def listed(argv: tuple[str, ...], pattern: str) -> frozenset[str] | None:
    """The names a profiler's metric query prints (``pattern``'s group, one per line), queried once
    per argv; None when the query cannot run or lists nothing, and the caller then asks for every
    metric and lets the profiler say what it lacks."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return frozenset(re.findall(pattern, done.stdout + done.stderr, re.MULTILINE)) or None


def split_offered(
    wanted: list[str], offered: frozenset[str] | None, base: Callable[[str], str] = str
) -> tuple[list[str], list[str]]:
    """(the wanted metrics whose ``base`` name is offered, the others); all of them when nothing was listed."""
    if offered is None:
        return wanted, []
    return [m for m in wanted if base(m) in offered], [m for m in wanted if base(m) not in offered]


def counters_refused(text: str) -> bool:
    """Did the profiler report that this user may not read the GPU's performance counters?"""
    return PERMISSION_MARK in text
