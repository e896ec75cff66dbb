"""``import gpuprof``: the same results as the CLI, as Runs and pandas DataFrames."""

import pytest

import gpuprof


def test_run_summary_results_and_metrics(tmp_path):
    store = tmp_path / "lib.sqlite"
    run = gpuprof.run("scalar", shape="40x25", device="cpu", repeat=3, warmup=1, counters=False, store=store)
    assert run.workload["shape"] == [40, 25] and run.device["kind"] == "cpu"
    frame = gpuprof.results(store)
    assert list(frame["op"]) == ["scalar"] and frame.loc[0, "shape"] == "40x25"
    assert frame.loc[0, "size_MB"] == pytest.approx(2 * 1000 * 4 / 1e6)
    # MFLOP/s = 1000 analytic FLOPs / median time
    assert frame.loc[0, "MFLOP/s"] == pytest.approx(1000 / frame.loc[0, "time_s"] / 1e6)
    metrics = gpuprof.metrics(store)
    timed = metrics[metrics["canonical"] == "kernel_duration"]
    assert len(timed) == 3 and set(timed["origin"]) == {"timed"} and set(timed["unit"]) == {"second"}


def test_unsaved_run_creates_no_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPUPROF_STORE", raising=False)
    gpuprof.run("add", shape="8x8", device="cpu", repeat=1, counters=False, save=False)
    assert not (tmp_path / "reports").exists()
