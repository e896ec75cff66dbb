"""GPU acceptance: run gpuprof's GPU path on a real GPU and write what it measured and which checks held.

    python benchmarks/gpu_acceptance.py OUT --quick [--pack DIR] [--cases PATTERN]
    python benchmarks/gpu_acceptance.py OUT [--part kernels|cupy|jax|torch|extra|training|all] [--deadline-s 420] [--pack DIR]
    python benchmarks/gpu_acceptance.py OUT --merge PART_DIR [PART_DIR ...]
    python benchmarks/gpu_acceptance.py OUT --self-check [--quick] [--pack DIR]

On an offline GPU node (``pip install --no-deps --no-build-isolation -e .`` over the node's NumPy,
pandas, CuPy and nvidia-ml-py) it runs, through the ``gpuprof`` command:

* ``--quick`` (about 7 minutes on an H100, install included; estimated, nothing has run on a GPU yet):
  the preflight (package versions, ``nvidia-smi``, ncu and its metric list checked against
  gpuprof's), the cuda-kernels and CuPy cases of the six ops in float32 and float16 at one size, the
  384 MB add on both engines and the 2048^3 cuBLAS dot, each with a ``--profiler none`` twin (what
  ncu's presence does to event times), one direct-ncu cross-check, and the live ``pytest -m gpu``
  tests that need no PyTensor;
* ``kernels`` / ``cupy``: every op x dtype with that engine under the profiler ``--profiler auto``
  finds (ncu; nvprof too where it is installed and supports the GPU), ``--clock-control none``
  (the card's clocks are never locked or changed), one profiled call;
* ``jax`` / ``torch``: the same for PyTensor's JAX and PyTorch backends (``pytensor-jax``,
  ``pytensor-torch``; needs a CUDA build of jaxlib or torch), plus add at 384 MB with that engine;
* ``extra``: add at 384 MB with both engines and a 2048^3 cuBLAS dot (event time against profiler
  time, bandwidth against the DRAM peak), the same kernels under a direct ``ncu`` command for a
  cross-check of the counts, a small sweep (event timing), ``gpuprof compare`` and ``gpuprof stalls``,
  ``gpuprof doctor --for profile`` and ``gpuprof profile`` of the workload child run as a user's
  command (its NVTX range as the filter): its counted FP32 FLOPs per launch must be the add's
  analytic count;
* ``training``: the CNN training job (``gpuprof.workloads.training``, needs a CUDA build of torch)
  under ``gpuprof profile --energy`` on one GPU and under DistributedDataParallel with NCCL (one
  rank): 20 step regions from the torch hooks, one GPU in use, its NVML energy above zero.

``--cases PATTERN`` keeps the cases whose name the regular expression matches (``--cases float64``).
Each call stays under 8 minutes: no case starts after ``deadline - case timeout`` (it is listed as
not run), and a case that outlives its time-out is killed with its whole process session (ncu and
the workload it started). OUT gets ``summary.md`` (what ran: device, driver, packages, nvidia-smi,
ncu and its metric list, gpuprof version; one row per case, pass/fail per check), ``summary.csv``,
``results.json`` (for ``--merge``), the store ``acceptance.sqlite``, each case's stdout/stderr under
``cases/`` and the raw profiler reports under ``reports/<run-id>/``; the summary and results are
rewritten after every case and one line per case is printed, so a call killed from outside still
leaves them, and SIGTERM or SIGINT writes the summary before exiting. ``--pack DIR`` keeps
``summary.md``, ``results.json`` and a live archive ``live.tar.gz`` (everything but ``.ncu-rep``)
in DIR, refreshed after every case; at the end DIR holds the summaries and two archives,
``raw.tar.gz`` and ``ncu-rep.tar.gz`` (as many ``.ncu-rep`` as fit in 15 MiB, the rest named in
``packed.txt``): never more than 8 files, no folder, at any moment.

Without a usable GPU (and without ``--self-check``) the first line says so and the script exits 2
at once.

Checks (docs/gpu.md explains each bound): on ``cuda-kernels``, add, mul, scalar and dot count
exactly their analytic FLOPs (within 0.1 %) in the precision that does the op's work (FP32 for
float32 and for the float16 dot, which accumulates in float32; FP16 for float16 add, mul and scalar;
FP64 for float64); FLOPs the compiler's idioms add in another precision (``IDIOMS``: zeroing a
register with ``HFMA2.MMA``, half-to-float conversions with ``HADD2.F32``, predicted from the sm_90
SASS by tests/test_kernels_nvcc.py) are reported as idiom rows beside it. Sigmoid and tanh within
``RATIO_RANGES``; the cuBLAS float16 and float64 dot (tensor cores: HGMMA, DMMA) within
``TENSOR_BAND`` of the analytic FLOPs (about half would mean ncu counts FMAs, not FLOPs);
event time / profiler time within ``TIME_BOUND`` for the large cases; add at 384 MB at 70-100 % of
the device's DRAM peak; direct ncu counts equal to gpuprof's. For the PyTensor backends also: the
compile time reported in its own row, at least one kernel counted inside the NVTX range per call
(their kernels are launched by JAX's or PyTorch's runtime, not by gpuprof), and counted/analytic =
1.000 for add, mul and scalar in float32 and float64.

``--self-check`` runs the same plumbing without a GPU: the stand-in ncu of tests/fakes replays the
converted RTX 3080 raw page, NVML and CuPy are stand-ins, the workload child's result is a stand-in
file. Its summary says so on its first line, and no GPU check is evaluated: it proves that the
script runs every case, parses what comes back and writes the summary, not that a GPU ran.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OPS = ("add", "mul", "scalar", "dot", "sigmoid", "tanh")
DTYPES = ("float32", "float64", "float16")
EXACT_OPS = ("add", "mul", "scalar", "dot")
FRAMEWORKS = {"jax": "pytensor-jax", "torch": "pytensor-torch"}  # part -> engine
# one FADD/FMUL per element whatever kernel XLA or TorchInductor writes (float16 may pack two per instruction)
FRAMEWORK_EXACT = (("add", "mul", "scalar"), ("float32", "float64"))
# counted/analytic for the hand-written sigmoid and tanh: exp and the IEEE division expand into FFMA
# and FADD steps (kernels/README.md: 11-15 FP32 FLOPs per element in the PTX, 30-60 FP64), against
# the textbook 4 and 5; float16 computes in float32.
RATIO_RANGES = {"float32": (1.5, 5.0), "float16": (1.5, 5.0), "float64": (3.0, 16.0)}
PRECISION = {"float32": "FP32", "float64": "FP64", "float16": "FP16"}
# cuBLAS on tensor cores (HGMMA for float16, DMMA for float64): counted/analytic, all counters summed.
# 0.45-0.6 would mean ncu's sm__ops_path_tensor_* count FMAs rather than FLOPs (docs/tensor-cores.md).
TENSOR_BAND = (0.9, 1.2)
# FLOPs the compiler adds, in another precision than the op's work, to the hand-written kernels'
# sm_90 SASS (NVRTC, CUDA 13; tests/test_kernels_nvcc.py predicts them from the SASS): per thread of
# a dot launch (one thread per output element), FLOPs executed once and FLOPs per 16-wide tile.
# (precision, once, per tile, reason); FMA-class instructions count 2, as ncu's FLOP formula does.
IDIOMS = {
    ("dot", "float32"): (("FP16", 2, 0, "HFMA2.MMA R, -RZ, RZ, 0, 0 zeroes the accumulator once per thread"),),
    ("dot", "float16"): (
        (
            "FP16",
            2,
            2,
            (
                "HFMA2.MMA R, -RZ, RZ, 0, 0 zeroes the accumulator once per thread; "
                "two HADD2.F32 convert the A and B tile elements to float per tile"
            ),
        ),
    ),
}
TIME_BOUND = 0.15  # |event / profiler - 1| at the large sizes
BANDWIDTH_RANGE = (70.0, 100.0)
CASE_TIMEOUT_S = 150
QUICK_CASE_TIMEOUT_S = 60
QUICK_DEADLINE_S = 330  # the quick call's cases and live tests; the install and preflight come before
PACK_LIMIT = 15 * 2**20
SHAPES = {"dot": "1024x1024x1024", "elementwise": "2048x2048"}
PASS, FAIL, NOT_EVALUATED, INFO = "pass", "FAIL", "not evaluated (self-check)", "info"


def work_precision(op: str, dtype: str) -> str:
    """The precision that does the op's work in gpuprof's kernels: the float16 dot accumulates in FP32."""
    return "FP32" if (op, dtype) == ("dot", "float16") else PRECISION[dtype]


def idiom_flops(op: str, dtype: str, shape: str) -> list[tuple[str, float, str]]:
    """(precision, FLOPs per call, reason) the compiler's idioms add to a cuda-kernels call (IDIOMS)."""
    if op != "dot":
        return []
    m, k, n = (int(side) for side in shape.split("x"))
    return [
        (precision, m * n * (once + per_tile * k / 16), reason)
        for precision, once, per_tile, reason in IDIOMS.get((op, dtype), ())
    ]


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[str, ...]  # gpuprof run options after --device cuda
    engine: str
    op: str
    dtype: str
    purpose: str = "matrix"  # matrix | large


