"""PyTensor's JAX and PyTorch backends as engines (``pytensor-jax``, ``pytensor-torch``).

End to end on this machine's CPU, where both backends install as CPU builds: every op in every
dtype through ``gpuprof run``, the answer checked against float64, compile time reported apart from
the repeats. Where only a stand-in can make timing behaviour deterministic (an asynchronous result,
a slow first call), a stand-in engine module goes through the same measurement code. The GPU side:
the workload child with a stand-in engine, and ``run_gpu`` with the stand-in ncu replaying a real
two-kernel report (tests/fixtures/converted); nothing here ran on a GPU (``pytest -m gpu`` and
benchmarks/gpu_acceptance.py do).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import statistics
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from extras import BACKENDS

from gpuprof import workloads
from gpuprof.cli import main
from gpuprof.derive.summary import timings
from gpuprof.errors import DeviceError, EngineError
from gpuprof.store import open_store
from gpuprof.sweep import load_config
from gpuprof.workloads.reference import TOLERANCE

pytestmark = BACKENDS  # PyTensor with both its JAX and PyTorch backends

OPS = ("add", "mul", "dot", "scalar", "sigmoid", "tanh")
DTYPES = ("float32", "float64", "float16")
BACKENDS = {"pytensor-jax": "jax.jit", "pytensor-torch": "torch.compile"}


def _run(tmp_path, *args: str):
    return CliRunner().invoke(
        main, ["run", "--device", "cpu", "--no-counters", "--store", str(tmp_path / "s.sqlite"), *args]
    )


def _stored(tmp_path):
    with open_store(tmp_path / "s.sqlite") as opened:
        (run,) = opened.runs()
    return run


@pytest.mark.slow
@pytest.mark.parametrize("engine", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_every_op_and_dtype_is_checked_and_compiles_outside_the_repeats(tmp_path, engine, dtype, op):
    shape = "24x40x16" if op == "dot" else "24x40"  # not square: a transposed operand would fail the check
    result = _run(
        tmp_path,
        "--op",
        op,
        "--shape",
        shape,
        "--dtype",
        dtype,
        "--engine",
        engine,
        "--repeat",
        "3",
        "--warmup",
        "1",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    rows = {row["quantity"]: row for row in json.loads(result.stdout)["quantities"]}
    run = _stored(tmp_path)
    assert run.workload["engine"] == engine and run.format == f"cpu-{engine}"
    assert 0 <= run.workload["relative_error"] <= TOLERANCE[dtype]
    assert f"(mode {'JAX' if engine.endswith('jax') else 'PYTORCH'})" in run.environment["engine_version"]

    compiled = [launch for launch in run.launches if launch.attributes.get("phase") == "compile"]
    assert len(compiled) == 1 and BACKENDS[engine] in compiled[0].attributes["compiler"]
    prepare, first = compiled[0].value("compile_prepare"), compiled[0].value("compile_first_call")
    assert prepare > 0 and first > 0
    times = timings(run)
    assert len(times) == 3 and rows["time (median)"]["value"] == pytest.approx(statistics.median(times))
    row = rows["compile + first call"]
    assert row["origin"] == "timed" and row["value"] == pytest.approx(prepare + first)
    assert BACKENDS[engine] in row["basis"] and "never part of the repeats" in row["basis"]


@pytest.mark.slow  # compiles every op through a framework backend: 3-14 s
@pytest.mark.parametrize("engine", BACKENDS)
def test_results_stay_on_the_device_and_equal_numpy(engine):
    module = workloads.load(engine, "cpu")
    rng = np.random.default_rng(1)
    a, b = rng.uniform(-1, 1, (8, 5)).astype("float32"), rng.uniform(-1, 1, (5, 3)).astype("float32")
    placed = module.place([a, b], "cpu")
    result = module.prepare("dot", placed, 1.5)()
    assert not isinstance(result, np.ndarray)  # a jax.Array / torch.Tensor: no copy back to the host per call
    assert type(result).__module__.split(".")[0] in ("jax", "jaxlib", "torch")
    np.testing.assert_allclose(module.to_host(module.block(result)), a @ b, rtol=1e-5)


def _stand_in(name: str, first_s: float = 0.0, ready_s: float = 0.0, fail: Exception | None = None):
    """An engine module as gpuprof sees one: ``ready_s`` of work finish only when ``block`` waits for
    them (an asynchronous dispatch); the first call also takes ``first_s`` (a compile)."""
    engine = types.ModuleType(name)
    engine.NAME, engine.COMPILER, engine.WAITS = name, "stand-in compiler", {"cpu": "stand-in wait", "cuda": "x"}
    state = {"calls": 0, "blocked": 0}
    engine.state = state
    engine.version = lambda: "stand-in 0"
    engine.place = lambda arrays, device: [np.array(x) for x in arrays]
    engine.to_host = lambda result: result

    def prepare(op, inputs, scalar, out=None):
        def dispatch():
            if fail is not None:
                raise fail
            state["calls"] += 1
            if state["calls"] == 1:
                time.sleep(first_s)
            return inputs[0] + inputs[1]

        return dispatch

    def block(result):
        state["blocked"] += 1
        time.sleep(ready_s)
        return result

    engine.prepare, engine.block = prepare, block
    return engine


def _use(monkeypatch, engine) -> None:
    monkeypatch.setattr(workloads, "resolve", lambda name, device: (engine, []))


def test_an_asynchronous_result_is_waited_for_inside_each_timed_call(tmp_path, monkeypatch):
    engine = _stand_in("async", ready_s=0.02)
    _use(monkeypatch, engine)
    result = _run(tmp_path, "--op", "add", "--shape", "8", "--repeat", "5", "--warmup", "2")
    assert result.exit_code == 0, result.output
    run = _stored(tmp_path)
    assert min(timings(run)) >= 0.02  # the 20 ms of work the dispatch left running are in every repeat
    assert engine.state["blocked"] == 1 + 2 + 5  # check, warm-up, repeats
    assert run.environment["timer"] == "time.perf_counter_ns around each call, which waits for stand-in wait"


def test_the_first_call_compiles_outside_the_repeats_and_is_reported_apart(tmp_path, monkeypatch):
    _use(monkeypatch, _stand_in("compiling", first_s=0.3))
    result = _run(tmp_path, "--op", "add", "--shape", "8", "--repeat", "4", "--warmup", "0", "--format", "json")
    assert result.exit_code == 0, result.output
    rows = {row["quantity"]: row for row in json.loads(result.stdout)["quantities"]}
    assert max(timings(_stored(tmp_path))) < 0.1
    assert 0.3 <= rows["compile + first call"]["value"] < 1.0
    assert rows["compile + first call"]["basis"].startswith("stand-in compiler: building the function ")


def test_a_dtype_a_backend_cannot_compute_is_one_line(tmp_path, monkeypatch):
    _use(monkeypatch, _stand_in("picky", fail=TypeError("float16 matmul is not supported on this device\nmore")))
    result = _run(tmp_path, "--op", "add", "--shape", "8", "--dtype", "float16")
    assert result.exit_code == EngineError.exit_code and "Traceback" not in result.output
    assert result.output.strip() == (
        "error: engine picky cannot compute add in float16 on cpu: TypeError: float16 "
        "matmul is not supported on this device. try another --dtype or --engine "
        "(docs/theano-gpu.md lists what each backend supports)"
    )


@pytest.mark.parametrize(
    ("engine", "module", "extra"), [("pytensor-jax", "jax", "jax"), ("pytensor-torch", "torch", "torch")]
)
def test_a_missing_backend_names_its_extra(tmp_path, monkeypatch, engine, module, extra):
    monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.delitem(sys.modules, f"gpuprof.workloads.{engine.replace('-', '_')}", raising=False)
    result = _run(tmp_path, "--op", "add", "--shape", "8", "--engine", engine)
    assert result.exit_code == EngineError.exit_code
    assert result.output.strip() == (
        f"error: engine '{engine}' is not installed ({module}). pip install \"gpuprof-hpc[{extra}]\""
    )


def test_theano_on_a_gpu_means_pytensor_on_a_gpu_backend_and_says_so():
    engine, notes = workloads.resolve("theano", "cuda")
    assert engine.NAME == "pytensor-jax"
    assert notes[0].startswith("engine theano: legacy Theano ran on GPUs through pygpu/libgpuarray, which are gone")
    assert notes[0].endswith("as pytensor-jax") and notes[1].startswith("engine pytensor on the GPU: pytensor-jax")


def test_pytensor_on_a_gpu_takes_the_first_backend_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)
    monkeypatch.delitem(sys.modules, "gpuprof.workloads.pytensor_jax", raising=False)
    engine, notes = workloads.resolve("pytensor", "cuda")
    assert engine.NAME == "pytensor-torch" and "the first installed of pytensor-jax, pytensor-torch" in notes[0]
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.delitem(sys.modules, "gpuprof.workloads.pytensor_torch", raising=False)
    with pytest.raises(EngineError) as caught:
        workloads.resolve("pytensor", "cuda")
    assert caught.value.problem == (
        "engine pytensor needs a GPU backend on --device cuda (pytensor-jax: jax not "
        "installed; pytensor-torch: torch not installed)"
    )
    assert '"gpuprof-hpc[jax]"' in caught.value.fix and '"gpuprof-hpc[torch]"' in caught.value.fix


def test_pytensor_on_the_cpu_is_numba_and_says_so():
    engine, notes = workloads.resolve("pytensor", "cpu")
    assert engine.MODE == "NUMBA" and notes == [
        "engine pytensor on the CPU: Numba, PyTensor's default backend "
        "(--engine pytensor-jax or pytensor-torch for the others)"
    ]


@pytest.mark.parametrize(("engine", "said"), [("pytensor-jax", "JAX 0."), ("pytensor-torch", "a CPU-only build")])
def test_placing_on_a_gpu_this_machine_lacks_is_a_device_error(engine, said):
    with pytest.raises(DeviceError) as caught:
        workloads.load(engine, "cuda").place([np.zeros((2, 2), "float32")], "cuda")
    assert said in caught.value.problem


def test_the_gpu_child_times_a_framework_engine_with_its_own_clock(tmp_path, monkeypatch):
    """The workload child's real code with a stand-in framework engine and a stand-in CUDA device."""
    from gpuprof.launch import child

    engine = _stand_in("framework", first_s=0.05)
    batches = []
    engine.GPU_TIMER = "stand-in clock around {count} dispatches"

    def batch_seconds(dispatch, count):
        batches.append(count)
        for _ in range(count):
            dispatch()
        return 4e-3

    engine.batch_seconds = batch_seconds
    monkeypatch.setattr(workloads, "resolve", lambda name, device: (engine, [f"{name} resolved (stand-in)"]))
    monkeypatch.setattr(child, "_device", lambda cp: {"name": "stand-in GPU", "pci_bus_id": None})
    args = argparse.Namespace(
        op="add",
        shape="8x8",
        dtype="float32",
        engine="theano",
        repeat=3,
        warmup=2,
        profiled=0,
        batch=0,
        range="gpuprof:test",
        seed=0,
        result=tmp_path / "child.json",
    )
    record = child.measure(args)
    assert batches == [1, 1, 1, 1, 1]  # one to size the batch (4 ms > 2 ms: 1 call), one untimed, three timed
    assert record["times"] == [4e-3] * 3 and record["batch"] == 1
    assert record["timer"] == "stand-in clock around 1 dispatches" and record["engine"] == "framework"
    assert record["notes"] == ["theano resolved (stand-in)"] and record["relative_error"] < 1e-6
    assert record["compile"]["compiler"] == "stand-in compiler" and record["compile"]["first_call_s"] >= 0.05
    assert engine.state["blocked"] == 1 + 2  # the checked first call and the warm-up waited for their results


