"""GPU acceptance: run gpuprof's GPU path on a real GPU and write what it measured and which checks held.

    python benchmarks/gpu_acceptance.py OUT [--part kernels|cupy|jax|torch|extra|training|all] [--deadline-s 420] [--pack DIR]
    python benchmarks/gpu_acceptance.py OUT --merge PART_DIR [PART_DIR ...]
    python benchmarks/gpu_acceptance.py OUT --self-check

On a GPU machine (offline is fine: ``pip install --no-deps --no-build-isolation -e .`` over NumPy,
pandas, CuPy and nvidia-ml-py) it runs, through the ``gpuprof`` command:

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

Each part stays under 10 minutes (the lent GPU machine's limit per command): nothing starts after
``--deadline-s`` (it is listed as not run) and a case gets ``CASE_TIMEOUT_S``. OUT gets
``summary.md`` (device, driver, ncu version, one row per case, pass/fail per check),
``summary.csv``, ``results.json`` (for ``--merge``), the store ``acceptance.sqlite``, each case's
stdout/stderr under ``cases/`` and the raw profiler reports under ``reports/<run-id>/``. ``--pack
DIR`` also copies the summaries to DIR with two archives, ``raw.tar.gz`` (everything but the
``.ncu-rep`` files) and ``ncu-rep.tar.gz`` (as many ``.ncu-rep`` as fit in 15 MiB, the rest named in
``packed.txt``): six files, within what the lent machine hands back from ``$OUT``.

Checks (docs/gpu.md explains each bound): counted/analytic FLOPs = 1.000 (within 0.1 %) for add,
mul, scalar and dot on ``cuda-kernels`` (all shapes here are multiples of 16); sigmoid and tanh
within ``RATIO_RANGES``; event time / profiler time within ``TIME_BOUND`` for the large cases;
add at 384 MB at 70-100 % of the device's DRAM peak; direct ncu counts equal to gpuprof's. For the
PyTensor backends also: the compile time reported in its own row, at least one kernel counted inside
the NVTX range per call (their kernels are launched by JAX's or PyTorch's runtime, not by gpuprof),
and counted/analytic = 1.000 for add, mul and scalar in float32 and float64.

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
import subprocess
import sys
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
TIME_BOUND = 0.15       # |event / profiler - 1| at the large sizes
BANDWIDTH_RANGE = (70.0, 100.0)
CASE_TIMEOUT_S = 150
PACK_LIMIT = 15 * 2**20
SHAPES = {"dot": "1024x1024x1024", "elementwise": "2048x2048"}
PASS, FAIL, NOT_EVALUATED = "pass", "FAIL", "not evaluated (self-check)"


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[str, ...]       # gpuprof run options after --device cuda
    engine: str
    op: str
    dtype: str
    purpose: str = "matrix"     # matrix | large


@dataclass
class Result:
    case: Case
    code: int | None            # None: not run (deadline)
    seconds: float = 0.0
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    run_id: str = ""
    error: str = ""


def _case(op: str, engine: str, dtype: str, size: str | None = None, profiler: str = "auto",
          purpose: str = "matrix") -> Case:
    where = ("--size", size) if size else ("--shape", SHAPES["dot" if op == "dot" else "elementwise"])
    name = f"{op}-{engine}-{dtype}-{size or where[1]}" + ("" if profiler == "auto" else f"-{profiler}")
    return Case(name, ("--op", op, "--engine", engine, "--dtype", dtype, *where, "--profiler", profiler),
                engine, op, dtype, purpose)


def plan(part: str, nvprof: bool) -> list[Case]:
    """The cases of one part (see the module docstring)."""
    cases: list[Case] = []
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
        cases += [_case("add", engine, "float32", "384MB", purpose="large") for engine in ("cuda-kernels", "cupy")]
        cases.append(Case("dot-cupy-float32-2048", ("--op", "dot", "--engine", "cupy", "--dtype", "float32",
                                                     "--shape", "2048x2048x2048", "--profiler", "auto"),
                          "cupy", "dot", "float32", "large"))
    return cases


class Gpuprof:
    """The ``gpuprof`` command in a child process, run in OUT (so reports/ lands there)."""

    def __init__(self, out: Path) -> None:
        self.out = out

    def __call__(self, args: list[str], timeout: float = CASE_TIMEOUT_S) -> tuple[int, str, str]:
        try:
            done = subprocess.run([sys.executable, "-m", "gpuprof", *args], cwd=self.out, capture_output=True,
                                  text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return 124, "", f"did not finish within {timeout:g} s"
        return done.returncode, done.stdout, done.stderr


class InProcess(Gpuprof):
    """Self-check: the same commands through Click in this process, where the stand-ins are installed."""

    def __call__(self, args: list[str], timeout: float = CASE_TIMEOUT_S) -> tuple[int, str, str]:
        from click.testing import CliRunner

        from gpuprof.cli import main

        done = CliRunner().invoke(main, args)
        return done.exit_code, done.stdout, done.stderr


def run_case(gpuprof: Gpuprof, case: Case, store: Path) -> Result:
    began = time.monotonic()
    code, stdout, stderr = gpuprof(["run", *case.args, "--device", "cuda", "--clock-control", "none",
                                    "--profiled", "1", "--repeat", "5", "--warmup", "2",
                                    "--format", "json", "--store", str(store)])
    folder = gpuprof.out / "cases"
    folder.mkdir(exist_ok=True)
    (folder / f"{case.name}.json").write_text(stdout)
    (folder / f"{case.name}.stderr.txt").write_text(stderr)
    result = Result(case, code, time.monotonic() - began)
    stored = re.search(r"stored as run (\w+)", stderr)
    result.run_id = stored.group(1) if stored else ""
    if code == 0:
        result.rows = {row["quantity"]: row for row in json.loads(stdout)["quantities"]}
    else:
        result.error = (stderr.strip().splitlines() or ["no output"])[-1][:300]
    return result


def _value(result: Result, name: str) -> float | None:
    value = result.rows.get(name, {}).get("value")
    return float(value) if isinstance(value, (int, float)) else None


def checks(result: Result, self_check: bool) -> list[tuple[str, str, str]]:
    """(check, verdict, detail) for one case; the GPU checks are not evaluated in a self-check."""
    case = result.case
    if result.code is None:
        return [("ran", "not run", "deadline reached before this case")]
    if result.code != 0:
        return [("ran", FAIL, f"exit {result.code}: {result.error}")]
    found = [("ran", PASS, f"run {result.run_id}")]
    wanted: list[tuple[str, Any]] = []
    ratio = _value(result, "FLOPs counted / analytic")
    if case.engine == "cuda-kernels" and case.op in EXACT_OPS:
        wanted.append(("counted/analytic = 1.000", lambda: ratio is not None and abs(ratio - 1) <= 1e-3))
    if case.engine == "cuda-kernels" and case.op in ("sigmoid", "tanh"):
        low, high = RATIO_RANGES[case.dtype]
        wanted.append((f"counted/analytic in [{low}, {high}]", lambda: ratio is not None and low <= ratio <= high))
    if case.engine in FRAMEWORKS.values():
        compiled, kernels = _value(result, "compile + first call"), _value(result, "kernels per call")
        wanted.append(("compile time in its own row", lambda: compiled is not None and compiled > 0))
        wanted.append(("kernels counted inside the NVTX range", lambda: kernels is not None and kernels >= 1))
        if case.op in FRAMEWORK_EXACT[0] and case.dtype in FRAMEWORK_EXACT[1]:
            wanted.append(("counted/analytic = 1.000", lambda: ratio is not None and abs(ratio - 1) <= 1e-3))
    if case.purpose == "large":
        event, profiler = _value(result, "time (median)"), _value(result, "time (profiler)")
        wanted.append((f"event / profiler within 1 +- {TIME_BOUND}",
                       lambda: bool(event and profiler) and abs(event / profiler - 1) <= TIME_BOUND))
    if case.purpose == "large" and case.op == "add":
        share = _value(result, "efficiency: bandwidth, datasheet peak")
        low, high = BANDWIDTH_RANGE
        wanted.append((f"bandwidth {low:g}-{high:g} % of DRAM peak", lambda: share is not None and low <= share <= high))
    for name, holds in wanted:
        found.append((name, NOT_EVALUATED if self_check else PASS if holds() else FAIL, ""))
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
    name = f"direct ncu: {case.name}"
    if not ncu:
        return name, FAIL, "no ncu found"
    folder = gpuprof.out / "direct-ncu" / case.name
    folder.mkdir(parents=True, exist_ok=True)
    options = dict(zip(case.args[::2], case.args[1::2]))
    label = f"direct:{case.op}"
    argv = [ncu, "--nvtx", "--nvtx-include", f"{label}/", "--clock-control", "none", "--metrics",
            ",".join(f"smsp__sass_thread_inst_executed_op_{p}{o}_pred_on.sum" for p in "fdh" for o in ("add", "mul", "fma")),
            "--csv", "--page", "raw", "--log-file", str(folder / "ncu.csv"),
            sys.executable, "-m", "gpuprof.launch.child", "--op", case.op, "--shape", options["--shape"],
            "--dtype", case.dtype, "--engine", case.engine, "--repeat", "1", "--warmup", "1", "--profiled", "1",
            "--batch", "1", "--range", label, "--result", str(folder / "child.json")]
    (folder / "command.json").write_text(json.dumps(argv))
    done = subprocess.run(argv, capture_output=True, text=True, timeout=CASE_TIMEOUT_S, check=False)
    (folder / "stderr.txt").write_text(done.stdout + done.stderr)
    try:
        direct = _counted_flops(folder / "ncu.csv")
    except Exception as error:  # noqa: BLE001 - the summary says what went wrong; the other checks go on
        return name, FAIL, f"ncu exit {done.returncode}; log unreadable: {error}"
    counted = [value for name in result.rows if name.startswith("FLOPs counted (")
               if (value := _value(result, name)) is not None]
    mine = sum(counted) if counted else None
    detail = f"direct {direct}, gpuprof {mine}"
    if self_check:
        return name, NOT_EVALUATED, detail
    return name, PASS if direct is not None and mine is not None and abs(direct - mine) <= 1e-6 * mine else FAIL, detail


def extras(gpuprof: Gpuprof, store: Path, results: list[Result], self_check: bool) -> list[tuple[str, str, str]]:
    """A small sweep (event timing: counters off), compare over the store, stalls of one ncu report."""
    config = gpuprof.out / "acceptance-sweep.toml"
    config.write_text('name = "acceptance"\nrepeat = 3\nwarmup = 1\ncounters = false\n'
                      'engines = ["cuda-kernels", "cupy"]\ndtypes = ["float32"]\n'
                      '[[grid]]\nops = ["add", "dot"]\nsizes = ["1MB", "4MB"]\n')
    found = []
    for name, args, output in (
            ("sweep (4 points x 2 engines)", ["sweep", str(config), "--device", "cuda", "--store", str(store)], "sweep.txt"),
            ("compare", ["compare", "--store", str(store), "--format", "markdown"], "compare.md")):
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
        found = [(name, verdict if verdict == FAIL else f"{PASS} (plumbing)", detail) for name, verdict, detail in found]
    return found


def profile_and_doctor(gpuprof: Gpuprof, store: Path, self_check: bool) -> list[tuple[str, str, str]]:
    """``gpuprof doctor --for profile``, and ``gpuprof profile`` of the workload child as a user's
    command: one add on gpuprof's own kernel, selected by its NVTX range, FP32 FLOPs = elements."""
    code, stdout, stderr = gpuprof(["doctor", "--for", "profile", "--format", "json"])
    (gpuprof.out / "doctor.json").write_text(stdout + stderr)
    found = [("doctor --for profile", PASS if code == 0 else FAIL, f"exit {code}; doctor.json")]
    shape, label = SHAPES["elementwise"], "acceptance:profile:add"
    command = [sys.executable, "-m", "gpuprof.launch.child", "--op", "add", "--shape", shape, "--dtype", "float32",
               "--engine", "cuda-kernels", "--repeat", "1", "--warmup", "1", "--profiled", "1", "--batch", "1",
               "--range", label, "--result", str(gpuprof.out / "profile-child.json")]
    code, stdout, stderr = gpuprof(["profile", "--store", str(store), "--nvtx", label, "--clock-control", "none",
                                    "--format", "json", "--", *command])
    (gpuprof.out / "profile.txt").write_text(stdout + stderr)
    rows = json.loads(stdout) if code == 0 and stdout.strip().startswith("[") else []
    counted = [row.get("flop_count_sp/launch (FLOP)") for row in rows]
    elements = 1
    for side in shape.split("x"):
        elements *= int(side)
    detail = f"exit {code}; counted FP32 FLOPs per launch {counted}, analytic {elements}; profile.txt"
    found.append(("profile of the add as a command", PASS if counted == [elements] or self_check and code == 0 else FAIL,
                  detail))
    if self_check:  # the stand-in replays another program's page: only the plumbing is checked
        found = [(name, verdict if verdict == FAIL else f"{PASS} (plumbing)", detail) for name, verdict, detail in found]
    return found


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
        command = [sys.executable, "-m", "gpuprof.workloads.training", "--model", "cnn", "--setup", setup,
                   "--batch-size", "64", "--train-batches", "20", "--inference-sizes", "1,64", "--repeats", "5"]
        code, stdout, stderr = gpuprof(["profile", "--device", "cpu", "--energy", "--interval", "0.2s", "--label", label,
                                        "--store", str(store), "--", *command], timeout=2 * CASE_TIMEOUT_S)
        (gpuprof.out / f"{label}.txt").write_text(stdout + stderr)
        with open_store(store) as opened:
            runs = [r for r in opened.runs() if r.environment.get("label") == label]
        if code != 0 or not runs:
            found.append((f"training {setup}", FAIL, f"exit {code}; {label}.txt"))
            continue
        run = runs[-1]
        frame = region_frame(run)
        steps = int((frame["name"] == "step").sum())
        gpus = {name: d for name, d in (run.environment.get("energy") or {}).get("devices", {}).items()
                if name.startswith("GPU")}
        used = {name: d for name, d in gpus.items() if d["in_use"]}
        ok = steps == 20 and len(used) == 1 and all((d["joules"] or 0) > 0 for d in used.values())
        detail = (f"{steps} step regions (20 expected); GPUs in use {sorted(used)}; energy "
                  + ", ".join(f"{name} {d['joules']} J ({d['method']})" for name, d in gpus.items()) + f"; {label}.txt")
        found.append((f"training {setup}", PASS if ok else FAIL, detail))
    return found


