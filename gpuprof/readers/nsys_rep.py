"""Nsight Systems binary reports (``.nsys-rep``, ``.qdrep`` before 2021).

Only NVIDIA's ``nsys`` CLI reads them; it is not a Python package and needs no GPU, but is not on
every machine. gpuprof recognises the file by its first bytes (the text ``NVIDIA Tegra Profiler
Report``, whatever the file is named). Where ``nsys`` is on PATH, the report is copied into a
temporary folder and exported there (``nsys export --type sqlite``), and the export is read like
any other (:mod:`gpuprof.readers.nsys_sqlite`): nsys writes its ``.sqlite`` beside the report it
reads, and reading must create nothing beside the user's file. Without nsys, the answer is the
exact command that turns the report into a file gpuprof imports. An nsys older than the report
refuses it ("newer than your current version"); that refusal is passed on with the fix.

Only PATH is searched: readers come before the profiler launchers, whose discovery also looks in
NVIDIA's install folders (``gpuprof doctor`` says where an nsys is).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from gpuprof.errors import FormatError
from gpuprof.model import Run
from gpuprof.readers import nsys_sqlite

NAME = "nsys-rep"
DESCRIPTION = "Nsight Systems binary report (.nsys-rep, .qdrep), read through nsys export when nsys is on PATH"
MAGIC = "NVIDIA Tegra Profiler Report"
EXPORT_TIMEOUT_S = 600


def sniff(path: Path, head: str) -> bool:
    return head.startswith(MAGIC)


def _without_nsys(path: Path) -> FormatError:
    sqlite_name = shlex.quote(f"{path.stem}.sqlite")
    command = f"nsys export --type sqlite --output {sqlite_name} {shlex.quote(str(path))}"
    return FormatError(
        f"{path} is a binary Nsight Systems report, which only NVIDIA's nsys can read, and no nsys is on PATH",
        f"put nsys on PATH, or run '{command}' where nsys is, then 'gpuprof import {sqlite_name}'",
    )


def export(exe: str, path: Path, folder: Path) -> Path:
    """``nsys export --type sqlite`` of a copy of ``path`` made in ``folder``; the export's path."""
    copy = folder / "report.nsys-rep"
    shutil.copyfile(path, copy)
    sqlite = folder / "report.sqlite"
    try:
        done = subprocess.run(
            [exe, "export", "--type", "sqlite", "--output", str(sqlite), str(copy)],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=EXPORT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        raise FormatError(
            f"{path}: nsys export did not finish within {EXPORT_TIMEOUT_S} s",
            "export it yourself with 'nsys export --type sqlite' and import the .sqlite",
        ) from error
    said = " ".join((done.stderr or done.stdout).split())[-300:]
    if done.returncode != 0 or not sqlite.is_file():
        fix = (
            "use the nsys that wrote it (or newer), or import its 'nsys export --type sqlite' output"
            if "newer" in said
            else "check that it is a complete Nsight Systems report"
        )
        raise FormatError(f"{path}: {exe} export failed (exit {done.returncode}): {said or 'no message'}", fix)
    return sqlite


def read(path: Path) -> Run:
    exe = shutil.which("nsys")
    if exe is None:
        raise _without_nsys(path)
    with tempfile.TemporaryDirectory(prefix="gpuprof-nsys-") as folder:
        exported = nsys_sqlite.read(export(exe, path, Path(folder)))
    return Run(
        kind="import",
        format=NAME,
        source=str(path),
        device=exported.device,
        environment={**exported.environment, "converted_by": f"{exe} export --type sqlite"},
        notes=exported.notes,
        tables=(exported.launch_table, exported.metric_table),
    )
