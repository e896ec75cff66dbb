"""Live CPU Top-Down: one ``gpuprof run`` counted by ``perf stat -M TopdownL1`` (or AMD's
PipelineL1), read back with :mod:`gpuprof.readers.perf_topdown`."""

from __future__ import annotations

from pathlib import Path

from gpuprof.devices import cpu
from gpuprof.errors import ProfilerError
from gpuprof.launch import perf
from gpuprof.model import Run
from gpuprof.readers.perf_topdown import read

METRIC_GROUP = {"GenuineIntel": "TopdownL1", "AuthenticAMD": "PipelineL1"}


def topdown_argv(perf: str, group: str, output: str, op: str, size: str, store: str) -> list[str]:
    """``perf stat -M GROUP -o OUTPUT -- python -m gpuprof run ...`` (a list: no shell involved)."""
    import sys

    return [
        perf,
        "stat",
        "-M",
        group,
        "-o",
        output,
        "--",
        sys.executable,
        "-m",
        "gpuprof",
        "run",
        "--op",
        op,
        "--size",
        size,
        "--device",
        "cpu",
        "--no-counters",
        "--store",
        store,
        "--format",
        "json",
    ]


def record_topdown(op: str, size: str) -> Run:
    """Top-Down level 1 of ``gpuprof run --op OP --size SIZE --device cpu``, counted by perf.

    Needs CPU hardware counters. Where they are missing (a VM without a virtual PMU, as on this
    project's machines) it raises one ProfilerError line saying so. perf counts the whole child
    process (start-up, set-up, reference check and the timed repeats), which the Run notes.
    """
    import subprocess
    import tempfile

    found = perf.probe(perf.HARDWARE)
    if found.error or not set(perf.HARDWARE) <= set(found.usable):
        why = found.error or f"perf reports {', '.join(found.unsupported or perf.HARDWARE)} <not supported>"
        raise ProfilerError(
            f"CPU Top-Down needs hardware counters and this machine exposes none ({why}; "
            "no PMU, as in a VM without a virtual PMU)",
            "run on bare metal, or record elsewhere with perf stat -M TopdownL1 -- CMD "
            "and read the file: gpuprof stalls FILE",
        )
    vendor = cpu.describe().get("vendor") or ""
    if vendor not in METRIC_GROUP:
        raise ProfilerError(
            f"no Top-Down metric group known for CPU vendor '{vendor or 'unknown'}'",
            "Top-Down level 1 is TopdownL1 on Intel and PipelineL1 on AMD",
        )
    with tempfile.TemporaryDirectory(prefix="gpuprof-topdown-") as tmp:
        output = str(Path(tmp) / "perf.txt")
        argv = topdown_argv(str(found.perf), METRIC_GROUP[vendor], output, op, size, str(Path(tmp) / "run.sqlite"))
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as error:
            raise ProfilerError(
                f"perf stat could not run: {error}", "check that perf works: perf stat -- true"
            ) from None
        if done.returncode != 0 or not Path(output).is_file():
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            raise ProfilerError(
                f"perf stat -M {METRIC_GROUP[vendor]} failed: {lines[-1] if lines else 'no output'}",
                "run the command by hand to see why: " + " ".join(argv),
            )
        run = read(Path(output))
    run.kind, run.source = "run", " ".join(argv)
    for launch in run.launches:
        launch.kernel = f"gpuprof run --op {op} --size {size} --device cpu"
    run.notes.append(
        "perf counted the whole 'gpuprof run' process (start-up, set-up, reference check and "
        "timed repeats), not only the timed region"
    )
    return run