@dataclass
class Result:
    case: Case
    code: int | None  # None: not run (deadline)
    seconds: float = 0.0
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    run_id: str = ""
    error: str = ""


def _case(
    op: str, engine: str, dtype: str, size: str | None = None, profiler: str = "auto", purpose: str = "matrix"
) -> Case:
    where = ("--size", size) if size else ("--shape", SHAPES["dot" if op == "dot" else "elementwise"])
    name = f"{op}-{engine}-{dtype}-{size or where[1]}" + ("" if profiler == "auto" else f"-{profiler}")
    return Case(
        name,
        ("--op", op, "--engine", engine, "--dtype", dtype, *where, "--profiler", profiler),
        engine,
        op,
        dtype,
        purpose,
    )


def _large(engine: str, profiler: str = "auto") -> list[Case]:
    """The 384 MB add on ``engine`` (and the 2048^3 cuBLAS dot with CuPy), under ``profiler``."""
    cases = [_case("add", engine, "float32", "384MB", profiler, purpose="large")]
    if engine == "cupy":
        suffix = "" if profiler == "auto" else f"-{profiler}"
        cases.append(
            Case(
                f"dot-cupy-float32-2048{suffix}",
                (
                    "--op",
                    "dot",
                    "--engine",
                    "cupy",
                    "--dtype",
                    "float32",
                    "--shape",
                    "2048x2048x2048",
                    "--profiler",
                    profiler,
                ),
                "cupy",
                "dot",
                "float32",
                "large",
            )
        )
    return cases


def plan(part: str, nvprof: bool) -> list[Case]:
    """The cases of one part (see the module docstring)."""
    cases: list[Case] = []
    if part == "quick":
        for engine in ("cuda-kernels", "cupy"):
            cases += [_case(op, engine, dtype) for dtype in ("float32", "float16") for op in OPS]
        for engine in ("cuda-kernels", "cupy"):
            cases += [twin for auto, none in zip(_large(engine), _large(engine, "none")) for twin in (auto, none)]
        return cases
    for engine, name in (("cuda-kernels", "kernels"), ("cupy", "cupy")):
        if part in (name, "all"):
            cases += [_case(op, engine, dtype) for op in OPS for dtype in DTYPES]
            if nvprof:
                cases += [_case(op, engine, "float32", profiler="nvprof") for op in EXACT_OPS]
    for name, engine in FRAMEWORKS.items():
        if part in (name, "all"):
            cases += [_case(op, engine, dtype) for op in OPS for dtype in DTYPES]
            cases.append(_case("add", engine, "float32", "384MB", purpose="large"))
    if part in ("extra", "all"):
        cases += _large("cuda-kernels") + _large("cupy")
    return cases


class Gpuprof:
    """The ``gpuprof`` command in a child process, run in OUT (so reports/ lands there)."""

    command: tuple[str, ...] = (sys.executable, "-m", "gpuprof")

    def __init__(self, out: Path) -> None:
        self.out = out

    def __call__(self, args: list[str], timeout: float = CASE_TIMEOUT_S) -> tuple[int, str, str]:
        return run_command([*self.command, *args], self.out, timeout)


def run_command(argv: list[str], cwd: Path, timeout: float) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``argv`` in a session of its own; at ``timeout`` the whole session
    and everything below it is killed (exit 124): gpuprof runs ncu and the workload in a session of
    their own, which killing gpuprof alone would orphan, holding the GPU and ncu's lock file."""
    from gpuprof.launch import process

    child = subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill_session(child.pid)
        stdout, stderr = child.communicate()
        return 124, stdout, stderr + f"\ndid not finish within {timeout:g} s: its process session was killed"
    except BaseException:  # Ctrl-C or SIGTERM: nothing of the case may outlive the script
        process.kill_session(child.pid)
        child.wait()
        raise
    return child.returncode, stdout, stderr


