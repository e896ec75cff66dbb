"""Real public TensorFlow 2 and JAX GPU profiles (not captured by this project): a Keras training
step's ``trace.json.gz`` and ``.xplane.pb`` from one TensorBoard profile folder, and a JAX
MI300X ``.xplane.pb`` from HolisticTraceAnalysis's AMD counterpart TraceLens, checked against
values read from the files by hand and against TraceLens's own published figures."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from gpuprof import readers
from gpuprof.derive import traces

TRACES = Path(__file__).parent / "fixtures" / "traces"
TF2_JSON = TRACES / "tf2_keras_gpu_2021_one_step.trace.json.gz"
TF2_XPLANE = TRACES / "tf2_keras_gpu_2021_one_step.xplane.pb"
JAX_MI300X = TRACES / "jax_mi300x_conv3d_tracelens.xplane.pb"
needs_xprof = pytest.mark.skipif(importlib.util.find_spec("xprof") is None, reason="needs xprof (the [xprof] extra)")


def _gpu(run):
    frame = traces.events(run)
    return frame[frame["kind"].isin(traces.GPU_KINDS)]


def _check_tf2_step(run) -> None:
    """Read by hand from the trace.json.gz: Stream #13(Compute) holds 145 kernels, 719.853 µs;
    Stream #14(MemcpyH2D) 7 copies, 20.710 µs, 98,456 bytes; Stream #15(MemcpyD2H) 4, 5.633 µs,
    17 bytes; the device's Steps line one step (group 0) of 16,766.692 µs."""
    assert run.environment["dialect"] == "tf-trace"
    gpu = _gpu(run)
    per_stream = gpu.groupby("stream")["duration"].agg(["count", "sum"])
    assert per_stream.loc["13", "count"] == 145 and per_stream.loc["13", "sum"] == pytest.approx(719.853e-6, abs=1e-9)
    assert per_stream.loc["14", "count"] == 7 and per_stream.loc["14", "sum"] == pytest.approx(20.710e-6, abs=1e-9)
    assert per_stream.loc["15", "count"] == 4 and per_stream.loc["15", "sum"] == pytest.approx(5.633e-6, abs=1e-9)
    copies = run.launch_table[[a.get("kind") == "memcpy" for a in run.launch_table["attributes"]]]
    assert sorted({a["direction"] for a in copies["attributes"]}) == ["DtoH", "HtoD"]
    sizes = run.metric_table[run.metric_table["metric"] == "bytes"]
    assert sizes["value"].sum() == 98_456 + 17
    steps = traces.step_table(run)
    assert steps["step"].tolist() == ["0"]
    assert steps["host time (s)"].iloc[0] == pytest.approx(16_766.692e-6, abs=1e-9)
    row = traces.breakdown(run).iloc[0]  # one GPU, one step: nothing left out
    assert row["compute (us)"] == pytest.approx(719.853, abs=1e-3)
    assert row["non-compute (us)"] == pytest.approx(20.710 + 5.633, abs=1e-3)
    kernels = {
        a.get("tf_op", "").rsplit(":", 1)[-1] for a in run.launch_table["attributes"] if a.get("kind") == "kernel"
    }
    assert {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "ResourceApplyAdam"} <= kernels


def test_tf2_keras_trace_json_gz_from_a_public_tensorboard_log() -> None:
    _check_tf2_step(readers.read(TF2_JSON))


@needs_xprof
def test_tf2_keras_xplane_of_the_same_profile_gives_the_same_step(tmp_path: Path) -> None:
    local = tmp_path / TF2_XPLANE.name
    local.write_bytes(TF2_XPLANE.read_bytes())
    run = readers.read(local)
    assert sorted(p.name for p in tmp_path.iterdir()) == [TF2_XPLANE.name]  # nothing written beside it
    _check_tf2_step(run)


@needs_xprof
def test_jax_mi300x_xplane_matches_tracelens_published_figures() -> None:
    """TraceLens's test_jax_conv_analysis.py and its jax_conv_minimal_perf_report_csvs on this
    file: 25 kernels and 53 copies; GPU 7 (pid 8) busy 3.586493 ms of 15.761301 ms, idle
    12.174808 ms (22.755 %); GPU 0 (pid 1) copies only, 0.889028 ms of 27.867728 ms; per XLA op
    input_transpose_fusion 5 launches 1.95096 ms, loop_transpose_fusion 5, 0.02644 ms."""
    run = readers.read(JAX_MI300X)
    gpu = _gpu(run)
    assert (gpu["kind"] == "kernel").sum() == 25 and (gpu["kind"] == "memcpy").sum() == 53
    rows = traces.breakdown(run).set_index("device")
    assert rows.loc["GPU:7", "kernel time (us)"] == pytest.approx(15_761.301, abs=1e-3)
    assert rows.loc["GPU:7", "compute (us)"] == pytest.approx(3_586.493, abs=1e-3)
    assert rows.loc["GPU:7", "idle (us)"] == pytest.approx(12_174.808, abs=1e-3)
    assert round(rows.loc["GPU:7", "compute (%)"], 3) == 22.755
    assert rows.loc["GPU:0", "kernel time (us)"] == pytest.approx(27_867.728, abs=1e-3)
    assert rows.loc["GPU:0", "compute (us)"] == 0  # copies are memory time (TraceLens: exposed memcpy)
    assert rows.loc["GPU:0", "non-compute (us)"] == pytest.approx(889.028, abs=1e-3)
    kernels = gpu[gpu["kind"] == "kernel"].groupby("name")["duration"].agg(["count", "sum"])
    assert kernels.loc["input_transpose_fusion", "count"] == 5
    assert kernels.loc["input_transpose_fusion", "sum"] == pytest.approx(1.95096e-3, abs=1e-9)
    assert kernels.loc["loop_transpose_fusion", "sum"] == pytest.approx(0.02644e-3, abs=1e-9)
    registers = run.metric_table[run.metric_table["metric"] == "registers per thread"]
    assert registers.empty  # ROCm's unset register count (2191500840) is not kept
