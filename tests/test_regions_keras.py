"""The Keras 3 callback on the torch backend, in a fresh interpreter (KERAS_BACKEND is read at import):
fit with validation records train > epoch > batch and the validation's test > test batch."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpuprof.readers import regions as reader

if importlib.util.find_spec("keras") is None:  # not imported here: its backend is chosen at import, in the child
    pytest.skip("the keras extra is not installed", allow_module_level=True)
if importlib.util.find_spec("torch") is None:  # found, not imported: importing torch here costs each worker seconds
    pytest.skip("Keras runs on its torch backend here, and the torch extra is not installed", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]

FIT = """
import os
os.environ["KERAS_BACKEND"] = "torch"
import numpy as np, keras
from gpuprof.regions_keras import callback
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
x, y = np.ones((12, 4), "float32"), np.ones((12, 1), "float32")
model.fit(x, y, epochs=2, batch_size=4, validation_data=(x[:4], y[:4]), verbose=0, callbacks=[callback()])
model.predict(x[:8], batch_size=4, verbose=0, callbacks=[callback()])
"""


@pytest.mark.slow  # Keras 3 on the torch backend trains in a child process: 10-30 s
def test_fit_evaluate_and_predict_regions(tmp_path: Path) -> None:
    path = tmp_path / "regions.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GPUPROF_REGIONS": str(path), "GPUPROF_RUN_ID": "k"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(FIT)], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    found = reader.parse(path, "k").regions
    by_id = {r.ident: r for r in found}
    parent = {r.ident: by_id[r.parent].name if r.parent else None for r in found}
    assert [(r.name, r.index, parent[r.ident]) for r in found] == [
        ("train", None, None),
        ("epoch", 0, "train"),
        ("batch", 0, "epoch"),
        ("batch", 1, "epoch"),
        ("batch", 2, "epoch"),
        ("test", None, "epoch"),
        ("test batch", 0, "test"),
        ("epoch", 1, "train"),
        ("batch", 0, "epoch"),
        ("batch", 1, "epoch"),
        ("batch", 2, "epoch"),
        ("test", None, "epoch"),
        ("test batch", 0, "test"),
        ("predict", None, None),
        ("predict batch", 0, "predict"),
        ("predict batch", 1, "predict"),
    ]
    assert all(r.unclosed is None and r.end_ns >= r.begin_ns for r in found)
    epochs = [r for r in found if r.name == "epoch"]
    assert all(by_id[r.parent].begin_ns <= r.begin_ns and r.end_ns <= by_id[r.parent].end_ns for r in epochs)