class InProcess(Gpuprof):
    """Self-check: the same commands through Click in this process, where the stand-ins are installed."""

    def __call__(self, args: list[str], timeout: float = CASE_TIMEOUT_S) -> tuple[int, str, str]:
        from click.testing import CliRunner

        from gpuprof.cli import main

        done = CliRunner().invoke(main, args)
        return done.exit_code, done.stdout, done.stderr


def run_case(gpuprof: Gpuprof, case: Case, store: Path, timeout: float = CASE_TIMEOUT_S) -> Result:
    began = time.monotonic()
    code, stdout, stderr = gpuprof(
        [
            "run",
            *case.args,
            "--device",
            "cuda",
            "--clock-control",
            "none",
            "--profiled",
            "1",
            "--repeat",
            "5",
            "--warmup",
            "2",
            "--format",
            "json",
            "--store",
            str(store),
        ],
        timeout=timeout,
    )
    folder = gpuprof.out / "cases"
    folder.mkdir(exist_ok=True)
    (folder / f"{case.name}.json").write_text(stdout)
    (folder / f"{case.name}.stderr.txt").write_text(stderr)
    result = Result(case, code, time.monotonic() - began)
    stored = re.search(r"stored as run (\w+)", stderr)
    result.run_id = stored.group(1) if stored else ""
    if code == 0:
        try:
            result.rows = {row["quantity"]: row for row in json.loads(stdout)["quantities"]}
        except (ValueError, KeyError, TypeError) as error:
            result.code, result.error = 1, f"unreadable JSON output: {error}"
    else:
        result.error = (stderr.strip().splitlines() or ["no output"])[-1][:300]
    return result


def _value(result: Result, name: str) -> float | None:
    value = result.rows.get(name, {}).get("value")
    return float(value) if isinstance(value, (int, float)) else None


def _profiler(case: Case) -> str:
    return case.args[case.args.index("--profiler") + 1]


def _shape(case: Case) -> str:
    return dict(zip(case.args[::2], case.args[1::2])).get("--shape", "")


def exact_checks(result: Result) -> list[tuple[str, str, str]]:
    """A cuda-kernels add/mul/scalar/dot: counted FLOPs in the precision that does the work against
    the analytic count, and the other precisions' counts as idiom rows with the SASS reason."""
    case = result.case
    work, analytic = work_precision(case.op, case.dtype), _value(result, "FLOPs")
    counted = _value(result, f"FLOPs counted ({work})")
    ratio = counted / analytic if counted is not None and analytic else None
    found = [
        (
            f"counted {work} / analytic = 1.000",
            PASS if ratio is not None and abs(ratio - 1) <= 1e-3 else FAIL,
            f"{ratio:.5f}" if ratio is not None else f"no FLOPs counted ({work}) row",
        )
    ]
    predicted = {
        precision: (flops, reason) for precision, flops, reason in idiom_flops(case.op, case.dtype, _shape(case))
    }
    for precision in sorted(set(PRECISION.values()) - {work}):
        value = _value(result, f"FLOPs counted ({precision})")
        expected, reason = predicted.get(precision, (0.0, "no idiom in this precision in the sm_90 SASS"))
        if value or expected:
            found.append(
                (f"idiom {precision}", INFO, f"counted {value or 0:.6g}, SASS predicts {expected:.6g}: {reason}")
            )
    return found


def _tensor_detail(ratio: float | None) -> str:
    if ratio is None:
        return "no FLOPs counted / analytic row"
    half = " (about half: ncu's sm__ops_path_tensor_* count FMAs, not FLOPs)" if 0.45 <= ratio <= 0.6 else ""
    return f"{ratio:.4f}{half}"


def checks(result: Result, self_check: bool) -> list[tuple[str, str, str]]:
    """(check, verdict, detail) for one case; the GPU checks are not evaluated in a self-check."""
    case = result.case
    if result.code is None:
        return [("ran", "not run", result.error or "deadline reached before this case")]
    if result.code != 0:
        return [("ran", FAIL, f"exit {result.code}: {result.error}")]
    found = [("ran", PASS, f"run {result.run_id}")]
    wanted: list[tuple[str, Any]] = []
    ratio = _value(result, "FLOPs counted / analytic")
    profiled = _profiler(case) != "none"
    if case.engine == "cuda-kernels" and case.op in EXACT_OPS and profiled:
        found += [
            (name, NOT_EVALUATED if self_check else verdict, detail) for name, verdict, detail in exact_checks(result)
        ]
    if case.engine == "cuda-kernels" and case.op in ("sigmoid", "tanh"):
        low, high = RATIO_RANGES[case.dtype]
        wanted.append((f"counted/analytic in [{low}, {high}]", lambda: ratio is not None and low <= ratio <= high))
    if case.engine == "cupy" and case.op == "dot" and case.dtype in ("float16", "float64") and profiled:
        low, high = TENSOR_BAND
        found.append(
            (
                f"tensor-core counted/analytic in [{low}, {high}]",
                NOT_EVALUATED if self_check else PASS if ratio is not None and low <= ratio <= high else FAIL,
                _tensor_detail(ratio),
            )
        )
    if case.engine in FRAMEWORKS.values():
        compiled, kernels = _value(result, "compile + first call"), _value(result, "kernels per call")
        wanted.append(("compile time in its own row", lambda: compiled is not None and compiled > 0))
        wanted.append(("kernels counted inside the NVTX range", lambda: kernels is not None and kernels >= 1))
        if case.op in FRAMEWORK_EXACT[0] and case.dtype in FRAMEWORK_EXACT[1]:
            wanted.append(("counted/analytic = 1.000", lambda: ratio is not None and abs(ratio - 1) <= 1e-3))
    if case.purpose == "large" and profiled:
        event, profiler = _value(result, "time (median)"), _value(result, "time (profiler)")
        wanted.append(
            (
                f"event / profiler within 1 +- {TIME_BOUND}",
                lambda: bool(event and profiler) and abs(event / profiler - 1) <= TIME_BOUND,
            )
        )
    if case.purpose == "large" and case.op == "add":
        share = _value(result, "efficiency: bandwidth, datasheet peak")
        low, high = BANDWIDTH_RANGE
        wanted.append(
            (f"bandwidth {low:g}-{high:g} % of DRAM peak", lambda: share is not None and low <= share <= high)
        )
    for name, holds in wanted:
        found.append((name, NOT_EVALUATED if self_check else PASS if holds() else FAIL, ""))
    return found