def test_a_gpu_run_of_theano_stores_the_backend_compile_time_and_kernels(tmp_path, monkeypatch):
    """run_gpu with the stand-in ncu replaying the RTX 3080 report's two kernels as one call of the op
    (as a framework that launches two kernels for it); the child's result is a stand-in record."""
    from fakes.environment import FIXTURES, stand_in_gpu, use_stand_ins

    from gpuprof.launch import gpu_session

    use_stand_ins(tmp_path, monkeypatch)
    monkeypatch.setattr(gpu_session, "_nvml_gpu", lambda: (stand_in_gpu("NVIDIA GeForce RTX 3080", "8.6"), "stand-in"))
    monkeypatch.setattr(gpu_session, "_cupy_state", lambda: (True, "CuPy: stand-in"))
    note = "engine theano: legacy Theano ran on GPUs through pygpu/libgpuarray (stand-in note)"
    record = {
        "schema": 1,
        "times": [0.09] * 3,
        "batch": 1,
        "engine": "pytensor-torch",
        "notes": [note],
        "device": {"name": "NVIDIA GeForce RTX 3080", "cc": "8.6"},
        "engine_version": "stand-in",
        "relative_error": 0.0,
        "kernel": None,
        "timer": "stand-in",
        "compile": {"compiler": "stand-in compiler", "prepare_s": 0.25, "first_call_s": 1.5},
    }
    (tmp_path / "child.json").write_text(json.dumps(record))
    monkeypatch.setenv("GPUPROF_FAKE_CHILD", str(tmp_path / "child.json"))
    monkeypatch.setenv(
        "GPUPROF_FAKE_LOG", str(FIXTURES.parent / "converted" / "ncu_raw_page_rtx3080_montecarlo_FROM_REPORT.csv")
    )
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--op",
            "add",
            "--shape",
            "4096x4096",
            "--device",
            "cuda",
            "--engine",
            "theano",
            "--profiler",
            "ncu",
            "--profiled",
            "1",
            "--repeat",
            "3",
            "--format",
            "json",
            "--store",
            str(tmp_path / "s.sqlite"),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = {row["quantity"]: row for row in json.loads(result.stdout)["quantities"]}
    assert rows["compile + first call"]["value"] == pytest.approx(1.75)
    assert rows["time (median)"]["value"] == pytest.approx(0.09)
    assert rows["kernels per call"]["value"] == 2 and rows["kernels per call"]["origin"] == "measured"
    assert rows["kernels per call"]["basis"] == (
        "ncu: launches inside NVTX range gpuprof:add:4096x4096:float32 per profiled call, all counted below: "
        "initRNG(curandStateXORWOW*, unsigned int); void computeValue<float>(unsigned int*, curandStateXORWOW*, "
        "unsigned int)"
    )
    run = _stored(tmp_path)
    assert run.format == "cuda-pytensor-torch" and run.workload["requested_engine"] == "theano"
    assert run.notes[0] == note


