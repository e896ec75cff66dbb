"""Which GPU profiler a run uses, and why: one backend interface for ``ncu`` and ``nvprof``.

A backend is a module (:mod:`gpuprof.launch.ncu`, :mod:`gpuprof.launch.nvprof`) with ``NAME``,
``command(exe, child, run_dir, options) -> argv``, ``log_path(run_dir)`` (the file to read back),
``settings(options) -> dict`` (what it controlled, for the Run) and ``notes(options, log) -> list``.
Each profiler is probed once per executable (``which`` + ``--version``) and only when a run needs
it, so a machine without one fails only when that profiler is actually asked for.

Selection by compute capability (NVIDIA's support statements):
Nsight Compute profiles compute capability 7.0 (Volta) and newer; nvprof profiles up to 7.x and
"does not support devices with compute capability 8.0 and higher" (CUDA Profiler User's Guide,
https://docs.nvidia.com/cuda/profiler-users-guide/index.html). ``auto`` takes ncu from 7.0 on,
nvprof below, nvprof as the second choice on Volta/Turing, and kernel timing without counters when
neither is installed.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from types import ModuleType

from gpuprof.errors import InputError, ProfilerError

PROFILERS = ("auto", "ncu", "nvprof", "none")
CLOCK_CONTROLS = ("base", "none")
CACHE_CONTROLS = ("all", "none")
REPLAY_MODES = ("kernel", "application")
NCU_MIN_CC = (7, 0)
NVPROF_MAX_CC = (8, 0)  # exclusive
PROBE_TIMEOUT_S = 60
_VERSION = re.compile(r"(?:Release\s+)?[Vv]ersion\s+(\S+)")
_INSTALL = {
    "ncu": "install Nsight Compute (it ships with the CUDA toolkit) and put ncu on PATH",
    "nvprof": "install a CUDA toolkit of version 11 or older (nvprof) and put nvprof on PATH",
}
PERMISSION_MARK = "ERR_NVGPUCTRPERM"
PERMISSION_NOTE = (
    "counters refused (ERR_NVGPUCTRPERM: the driver lets only admin users read GPU performance "
    "counters), so time is from CUDA events and FLOPs are analytic; to enable counters run as root "
    "or load the nvidia module with NVreg_RestrictProfilingToAdminUsers=0 "
    "(https://developer.nvidia.com/ERR_NVGPUCTRPERM)")


@dataclass(frozen=True)
class ProfileOptions:
    """How to profile one sweep point; the options a user may set on ``gpuprof run``."""

    nvtx_range: str
    clock_control: str = "base"
    cache_control: str = "all"
    replay_mode: str = "kernel"

    def __post_init__(self) -> None:
        for name, value, allowed in (("--clock-control", self.clock_control, CLOCK_CONTROLS),
                                     ("--cache-control", self.cache_control, CACHE_CONTROLS),
                                     ("--replay-mode", self.replay_mode, REPLAY_MODES)):
            if value not in allowed:
                raise InputError(f"{name} '{value}' is not supported", f"choose one of: {', '.join(allowed)}")


@dataclass(frozen=True)
class Probe:
    """What ``which`` and ``--version`` found for one profiler executable."""

    name: str
    path: str | None
    version: str | None
    problem: str | None = None  # why it cannot be used; None when usable

    @property
    def usable(self) -> bool:
        return self.path is not None and self.problem is None


@dataclass(frozen=True)
class Choice:
    """The profiler a run uses (``none``: CUDA-event timing only) and the one-line reason."""

    backend: str
    reason: str
    probe: Probe | None = None
    fallback: bool = False  # True when counters were wanted but no profiler could give them

    def module(self) -> ModuleType:
        return importlib.import_module(f"gpuprof.launch.{self.backend}")


def probe(name: str) -> Probe:
    """``which name`` then ``name --version``, once per executable found on the current PATH."""
    path = shutil.which(name)
    if path is None:
        return Probe(name, None, None, f"{name} not found on PATH")
    return _probe_executable(name, os.path.realpath(path))


@functools.cache
def _probe_executable(name: str, path: str) -> Probe:
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return Probe(name, path, None, f"'{path} --version' failed: {error}")
    output = done.stdout + done.stderr
    found = _VERSION.search(output)
    if done.returncode != 0 or not found:
        first = output.strip().splitlines()[:1]
        return Probe(name, path, None, f"'{path} --version' exited {done.returncode}: "
                                       f"{first[0] if first else 'no output'}")
    return Probe(name, path, found.group(1))


def _cc_text(cc: tuple[int, int] | None) -> str:
    return f"{cc[0]}.{cc[1]}" if cc else "unknown"


def _require(name: str, cc: tuple[int, int] | None) -> Probe:
    """The probe of an explicitly requested profiler; ProfilerError when it cannot serve this GPU."""
    if name == "ncu" and cc is not None and cc < NCU_MIN_CC:
        raise ProfilerError(f"Nsight Compute (ncu) does not support compute capability {_cc_text(cc)}; "
                            "it profiles 7.0 (Volta) and newer", "use --profiler nvprof")
    if name == "nvprof" and cc is not None and cc >= NVPROF_MAX_CC:
        raise ProfilerError(f"nvprof does not support compute capability {_cc_text(cc)} (8.0 and newer)",
                            "use --profiler ncu")
    found = probe(name)
    if not found.usable:
        raise ProfilerError(f"--profiler {name}: {found.problem}",
                            f"{_INSTALL[name]}, or use --profiler none (CUDA-event timing only)")
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
    if requested not in PROFILERS:
        raise InputError(f"unknown profiler '{requested}'", f"choose one of: {', '.join(PROFILERS)}")
    if requested == "none":
        return Choice("none", "--profiler none: kernel time from CUDA events, FLOPs analytic")
    if requested != "auto":
        found = _require(requested, cc)
        return Choice(requested, f"--profiler {requested} ({found.path}, version {found.version})", found)
    tried = []
    for name in candidates(cc):
        found = probe(name)
        if found.usable:
            return Choice(name, f"--profiler auto: compute capability {_cc_text(cc)} -> {name} "
                                f"({found.path}, version {found.version}); ncu supports CC >= 7.0, "
                                "nvprof CC < 8.0", found)
        tried.append(f"{name}: {found.problem}")
    names = " or ".join(candidates(cc))
    return Choice("none", f"no profiler for compute capability {_cc_text(cc)} ({'; '.join(tried)}), so "
                          f"time is from CUDA events and FLOPs are analytic; {_INSTALL[candidates(cc)[0]]} "
                          f"to get {names} counters", fallback=True)


def counters_refused(text: str) -> bool:
    """Did the profiler report that this user may not read the GPU's performance counters?"""
    return PERMISSION_MARK in text
