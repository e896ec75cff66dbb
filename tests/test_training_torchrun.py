"""The one command a user runs: ``gpuprof profile --label ddp2 -- torchrun --nproc_per_node=2 train.py``
with a real ``torchrun`` (gloo on the CPU, 127.0.0.1, 3 steps): the regions of both ranks land in the
one regions file, on one clock, each instance kept with its process and rank."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import socket
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuprof.cli import main
from gpuprof.derive.regions import region_frame
from gpuprof.readers import regions as region_reader
from gpuprof.store import open_store

if importlib.util.find_spec("torch") is None:  # found, not imported: the ranks under test import it
    pytest.skip("the torch extra is not installed", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
TORCHRUN = Path(sys.executable).with_name("torchrun")

# A user's script: nothing of gpuprof but its regions; DDP over gloo, 3 optimizer steps.
SCRIPT = """
import sys

import torch
import torch.distributed as dist
import gpuprof

dist.init_process_group("gloo")
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
with gpuprof.region("train"):
    for step in range(3):
        with gpuprof.region("batch", index=step):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
total = sum(p.sum().item() for p in model.parameters())
# one write per line: the two ranks share the pipe, unbuffered, and print() writes the line break apart
sys.stdout.write(f"rank {dist.get_rank()}: weight sum {total:.6f}\\n")
sys.stdout.flush()
dist.destroy_process_group()
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow  # torchrun and two ranks each import torch: 20-30 s on 2 loaded cores
@pytest.mark.skipif(not TORCHRUN.exists() and shutil.which("torchrun") is None, reason="torchrun is not installed")
def test_torchrun_two_ranks_under_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    (tmp_path / "train.py").write_text(textwrap.dedent(SCRIPT))
    torchrun = str(TORCHRUN) if TORCHRUN.exists() else "torchrun"
    command = [torchrun, "--nproc_per_node=2", "--master_addr=127.0.0.1", f"--master_port={_free_port()}", "train.py"]
    result = CliRunner().invoke(
        main,
        ["profile", "--device", "cpu", "--label", "ddp2", "--store", str(tmp_path / "s.sqlite"), "--", *command],
    )
    assert result.exit_code == 0, result.output
    with open_store(tmp_path / "s.sqlite") as store:
        [run] = store.runs()
    assert run.environment["label"] == "ddp2"
    output = (tmp_path / "reports" / run.run_id / "stdout.txt").read_text()
    sums = dict(re.findall(r"rank (\d): weight sum (\S+)", output))
    assert sorted(sums) == ["0", "1"] and sums["0"] == sums["1"]  # DDP averaged the gradients
    frame = region_frame(run)
    assert sorted(set(frame["rank"])) == ["0", "1"] and frame["process"].nunique() == 2
    # Both ranks are children of torchrun's agent, not of gpuprof: their process lines name one parent.
    assert sorted(run.environment["regions"]["processes"].values()) == [0, 1]
    segments = region_reader.segments(Path(run.environment["regions"]["file"]))  # one per process
    lines = [json.loads(line) for segment in segments for line in segment.read_text().splitlines()]
    parents = {line["ppid"] for line in lines if line.get("e") == "process"}
    assert len(parents) == 1
    starts = {}
    for rank in ("0", "1"):
        mine = frame[frame["rank"] == rank]
        top = mine[mine["parent"] == ""]
        assert top["name"].tolist() == ["train"]
        batches = mine[mine["name"] == "batch"]
        assert batches["index"].tolist() == ["0", "1", "2"]
        assert (batches["parent"] == top["launch"].astype(str).iloc[0]).all()
        steps = mine[mine["name"] == "step"]  # the default torch hook: one step per optimizer.step, per rank
        assert steps["index"].tolist() == ["0", "1", "2"]
        assert (mine["unclosed"] == "").all()
        starts[rank] = float(top["start (s)"].iloc[0])
        assert float(batches["wall time (s)"].sum()) <= float(top["wall time (s)"].iloc[0])
    # One clock for both processes: the ranks enter their training loop together (gloo's init is a
    # barrier), so their "train" regions begin within a second of each other.
    assert abs(starts["0"] - starts["1"]) < 1.0
    # Every region lies inside the command's window as the parent measured it.
    assert float((frame["start (s)"] + frame["wall time (s)"]).max()) <= run.environment["wall_time"]["value"]
