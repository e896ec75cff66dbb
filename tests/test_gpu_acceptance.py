"""benchmarks/gpu_acceptance.py without a GPU: its self-check runs every case through the stand-in
profilers and writes the summary, saying on its first line that no GPU ran; its checks, fed
synthesized results, pass and fail where docs/gpu.md says they should. Nothing here is a GPU result."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("gpu_acceptance", ROOT / "benchmarks" / "gpu_acceptance.py")
acceptance = importlib.util.module_from_spec(spec)
sys.modules["gpu_acceptance"] = acceptance  # dataclasses look their module up there
spec.loader.exec_module(acceptance)


@pytest.fixture(scope="module")
def self_check(tmp_path_factory) -> tuple[int, Path]:
    out = tmp_path_factory.mktemp("acceptance")
    return acceptance.main([str(out), "--self-check", "--pack", str(out / "packed")]), out


@pytest.mark.slow  # the whole self-check runs every case on the stand-ins: about a minute on an idle core
def test_self_check_runs_every_case_and_says_no_gpu_ran(self_check) -> None:
    code, out = self_check
    summary = (out / "summary.md").read_text()
    assert code == 0
    assert summary.splitlines()[2].startswith("**SELF-CHECK WITHOUT A GPU**")
    assert "- mode: self-check" in summary and "- ncu: ncu 0.0.0-fake (" in summary
    results = json.loads((out / "results.json").read_text())["results"]
    planned = [case.name for case in acceptance.plan("all", nvprof=False)]
    assert [r["case"]["name"] for r in results] == planned and len(planned) == 39 + 2 * (18 + 1)
    assert {r["case"]["engine"] for r in results} >= {"pytensor-jax", "pytensor-torch"}
    for result in results:
        assert result["code"] == 0 and result["run_id"], result
        assert (out / "cases" / f"{result['case']['name']}.json").is_file()
        assert list((out / "reports").glob(f"{result['run_id']}*/ncu.csv"))  # the raw report is kept
        verdicts = [verdict for _, verdict, _ in result["checks"]]
        assert verdicts[0] == "pass" and set(verdicts[1:]) <= {acceptance.NOT_EVALUATED}  # no GPU check passes
    assert "0 FAIL" in summary and "0 not run" in summary
    assert (
        "- gpuprof_commit: " in summary and "- packages: " in summary and "- ncu_metrics: ncu metric list: " in summary
    )
    assert "- nvidia_smi: " in summary


@pytest.mark.slow  # the whole self-check runs every case on the stand-ins: about a minute on an idle core
def test_self_check_runs_the_direct_ncu_sweep_compare_and_stalls(self_check) -> None:
    _, out = self_check
    other = {
        name: (verdict, detail) for name, verdict, detail in json.loads((out / "results.json").read_text())["other"]
    }
    assert other["sweep (4 points x 2 engines)"][0] == other["compare"][0] == other["stalls"][0] == "pass (plumbing)"
    assert other["doctor --for profile"][0] == other["profile of the add as a command"][0] == "pass (plumbing)"
    assert "analytic 4194304" in other["profile of the add as a command"][1]
    # the stand-in replays the converted RTX 3080 page: both readings are its 70 MFLOP, and no verdict is given
    assert other["direct ncu: add-cuda-kernels-float32-2048x2048"] == (
        acceptance.NOT_EVALUATED,
        "direct 70000000.0, gpuprof 70000000.0",
    )
    argv = json.loads((out / "direct-ncu" / "add-cuda-kernels-float32-2048x2048" / "command.json").read_text())
    assert argv[argv.index("--clock-control") + 1] == "none" and argv[argv.index("--page") + 1] == "raw"
    assert "add" in (out / "compare.md").read_text()
    assert (out / "stalls.txt").read_text().strip()


def _result(case, **rows) -> object:
    names = {
        "ratio": "FLOPs counted / analytic",
        "event": "time (median)",
        "profiler": "time (profiler)",
        "bandwidth": "efficiency: bandwidth, datasheet peak",
        "compile": "compile + first call",
        "kernels": "kernels per call",
        "analytic": "FLOPs",
        "fp32": "FLOPs counted (FP32)",
        "fp16": "FLOPs counted (FP16)",
        "fp64": "FLOPs counted (FP64)",
    }
    return acceptance.Result(case, 0, rows={names[k]: {"value": v} for k, v in rows.items()}, run_id="abc")


@pytest.mark.parametrize(
    ("case", "rows", "expected"),
    [
        (acceptance._case("add", "cuda-kernels", "float32"), {"analytic": 4e6, "fp32": 4.0016e6}, "pass"),
        (acceptance._case("dot", "cuda-kernels", "float16"), {"analytic": 1e9, "fp32": 1.002e9}, "FAIL"),
        (acceptance._case("add", "cuda-kernels", "float16"), {"analytic": 4e6, "fp16": 4e6, "fp32": 4e6}, "pass"),
        (acceptance._case("scalar", "cuda-kernels", "float64"), {"analytic": 4e6}, "FAIL"),  # no counted FLOPs at all
        (acceptance._case("sigmoid", "cuda-kernels", "float32"), {"ratio": 2.9}, "pass"),
        (acceptance._case("tanh", "cuda-kernels", "float32"), {"ratio": 6.0}, "FAIL"),
        (acceptance._case("tanh", "cuda-kernels", "float64"), {"ratio": 12.0}, "pass"),
    ],
)
def test_flop_ratio_checks(case, rows, expected) -> None:
    verdicts = [verdict for _, verdict, _ in acceptance.checks(_result(case, **rows), self_check=False)[1:]]
    assert verdicts[0] == expected and set(verdicts[1:]) <= {acceptance.INFO}


def test_exact_counts_are_judged_on_the_precision_that_does_the_work() -> None:
    """The float16 dot at 1024^3 accumulates in FP32: its FP32 count is exactly 2mnk, and the FP16
    count the SASS idioms add (HFMA2.MMA zeroing, 2 FLOP once per thread; two HADD2.F32 per 16-wide
    tile) is reported as an idiom row. Summed over precisions it would read 1.0635 and fail; the
    float32 dot at 256^3 would read 1.0039 from its one HFMA2.MMA per thread."""
    m = k = n = 1024
    idioms = m * n * (2 + 2 * k / 16)
    assert (2 * m * n * k + idioms) / (2 * m * n * k) == pytest.approx(1.0635, abs=1e-4)
    case = acceptance._case("dot", "cuda-kernels", "float16")
    found = acceptance.checks(
        _result(case, analytic=2 * m * n * k, fp32=2 * m * n * k, fp16=idioms, ratio=1.0635), self_check=False
    )
    assert found[1] == ("counted FP32 / analytic = 1.000", "pass", "1.00000")
    assert found[2][:2] == ("idiom FP16", "info")
    assert found[2][2].startswith(f"counted {idioms:.6g}, SASS predicts {idioms:.6g}: HFMA2.MMA R, -RZ, RZ, 0, 0 ")
    [(precision, flops, _)] = acceptance.idiom_flops("dot", "float32", "256x256x256")
    assert precision == "FP16" and (2 * 256**3 + flops) / (2 * 256**3) == pytest.approx(1.0039, abs=1e-4)
    assert acceptance.idiom_flops("add", "float16", "2048x2048") == []


@pytest.mark.parametrize(
    ("dtype", "ratio", "verdict", "detail"),
    [
        ("float16", 1.02, "pass", "1.0200"),
        ("float64", 0.5, "FAIL", "0.5000 (about half: ncu's sm__ops_path_tensor_* count FMAs, not FLOPs)"),
        ("float16", None, "FAIL", "no FLOPs counted / analytic row"),
    ],
)
def test_tensor_core_dot_gets_a_verdict_band(dtype, ratio, verdict, detail) -> None:
    case = acceptance._case("dot", "cupy", dtype)
    rows = {"ratio": ratio} if ratio is not None else {}
    found = acceptance.checks(_result(case, **rows), self_check=False)
    assert found[1] == ("tensor-core counted/analytic in [0.9, 1.2]", verdict, detail)
    assert len(acceptance.checks(_result(acceptance._case("dot", "cupy", "float32"), ratio=0.0), False)) == 1


@pytest.mark.parametrize(
    ("op", "dtype", "rows", "expected"),
    [
        ("add", "float32", {"compile": 1.2, "kernels": 1, "ratio": 1.0}, ["pass", "pass", "pass"]),
        ("add", "float32", {"kernels": 0, "ratio": 1.2}, ["FAIL", "FAIL", "FAIL"]),  # nothing caught in the NVTX range
        ("dot", "float32", {"compile": 0.4, "kernels": 2}, ["pass", "pass"]),  # cuBLAS + a reduction: both counted
        (
            "mul",
            "float16",
            {"compile": 0.4, "kernels": 1, "ratio": 0.5},
            ["pass", "pass"],
        ),  # packed halves: no ratio check
    ],
)
@pytest.mark.parametrize("engine", ["pytensor-jax", "pytensor-torch"])
def test_framework_checks(engine, op, dtype, rows, expected) -> None:
    found = acceptance.checks(_result(acceptance._case(op, engine, dtype), **rows), self_check=False)[1:]
    assert [verdict for _, verdict, _ in found] == expected
    assert found[0][0] == "compile time in its own row" and found[1][0] == "kernels counted inside the NVTX range"


def test_large_add_checks_time_and_bandwidth() -> None:
    case = acceptance._case("add", "cupy", "float32", "384MB", purpose="large")
    good = acceptance.checks(_result(case, event=0.0105, profiler=0.0100, bandwidth=85.0), self_check=False)
    bad = acceptance.checks(_result(case, event=0.013, profiler=0.0100, bandwidth=60.0), self_check=False)
    assert [v for _, v, _ in good] == ["pass", "pass", "pass"] and [v for _, v, _ in bad] == ["pass", "FAIL", "FAIL"]
    failed = acceptance.Result(case, 5, error="error: --device cuda: no usable NVIDIA GPU")
    assert acceptance.checks(failed, self_check=False) == [
        ("ran", "FAIL", "exit 5: error: --device cuda: no usable NVIDIA GPU")
    ]


def test_parts_merge_into_one_summary(tmp_path) -> None:
    env = {"mode": "gpu", "device": "test"}
    for part, op in (("a", "add"), ("b", "mul")):
        (tmp_path / part).mkdir()
        result = _result(acceptance._case(op, "cuda-kernels", "float32"), analytic=4e6, fp32=4e6)
        acceptance.write_summary(
            tmp_path / part,
            env,
            [result],
            {result.case.name: acceptance.checks(result, False)},
            [(f"other {part}", "pass", "")],
        )
    text, bad = acceptance.merge(tmp_path / "all", [tmp_path / "a", tmp_path / "b"])
    assert bad == 0 and "add-cuda-kernels-float32-2048x2048" in text and "mul-cuda-kernels-float32-2048x2048" in text
    assert (
        "| other a | pass |" in text and "| other b | pass |" in text and "6 pass, 0 FAIL" in text
    )  # 2 x (ran, ratio) + 2 others


@pytest.mark.slow  # the whole self-check runs every case on the stand-ins: about a minute on an idle core
def test_the_pack_fits_what_an_offline_gpu_node_hands_back(self_check, tmp_path, monkeypatch) -> None:
    _, out = self_check
    packed = sorted(p.name for p in (out / "packed").iterdir())
    assert packed == ["ncu-rep.tar.gz", "packed.txt", "raw.tar.gz", "results.json", "summary.csv", "summary.md"]
    assert all((out / "packed" / name).stat().st_size < 16 * 2**20 for name in packed)  # 8 files of <= 16 MiB come back
    # .ncu-rep files go into their own archive until it holds 15 MiB; the rest are named, not lost silently
    reports = tmp_path / "run" / "reports"
    for name, size in (("a", 6), ("b", 6), ("c", 6)):
        (reports / name).mkdir(parents=True)
        (reports / name / "report.ncu-rep").write_bytes(b"x" * size)
    monkeypatch.setattr(acceptance, "PACK_LIMIT", 12)
    for name in ("summary.md", "summary.csv", "results.json"):
        (tmp_path / "run" / name).write_text("")
    acceptance.pack(tmp_path / "run", tmp_path / "packed")
    assert (tmp_path / "packed" / "packed.txt").read_text() == (
        "ncu-rep.tar.gz: reports/a/report.ncu-rep\nncu-rep.tar.gz: reports/b/report.ncu-rep\n"
        "left out (over 0 MiB): reports/c/report.ncu-rep\n"
    )


HANGING_GPUPROF = """
import os, subprocess, sys, time
# like gpuprof run: the profiler in a session of its own, which starts the workload
profiler = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                             "w = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
                             "open(sys.argv[1], 'w').write(str(w.pid)); time.sleep(120)", sys.argv[1] + ".workload"],
                            start_new_session=True)