def environment(self_check: bool) -> dict[str, Any]:
    """Device, driver, CUDA runtime, profiler, gpuprof commit: what the summary's header says."""
    from gpuprof.devices import gpu_detect
    from gpuprof.errors import GpuprofError
    from gpuprof.launch import profilers

    env: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "mode": "self-check" if self_check else "gpu"}
    try:
        gpu = gpu_detect.detect()[0]
        env.update(device=gpu.name, cc=gpu.cc, driver=gpu.driver)
    except GpuprofError as error:
        env["device"] = f"none ({error.problem})"
    for tool in ("ncu", "nvprof"):
        probe = profilers.probe(tool)
        env[tool] = probe.described if probe.usable else probe.problem
        env[f"{tool}_path"] = probe.path if probe.usable else ""
    try:
        import cupy

        env["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
        env["cupy"] = cupy.__version__
    except Exception as error:  # noqa: BLE001 - without a GPU CuPy raises its own error types
        env["cuda_runtime"] = f"unavailable ({type(error).__name__})"
    try:  # the device machine gets the work tree, maybe without git or its history
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=False).stdout.strip()
    except OSError:
        commit = ""
    env["gpuprof_commit"] = commit or "unknown (no git here)"
    return env


COLUMNS = ("case", "exit", "s", "event time", "profiler time", "event/profiler", "FLOPs analytic",
           "counted/analytic", "eff @ run clock %", "eff vs datasheet %", "roofline %", "bandwidth %",
           "kernels/call", "compile s", "checks")


