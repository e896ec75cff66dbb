"""Test helpers for the stand-in profilers: where they are and a PATH that finds only them."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

FAKES = Path(__file__).parent
FIXTURES = FAKES.parent / "fixtures" / "profiler-outputs"
PYTHON_DIR = str(Path(sys.executable).parent)  # the stand-ins' '#!/usr/bin/env python3' finds this


def stand_in_gpu(name: str, cc: str, driver: str | None = None) -> Any:
    """NVML's record of a GPU as a stand-in gives it: name and compute capability, nothing else known."""
    from gpuprof.devices.gpu_detect import GpuInfo

    return GpuInfo(
        index=0,
        name=name,
        pci_bus_id=None,
        cc=cc,
        sm_count=None,
        sm_count_source="unknown",
        cores=None,
        max_sm_clock_hz=None,
        sm_clock_hz=None,
        max_memory_clock_hz=None,
        bus_width_bits=None,
        memory_bytes=None,
        l2_bytes=None,
        driver=driver,
    )


def search_path(*dirs: Path | str) -> str:
    """A PATH with ``dirs`` first and only a Python after them: no real NVIDIA tool can be found."""
    return os.pathsep.join([*map(str, dirs), PYTHON_DIR])


def isolate_discovery(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the standard install places (/opt/nvidia/nsight-compute and nsight-systems, $CUDA_HOME, /usr/local/cuda) into
    ``tmp_path`` with fresh probe caches, so a real NVIDIA tool on this machine is never found; the root."""
    from gpuprof.launch import discovery, ncu_metrics, profilers

    root = tmp_path / "install-root"
    monkeypatch.setattr(discovery, "NSIGHT_COMPUTE_ROOT", root / "opt" / "nvidia" / "nsight-compute")
    monkeypatch.setattr(discovery, "NSIGHT_SYSTEMS_ROOT", root / "opt" / "nvidia" / "nsight-systems")
    monkeypatch.setattr(discovery, "CUDA_DEFAULT", root / "usr" / "local" / "cuda")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    profilers._probe_executable.cache_clear()
    profilers.listed.cache_clear()
    ncu_metrics.query.cache_clear()
    return root


def use_stand_ins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put the stand-in profilers first on PATH, nothing in the standard places, fresh probe caches;
    the file recording their calls."""
    record = tmp_path / "calls.jsonl"
    isolate_discovery(tmp_path, monkeypatch)
    monkeypatch.setenv("PATH", search_path(FAKES))
    monkeypatch.setenv("GPUPROF_FAKE_RECORD", str(record))
    return record


def calls(record: Path) -> list[dict[str, Any]]:
    """The stand-ins' recorded calls, in order."""
    return [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
