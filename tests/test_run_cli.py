"""``gpuprof run`` end to end on this GPU-less machine: real CPU measurements, clear errors."""

import json
import platform
import sqlite3
import sys

import pytest
from click.testing import CliRunner
from extras import PYTENSOR

from gpuprof.cli import main
from gpuprof.store import open_store


def invoke(*args, store=None):
    extra = ["--store", str(store)] if store else []
    return CliRunner().invoke(main, ["run", *args, *extra])


@pytest.mark.parametrize(
    "args, code, fragment",
    [
        (["--op", "dot", "--size", "6XB"], 2, "unknown unit 'XB'"),
        (["--op", "dot", "--size", "-1"], 2, "is not a size"),
        (["--op", "dot", "--size", "0"], 2, "not a positive size"),
        (["--op", "dot", "--shape", "10x10", "--device", "cpu"], 2, "does not fit dot"),
        (["--op", "add", "--size", "5000GB", "--device", "cpu"], 2, "needs about"),
        (["--op", "add"], 2, "exactly one of --size and --shape"),
        (["--op", "add", "--size", "1MB", "--repeat", "0"], 2, "--repeat must be at least 1"),
        (["--op", "add", "--size", "1MB", "--engine", "cupy", "--device", "cpu"], 2, "runs on cuda, not cpu"),
    ],
)
def test_bad_input_one_line(tmp_path, args, code, fragment):
    result = invoke(*args, store=tmp_path / "s.sqlite")
    assert result.exit_code == code, result.output
    assert fragment in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_unknown_op_is_a_usage_error(tmp_path):
    result = invoke("--op", "conv", "--size", "1MB", store=tmp_path / "s.sqlite")
    assert result.exit_code == 2 and "'conv' is not one of" in result.output


def test_missing_engine_names_the_extra(monkeypatch):
    from gpuprof import workloads
    from gpuprof.errors import EngineError

    monkeypatch.setitem(sys.modules, "pytensor", None)
    monkeypatch.delitem(sys.modules, "gpuprof.workloads.pytensor_engine", raising=False)
    with pytest.raises(EngineError, match=r'pip install "gpuprof-hpc\[theano\]"'):
        workloads.load("pytensor", "cpu")