def test_the_paper_sweep_measures_the_device_default_and_both_backends():
    config = load_config(Path(__file__).resolve().parents[1] / "configs" / "paper.toml")
    assert {point.engine for point in config.points} == {None, "pytensor-jax", "pytensor-torch"}
    assert len(config.points) == 3 * (2 * 5 + 5 + 3 * 10)  # the study's (op, size) points, once per engine


@pytest.mark.slow  # a sweep of real measurements: 2-6 s
def test_a_small_paper_sweep_on_the_cpu_sits_beside_the_published_rows(tmp_path):
    config = tmp_path / "small-paper.toml"
    config.write_text(
        'name = "small-paper"\nrepeat = 2\nwarmup = 1\ncounters = false\n'
        'engines = ["default", "pytensor-jax", "pytensor-torch"]\n'
        '[[grid]]\nops = ["add"]\nsizes = ["6MB"]\n'
    )
    store = str(tmp_path / "s.sqlite")
    swept = CliRunner().invoke(main, ["sweep", str(config), "--device", "cpu", "--store", store])
    assert swept.exit_code == 0, swept.output
    assert "3 point(s) stored" in swept.output
    compared = CliRunner().invoke(
        main, ["compare", "--store", store, "--reference", "paper", "--op", "add", "--format", "csv"]
    )
    assert compared.exit_code == 0, compared.output
    rows = [row for row in csv.DictReader(io.StringIO(compared.stdout)) if float(row["size_MB"]) == 6]
    measured = {row["engine"]: row for row in rows if row["run"]}
    assert set(measured) == {"numpy", "pytensor-jax", "pytensor-torch"}
    assert all(float(row["MFLOP/s"]) > 0 and row["device"].endswith(f"· {engine}") for engine, row in measured.items())
    assert {row["device"] for row in rows if not row["run"]} == {"GT710M (paper)", "K40 (paper)", "GTX980 (paper)"}


