"""``gpuprof profile --trace``: a tiny PyTorch, JAX and TensorFlow training script, unedited, profiled on the CPU
end to end (two steps), stored, and its per-op table derived from the trace the framework wrote."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuprof.cli import main
from gpuprof.derive import traces
from gpuprof.store import open_store

TORCH_SCRIPT = """
    import sys
    import torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 32), torch.randn(16, 4)
    for _ in range(int(sys.argv[1])):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    print("trained")
"""

JAX_SCRIPT = """
    import jax, jax.numpy as jnp
    w, x = jnp.ones((64, 4)), jnp.ones((16, 64))
    grad = jax.jit(jax.grad(lambda w: ((x @ w) ** 2).mean()))
    for step in range(2):
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            w = (w - 0.1 * grad(w)).block_until_ready()
"""

TF_SCRIPT = """
    import numpy as np
    import tensorflow as tf
    model = tf.keras.Sequential(
        [tf.keras.Input((32,)), tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(4)]
    )
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((16, 32), "float32"), np.ones((16, 4), "float32")
    for step in range(2):
        with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
            model.train_on_batch(x, y)
    print("trained")
"""


def _profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, framework: str, script: str, *args: str):
    monkeypatch.chdir(tmp_path)  # reports/<run-id>/ goes under tmp_path
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(script))
    store = tmp_path / "s.sqlite"
    result = CliRunner().invoke(
        main,
        [
            "profile",
            "--trace",
            framework,
            "--store",
            str(store),
            "--format",
            "csv",
            "--",
            sys.executable,
            str(path),
            *args,
        ],
    )
    return result, store


@pytest.mark.slow  # the child process imports torch and its profiler: 7 s of CPU on two cores, 25 s loaded
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch (the [torch] extra)")
def test_profile_trace_torch_two_steps_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result, store = _profile(tmp_path, monkeypatch, "torch", TORCH_SCRIPT, "3")  # 1 warm-up + 2 recorded
    assert result.exit_code == 0, result.output
    with open_store(store) as reopened:
        (run,) = reopened.runs()
    assert run.format == "chrome-trace" and run.environment["framework"] == "torch"
    assert run.environment["dialect"] == "kineto"
    assert len(run.environment["steps"]) == 2
    trace_file = Path(run.environment["trace_file"])
    assert trace_file.is_file() and tmp_path in trace_file.parents
    assert "trained" in (trace_file.parent / "stdout.txt").read_text()
    table = traces.op_table(run).set_index("op")
    # two recorded steps of two Linear layers: 2 x (2*16*32*64 + 2*16*64*4) FLOPs forward
    assert table.loc["aten::linear", "calls"] == 4
    assert table.loc["aten::linear", "FLOP (analytic)"] == 2 * (2 * 16 * 32 * 64 + 2 * 16 * 64 * 4)
    assert "aten::linear" in result.output


@pytest.mark.slow  # the child process imports torch and its profiler: 7 s of CPU on two cores, 25 s loaded
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch (the [torch] extra)")
def test_profile_trace_torch_without_optimizer_steps_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result, _ = _profile(tmp_path, monkeypatch, "torch", TORCH_SCRIPT, "0")
    assert result.exit_code != 0
    assert "wrote no trace" in result.output and "step()" in result.output
    assert len(result.output.strip().splitlines()) == 2  # the 'running' note and the one error line


@pytest.mark.slow  # the child process imports JAX and its profiler: 5-11 s
@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax (the [jax] extra)")
def test_profile_trace_jax_two_steps_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result, store = _profile(tmp_path, monkeypatch, "jax", JAX_SCRIPT)
    assert result.exit_code == 0, result.output
    with open_store(store) as reopened:
        (run,) = reopened.runs()
    assert run.environment["dialect"] == "tf-trace" and run.environment["steps"] == ["0", "1"]
    frame = traces.events(run)
    assert set(frame.loc[frame["kind"] == "op", "step"]) >= {"0", "1"}


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is not None, reason="TensorFlow is installed here")
def test_profile_trace_tf_without_tensorflow_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result, _ = _profile(tmp_path, monkeypatch, "tf", "print('hi')\n")
    assert result.exit_code != 0
    assert "cannot import tensorflow" in result.output
    assert not (tmp_path / "reports").exists()  # nothing was run


@pytest.mark.slow  # importing TensorFlow and building the Keras graph take 10-40 s on two loaded cores
@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs tensorflow (the [tf] extra)")
def test_profile_trace_tf_keras_two_steps_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result, store = _profile(tmp_path, monkeypatch, "tf", TF_SCRIPT)
    assert result.exit_code == 0, result.output
    with open_store(store) as reopened:
        (run,) = reopened.runs()
    assert run.format == "xplane" and run.environment["framework"] == "tf"
    assert run.environment["dialect"] == "tf-trace" and run.environment["steps"] == ["0", "1"]
    trace_file = Path(run.environment["trace_file"])
    assert trace_file.name.endswith(".xplane.pb") and tmp_path in trace_file.parents
    run_dir = next(folder for folder in trace_file.parents if (folder / "stdout.txt").is_file())
    assert "trained" in (run_dir / "stdout.txt").read_text()
    table = traces.op_table(run).set_index("op")
    assert table.loc["_FusedMatMul", "calls"] == 4  # two Dense layers (MatMul + BiasAdd fused), two steps
    assert table.loc["_FusedMatMul", "total (s)"] > 0
