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
    efficiency = [c for c in frame.columns if c.startswith("eff_")]
    assert "eff_theoretical_%" in efficiency and len(efficiency) == len(set(efficiency))
    metrics = gpuprof.metrics(store)
    timed = metrics[metrics["canonical"] == "kernel_duration"]
    assert len(timed) == 3 and set(timed["origin"]) == {"timed"} and set(timed["unit"]) == {"second"}


def test_unsaved_run_creates_no_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPUPROF_STORE", raising=False)
    gpuprof.run("add", shape="8x8", device="cpu", repeat=1, counters=False, save=False)
    assert not (tmp_path / "reports").exists()


def test_read_kernels_stalls_and_compare_on_a_real_nvprof_file():
    from pathlib import Path

    k40c = Path(__file__).parent / "fixtures" / "profiler-outputs" / "nvprof_csv_metrics_k40c_flop_stall.csv"
    profile = gpuprof.read(k40c)
    assert profile.kind == "import" and profile.device["name"] == "Tesla K40c"
    kernels = gpuprof.kernels([profile])
    # nvprof's Avg flop_count_sp for the FORMA kernel, read in the file
    assert kernels.loc[0, "flop_count_sp/launch (FLOP)"] == 25264160800
    stalls = gpuprof.stall_reasons([profile])
    assert list(stalls["reason"][:3]) == ["stall_sync", "stall_exec_dependency", "stall_memory_dependency"]
    # a path, a Run or a list mixing them reads the same
    assert kernels.equals(gpuprof.kernels(k40c)) and kernels.equals(gpuprof.kernels(str(k40c)))
    assert gpuprof.kernels([profile, k40c]).shape[0] == 2 * kernels.shape[0]
    assert stalls.equals(gpuprof.stall_reasons(profile))
    paper = gpuprof.compare_runs([], reference=True)
    k40_dot_5mb = paper[(paper["device"] == "K40 (paper)") & (paper["op"] == "dot") & (paper["size_MB"] == 5)]
    assert k40_dot_5mb["MFLOP/s"].iloc[0] == pytest.approx(1527464.91)  # the study's Table 2


def test_reading_the_store_from_the_library_creates_nothing(tmp_path) -> None:
    from gpuprof.errors import StoreError

    missing = tmp_path / "nothing-here" / "s.sqlite"
    with pytest.raises(StoreError):
        gpuprof.runs(missing)
    assert not missing.parent.exists()


def test_the_package_says_its_version():
    import subprocess
    import sys
    from importlib.metadata import version

    import gpuprof

    assert gpuprof.__version__ == version("gpuprof-hpc")
    shown = subprocess.run(
        [sys.executable, "-m", "gpuprof", "--version"], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert shown.strip() == f"gpuprof, version {gpuprof.__version__}"


def test_one_repeat_is_singular():
    from gpuprof.measure import RunSettings, measure

    run = measure(RunSettings(op="add", size="1KB", device="cpu", repeat=1, warmup=1))
    from gpuprof.render.run_report import header

    [timing] = [line for line in header(run) if line.startswith("timing:")]
    assert timing.startswith("timing:   1 repeat after 1 warm-up call, ")