def twins(results: list[Result], self_check: bool) -> list[tuple[str, str, str]]:
    """Event time of each large case under ncu against its ``--profiler none`` twin (an info row)."""
    by_name = {r.case.name: r for r in results}
    found = []
    for result in results:
        twin = by_name.get(f"{result.case.name}-none")
        if twin is None or _profiler(result.case) == "none":
            continue
        under, without = _value(result, "time (median)"), _value(twin, "time (median)")
        detail = (
            f"event time under ncu / without a profiler = {under / without:.4f} ({under:.4g} s / {without:.4g} s)"
            if under and without
            else "not both measured"
        )
        found.append((f"twin: {result.case.name}", NOT_EVALUATED if self_check else INFO, detail))
    return found


def _counted_flops(log: Path) -> float | None:
    """FLOPs of one call read from a raw-page log by gpuprof's reader (all kernels, all precisions)."""
    from gpuprof import readers
    from gpuprof.derive import counters

    launches = readers.read(log).launches
    found = [[counters.flops(launch, p) for launch in launches] for p in ("sp", "dp", "hp")]
    complete = [sum(q[0] for q in counts) for counts in found if counts and None not in counts]  # type: ignore[index]
    return sum(complete) if complete else None


def cross_check(gpuprof: Gpuprof, ncu: str, case: Case, result: Result, self_check: bool) -> tuple[str, str, str]:
    """The case's kernels under a plain ``ncu`` command (no gpuprof session): the same FLOP count?"""
    from gpuprof.launch.ncu import nvtx_filter

    name = f"direct ncu: {case.name}"
    if not ncu:
        return name, FAIL, "no ncu found"
    folder = gpuprof.out / "direct-ncu" / case.name
    folder.mkdir(parents=True, exist_ok=True)
    options = dict(zip(case.args[::2], case.args[1::2]))
    label = f"direct:{case.op}"
    argv = [
        ncu,
        "--nvtx",
        "--nvtx-include",
        nvtx_filter(label, start_end=True),
        "--clock-control",
        "none",
        "--metrics",
        ",".join(
            f"smsp__sass_thread_inst_executed_op_{p}{o}_pred_on.sum" for p in "fdh" for o in ("add", "mul", "fma")
        ),
        "--csv",
        "--page",
        "raw",
        "--log-file",
        str(folder / "ncu.csv"),
        sys.executable,
        "-m",
        "gpuprof.launch.child",
        "--op",
        case.op,
        "--shape",
        options["--shape"],
        "--dtype",
        case.dtype,
        "--engine",
        case.engine,
        "--repeat",
        "1",
        "--warmup",
        "1",
        "--profiled",
        "1",
        "--batch",
        "1",
        "--range",
        label,
        "--result",
        str(folder / "child.json"),
    ]
    (folder / "command.json").write_text(json.dumps(argv))
    code, stdout, stderr = run_command(argv, folder, CASE_TIMEOUT_S)
    (folder / "stderr.txt").write_text(stdout + stderr)
    try:
        direct = _counted_flops(folder / "ncu.csv")
    except Exception as error:  # noqa: BLE001 - the summary says what went wrong; the other checks go on
        return name, FAIL, f"ncu exit {code}; log unreadable: {error}"
    counted = [
        value
        for name in result.rows
        if name.startswith("FLOPs counted (")
        if (value := _value(result, name)) is not None
    ]
    mine = sum(counted) if counted else None
    detail = f"direct {direct}, gpuprof {mine}"
    if self_check:
        return name, NOT_EVALUATED, detail
    return name, PASS if direct is not None and mine is not None and abs(direct - mine) <= 1e-6 * mine else FAIL, detail


def extras(gpuprof: Gpuprof, store: Path, results: list[Result], self_check: bool) -> list[tuple[str, str, str]]:
    """A small sweep (event timing: counters off), compare over the store, stalls of one ncu report."""
    config = gpuprof.out / "acceptance-sweep.toml"
    config.write_text(
        'name = "acceptance"\nrepeat = 3\nwarmup = 1\ncounters = false\n'
        'engines = ["cuda-kernels", "cupy"]\ndtypes = ["float32"]\n'
        '[[grid]]\nops = ["add", "dot"]\nsizes = ["1MB", "4MB"]\n'
    )
    found = []
    for name, args, output in (
        (
            "sweep (4 points x 2 engines)",
            ["sweep", str(config), "--device", "cuda", "--store", str(store)],
            "sweep.txt",
        ),
        ("compare", ["compare", "--store", str(store), "--format", "markdown"], "compare.md"),
    ):
        code, stdout, stderr = gpuprof(args, timeout=2 * CASE_TIMEOUT_S)
        (gpuprof.out / output).write_text(stdout + stderr)
        found.append((name, PASS if code == 0 else FAIL, f"exit {code}; {output}"))
    logs = sorted((gpuprof.out / "reports").glob(f"{next((r.run_id for r in results if r.run_id), '-')}*/ncu.csv"))
    if logs:
        code, stdout, stderr = gpuprof(["stalls", str(logs[0])])
        (gpuprof.out / "stalls.txt").write_text(stdout + stderr)
        found.append(("stalls", PASS if code == 0 else FAIL, f"exit {code}; stalls.txt on {logs[0].parent.name}"))
    else:
        found.append(("stalls", FAIL, "no ncu.csv from any case"))
    if self_check:
        found = [
            (name, verdict if verdict == FAIL else f"{PASS} (plumbing)", detail) for name, verdict, detail in found
        ]
    return found


def profile_and_doctor(gpuprof: Gpuprof, store: Path, self_check: bool) -> list[tuple[str, str, str]]:
    """``gpuprof doctor --for profile``, and ``gpuprof profile`` of the workload child as a user's
    command: one add on gpuprof's own kernel, selected by its NVTX range, FP32 FLOPs = elements."""
    code, stdout, stderr = gpuprof(["doctor", "--for", "profile", "--format", "json"])
    (gpuprof.out / "doctor.json").write_text(stdout + stderr)
    found = [("doctor --for profile", PASS if code == 0 else FAIL, f"exit {code}; doctor.json")]
    shape, label = SHAPES["elementwise"], "acceptance:profile:add"
    command = [
        sys.executable,
        "-m",
        "gpuprof.launch.child",
        "--op",
        "add",
        "--shape",
        shape,
        "--dtype",
        "float32",
        "--engine",
        "cuda-kernels",
        "--repeat",
        "1",
        "--warmup",
        "1",
        "--profiled",
        "1",
        "--batch",
        "1",
        "--range",
        label,
        "--range-kind",
        "push-pop",  # gpuprof profile --nvtx selects a push/pop range
        "--result",
        str(gpuprof.out / "profile-child.json"),
    ]
    code, stdout, stderr = gpuprof(
        [
            "profile",
            "--store",
            str(store),
            "--nvtx",
            label,
            "--clock-control",
            "none",
            "--format",
            "json",
            "--",
            *command,
        ]
    )
    (gpuprof.out / "profile.txt").write_text(stdout + stderr)
    rows = json.loads(stdout) if code == 0 and stdout.strip().startswith("[") else []
    counted = [row.get("flop_count_sp/launch (FLOP)") for row in rows]
    elements = 1
    for side in shape.split("x"):
        elements *= int(side)
    detail = f"exit {code}; counted FP32 FLOPs per launch {counted}, analytic {elements}; profile.txt"
    found.append(
        ("profile of the add as a command", PASS if counted == [elements] or self_check and code == 0 else FAIL, detail)
    )
    if self_check:  # the stand-in replays another program's page: only the plumbing is checked
        found = [
            (name, verdict if verdict == FAIL else f"{PASS} (plumbing)", detail) for name, verdict, detail in found
        ]
    return found


