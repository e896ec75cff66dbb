"""The GPU path on a real GPU: ``pytest -m gpu``. Every test here is skipped, with the reason, where
no NVIDIA GPU is usable (this project's build machines have none) or where it needs ncu and ncu is
not installed; benchmarks/gpu_acceptance.py is the fuller run. Nothing here stands in for a GPU."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gpuprof.launch import gpu_session, profilers

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu() -> None:
    usable, reason = gpu_session.probe_gpu()
    if not usable:
        pytest.skip(f"no usable NVIDIA GPU here: {reason}")


@pytest.fixture(scope="module")
def ncu(gpu) -> str:
    found = profilers.probe("ncu")
    if not found.usable:
        pytest.skip(f"needs Nsight Compute: {found.problem}")
    return found.path


def _run(tmp_path, *args: str) -> dict[str, dict]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuprof",
            "run",
            "--device",
            "cuda",
            "--format",
            "json",
            "--store",
            str(tmp_path / "s.sqlite"),
            *args,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return {row["quantity"]: row for row in json.loads(done.stdout)["quantities"]}


def test_event_timing_without_a_profiler(gpu, tmp_path) -> None:
    rows = _run(tmp_path, "--op", "add", "--shape", "2048x2048", "--engine", "cuda-kernels", "--profiler", "none")
    assert rows["time (median)"]["value"] > 0 and rows["time (median)"]["origin"] == "timed"
    assert "time per launch = batch / " in rows["time (median)"]["basis"]


@pytest.mark.parametrize(
    ("op", "shape"), [("add", "2048x2048"), ("mul", "1024x1024"), ("scalar", "1024x1024"), ("dot", "256x256x256")]
)
def test_counted_flops_equal_analytic_for_the_hand_written_kernels(ncu, tmp_path, op, shape) -> None:
    """Judged on FP32, the precision doing the work: the sm_90 SASS of the dot also holds an
    HFMA2.MMA that zeroes its accumulator, which ncu's FP16 counters may count (2 FLOP per thread:
    all precisions summed would read 1.0039 at 256^3; tests/test_kernels_nvcc.py)."""
    rows = _run(
        tmp_path,
        "--op",
        op,
        "--shape",
        shape,
        "--engine",
        "cuda-kernels",
        "--profiler",
        ncu,
        "--clock-control",
        "none",
        "--profiled",
        "1",
        "--repeat",
        "3",
    )
    assert rows["FLOPs counted (FP32)"]["value"] / rows["FLOPs"]["value"] == pytest.approx(1.0, abs=1e-3)
    assert rows["SM clock (profiled)"]["value"] > 0
    assert "efficiency: counted FLOP/s vs peak at run clock" in rows


def test_the_child_times_a_cuda_graph_of_the_batch(gpu, tmp_path) -> None:
    result = tmp_path / "child.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuprof.launch.child",
            "--op",
            "add",
            "--shape",
            "1024x1024",
            "--dtype",
            "float32",
            "--engine",
            "cuda-kernels",
            "--repeat",
            "3",
            "--warmup",
            "1",
            "--profiled",
            "0",
            "--batch",
            "10",
            "--range",
            "gpuprof:test",
            "--result",
            str(result),
        ],
        check=True,
        timeout=300,
    )
    record = json.loads(result.read_text())
    assert record["batch"] == 10 and "a CUDA graph of 10 launch(es)" in record["timer"]
    assert len(record["times"]) == 3 and all(t > 0 for t in record["times"])


_GPU_BACKEND_PROBE = {
    "pytensor-jax": "import pytensor; import jax; jax.devices('gpu')",
    "pytensor-torch": "import pytensor; import torch; assert torch.cuda.is_available()",
}


def backend_missing(engine: str, env: dict[str, str] | None = None) -> str | None:
    """Why the PyTensor GPU backend ``engine`` cannot run here (PyTensor absent, or its framework has no
    CUDA backend), probed in a subprocess: initialising JAX's GPU client here would take most of the
    GPU's memory away from the workload children. None when it can."""
    probe = subprocess.run(
        [sys.executable, "-c", _GPU_BACKEND_PROBE[engine]],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    if probe.returncode == 0:
        return None
    return f"{engine} cannot run on the GPU here: {(probe.stderr.strip().splitlines() or ['?'])[-1]}"


@pytest.fixture(params=list(_GPU_BACKEND_PROBE))
def framework(gpu, request) -> str:
    """A PyTensor GPU backend that can run here (a GPU node may have JAX and PyTorch but no PyTensor)."""
    reason = backend_missing(request.param)
    if reason:
        pytest.skip(reason)
    return request.param


@pytest.mark.parametrize("op", ["add", "dot", "sigmoid"])
def test_pytensor_backends_compile_apart_and_time_on_the_gpu(framework, tmp_path, op) -> None:
    shape = "1024x1024x1024" if op == "dot" else "2048x2048"
    rows = _run(tmp_path, "--op", op, "--shape", shape, "--engine", framework, "--profiler", "none", "--repeat", "5")
    assert rows["compile + first call"]["value"] > 0 and rows["compile + first call"]["origin"] == "timed"
    assert 0 < rows["time (median)"]["value"] < rows["compile + first call"]["value"]
    assert "time per call = batch / " in rows["time (median)"]["basis"]


def test_pytensor_backend_kernels_are_caught_in_the_nvtx_range(framework, ncu, tmp_path) -> None:
    rows = _run(
        tmp_path,
        "--op",
        "add",
        "--shape",
        "2048x2048",
        "--engine",
        framework,
        "--profiler",
        ncu,
        "--clock-control",
        "none",
        "--profiled",
        "1",
        "--repeat",
        "3",
    )
    assert rows["kernels per call"]["value"] >= 1, rows["kernels per call"]["basis"]
    assert rows["FLOPs counted / analytic"]["value"] == pytest.approx(1.0, abs=1e-3)


def test_theano_on_the_gpu_is_pytensor_on_a_gpu_backend(framework, tmp_path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuprof",
            "run",
            "--device",
            "cuda",
            "--op",
            "add",
            "--shape",
            "512",
            "--engine",
            "theano",
            "--profiler",
            "none",
            "--store",
            str(tmp_path / "s.sqlite"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "engine theano: legacy Theano ran on GPUs through pygpu/libgpuarray" in done.stdout
