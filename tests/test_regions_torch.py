"""PyTorch's global hooks as regions, with no change to the script: ``gpuprof profile --torch-hooks``
puts gpuprof/launch/inject first on the program's PYTHONPATH, whose sitecustomize installs the hooks
when the program imports torch (and then runs the sitecustomize it shadows)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuprof.cli import main
from gpuprof.derive.regions import region_frame
from gpuprof.store import open_store

if importlib.util.find_spec("torch") is None:  # found, not imported: the programs under test import it
    pytest.skip("the torch extra is not installed", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
INJECT = ROOT / "gpuprof" / "launch" / "inject"

# An unchanged training script: 2 epochs of 3 optimizer steps, then a validation forward without gradients.
SCRIPT = """
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for batch in range(3):
        loss = model(torch.randn(5, 4)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        model(torch.randn(5, 4))
"""


@pytest.mark.slow  # a child process imports torch and trains: 5-12 s
def test_steps_and_layers_of_an_unchanged_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    (tmp_path / "train.py").write_text(textwrap.dedent(SCRIPT))
    result = CliRunner().invoke(
        main,
        [
            "profile",
            "--device",
            "cpu",
            "--torch-hooks",
            "steps,layers",
            "--store",
            str(tmp_path / "s.sqlite"),
            "--",
            sys.executable,
            "train.py",
        ],
    )
    assert result.exit_code == 0, result.output
    with open_store(tmp_path / "s.sqlite") as store:
        [run] = store.runs()
    frame = region_frame(run)
    steps = frame[frame["name"] == "step"]
    assert steps["index"].tolist() == [str(i) for i in range(6)]  # one per optimizer.step(), numbered
    assert (frame["name"] == "Sequential").sum() == 8  # 6 training forwards + 2 validation forwards
    by_launch = frame.set_index("launch")
    for _, step in steps.iterrows():
        children = frame[frame["parent"] == str(step["launch"])]
        assert children["name"].tolist() == ["Sequential"]  # the layers nest inside their step
    validation = frame[(frame["name"] == "Sequential") & (frame["parent"] == "")]
    assert len(validation) == 2  # no_grad forwards open no step
    linear = frame[frame["name"] == "Linear"].iloc[0]
    assert by_launch.loc[int(linear["parent"]), "name"] == "Sequential"
    assert all(frame["unclosed"] == "")
    attributes = run.launch_table["attributes"][int(linear["launch"])]
    assert '"module": "torch.nn.modules.linear.Linear"' in attributes["attributes"]


def test_the_shadowed_sitecustomize_still_runs_and_no_torch_means_no_hooks(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import builtins\nbuiltins.CHAINED = True\n")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(INJECT), str(other), str(ROOT)]),
        "GPUPROF_TORCH_HOOKS": "steps",
    }
    done = subprocess.run(
        [sys.executable, "-c", "import sys; print(CHAINED, 'torch' in sys.modules)"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"] and done.stderr == ""  # torch is not imported for the program


def test_an_unknown_hook_kind_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "profile",
            "--device",
            "cpu",
            "--torch-hooks",
            "steps,blocks",
            "--store",
            str(tmp_path / "s.sqlite"),
            "--",
            sys.executable,
            "-c",
            "pass",
        ],
    )
    assert result.exit_code != 0 and "--torch-hooks blocks is not a hook kind" in result.output