PACKAGES = (
    "gpuprof-hpc",
    "numpy",
    "pandas",
    "click",
    "rich",
    "matplotlib",
    "cupy-cuda13x",
    "cupy-cuda12x",
    "nvidia-ml-py",
    "jax",
    "jaxlib",
    "torch",
    "pytensor",
    "ncu-report",
    "pytest",
    "hypothesis",
)
NVIDIA_SMI_FIELDS = (
    "name",
    "driver_version",
    "pci.bus_id",
    "compute_mode",
    "persistence_mode",
    "mig.mode.current",
    "clocks.sm",
    "clocks.max.sm",
    "clocks.mem",
    "clocks.max.mem",
    "power.draw",
    "power.limit",
    "temperature.gpu",
    "utilization.gpu",
    "memory.used",
    "memory.total",
    "clocks_throttle_reasons.active",
)


def training(gpuprof: Gpuprof, store: Path, self_check: bool) -> list[tuple[str, str, str]]:
    """The training job on the GPU (part ``training``): the CNN under ``gpuprof profile --energy`` on one
    GPU, then under DistributedDataParallel with NCCL (one rank): exit 0, its regions (steps from the
    torch hooks) and NVML's energy of the GPU in use, with the total-energy counter where it has one."""
    from gpuprof.derive.regions import region_frame
    from gpuprof.store import open_store

    found = []
    for label, setup in (("acceptance-1gpu", "cuda"), ("acceptance-ddp-nccl", "cuda-ddp")):
        if self_check:  # no CUDA behind the stand-ins: the job cannot run, so it is not started
            found.append((f"training {setup}", NOT_EVALUATED, "needs a GPU and a CUDA build of torch; not run"))
            continue
        command = [
            sys.executable,
            "-m",
            "gpuprof.workloads.training",
            "--model",
            "cnn",
            "--setup",
            setup,
            "--batch-size",
            "64",
            "--train-batches",
            "20",
            "--inference-sizes",
            "1,64",
            "--repeats",
            "5",
        ]
        code, stdout, stderr = gpuprof(
            [
                "profile",
                "--device",
                "cpu",
                "--energy",
                "--interval",
                "0.2s",
                "--label",
                label,
                "--store",
                str(store),
                "--",
                *command,
            ],
            timeout=2 * CASE_TIMEOUT_S,
        )
        (gpuprof.out / f"{label}.txt").write_text(stdout + stderr)
        with open_store(store) as opened:
            runs = [r for r in opened.runs() if r.environment.get("label") == label]
        if code != 0 or not runs:
            found.append((f"training {setup}", FAIL, f"exit {code}; {label}.txt"))
            continue
        run = runs[-1]
        frame = region_frame(run)
        steps = int((frame["name"] == "step").sum())
        gpus = {
            name: d
            for name, d in (run.environment.get("energy") or {}).get("devices", {}).items()
            if name.startswith("GPU")
        }
        used = {name: d for name, d in gpus.items() if d["in_use"]}
        ok = steps == 20 and len(used) == 1 and all((d["joules"] or 0) > 0 for d in used.values())
        detail = (
            f"{steps} step regions (20 expected); GPUs in use {sorted(used)}; energy "
            + ", ".join(f"{name} {d['joules']} J ({d['method']})" for name, d in gpus.items())
            + f"; {label}.txt"
        )
        found.append((f"training {setup}", PASS if ok else FAIL, detail))
    return found


def _versions() -> str:
    """'name version' of each package in PACKAGES that is installed, '-' for the others."""
    from importlib import metadata

    found = []
    for name in PACKAGES:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return ", ".join(found)