open(sys.argv[1], "w").write(str(profiler.pid))
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(") ", 1)[-1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_timed_out_case_leaves_no_profiler_or_workload_running(tmp_path, monkeypatch) -> None:
    """A stand-in gpuprof that starts a profiler in its own session, which starts a workload, and
    hangs: the case's time-out kills all three (before, only the stand-in gpuprof was killed)."""
    script = tmp_path / "hang.py"
    script.write_text(HANGING_GPUPROF)
    pids = tmp_path / "pids"
    gpuprof = acceptance.Gpuprof(tmp_path)
    monkeypatch.setattr(gpuprof, "command", (sys.executable, str(script), str(pids)))
    began = time.monotonic()
    code, _, stderr = gpuprof(["run"], timeout=3)
    assert code == 124 and "did not finish within 3 s" in stderr and time.monotonic() - began < 10
    profiler, workload = int(pids.read_text()), int(Path(f"{pids}.workload").read_text())
    deadline = time.monotonic() + 5
    while (_alive(profiler) or _alive(workload)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(profiler), "the profiler was left running"
    assert not _alive(workload), "the workload was left running"


QUICK_CASES = "add-cuda-kernels-float32|dot-cuda-kernels-float16|dot-cupy-float16|384MB"


def _pack_census(folder: Path) -> tuple[int, int]:
    """(files, deepest folder level) under ``folder`` right now."""
    files = depth = 0
    for root, _, names in os.walk(folder):
        files += len(names)
        depth = max(depth, len(Path(root).relative_to(folder).parts))
    return files, depth


@pytest.mark.slow  # a quick self-check watched every few milliseconds: 5-10 s
def test_quick_self_check_never_holds_more_than_8_files_2_folders_deep_in_the_pack(tmp_path, capsys) -> None:
    """The pack folder is watched every few milliseconds while a quick self-check runs (a subset of
    its cases, its direct-ncu cross-check and live pytest): never more than 8 files, no folder deeper
    than 2, and a summary plus live archive there as soon as the first case is done."""
    import threading

    out = tmp_path / "out"
    into = out / "pack"  # inside OUT: the archives must leave it out, or each one would hold the last
    seen: list[tuple[int, int]] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            if into.exists():
                seen.append(_pack_census(into))
            time.sleep(0.002)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        code = acceptance.main([str(out), "--self-check", "--quick", "--pack", str(into), "--cases", QUICK_CASES])
    finally:
        done.set()
        watcher.join()
    printed = capsys.readouterr().out.splitlines()
    assert code == 0
    assert len(seen) > 10 and max(files for files, _ in seen) <= 8 and max(depth for _, depth in seen) <= 2
    assert sorted(p.name for p in into.iterdir()) == [
        "ncu-rep.tar.gz",
        "packed.txt",
        "raw.tar.gz",
        "results.json",
        "summary.csv",
        "summary.md",
    ]
    import tarfile

    with tarfile.open(into / "raw.tar.gz") as archive:
        members = archive.getnames()
    assert "out/summary.md" in members and not [m for m in members if m.startswith("out/pack")]
    cases = [line for line in printed if line.startswith("[") and "/7] " in line]  # one line per case, as it ends
    assert len(cases) == 7 and cases[0].startswith("[1/7] add-cuda-kernels-float32-2048x2048 (")
    other = {name: verdict for name, verdict, _ in json.loads((out / "results.json").read_text())["other"]}
    assert other["direct ncu: add-cuda-kernels-float32-2048x2048"] == acceptance.NOT_EVALUATED
    assert other["pytest -m gpu (no PyTensor)"] == "pass (plumbing)"
    assert other["twin: add-cupy-float32-384MB"] == acceptance.NOT_EVALUATED
    assert "preflight: ncu metric list" in other
    names = [r["case"]["name"] for r in json.loads((out / "results.json").read_text())["results"]]
    assert names == [c.name for c in acceptance.plan("quick", False) if re.search(QUICK_CASES, c.name)]
    assert len(acceptance.plan("quick", False)) == 2 * 6 * 2 + 2 * 2 + 2  # 24 matrix cases, 3 large cases + twins


def test_quick_plan_and_deadline(tmp_path, capsys) -> None:
    """No case starts once the deadline minus a case's time-out has passed: each is listed as not run."""
    code = acceptance.main(
        [
            str(tmp_path / "out"),
            "--self-check",
            "--quick",
            "--deadline-s",
            "0",
            "--cases",
            "add-cuda-kernels-float32-2048",
        ]
    )
    results = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    assert code == 1 and [r["code"] for r in results] == [None]
    assert (
        results[0]["checks"][0][:2] == ["ran", "not run"] and "left before the deadline" in results[0]["checks"][0][2]
    )


def test_without_a_gpu_it_says_so_first_and_exits_within_10_s(tmp_path) -> None:
    from gpuprof.launch import gpu_session

    if gpu_session.probe_gpu()[0]:
        pytest.skip("a GPU is usable here")
    began = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "gpu_acceptance.py"),
            str(tmp_path / "out"),
            "--quick",
            "--pack",
            str(tmp_path / "pack"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    took = time.monotonic() - began
    assert done.returncode == 2 and took < 10
    assert done.stdout.splitlines()[0].startswith("no usable NVIDIA GPU here, nothing was measured: ")
    assert not (tmp_path / "pack").exists()


@pytest.mark.slow  # a self-check in a child process, stopped midway: 4-8 s
def test_sigterm_writes_the_summary_and_the_pack(tmp_path) -> None:
    out, into = tmp_path / "out", tmp_path / "pack"
    child = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "gpu_acceptance.py"),
            str(out),
            "--self-check",
            "--quick",
            "--pack",
            str(into),
            "--cases",
            QUICK_CASES,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        first = next(line for line in child.stdout if line.startswith("[1/7] "))
        child.send_signal(signal.SIGTERM)
        rest = child.stdout.read()
        child.wait(120)
    finally:
        child.kill()
    assert child.returncode == 1, rest
    summary = (out / "summary.md").read_text()
    assert "**stopped by SIGTERM after " in summary and first.startswith("[1/7] add-cuda-kernels-float32")
    results = json.loads((into / "results.json").read_text())["results"]
    assert len(results) == 7 and results[-1]["checks"][0] == ["ran", "not run", "stopped by SIGTERM before this case"]
    assert (into / "raw.tar.gz").is_file()


def test_the_live_framework_tests_skip_where_pytensor_is_absent(tmp_path) -> None:
    """A GPU node with JAX and PyTorch on CUDA but no PyTensor: the probe names PyTensor, so the
    framework tests skip there instead of failing (stand-in jax and torch modules that claim a GPU,
    and a pytensor that cannot be imported, on PYTHONPATH)."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import test_gpu_live
    finally:
        sys.path.remove(str(ROOT / "tests"))
    (tmp_path / "jax.py").write_text("def devices(kind):\n    return ['stand-in gpu']\n")
    (tmp_path / "torch.py").write_text("class cuda:\n    is_available = staticmethod(lambda: True)\n")
    (tmp_path / "pytensor.py").write_text("raise ModuleNotFoundError(\"No module named 'pytensor'\")\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    for engine in ("pytensor-jax", "pytensor-torch"):
        assert test_gpu_live.backend_missing(engine, env) == (
            f"{engine} cannot run on the GPU here: ModuleNotFoundError: No module named 'pytensor'"
        )
    (tmp_path / "pytensor.py").write_text("")
    assert test_gpu_live.backend_missing("pytensor-torch", env) is None