def test_a_backend_on_a_gpu_this_machine_lacks_points_back_to_the_cpu(tmp_path):
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--op",
            "add",
            "--shape",
            "8",
            "--engine",
            "pytensor-jax",
            "--device",
            "cuda",
            "--store",
            str(tmp_path / "s.sqlite"),
        ],
    )
    assert result.exit_code == DeviceError.exit_code and "Traceback" not in result.output
    assert result.output.startswith("error: --device cuda: no usable NVIDIA GPU (")
    assert result.output.strip().endswith(". use --device cpu")


@pytest.mark.slow  # a fresh process imports JAX and compiles: 4-10 s
@pytest.mark.parametrize("op", ["add", "dot"])
def test_pytensor_jax_float64_is_float64_in_a_fresh_process(tmp_path, op) -> None:
    """JAX's 64-bit mode is process-global: an earlier test in this process may have turned it on, so
    the check runs in a fresh interpreter, where the operands are placed before PyTensor loads its
    JAX backend. float32 would read a relative error near 1e-8 and fail the 1e-10 check."""
    pytest.importorskip("jax")
    pytest.importorskip("pytensor")
    import subprocess

    shape = "64x64x64" if op == "dot" else "256x256"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuprof",
            "run",
            "--op",
            op,
            "--shape",
            shape,
            "--dtype",
            "float64",
            "--engine",
            "pytensor-jax",
            "--device",
            "cpu",
            "--repeat",
            "3",
            "--format",
            "json",
            "--store",
            str(tmp_path / "s.sqlite"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    error = json.loads(done.stdout)["relative_error"]
    assert 0 <= error < 1e-13  # float64 rounding, not float32's ~3e-8
