"""Every writer against the paths a user may give it, and a profiled command that needs the user's PATH.

Each writer (export, compare --html, roofline --out, stalls --plot, merge's store, run's store) is
run as ``python -m gpuprof`` with its output at a symlink, a FIFO (with a reader), a character
device (a null device made with mknod, else /dev/null, which is then only written through), a
dangling symlink, a symlink loop and a path under /proc. An outcome passes when the command wrote
through and the node is what it was (a link still a link, a FIFO still a FIFO, a device still a
device), or when it refused with one ``error:`` line and a non-zero exit, changing nothing.
``profile --device cpu -- python3`` runs with a virtual environment first on PATH and a decoy
``python3`` where perf puts its own folder (PERF_EXEC_PATH): it passes when the venv's ran.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
K40C = ROOT / "tests" / "fixtures" / "profiler-outputs" / "nvprof_csv_metrics_k40c_flop_stall.csv"
GPUPROF = [sys.executable, "-m", "gpuprof"]
PLACES = ("symlink", "fifo", "device", "dangling symlink", "symlink loop", "/proc")


@dataclass
class Row:
    writer: str
    place: str
    outcome: str  # "written through", "refused (one line)" or "FAILED: ..."


def _gpuprof(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    environment.pop("GPUPROF_DEBUG", None)
    return subprocess.run(
        [*GPUPROF, *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=300, check=False
    )


def _kind(path: Path) -> str:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return "missing"
    return (
        "symlink"
        if stat.S_ISLNK(mode)
        else "fifo"
        if stat.S_ISFIFO(mode)
        else "device"
        if stat.S_ISCHR(mode)
        else "file"
        if stat.S_ISREG(mode)
        else "other"
    )


def _place(folder: Path, place: str, suffix: str) -> tuple[Path, Callable[[], None]]:
    """The output path for ``place`` and a function to call after the command (a FIFO's reader)."""
    path = folder / f"out-{place.replace(' ', '-').replace('/', '')}{suffix}"

    def done() -> None:
        return None

    if place == "symlink":
        target = folder / f"target{suffix}"
        target.write_bytes(b"")
        path.symlink_to(target)
    elif place == "fifo":
        os.mkfifo(path)
        reader = threading.Thread(target=lambda: path.read_bytes(), daemon=True)
        reader.start()

        def done() -> None:
            reader.join(30)
            if reader.is_alive():  # the writer never opened it: release the reader
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    elif place == "device":
        try:
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        except PermissionError:
            path.symlink_to(os.devnull)
    elif place == "dangling symlink":
        path.symlink_to(folder / "no-such-folder" / f"x{suffix}")
    elif place == "symlink loop":
        path.symlink_to(path)
    elif place == "/proc":
        path = Path(f"/proc/gpuprof-nope{suffix}")
    return path, done


def _judge(result: subprocess.CompletedProcess[str], before: str, after: str) -> str:
    lines = result.stderr.strip().splitlines()
    if "Traceback" in result.stderr:
        return "FAILED: traceback: " + (lines[-1] if lines else "")
    if before != after:
        return f"FAILED: the {before} became {after} (exit {result.returncode})"
    if result.returncode == 0:
        return "written through"
    if lines and lines[-1].startswith("error: ") and not [x for x in lines if x.startswith("error: ")][1:]:
        return "refused (one line)"
    return f"FAILED: exit {result.returncode}: {result.stderr.strip()[-200:]}"


def writers(store: Path) -> dict[str, tuple[str, Callable[[Path], list[str]]]]:
    """Writer name -> (suffix, argv for an output path)."""
    return {
        "export": (".jsonl", lambda out: ["export", str(out), "--store", str(store)]),
        "compare --html": (
            ".html",
            lambda out: ["compare", "--import", str(K40C), "--html", str(out), "--store", str(store)],
        ),
        "roofline --out": (".svg", lambda out: ["roofline", "--store", str(store), "--out", str(out)]),
        "stalls --plot": (".svg", lambda out: ["stalls", str(K40C), "--plot", str(out)]),
        "merge (store)": (".sqlite", lambda out: ["merge", str(out), str(store)]),
        "run --store": (
            ".sqlite",
            lambda out: [
                "run",
                "--op",
                "add",
                "--size",
                "1KB",
                "--device",
                "cpu",
                "--repeat",
                "1",
                "--warmup",
                "0",
                "--store",
                str(out),
            ],
        ),
    }


def output_matrix(folder: Path) -> list[Row]:
    store = folder / "good.sqlite"
    made = _gpuprof(
        [
            "run",
            "--op",
            "add",
            "--size",
            "1MB",
            "--device",
            "cpu",
            "--repeat",
            "2",
            "--warmup",
            "0",
            "--store",
            str(store),
        ],
        folder,
    )
    if made.returncode:
        raise RuntimeError(f"cannot make the store the writers read: {made.stderr}")
    rows = []
    for writer, (suffix, argv) in writers(store).items():
        for place in PLACES:
            case = folder / f"{writer.split()[0]}-{place.replace(' ', '-').replace('/', '')}"
            case.mkdir()
            path, done = _place(case, place, suffix)
            before = _kind(path)
            result = _gpuprof(argv(path), case)
            done()
            rows.append(Row(writer, place, _judge(result, before, _kind(path))))
    return rows


def profiled_command(folder: Path) -> Row:
    """``gpuprof profile --device cpu -- python3`` with a venv first on PATH and a decoy python3
    where perf puts its own folder."""
    if shutil.which("perf") is None:
        return Row("profile -- python3", "user's PATH", "skipped: no perf")
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    decoy = folder / "perf-own"
    decoy.mkdir()
    (decoy / "python3").write_text('#!/bin/sh\necho decoy > "$3"\n')
    (decoy / "python3").chmod(0o755)
    ran = folder / "ran.txt"
    path = os.pathsep.join([str(venv / "bin"), str(Path(shutil.which("perf")).parent), "/usr/bin", "/bin"])
    result = _gpuprof(
        [
            "profile",
            "--device",
            "cpu",
            "--store",
            str(folder / "p.sqlite"),
            "--",
            "python3",
            "-c",
            "import sys; open(sys.argv[1], 'w').write(sys.prefix)",
            str(ran),
        ],
        folder,
        {"PATH": path, "PERF_EXEC_PATH": str(decoy)},
    )
    got = ran.read_text() if ran.exists() else ""
    outcome = (
        "the venv's python3 ran"
        if got == str(venv)
        else f"FAILED: ran {got or 'nothing'} (exit {result.returncode}: {result.stderr.strip()[-160:]})"
    )
    return Row("profile -- python3", "user's PATH", outcome)
