"""Framework traces as a question: profile a Python program under its framework's profiler
(``gpuprof profile --trace``), and put two traces' per-op and per-step tables side by side with a
gate for CI (``gpuprof trace A --against B``).

:func:`profile_trace` runs ``python SCRIPT ARGS`` through :mod:`gpuprof.launch.framework_trace`
(no shell; the program's output goes to ``stdout.txt``/``stderr.txt`` in the report folder),
then reads the trace it wrote with the Chrome-trace reader. Nothing is stored here: the caller
stores the run.
"""

from __future__ import annotations

import math
import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpuprof import importing, readers
from gpuprof.derive import traces
from gpuprof.errors import GpuprofError, InputError, ProfilerError
from gpuprof.model import Run

if TYPE_CHECKING:
    import pandas as pd

FRAMEWORKS = ("torch", "jax", "tf")
_MODULES = {"torch": "torch", "jax": "jax", "tf": "tensorflow"}
# What each profiler writes, best first (TensorFlow 2 writes only the XPlane protobuf).
_OUTPUTS = ("**/*.pt.trace.json", "**/*.trace.json.gz", "**/*.xplane.pb")


@dataclass(frozen=True)
class TraceSettings:
    framework: str
    command: tuple[str, ...]
    steps: int = 2
    warmup: int = 1
    timeout: float = 1800.0
    reports_dir: Path = Path("reports")
    command_line: str = ""

    def __post_init__(self) -> None:
        if self.framework not in FRAMEWORKS:
            raise InputError(f"unknown --trace '{self.framework}'", f"choose one of: {', '.join(FRAMEWORKS)}")
        if len(self.command) < 2 or "python" not in Path(self.command[0]).name:
            raise InputError(
                "--trace runs a Python program: give 'python SCRIPT ARGS' after '--'",
                "for example: gpuprof profile --trace torch -- python train.py --epochs 1",
            )