def _row(result: Result, found: list[tuple[str, str, str]]) -> list[str]:
    def num(name: str, digits: int = 4) -> str:
        value = _value(result, name)
        return "" if value is None else f"{value:.{digits}g}"

    event, profiler = _value(result, "time (median)"), _value(result, "time (profiler)")
    return [result.case.name, "" if result.code is None else str(result.code), f"{result.seconds:.0f}",
            num("time (median)"), num("time (profiler)"), f"{event / profiler:.3f}" if event and profiler else "",
            num("FLOPs"), num("FLOPs counted / analytic", 5), num("efficiency: counted FLOP/s vs peak at run clock"),
            num("efficiency: counted FLOP/s vs peak"),
            num(next((n for n in result.rows if n.startswith("efficiency: counted roofline")), "-")),
            num("efficiency: bandwidth, datasheet peak"), num("kernels per call"), num("compile + first call", 3),
            "; ".join(f"{name}: {verdict}" for name, verdict, _ in found)]


def write_summary(out: Path, env: dict[str, Any], results: list[Result], found: dict[str, list[tuple[str, str, str]]],
                  other: list[tuple[str, str, str]]) -> tuple[str, int]:
    """summary.md, summary.csv and results.json in ``out``; the markdown text and how many checks
    failed or did not run."""
    self_check = env["mode"] == "self-check"
    head = ["# gpuprof GPU acceptance", ""]
    if self_check:
        head += ["**SELF-CHECK WITHOUT A GPU**: stand-in profilers replay recorded files (tests/fakes), NVML and CuPy "
                 "are stand-ins, the workload's result is a stand-in file. No number below is a measurement and no "
                 "GPU check is evaluated.", ""]
    head += [f"- {key}: {value}" for key, value in env.items()] + [""]
    rows = [_row(r, found[r.case.name]) for r in results]
    table = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    table += ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in rows]
    tally = [verdict for checks_ in found.values() for _, verdict, _ in checks_] + [v for _, v, _ in other]
    lines = head + table + ["", "| other check | verdict | detail |", "|---|---|---|"]
    lines += [f"| {name} | {verdict} | {detail.replace('|', '/')} |" for name, verdict, detail in other]
    lines += ["", f"{sum(v.startswith(PASS) for v in tally)} pass, {tally.count(FAIL)} FAIL, "
                  f"{tally.count(NOT_EVALUATED)} not evaluated, {tally.count('not run')} not run"]
    bad = tally.count(FAIL) + tally.count("not run")
    text = "\n".join(lines) + "\n"
    (out / "summary.md").write_text(text)
    with open(out / "summary.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(rows)
    (out / "results.json").write_text(json.dumps({
        "environment": env, "other": other,
        "results": [{**asdict(r), "checks": found[r.case.name]} for r in results]}, indent=1))
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

    from gpuprof.launch import discovery, gpu_session, profilers

    gpu = stand_in_gpu("NVIDIA GeForce RTX 3080", "8.6", driver="stand-in")
    child = out / "stand-in-child.json"
    child.write_text(json.dumps({"schema": 1, "times": [1e-3] * 5, "batch": 1, "engine": "stand-in",
                                 "device": {"name": gpu.name, "cc": gpu.cc}, "engine_version": "stand-in",
                                 "relative_error": 0.0, "kernel": None, "timer": "stand-in (self-check)"}))
    profiling = gpu_session._execute

    def execute(argv: list[str], run_dir: Path, timeout: float) -> int:
        if argv[0] != sys.executable:
            return profiling(argv, run_dir, timeout)
        (run_dir / "child.json").write_bytes(child.read_bytes())  # the workload itself needs a GPU
        return 0

    variables = {"PATH": search_path(FAKES), "GPUPROF_FAKE_CHILD": str(child),
                 "GPUPROF_FAKE_LOG": str(ROOT / "tests" / "fixtures" / "converted" /
                                         "ncu_raw_page_rtx3080_montecarlo_FROM_REPORT.csv"),
                 "GPUPROF_FAKE_RECORD": str(out / "stand-in-calls.jsonl")}
    nowhere = out / "no-install-root"
    here = Path.cwd()
    with mock.patch.dict(os.environ, variables), \
            mock.patch.object(discovery, "NSIGHT_COMPUTE_ROOT", nowhere), \
            mock.patch.object(discovery, "CUDA_DEFAULT", nowhere), \
            mock.patch.object(gpu_session, "_nvml_gpu", lambda: (gpu, "NVML: stand-in (self-check)")), \
            mock.patch.object(gpu_session, "_cupy_state", lambda: (True, "CuPy: stand-in (self-check)")), \
            mock.patch.object(gpu_session, "_execute", execute), \
            mock.patch("gpuprof.devices.gpu_detect.detect", lambda: [gpu]):
        os.environ.pop("CUDA_HOME", None)
        profilers._probe_executable.cache_clear()
        profilers.listed.cache_clear()
        os.chdir(out)
        try:
            yield
        finally:
            os.chdir(here)
            profilers._probe_executable.cache_clear()
            profilers.listed.cache_clear()


def run(out: Path, part: str, deadline_s: float, self_check: bool) -> tuple[str, int]:
    from gpuprof.launch import profilers

    out.mkdir(parents=True, exist_ok=True)
    gpuprof = InProcess(out) if self_check else Gpuprof(out)
    store = out / "acceptance.sqlite"
    env = environment(self_check)
    major = int((env.get("cc") or "0").split(".")[0])
    nvprof = profilers.probe("nvprof").usable and 0 < major < 8  # nvprof supports compute capability < 8.0
    started = time.monotonic()

    def late() -> bool:
        return time.monotonic() - started > deadline_s

    results = [Result(case, None) if late() else run_case(gpuprof, case, store) for case in plan(part, nvprof)]
    found = {r.case.name: checks(r, self_check) for r in results}
    other: list[tuple[str, str, str]] = []
    if part in ("extra", "all"):
        for case in (_case("add", "cuda-kernels", "float32"), _case("dot", "cuda-kernels", "float32")):
            if late():
                other.append((f"direct ncu: {case.name}", "not run", "deadline reached"))
                continue
            mine = run_case(gpuprof, case, store)
            other.append(cross_check(gpuprof, env.get("ncu_path", ""), case, mine, self_check))
        other += [("sweep, compare, stalls", "not run", "deadline reached")] if late() else \
            extras(gpuprof, store, results, self_check)
        other += [("doctor, profile", "not run", "deadline reached")] if late() else \
            profile_and_doctor(gpuprof, store, self_check)
    if part in ("training", "all"):
        other += [("training", "not run", "deadline reached")] if late() else training(gpuprof, store, self_check)
    return write_summary(out, env, results, found, other)


def pack(out: Path, into: Path) -> None:
    """The summaries and two archives of ``out`` in ``into`` (see the module docstring)."""
    import shutil
    import tarfile

    into.mkdir(parents=True, exist_ok=True)
    for name in ("summary.md", "summary.csv", "results.json"):
        shutil.copy(out / name, into / name)
    reps = sorted(out.rglob("*.ncu-rep"))
    with tarfile.open(into / "raw.tar.gz", "w:gz") as archive:
        archive.add(out, arcname=out.name, filter=lambda info: None if info.name.endswith(".ncu-rep") else info)
    kept, left, size = [], [], 0
    with tarfile.open(into / "ncu-rep.tar.gz", "w:gz") as archive:
        for rep in reps:
            if size + rep.stat().st_size > PACK_LIMIT:
                left.append(rep)
                continue
            size += rep.stat().st_size
            kept.append(rep)
            archive.add(rep, arcname=str(rep.relative_to(out.parent)))
    (into / "packed.txt").write_text("".join(f"ncu-rep.tar.gz: {r.relative_to(out)}\n" for r in kept) +
                                     "".join(f"left out (over {PACK_LIMIT >> 20} MiB): {r.relative_to(out)}\n"
                                             for r in left))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="folder for the summary and the raw reports")
    parser.add_argument("--part", choices=("kernels", "cupy", *FRAMEWORKS, "extra", "training", "all"), default="all")
    parser.add_argument("--deadline-s", type=float, default=420.0,
                        help="start nothing after this many seconds (the lent machine allows 600 s a command)")
    parser.add_argument("--pack", type=Path, metavar="DIR", help="copy the summaries and two archives to DIR")
    parser.add_argument("--self-check", action="store_true", help="no GPU: stand-in profilers, nothing measured")
    parser.add_argument("--merge", nargs="+", type=Path, metavar="PART_DIR", help="merge parts' results.json")
    args = parser.parse_args(argv)
    if args.merge:
        text, bad = merge(args.out, args.merge)
    elif args.self_check:
        args.out.mkdir(parents=True, exist_ok=True)
        with stand_ins(args.out.resolve()):
            text, bad = run(args.out.resolve(), args.part, args.deadline_s, True)
    else:
        text, bad = run(args.out.resolve(), args.part, args.deadline_s, False)
    if args.pack:
        pack(args.out.resolve(), args.pack)
    print(text)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
