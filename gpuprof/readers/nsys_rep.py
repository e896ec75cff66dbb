"""Nsight Systems binary reports (``.nsys-rep``).

They are read only by NVIDIA's ``nsys`` CLI, which is not a Python package and needs no GPU but is
not on every machine. So gpuprof recognises the file by its first bytes (the text ``NVIDIA Tegra
Profiler Report``, whatever the file is named) and answers with the exact command that turns it
into a kernel summary gpuprof imports (the ``nsys-stats`` reader).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from gpuprof.errors import FormatError
from gpuprof.model import Run

NAME = "nsys-rep"
DESCRIPTION = "Nsight Systems binary report (.nsys-rep): recognised, answered with the command to convert it"
MAGIC = "NVIDIA Tegra Profiler Report"


def sniff(path: Path, head: str) -> bool:
    return head.startswith(MAGIC)


def read(path: Path) -> Run:
    csv_name = shlex.quote(f"{path.stem}_kern_sum.csv")
    command = (f"nsys stats --report cuda_gpu_kern_sum --format csv {shlex.quote(str(path))} "
               f"> {csv_name}")
    raise FormatError(
        f"{path} is a binary Nsight Systems report, which only NVIDIA's nsys can read",
        f"run '{command}' (nsys before 2022 calls the report gpukernsum), "
        f"then 'gpuprof import {csv_name}'")