def _has_module(python: str, module: str) -> bool:
    try:
        found = subprocess.run(
            [python, "-c", f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"],
            capture_output=True,
            check=False,
            timeout=60,  # an interpreter that cannot even look a module up in a minute has not got it usable
        )
    except subprocess.TimeoutExpired:
        return False
    return found.returncode == 0


def _last_line(path: Path) -> str:
    lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def profile_trace(settings: TraceSettings) -> tuple[Run, Path]:
    """Run the program under its framework's profiler; the run read from its trace, and the
    report folder. ProfilerError when the program fails before any trace is written."""
    python = settings.command[0]
    module = _MODULES[settings.framework]
    if not _has_module(python, module):
        raise ProfilerError(
            f"--trace {settings.framework}: {python} cannot import {module}",
            f"install {module} for that interpreter, or name the interpreter that has it",
        )
    run_dir = settings.reports_dir / uuid.uuid4().hex
    run_dir.mkdir(parents=True)
    package_root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    argv = [
        python,
        "-m",
        "gpuprof.launch.framework_trace",
        settings.framework,
        str(run_dir.resolve()),
        str(settings.steps),
        str(settings.warmup),
        "--",
        *settings.command[1:],
    ]
    with open(run_dir / "stdout.txt", "wb") as out, open(run_dir / "stderr.txt", "wb") as err:
        try:
            done = subprocess.run(argv, stdout=out, stderr=err, env=env, timeout=settings.timeout, check=False)
        except subprocess.TimeoutExpired:
            raise ProfilerError(
                f"the program ran past --timeout {settings.timeout:g} s", "raise --timeout or profile fewer steps"
            ) from None
    written = next((path for pattern in _OUTPUTS for path in sorted(run_dir.glob(pattern))), None)
    if written is None:
        why = _last_line(run_dir / "stderr.txt") if done.returncode else ""
        raise ProfilerError(
            f"the {settings.framework} profiler wrote no trace" + (f" (the program failed: {why})" if why else ""),
            "check the program runs on its own; with --trace torch it must call an optimizer's "
            "step() at least --warmup + 1 times"
            if settings.framework == "torch"
            else f"see {run_dir}/stderr.txt",
        )
    run = importing.read_file(written)
    run.kind = "run"
    run.environment = {
        **run.environment,
        "trace_file": str(written.resolve()),
        "command": " ".join(settings.command),
        "framework": settings.framework,
    }
    run.source = settings.command_line or " ".join(settings.command)
    if done.returncode:
        run.notes.append(f"the program exited with status {done.returncode}: the trace holds what ran before")
    return run, run_dir


def is_trace(path: str) -> bool:
    """Whether ``path`` is a framework trace file gpuprof reads (for commands that take traces
    and other inputs alike)."""

    try:
        return Path(path).is_file() and readers.detect(path).NAME in traces.TRACE_FORMATS
    except (GpuprofError, OSError):
        return False


def step_pairs(a: Run, b: Run) -> pd.DataFrame:
    """The two runs' steps side by side, paired in order: host time and GPU busy time of each."""
    import pandas as pd

    left, right = traces.step_table(a), traces.step_table(b)
    count = min(len(left), len(right))
    return pd.DataFrame(
        {
            "step A": left["step"][:count].to_numpy(),
            "step B": right["step"][:count].to_numpy(),
            "host time (s) A": left["host time (s)"][:count].to_numpy(),
            "host time (s) B": right["host time (s)"][:count].to_numpy(),
            "GPU busy (s) A": left["GPU busy (s)"][:count].to_numpy(),
            "GPU busy (s) B": right["GPU busy (s)"][:count].to_numpy(),
        }
    )


def labels(count: int) -> list[str]:
    """A, B, C ... for ``count`` traces (AA, AB ... past Z)."""
    letters = [chr(ord("A") + i) for i in range(26)]
    return [letters[i] if i < 26 else letters[i // 26 - 1] + letters[i % 26] for i in range(count)]


def side_by_side(*runs: Run, names: list[str] | None = None) -> pd.DataFrame:
    """The runs' per-op tables joined on the op name (the study's per-op comparison of a CPU and a
    GPU trace): calls, total and self time of each (columns suffixed A, B ... or ``names``), the
    GPU time of its kernels where that trace has GPU activity, and each later run's op time over
    the first's, an op's time being the GPU time of its kernels where it has any, else its total
    (so a CPU op is compared with the same op's kernels on a GPU); ops by their largest total."""
    names = names or labels(len(runs))
    tables, times = [], []
    for run, name in zip(runs, names):
        table = traces.op_table(run).set_index("op")
        columns = ["calls", "total (s)", "self (s)"] + (["GPU time (s)"] if "GPU time (s)" in table else [])
        tables.append(table[columns].add_suffix(f" {name}"))
        gpu = table["GPU time (s)"] if "GPU time (s)" in table else 0.0 * table["total (s)"]
        times.append(gpu.where(gpu > 0, table["total (s)"]))
    joined = tables[0].join(tables[1:], how="outer") if len(tables) > 1 else tables[0]
    for name in names:  # an op missing from one trace leaves its calls empty, not a float
        joined[f"calls {name}"] = joined[f"calls {name}"].astype("Int64")
    for name, time in zip(names[1:], times[1:]):
        joined[f"op time {name}/{names[0]}"] = time.reindex(joined.index) / times[0].reindex(joined.index)
    ordering = joined[[f"total (s) {name}" for name in names]].max(axis=1)
    out = joined.loc[ordering.sort_values(ascending=False, kind="stable").index]
    return out.rename_axis("op").reset_index()


@dataclass(frozen=True)
class Gate:
    """Fail when an op's total (``what`` = op) or a step's time (step) rises by more than ``limit`` %."""

    what: str
    limit: float

    @classmethod
    def parse(cls, text: str) -> Gate:
        what, _, number = text.partition(":")
        try:
            limit = float(number.strip().rstrip("%"))
        except ValueError:
            limit = math.nan
        if what not in ("op", "step") or not math.isfinite(limit) or limit < 0:
            raise InputError(
                f"--fail-if '{text}' is not op:+N% or step:+N%",
                "for example --fail-if op:+10% (any op's total time up by more than 10 %)",
            )
        return cls(what, limit)


def gate(a: Run, b: Run, gates: list[Gate]) -> pd.DataFrame:
    """Rows that break a gate: per op (total time) and per step (host time, steps paired by
    order), A's and B's time and the change in %."""
    import pandas as pd

    rows = []
    for one in gates:
        if one.what == "op":
            table = side_by_side(a, b)
            pairs = zip(table["op"], table["total (s) A"], table["total (s) B"])
        else:
            steps = step_pairs(a, b)
            pairs = (
                (f"step {x} / {y}", ta, tb)
                for x, y, ta, tb in zip(
                    steps["step A"], steps["step B"], steps["host time (s) A"], steps["host time (s) B"]
                )
            )
        for name, before, after in pairs:
            if before and not math.isnan(before) and not math.isnan(after):
                change = 100.0 * (after - before) / before
                if change > one.limit:
                    rows.append(
                        {
                            "gate": f"{one.what}:+{one.limit:g}%",
                            "name": name,
                            "A (s)": before,
                            "B (s)": after,
                            "change (%)": change,
                        }
                    )
    return pd.DataFrame(rows, columns=["gate", "name", "A (s)", "B (s)", "change (%)"])
