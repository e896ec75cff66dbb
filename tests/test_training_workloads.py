"""The studies' networks in plain PyTorch, with their published parameter counts, and the training job
on its set-ups: DistributedDataParallel over gloo with 2 processes on 127.0.0.1 under ``gpuprof
profile`` (tiny shapes, 2 steps), each rank's regions and the torch hooks' steps kept apart by rank."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuprof.cli import main
from gpuprof.derive.regions import region_frame
from gpuprof.store import open_store
from gpuprof.workloads.training import parse_setup

torch = pytest.importorskip("torch", reason="the torch extra is not installed")

from gpuprof.workloads.models import build, cnn, mlp, parameters, resnet34  # noqa: E402  (after the importorskip: the models need torch)

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("make", "count"),
    [
        (lambda: resnet34(3, 1000), 21_797_672),  # torchvision's resnet34()
        (cnn, 4_352_641),  # the Keras study's CNN on 50x50x1
        (lambda: mlp([6400, 3200, 1664]), 26_137_729),
        (lambda: mlp([50]), 2_601),
    ],
)
def test_parameter_counts_are_the_published_ones(make, count) -> None:
    assert parameters(make()) == count


def test_the_studies_inputs_give_their_outputs() -> None:
    model, spec = build("resnet34")
    assert spec.input_shape == (1, 148, 197) and spec.outputs == 9
    model.eval()
    with torch.no_grad():
        assert tuple(model(torch.zeros(1, *spec.input_shape)).shape) == (1, 9)
        assert tuple(cnn()(torch.zeros(2, 1, 50, 50)).shape) == (2, 1)


def test_setups_are_checked() -> None:
    assert [parse_setup(s) for s in ("cpu", "cuda", "cuda-ddp", "ddp:2")] == ["cpu", "cuda", "cuda-ddp", "ddp:2"]
    with pytest.raises(ValueError, match="choose cpu, cuda, cuda-ddp or ddp:N"):
        parse_setup("ddp:two")


@pytest.mark.slow  # two DDP ranks each import torch: 7-15 s
def test_ddp_over_gloo_with_two_processes_under_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    job = [
        sys.executable,
        "-m",
        "gpuprof.workloads.training",
        "--model",
        "mlp",
        "--hidden",
        "16,8",
        "--setup",
        "ddp:2",
        "--batch-size",
        "8",
        "--train-batches",
        "2",
        "--validation-batches",
        "1",
        "--test-batches",
        "1",
        "--inference-sizes",
        "1,4",
        "--repeats",
        "2",
    ]
    result = CliRunner().invoke(
        main,
        [
            "profile",
            "--device",
            "cpu",
            "--label",
            "ddp2",
            "--devices",
            "2",
            "--store",
            str(tmp_path / "s.sqlite"),
            "--",
            *job,
        ],
    )
    assert result.exit_code == 0, result.output
    with open_store(tmp_path / "s.sqlite") as store:
        [run] = store.runs()
    output = (tmp_path / "reports" / run.run_id / "stdout.txt").read_text()
    sums = re.findall(r"rank (\d): parameter sum after training (\S+)", output)
    assert sorted(rank for rank, _ in sums) == ["0", "1"]
    assert sums[0][1] == sums[1][1]  # gradients were averaged: both ranks hold the same weights
    assert "batch size  latency per forward" in output
    frame = region_frame(run)
    assert sorted(set(frame["rank"])) == ["0", "1"] and frame["process"].nunique() == 2
    for rank in ("0", "1"):
        mine = frame[frame["rank"] == rank]
        assert mine[mine["parent"] == ""]["name"].tolist() == ["train", "test", "inference"]
        assert mine[mine["name"] == "step"]["index"].tolist() == ["0", "1"]  # the torch hooks, per rank
        assert mine[mine["name"] == "batch size"]["index"].tolist() == ["1", "4"]
        assert (mine["unclosed"] == "").all()
    assert run.environment["label"] == "ddp2" and run.environment["devices"] == 2