def test_cpu_dot_run_is_stored_and_reads_back(tmp_path):
    store = tmp_path / "s.sqlite"
    result = invoke(
        "--op",
        "dot",
        "--shape",
        "64x32x16",
        "--device",
        "cpu",
        "--repeat",
        "5",
        "--warmup",
        "1",
        "--no-counters",
        store=store,
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "A 64x32 · B 32x16 -> C 64x16" in out
    assert "This is a CPU measurement; no GPU was used." in out
    assert "65.54 KFLOP" in out  # 2·64·16·32 = 65,536 analytic FLOPs
    with open_store(store) as opened:
        (run,) = opened.runs()
    assert run.workload["shape"] == [64, 32, 16] and run.workload["size_bytes"] == (64 * 32 + 32 * 16 + 64 * 16) * 4
    assert len([l for l in run.launches if l.invocations == 1]) == 5
    assert all(l.metrics[0].origin == "timed" and l.metrics[0].value > 0 for l in run.launches[:5])
    assert run.environment["command"].startswith("gpuprof run --op dot")
    rows = sqlite3.connect(store).execute("SELECT metrics FROM runs").fetchone()[0]
    assert rows == len(run.metric_table) >= 5


def test_json_output_has_origins(tmp_path):
    result = invoke(
        "--op",
        "add",
        "--shape",
        "100x100",
        "--device",
        "cpu",
        "--repeat",
        "3",
        "--no-counters",
        "--format",
        "json",
        store=tmp_path / "s.sqlite",
    )
    assert result.exit_code == 0, result.output
    rows = {r["quantity"]: r for r in json.loads(result.stdout)["quantities"]}
    assert rows["FLOPs"]["value"] == 10000 and rows["FLOPs"]["origin"] == "analytic"
    assert rows["bytes moved"]["value"] == 3 * 10000 * 4
    assert rows["time (median)"]["origin"] == "timed"
    assert rows["arithmetic intensity"]["value"] == pytest.approx(1 / 12)


@pytest.mark.slow  # compiles each op through each engine: up to 6 s
@pytest.mark.parametrize("op", ["add", "mul", "dot", "scalar", "sigmoid", "tanh"])
@pytest.mark.parametrize("engine", ["numpy", pytest.param("pytensor", marks=PYTENSOR)])
def test_every_op_and_engine_checks_its_answer(tmp_path, op, engine):
    result = invoke(
        "--op",
        op,
        "--size",
        "48KB",
        "--engine",
        engine,
        "--device",
        "cpu",
        "--repeat",
        "2",
        "--warmup",
        "1",
        "--no-counters",
        "--format",
        "csv",
        store=tmp_path / "s.sqlite",
    )
    assert result.exit_code == 0, result.output
    with open_store(tmp_path / "s.sqlite") as opened:
        (run,) = opened.runs()
    assert run.workload["engine"] == engine
    assert run.workload["relative_error"] < 1e-4


@PYTENSOR
def test_theano_name_falls_back_to_pytensor_and_says_so(tmp_path):
    result = invoke(
        "--op",
        "add",
        "--size",
        "12KB",
        "--engine",
        "theano",
        "--device",
        "cpu",
        "--repeat",
        "2",
        "--no-counters",
        store=tmp_path / "s.sqlite",
    )
    assert result.exit_code == 0, result.output
    assert "legacy Theano is not importable" in result.output and "PyTensor" in result.output


def test_float16_and_float64(tmp_path):
    for dtype in ("float16", "float64"):
        result = invoke(
            "--op",
            "dot",
            "--shape",
            "32",
            "--dtype",
            dtype,
            "--device",
            "cpu",
            "--repeat",
            "2",
            "--no-counters",
            store=tmp_path / "s.sqlite",
        )
        assert result.exit_code == 0, result.output
        assert f"({dtype})" in result.output


@pytest.mark.skipif(
    any(__import__("pathlib").Path("/sys/class/powercap").glob("intel-rapl:*")),
    reason="this machine exposes RAPL, so energy is measured rather than explained",
)
def test_missing_power_source_is_explained(tmp_path):
    result = invoke("--op", "add", "--shape", "64x64", "--device", "cpu", "--repeat", "2", store=tmp_path / "s.sqlite")
    assert result.exit_code == 0, result.output
    assert "no CPU power source: /sys/class/powercap has no intel-rapl zones" in result.output
    assert "J/call" not in result.output


def test_a_gpu_engine_means_the_gpu_and_fails_plainly_without_one(tmp_path):
    result = invoke("--op", "dot", "--size", "6MB", "--engine", "cuda-kernels", store=tmp_path / "s.sqlite")
    assert result.exit_code == 5 and "no usable NVIDIA GPU" in result.output and "--engine numpy" in result.output
    assert "Traceback" not in result.output


def test_show_on_an_empty_store_says_what_to_do(tmp_path):
    with open_store(tmp_path / "empty.sqlite") as store:
        store._db  # noqa: B018 - created now, with no run (a store is otherwise created by its first write)
    result = CliRunner().invoke(main, ["show", "--store", str(tmp_path / "empty.sqlite")])
    assert result.exit_code == 0 and result.stdout == ""
    assert "no stored runs in" in result.stderr and "gpuprof run" in result.stderr


def test_gpu_profiler_options_reach_the_gpu_session(tmp_path, monkeypatch):
    """The CLI's ncu options are handed to the GPU session as given (the session itself is tested
    with stand-in profilers in test_gpu_launch_pipeline.py)."""
    from gpuprof.errors import DeviceError
    from gpuprof.launch import gpu_session

    seen = {}

    def fake_run_gpu(settings, shape):
        seen.update(settings.gpu, shape=shape)
        raise DeviceError("stop here", "nothing to measure in this test")

    monkeypatch.setattr(gpu_session, "run_gpu", fake_run_gpu)
    result = invoke(
        "--op",
        "dot",
        "--shape",
        "8",
        "--device",
        "cuda",
        "--profiler",
        "/opt/ncu/ncu",
        "--profiled",
        "2",
        "--clock-control",
        "none",
        "--cache-control",
        "none",
        "--replay-mode",
        "application",
        store=tmp_path / "s.sqlite",
    )
    assert result.exit_code == 5 and "stop here" in result.output
    assert seen == {
        "profiler": "/opt/ncu/ncu",
        "profiled": 2,
        "clock_control": "none",
        "cache_control": "none",
        "replay_mode": "application",
        "shape": (8, 8, 8),
    }


def test_json_names_the_run_and_every_quantity_once(tmp_path):
    from gpuprof.calibrate import FORMAT, KIND
    from gpuprof.devices.cpu import describe
    from gpuprof.model import Launch, Metric, Run

    store = tmp_path / "s.sqlite"
    with open_store(store) as opened:  # a calibration of this host, so the run has two sets of ceilings
        opened.add(
            Run(
                kind=KIND,
                format=FORMAT,
                source="test",
                environment={"host": platform.node()},
                device={"name": describe()["name"]},
                launches=[
                    Launch(
                        "numpy.matmul",
                        0,
                        attributes={"dtype": "float32", "shape": "8x8x8"},
                        metrics=[Metric("flop_rate", 50e9, "FLOP/second", origin="calibrated")],
                    ),
                    Launch(
                        "numpy.add",
                        1,
                        attributes={"array_bytes": "4096"},
                        metrics=[Metric("bandwidth", 10e9, "byte/second", origin="calibrated")],
                    ),
                ],
            )
        )
    result = invoke(
        "--op",
        "add",
        "--shape",
        "100x100",
        "--device",
        "cpu",
        "--repeat",
        "3",
        "--no-counters",
        "--format",
        "json",
        store=store,
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    with open_store(store) as opened:
        run = opened.get(report["run"])
    assert report["op"] == "add" and report["shape"] == [100, 100] and report["dtype"] == "float32"
    assert report["device"]["kind"] == "cpu" and report["engine"] == "numpy"
    assert report["notes"] == run.notes and any("hardware counters off" in n for n in report["notes"])
    names = [q["quantity"] for q in report["quantities"]]
    assert len(names) == len(set(names)), names
    assert {
        "peak FLOP/s float32, theoretical",
        "peak FLOP/s float32, calibrated",
        "peak bandwidth, calibrated",
        "efficiency: FLOP/s, theoretical peak",
        "efficiency: FLOP/s, calibrated peak",
        "efficiency: bandwidth, calibrated peak",
    } <= set(names)
    assert next(q for q in report["quantities"] if q["quantity"] == "peak bandwidth, calibrated")["value"] == 10e9


def test_float16_on_the_cpu_says_how_long_it_takes_before_starting(tmp_path, monkeypatch):
    import re

    import gpuprof.api
    from gpuprof.errors import InputError

    def stop(*args, **kwargs):
        raise InputError("stopped before measuring", "(test)")

    monkeypatch.setattr(gpuprof.api, "measure_and_store", stop)
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--op",
            "dot",
            "--size",
            "12MB",
            "--dtype",
            "float16",
            "--device",
            "cpu",
            "--store",
            str(tmp_path / "s.sqlite"),
        ],
    )
    first = result.output.splitlines()[0]
    found = re.fullmatch(
        r"warning: float16 on the CPU: NumPy computes it in software loops \(([\d,]+) MFLOP/s on a "
        r"small sample just now\), so these 14 calls take about ([\d,]+) s\. float32 runs in "
        r"hardware: --dtype float32",
        first,
    )
    assert found, result.output
    assert int(found.group(2).replace(",", "")) >= 10
    plain = CliRunner().invoke(
        main, ["run", "--op", "dot", "--size", "12MB", "--device", "cpu", "--store", str(tmp_path / "s.sqlite")]
    )
    assert "warning: float16" not in plain.output


def test_a_gpu_only_engine_under_device_auto_does_not_claim_device_cuda_was_given(monkeypatch):
    from gpuprof.launch import gpu_session
    from gpuprof.measure import RunSettings, measure
    from gpuprof.model import Run

    monkeypatch.setattr(
        gpu_session,
        "run_gpu",
        lambda settings, shape: Run(kind="run", format="cuda-cupy", source="t", device={"name": "GPU"}),
    )
    run = measure(RunSettings(op="add", size="1MB", engine="cupy"))
    assert run.device["chosen_because"] == "engine cupy runs only on a GPU (--device auto)"