def _nvidia_smi() -> str:
    """nvidia-smi's view of GPU 0 (clocks, power, mode, MIG, throttling): read only, nothing is changed."""
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return "nvidia-smi not found"
    try:
        done = subprocess.run(
            [tool, f"--query-gpu={','.join(NVIDIA_SMI_FIELDS)}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"nvidia-smi failed: {error}"
    values = (done.stdout.strip().splitlines() or [done.stderr.strip() or f"exit {done.returncode}"])[0]
    return (
        "; ".join(f"{k}={v.strip()}" for k, v in zip(NVIDIA_SMI_FIELDS, values.split(",")))
        if done.returncode == 0
        else f"nvidia-smi exit {done.returncode}: {values}"
    )


GIT = shutil.which("git")  # found before a self-check puts only the stand-ins on PATH


def _commit() -> str:
    """The gpuprof commit: git's answer, else $GPUPROF_COMMIT (set it where the tree travels without .git)."""
    try:
        done = subprocess.run(
            [GIT or "git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        commit = done.stdout.strip() if done.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired):
        commit = ""
    return commit or os.environ.get("GPUPROF_COMMIT") or "unknown (no git here; set GPUPROF_COMMIT)"


def metric_query(ncu_path: str, cc: tuple[int, int] | None) -> str:
    """ncu's metric list for this GPU against gpuprof's catalog: how many kept, which left out, from where."""
    from gpuprof.launch import ncu, ncu_metrics

    if not ncu_path:
        return "no ncu"
    found = ncu_metrics.query(ncu_path, cc)
    kept, missing = ncu.to_collect(ncu_path, cc=cc)
    left = f"; left out: {', '.join(missing)}" if missing else ""
    return f"{found.described}: {len(kept)} of {len(kept) + len(missing)} gpuprof metrics kept{left}"


def environment(self_check: bool) -> dict[str, Any]:
    """What ran: device, driver, CUDA runtime, nvidia-smi state, packages, ncu (version, path, metric
    list), gpuprof version and commit; the summary's header."""
    from gpuprof.devices import gpu_detect
    from gpuprof.errors import GpuprofError
    from gpuprof.launch import profilers

    env: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "mode": "self-check" if self_check else "gpu"}
    cc = None
    try:
        gpu = gpu_detect.detect()[0]
        env.update(device=gpu.name, cc=gpu.cc, driver=gpu.driver)
        cc = tuple(int(part) for part in gpu.cc.split("."))[:2] if gpu.cc else None
    except GpuprofError as error:
        env["device"] = f"none ({error.problem})"
    env["nvidia_smi"] = _nvidia_smi()
    for tool in ("ncu", "nvprof"):
        probe = profilers.probe(tool)
        env[tool] = probe.described if probe.usable else probe.problem
        env[f"{tool}_path"] = probe.path if probe.usable else ""
    env["ncu_metrics"] = metric_query(env["ncu_path"], cc)
    try:
        import cupy

        env["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
        env["cupy"] = cupy.__version__
    except Exception as error:  # noqa: BLE001 - without a GPU CuPy raises its own error types
        env["cuda_runtime"] = f"unavailable ({type(error).__name__})"
    env["packages"] = _versions()
    env["python"] = sys.version.split()[0]
    env["gpuprof_commit"] = _commit()
    return env


COLUMNS = (
    "case",
    "exit",
    "s",
    "event time",
    "profiler time",
    "event/profiler",
    "FLOPs analytic",
    "counted/analytic",
    "eff @ run clock %",
    "eff vs datasheet %",
    "roofline %",
    "bandwidth %",
    "kernels/call",
    "compile s",
    "checks",
)


def _row(result: Result, found: list[tuple[str, str, str]]) -> list[str]:
    def num(name: str, digits: int = 4) -> str:
        value = _value(result, name)
        return "" if value is None else f"{value:.{digits}g}"

    event, profiler = _value(result, "time (median)"), _value(result, "time (profiler)")
    return [
        result.case.name,
        "" if result.code is None else str(result.code),
        f"{result.seconds:.0f}",
        num("time (median)"),
        num("time (profiler)"),
        f"{event / profiler:.3f}" if event and profiler else "",
        num("FLOPs"),
        num("FLOPs counted / analytic", 5),
        num("efficiency: counted FLOP/s vs peak at run clock"),
        num("efficiency: counted FLOP/s vs peak"),
        num(next((n for n in result.rows if n.startswith("efficiency: counted roofline")), "-")),
        num("efficiency: bandwidth, datasheet peak"),
        num("kernels per call"),
        num("compile + first call", 3),
        "; ".join(f"{name}: {verdict}" for name, verdict, _ in found),
    ]


def write_summary(
    out: Path,
    env: dict[str, Any],
    results: list[Result],
    found: dict[str, list[tuple[str, str, str]]],
    other: list[tuple[str, str, str]],
    state: str = "",
) -> tuple[str, int]:
    """summary.md, summary.csv and results.json in ``out`` (``state``: a line saying the call is still
    running or was stopped); the markdown text and how many checks failed or did not run."""
    self_check = env["mode"] == "self-check"
    head = ["# gpuprof GPU acceptance", ""]
    if self_check:
        head += [
            "**SELF-CHECK WITHOUT A GPU**: stand-in profilers replay recorded files (tests/fakes), NVML and CuPy "
            "are stand-ins, the workload's result is a stand-in file. No number below is a measurement and no "
            "GPU check is evaluated.",
            "",
        ]
    head += [f"**{state}**", ""] if state else []
    head += [f"- {key}: {value}" for key, value in env.items()] + [""]
    rows = [_row(r, found[r.case.name]) for r in results]
    table = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    table += ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in rows]
    details = [(r.case.name, *check) for r in results for check in found[r.case.name][1:] if check[2]]
    tally = [verdict for checks_ in found.values() for _, verdict, _ in checks_] + [v for _, v, _ in other]
    lines = head + table
    if details:
        lines += ["", "| case | check | verdict | detail |", "|---|---|---|---|"]
        lines += [
            f"| {case} | {name} | {verdict} | {detail.replace('|', '/')} |" for case, name, verdict, detail in details
        ]
    lines += ["", "| other check | verdict | detail |", "|---|---|---|"]
    lines += [f"| {name} | {verdict} | {detail.replace('|', '/')} |" for name, verdict, detail in other]
    lines += [
        "",
        (
            f"{sum(v.startswith(PASS) for v in tally)} pass, {tally.count(FAIL)} FAIL, "
            f"{tally.count(NOT_EVALUATED)} not evaluated, {tally.count('not run')} not run, {tally.count(INFO)} info"
        ),
    ]
    bad = tally.count(FAIL) + tally.count("not run")
    text = "\n".join(lines) + "\n"
    (out / "summary.md").write_text(text)
    with open(out / "summary.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(rows)
    (out / "results.json").write_text(
        json.dumps(
            {
                "environment": env,
                "other": other,
                "results": [{**asdict(r), "checks": found[r.case.name]} for r in results],
            },
            indent=1,
        )
    )
    return text, bad


def merge(out: Path, parts: list[Path]) -> tuple[str, int]:
    """One summary from the results.json of several parts (each part ran in its own device call)."""
    results, found, other, env = [], {}, [], {}
    for part in parts:
        data = json.loads((part / "results.json").read_text())
        env = env or data["environment"]
        other += [tuple(item) for item in data["other"]]
        for item in data["results"]:
            raw = dict(item)
            case_data = raw.pop("case")
            case = Case(**{**case_data, "args": tuple(case_data["args"])})
            found[case.name] = [tuple(c) for c in raw.pop("checks")]
            results.append(Result(case, **raw))
    out.mkdir(parents=True, exist_ok=True)
    return write_summary(out, env, results, found, other)


@contextlib.contextmanager
def stand_ins(out: Path) -> Iterator[None]:
    """Self-check only: the stand-in ncu of tests/fakes first on PATH replaying the converted RTX 3080
    raw page, NVML and CuPy answering for that GPU, a stand-in result for every workload child."""
    from unittest import mock

    sys.path.insert(0, str(ROOT / "tests"))
    from fakes.environment import FAKES, search_path, stand_in_gpu

    from gpuprof.launch import discovery, gpu_session, ncu_metrics, profilers

    gpu = stand_in_gpu("NVIDIA GeForce RTX 3080", "8.6", driver="stand-in")
    child = out / "stand-in-child.json"
    child.write_text(
        json.dumps(
            {
                "schema": 1,
                "times": [1e-3] * 5,
                "batch": 1,
                "engine": "stand-in",
                "device": {"name": gpu.name, "cc": gpu.cc},
                "engine_version": "stand-in",
                "relative_error": 0.0,
                "kernel": None,
                "timer": "stand-in (self-check)",
            }
        )
    )
    profiling = gpu_session._execute

    def execute(argv: list[str], run_dir: Path, timeout: float) -> int:
        if argv[0] != sys.executable:
            return profiling(argv, run_dir, timeout)
        (run_dir / "child.json").write_bytes(child.read_bytes())  # the workload itself needs a GPU
        return 0

    variables = {
        "PATH": search_path(FAKES),
        "GPUPROF_FAKE_CHILD": str(child),
        "GPUPROF_FAKE_LOG": str(
            ROOT / "tests" / "fixtures" / "converted" / "ncu_raw_page_rtx3080_montecarlo_FROM_REPORT.csv"
        ),
        "GPUPROF_FAKE_RECORD": str(out / "stand-in-calls.jsonl"),
        "GPUPROF_CACHE_DIR": str(out / "cache"),
    }
    nowhere = out / "no-install-root"
    here = Path.cwd()
    with (
        mock.patch.dict(os.environ, variables),
        mock.patch.object(discovery, "NSIGHT_COMPUTE_ROOT", nowhere),
        mock.patch.object(discovery, "CUDA_DEFAULT", nowhere),
        mock.patch.object(gpu_session, "_nvml_gpu", lambda: (gpu, "NVML: stand-in (self-check)")),
        mock.patch.object(gpu_session, "_cupy_state", lambda: (True, "CuPy: stand-in (self-check)")),
        mock.patch.object(gpu_session, "_execute", execute),
        mock.patch("gpuprof.devices.gpu_detect.detect", lambda: [gpu]),
    ):
        os.environ.pop("CUDA_HOME", None)
        caches = (profilers._probe_executable, profilers.listed, ncu_metrics.query)
        for cache in caches:
            cache.cache_clear()
        os.chdir(out)
        try:
            yield
        finally:
            os.chdir(here)
            for cache in caches:
                cache.cache_clear()


class Stopped(Exception):
    """SIGTERM or SIGINT arrived: start nothing more, write the summary, exit."""


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGTERM and SIGINT raise :class:`Stopped` in the main thread (a running case's session is killed
    by :func:`run_command` on the way out); elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: Any) -> None:
        raise Stopped(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@dataclass
class Progress:
    """What a call has so far: rewritten to OUT (and the pack folder) after every case."""

    out: Path
    env: dict[str, Any]
    total: int
    self_check: bool
    into: Path | None = None
    results: list[Result] = field(default_factory=list)
    found: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    other: list[tuple[str, str, str]] = field(default_factory=list)

    def add(self, result: Result) -> None:
        self.results.append(result)
        self.found[result.case.name] = checks(result, self.self_check)
        verdicts = [f"{name}: {verdict}" for name, verdict, _ in self.found[result.case.name] if verdict != INFO]
        print(
            f"[{len(self.results)}/{self.total}] {result.case.name} ({result.seconds:.0f} s): {'; '.join(verdicts)}",
            flush=True,
        )
        self.save(f"running: {len(self.results)} of {self.total} cases done")

    def add_other(self, found: list[tuple[str, str, str]]) -> None:
        self.other += found
        for name, verdict, detail in found:
            print(f"[other] {name}: {verdict} {detail[:160]}", flush=True)
        self.save(f"running: {len(self.results)} of {self.total} cases done, other checks going on")

    def save(self, state: str = "") -> tuple[str, int]:
        text, bad = write_summary(self.out, self.env, self.results, self.found, self.other, state)
        if self.into is not None:
            pack_live(self.out, self.into)
        return text, bad


def live_pytest(out: Path, timeout: float, self_check: bool) -> tuple[str, str, str]:
    """The live ``pytest -m gpu`` tests that need no PyTensor, output in OUT/pytest-gpu.txt."""
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-m",
        "gpu",
        "-q",
        "-rs",
        "-p",
        "no:cacheprovider",
        str(ROOT / "tests" / "test_gpu_live.py"),
        "-k",
        "not pytensor and not theano",
    ]
    code, stdout, stderr = run_command(argv, out, timeout)
    (out / "pytest-gpu.txt").write_text(stdout + stderr)
    last = ([line for line in stdout.splitlines() if line.strip()] or ["no output"])[-1][:200]
    verdict = PASS if code == 0 else FAIL
    return (
        "pytest -m gpu (no PyTensor)",
        f"{verdict} (plumbing)" if self_check and code == 0 else verdict,
        f"exit {code}: {last}; pytest-gpu.txt",
    )


def run(
    out: Path, part: str, deadline_s: float, self_check: bool, pattern: str | None = None, into: Path | None = None
) -> tuple[str, int]:
    from gpuprof.launch import profilers

    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    gpuprof = InProcess(out) if self_check else Gpuprof(out)
    store = out / "acceptance.sqlite"
    env = environment(self_check)
    major = int((env.get("cc") or "0").split(".")[0])
    nvprof = profilers.probe("nvprof").usable and 0 < major < 8  # nvprof supports compute capability < 8.0
    cases = [case for case in plan(part, nvprof) if not pattern or re.search(pattern, case.name)]
    # a self-check runs in this process without time-outs: only an explicit --deadline-s stops it
    case_timeout = 0 if self_check else QUICK_CASE_TIMEOUT_S if part == "quick" else CASE_TIMEOUT_S
    progress = Progress(out, env, len(cases), self_check, into)
    if part == "quick":
        listed = "ncu metric list: none" not in env["ncu_metrics"] and env["ncu_path"]
        verdict = NOT_EVALUATED if self_check else PASS if listed else FAIL
        progress.other.append(("preflight: ncu metric list", verdict, env["ncu_metrics"]))
    progress.save(f"running: 0 of {len(cases)} cases done")

    def left() -> float:
        return deadline_s - (time.monotonic() - started)

    def startable(what: str, needs: float = case_timeout) -> bool:
        if left() >= needs:
            return True
        progress.add_other([(what, "not run", f"{left():.0f} s left before the deadline, it may take {needs:g} s")])
        return False

    state = ""
    try:
        with stop_on_signals():
            for case in cases:
                if left() < case_timeout:
                    progress.add(
                        Result(
                            case,
                            None,
                            error=f"not started: {max(left(), 0):.0f} s left before the "
                            f"deadline, a case may take {case_timeout} s",
                        )
                    )
                    continue
                progress.add(run_case(gpuprof, case, store, case_timeout))
            progress.add_other(twins(progress.results, self_check))
            done = {r.case.name: r for r in progress.results}
            if part == "quick":
                add = _case("add", "cuda-kernels", "float32")
                if add.name in done and startable(f"direct ncu: {add.name}"):
                    progress.add_other([cross_check(gpuprof, env.get("ncu_path", ""), add, done[add.name], self_check)])
                if startable("pytest -m gpu (no PyTensor)", 60):
                    progress.add_other([live_pytest(out, min(left(), 240), self_check)])
            if part in ("extra", "all"):
                for case in (_case("add", "cuda-kernels", "float32"), _case("dot", "cuda-kernels", "float32")):
                    if startable(f"direct ncu: {case.name}", 2 * case_timeout):
                        mine = run_case(gpuprof, case, store, case_timeout)
                        progress.add_other([cross_check(gpuprof, env.get("ncu_path", ""), case, mine, self_check)])
                if startable("sweep, compare, stalls", 2 * case_timeout):
                    progress.add_other(extras(gpuprof, store, progress.results, self_check))
                if startable("doctor, profile", case_timeout):
                    progress.add_other(profile_and_doctor(gpuprof, store, self_check))
            if part in ("training", "all") and startable("training", 2 * CASE_TIMEOUT_S):
                progress.add_other(training(gpuprof, store, self_check))
    except Stopped as why:
        state = f"stopped by {why} after {len(progress.results)} of {len(cases)} cases"
        ran = {r.case.name for r in progress.results}
        for case in cases:
            if case.name not in ran:
                result = Result(case, None, error=f"stopped by {why} before this case")
                progress.results.append(result)
                progress.found[case.name] = checks(result, self_check)
    return progress.save(state)


def pack_live(out: Path, into: Path) -> None:
    """summary.md, results.json and live.tar.gz (OUT without .ncu-rep files) in ``into``, each
    replaced whole (written under a dot name first): at most 4 files there at any moment."""
    into.mkdir(parents=True, exist_ok=True)
    for name in ("summary.md", "results.json"):
        partial = into / f".{name}.part"
        shutil.copyfile(out / name, partial)
        os.replace(partial, into / name)
    partial = into / ".live.tar.gz.part"
    with tarfile.open(partial, "w:gz") as archive:
        archive.add(out, arcname=out.name, filter=_without(out, into))
    os.replace(partial, into / "live.tar.gz")


def _without(out: Path, into: Path) -> Any:
    """A tar filter for OUT: no .ncu-rep file, and not the pack folder where it lies inside OUT."""
    inside = (
        f"{out.name}/{into.resolve().relative_to(out.resolve())}"
        if into.resolve().is_relative_to(out.resolve())
        else None
    )

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if info.name.endswith(".ncu-rep") or inside and (info.name == inside or info.name.startswith(f"{inside}/")):
            return None
        return info

    return keep


def pack(out: Path, into: Path) -> None:
    """The summaries and two archives of ``out`` in ``into`` (see the module docstring); the live
    archive goes once raw.tar.gz holds the same."""
    into.mkdir(parents=True, exist_ok=True)
    for name in ("summary.md", "summary.csv", "results.json"):
        shutil.copy(out / name, into / name)
    reps = sorted(out.rglob("*.ncu-rep"))
    with tarfile.open(into / "raw.tar.gz", "w:gz") as archive:
        archive.add(out, arcname=out.name, filter=_without(out, into))
    (into / "live.tar.gz").unlink(missing_ok=True)
    kept, left, size = [], [], 0
    with tarfile.open(into / "ncu-rep.tar.gz", "w:gz") as archive:
        for rep in reps:
            if size + rep.stat().st_size > PACK_LIMIT:
                left.append(rep)
                continue
            size += rep.stat().st_size
            kept.append(rep)
            archive.add(rep, arcname=str(rep.relative_to(out.parent)))
    (into / "packed.txt").write_text(
        "".join(f"ncu-rep.tar.gz: {r.relative_to(out)}\n" for r in kept)
        + "".join(f"left out (over {PACK_LIMIT >> 20} MiB): {r.relative_to(out)}\n" for r in left)
    )


def no_gpu() -> str | None:
    """Why no GPU is usable here (NVML and CuPy, as gpuprof asks them), or None when one is."""
    from gpuprof.launch import gpu_session

    usable, reason = gpu_session.probe_gpu()
    return None if usable else reason


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="folder for the summary and the raw reports")
    parser.add_argument("--part", choices=("kernels", "cupy", *FRAMEWORKS, "extra", "training", "all"), default="all")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="the quick acceptance run (about 7 minutes on an H100 with the install; see the docstring)",
    )
    parser.add_argument("--cases", metavar="PATTERN", help="only the cases whose name this regular expression matches")
    parser.add_argument(
        "--deadline-s",
        type=float,
        help=f"start no case later than this many seconds minus a case's time-out (default "
        f"{QUICK_DEADLINE_S:g} with --quick, else 420: one call stays under 8 minutes)",
    )
    parser.add_argument(
        "--pack",
        type=Path,
        metavar="DIR",
        help="keep the summary and a live archive in DIR, then the summaries and two archives "
        "(at most 8 files, no folder)",
    )
    parser.add_argument("--self-check", action="store_true", help="no GPU: stand-in profilers, nothing measured")
    parser.add_argument("--merge", nargs="+", type=Path, metavar="PART_DIR", help="merge parts' results.json")
    args = parser.parse_args(argv)
    part = "quick" if args.quick else args.part
    deadline = (
        args.deadline_s
        if args.deadline_s is not None
        else float("inf")
        if args.self_check
        else QUICK_DEADLINE_S
        if args.quick
        else 420.0
    )
    if args.cases:
        try:
            re.compile(args.cases)
        except re.error as error:
            parser.error(f"--cases {args.cases!r} is not a regular expression ({error}); e.g. --cases 'float64|dot'")
    into = args.pack.resolve() if args.pack else None
    if args.merge:
        text, bad = merge(args.out, args.merge)
    elif args.self_check:
        args.out.mkdir(parents=True, exist_ok=True)
        with stand_ins(args.out.resolve()):
            text, bad = run(args.out.resolve(), part, deadline, True, args.cases, into)
    else:
        reason = no_gpu()
        if reason is not None:
            print(
                f"no usable NVIDIA GPU here, nothing was measured: {reason} (--self-check runs the plumbing "
                "with stand-ins)",
                flush=True,
            )
            return 2
        text, bad = run(args.out.resolve(), part, deadline, False, args.cases, into)
    if into is not None:
        pack(args.out.resolve(), into)
    tally = text.rstrip().splitlines()[-1]
    failed = [line for line in text.splitlines() if f"| {FAIL}" in line or ": FAIL" in line]
    print("\n".join([*failed[:40], f"{tally} (summary: {args.out.resolve() / 'summary.md'})"]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
