"""Job sweeps: a config of training jobs ([[job]] and grids of [[jobs]]) read and checked, the study
configs shipped in configs/ loading, and ``gpuprof sweep`` profiling a tiny job (one: a torch process
takes long to start on a loaded machine), storing it with its label, ``--resume`` skipping it, and
``gpuprof compare --scaling`` reading it back."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from gpuprof.cli import main
from gpuprof.errors import InputError
from gpuprof.job_sweep import is_job_config, load_jobs
from gpuprof.store import open_store

ROOT = Path(__file__).resolve().parents[1]


def test_the_study_configs_load() -> None:
    resnet = load_jobs(ROOT / "configs" / "resnet-study.toml")
    assert [(j.label, j.devices) for j in resnet.jobs] == [("cpu", 1), ("1gpu", 1), ("1gpu-ddp", 1), ("2gpu", 2)]
    assert resnet.jobs[3].command[1:] == (
        "-m",
        "gpuprof.workloads.training",
        "--model",
        "resnet34",
        "--setup",
        "ddp:2",
        "--epochs",
        "1",
        "--batch-size",
        "16",
        "--train-batches",
        "20",
    )
    keras = load_jobs(ROOT / "configs" / "keras-study.toml")
    assert len(keras.jobs) == 7 * 3 + 3  # every pyramid at every batch size, the CNN at three
    assert "mlp-6400x3200x1664-b256" in [j.label for j in keras.jobs]
    assert is_job_config(ROOT / "configs" / "resnet-cpu.toml") and not is_job_config(ROOT / "configs" / "quick.toml")


def test_a_bad_job_is_named(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text('[[job]]\nlabel = "x"\nsetup = "tpu"\n')
    with pytest.raises(InputError, match="job 1: unknown set-up 'tpu'"):
        load_jobs(config)
    config.write_text('[[job]]\nlabel = "x"\nbatch = 3\n')
    with pytest.raises(InputError, match="job 1: unknown key"):
        load_jobs(config)


@pytest.mark.slow  # profiles every job of a sweep: 6-13 s
def test_sweep_profiles_each_job_and_compare_reads_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch", reason="the torch extra is not installed")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    config = tmp_path / "tiny.toml"
    config.write_text(
        "name = 'tiny'\nenergy = false\n[[jobs]]\nmodel = 'mlp'\nhidden = [[8]]\nbatch_size = [4]\n"
        "train_batches = 2\ninference_sizes = [1]\nrepeats = 1\n"
    )
    store = str(tmp_path / "s.sqlite")
    result = CliRunner().invoke(main, ["sweep", str(config), "--store", store])
    assert result.exit_code == 0, result.output
    assert "job sweep 'tiny': 1 stored, 0 already stored, 0 failed" in result.stderr
    with open_store(store) as opened:
        runs = opened.runs()
    assert [r.environment["label"] for r in runs] == ["mlp-8-b4"]
    assert all(r.workload["sweep"] == {"config": "tiny", "job": r.environment["label"]} for r in runs)
    again = CliRunner().invoke(main, ["sweep", str(config), "--store", store, "--resume"])
    assert "0 stored, 1 already stored" in again.stderr
    table = CliRunner().invoke(
        main, ["compare", "--scaling", "--baseline", "mlp-8-b4", "--store", store, "--format", "csv"]
    )
    assert table.exit_code == 0, table.output
    frame = pd.read_csv(io.StringIO(table.stdout))
    assert set(frame["phase"]) >= {"program", "train", "test", "inference"}
    assert frame.query("label == 'mlp-8-b4'")["S"].eq(1.0).all()
