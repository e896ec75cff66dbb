"""Where NVIDIA's profilers are installed: the places searched for ``ncu`` and ``nvprof``, in order.

Nsight Compute installs itself as ``/opt/nvidia/nsight-compute/<version>/ncu``; a CUDA toolkit puts
``ncu`` (a launcher into its bundled Nsight Compute) and, up to CUDA 11, ``nvprof`` in
``<toolkit>/bin``. None of these is on PATH by default: an offline H100 machine with driver 580 and
CUDA 13 had ncu only under ``/opt/nvidia/nsight-compute/2025.3.1/``. Searched: PATH; for ncu, the newest version folder under
``/opt/nvidia/nsight-compute`` (for nsys, ``/opt/nvidia/nsight-systems/<version>/bin``, where Nsight
Systems installs itself); ``$CUDA_HOME/bin``; ``/usr/local/cuda/bin``.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

NSIGHT_COMPUTE_ROOT = Path("/opt/nvidia/nsight-compute")
NSIGHT_SYSTEMS_ROOT = Path("/opt/nvidia/nsight-systems")
CUDA_DEFAULT = Path("/usr/local/cuda")
_VERSION_FOLDER = re.compile(r"^\d+(?:\.\d+)*$")


@dataclass(frozen=True)
class Found:
    """An executable and where it was found ("PATH", "/opt/nvidia/nsight-compute, newest of 2 versions")."""

    path: str
    where: str


def executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _install_folders() -> dict[str, tuple[Path, str]]:
    """Tool -> (the folder holding one folder per installed version, the tool's path inside one)."""
    return {"ncu": (NSIGHT_COMPUTE_ROOT, "ncu"), "nsys": (NSIGHT_SYSTEMS_ROOT, "bin/nsys")}


def _newest_install(name: str) -> Found | None:
    """``<root>/<version>/<tool>`` with the highest version number (2025.3.1 after 2024.1.0 and 2025.1.10)."""
    if name not in _install_folders():
        return None
    root, relative = _install_folders()[name]
    if not root.is_dir():
        return None
    versions = [
        (tuple(int(part) for part in folder.name.split(".")), folder)
        for folder in root.iterdir()
        if _VERSION_FOLDER.match(folder.name) and executable(folder / relative)
    ]
    if not versions:
        return None
    _, newest = max(versions)
    return Found(str(newest / relative), f"{root}, newest of {len(versions)} version(s)")


def _toolkit_bins() -> list[tuple[Path | None, str]]:
    home = os.environ.get("CUDA_HOME")
    return [(Path(home) / "bin" if home else None, "$CUDA_HOME/bin"), (CUDA_DEFAULT / "bin", f"{CUDA_DEFAULT}/bin")]


def locate(name: str) -> Found | None:
    """The first ``name`` executable in the standard places, or None."""
    on_path = shutil.which(name)
    if on_path:
        return Found(on_path, "PATH")
    newest = _newest_install(name)
    if newest:
        return newest
    for folder, label in _toolkit_bins():
        if folder is not None and executable(folder / name):
            return Found(str(folder / name), label)
    return None


def searched(name: str) -> str:
    """The places :func:`locate` looked, for a 'not found' message."""
    places = ["PATH"]
    if name in _install_folders():
        root, relative = _install_folders()[name]
        places.append(f"{root}/<version>/{relative}")
    places += [label if folder else f"{label} ($CUDA_HOME unset)" for folder, label in _toolkit_bins()]
    return ", ".join(places)
