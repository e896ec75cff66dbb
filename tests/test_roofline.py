"""Roofline points from runs, the chart files, and the `roofline`, `peaks` and `devices` commands."""

from __future__ import annotations

import io
import json
import statistics
from importlib import resources
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from gpuprof import ops
from gpuprof.cli import main
from gpuprof.derive.roofline import POINT_COLUMNS, device_ceilings, points
from gpuprof.devices import gpu_table
from gpuprof.model import TIMED, Launch, Metric, Run
from gpuprof.render.roofline_plot import plot
from gpuprof.store import open_store

K40 = "Tesla K40c"


def measured_run(op: str, size: int, times: list[float], device: str = K40) -> Run:
    shape = ops.shape_for_size(op, size, "float32")
    launches = [Launch(f"{op}_kernel", i, metrics=[Metric("kernel_duration", t, "second", "kernel_duration", TIMED)])
                for i, t in enumerate(times)]
    return Run(kind="run", format="test", source=f"gpuprof run --op {op}", device={"name": device},
               workload={"op": op, "shape": list(shape), "dtype": "float32",
                         "size_bytes": ops.footprint(op, shape, "float32")},
               launches=launches)


def imported_run() -> Run:
    metrics = [Metric("flop_count_sp", 2.0e9, "FLOP", "flop_count_sp"),
               Metric("dram_read_bytes", 3.0e8, "byte", "dram_read_bytes"),
               Metric("dram_write_bytes", 1.0e8, "byte", "dram_write_bytes"),
               Metric("Duration", 2.0e-3, "second", "kernel_duration")]
    return Run(kind="import", format="test", source="profile.csv", device={"name": K40},
               launches=[Launch("sgemm_128x64_nn", 0, K40, 3, metrics=metrics),
                         Launch("memcpy_only", 1, K40, metrics=metrics[3:])])


def study_points(gpu: str) -> pd.DataFrame:
    """The study's add, mul and dot rows of one GPU at analytic intensity (float32)."""
    text = resources.files("gpuprof.data").joinpath("theano_cuda_profiler_tables.csv").read_text()
    study = pd.read_csv(io.StringIO(text))
    rows = []
    for r in study[(study.gpu == gpu) & study.op.isin(["add", "mul", "dot"])].itertuples():
        shape = ops.shape_for_size(r.op, int(r.size_mb * 1e6), "float32")
        rows.append({"device": gpu, "label": f"{r.op} {r.size_mb} MB", "op": r.op, "dtype": "float32",
                     "ai": ops.flops(r.op, shape) / ops.bytes_moved(r.op, shape, "float32"),
                     "flop_rate": r.mflops_per_s * 1e6, "origin": "the study's nvprof MFLOP/s",
                     "run_id": ""})
    return pd.DataFrame(rows, columns=POINT_COLUMNS)


def test_measured_run_point_uses_analytic_counts_over_the_median_time() -> None:
    times = [2.0e-3, 1.0e-3, 4.0e-3]
    run = measured_run("add", 6 * 10**6, times)
    frame, skipped = points([run])
    assert skipped == []
    [point] = frame.to_dict("records")
    shape = tuple(run.workload["shape"])
    assert point["ai"] == pytest.approx(1 / 12)                         # 1 FLOP per 3 x 4 bytes
    assert point["flop_rate"] == pytest.approx(ops.flops("add", shape) / statistics.median(times))
    assert point["label"] == "add 6 MB" and point["device"] == K40


def test_imported_launch_point_uses_counted_flops_and_dram_bytes() -> None:
    frame, skipped = points([imported_run(), Run(kind="import", format="x", source="empty.csv")])
    [point] = frame.to_dict("records")
    assert point["ai"] == pytest.approx(2.0e9 / 4.0e8)
    assert point["flop_rate"] == pytest.approx(2.0e9 / 2.0e-3)        # per-invocation averages
    assert point["dtype"] == "float32" and point["origin"].startswith("measured")
    assert len(skipped) == 1 and "no FLOPs, bytes and time" in skipped[0]


def test_ceilings_come_from_the_device_table_when_the_run_stored_none() -> None:
    ceilings = device_ceilings([measured_run("dot", 9 * 10**6, [1e-3])])
    [peaks] = ceilings[K40]
    assert peaks.flops["float32"] == 4291e9 and peaks.bandwidth == 288e9


def test_chart_has_both_ceilings_with_units_and_every_point_labelled(tmp_path: Path) -> None:
    frame = study_points("K40")
    peaks = {"K40": [gpu_table.peaks(gpu_table.match("K40"))]}
    written = plot(frame, peaks, tmp_path)
    assert sorted(p.name for p in written) == ["roofline-k40.png", "roofline-k40.svg"]
    png = (tmp_path / "roofline-k40.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 20_000
    svg = (tmp_path / "roofline-k40.svg").read_text()
    assert "DRAM 288 GB/s (peak-table)" in svg
    assert "FP32 peak 4.29 TFLOP/s @ 745 MHz (peak-table)" in svg
    assert "Arithmetic intensity (FLOP/byte)" in svg and "GFLOP/s" in svg
    # every size appears, coincident points sharing one label
    for size in (5, 9, 17, 33, 65):
        assert f"dot {size} MB" in svg
    assert "add 6, 12, 24, 48, 96 MB" in svg


def test_chart_without_a_bandwidth_says_so(tmp_path: Path) -> None:
    cpu = gpu_table.peaks(gpu_table.match("K40"))
    no_bandwidth = type(cpu)(cpu.device, cpu.flops, None, cpu.clock_hz, "derived", "test")
    plot(study_points("K40"), {"K40": [no_bandwidth]}, tmp_path)
    assert "no memory ceiling" in (tmp_path / "roofline-k40.svg").read_text()


def test_roofline_command_writes_charts_from_the_store(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    with open_store(store) as s:
        s.add(measured_run("add", 6 * 10**6, [1.1e-3, 1.2e-3, 1.0e-3]))
        s.add(measured_run("dot", 9 * 10**6, [2.0e-3, 2.1e-3]))
        s.add(imported_run())
    out = tmp_path / "charts"
    result = CliRunner().invoke(main, ["roofline", "--store", str(store), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == [str(out / "roofline-tesla-k40c.png"), str(out / "roofline-tesla-k40c.svg")]
    svg = (out / "roofline-tesla-k40c.svg").read_text()
    assert "sgemm_128x64_nn" in svg and "dot 9 MB" in svg


def test_roofline_command_on_an_empty_store_is_one_error_line(tmp_path: Path) -> None:
    open_store(tmp_path / "e.sqlite").close()
    result = CliRunner().invoke(main, ["roofline", "--store", str(tmp_path / "e.sqlite")])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: no stored run") and "Traceback" not in result.output


def test_peaks_command_lists_the_table_and_details_one_gpu() -> None:
    runner = CliRunner()
    listing = runner.invoke(main, ["peaks", "--format", "json"])
    assert listing.exit_code == 0
    rows = json.loads(listing.stdout)
    assert len(rows) == len(gpu_table.load().gpus)
    detail = runner.invoke(main, ["peaks", "Tesla K40c", "--format", "csv"])
    assert detail.exit_code == 0
    assert "BW = 2 x 3004 MHz x 384 bit / 8 = 288.4 GB/s" in detail.stdout
    several = runner.invoke(main, ["peaks", "a100", "--format", "csv"])
    assert len(several.stdout.strip().splitlines()) == 5 and "matches 4 GPUs" in several.stderr
    missing = runner.invoke(main, ["peaks", "Radeon"])
    assert missing.exit_code == 2 and missing.stderr.startswith("error: no GPU 'Radeon'")


def test_devices_command_lists_the_cpu_and_says_why_there_is_no_gpu() -> None:
    result = CliRunner().invoke(main, ["devices", "--format", "json"])
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    assert rows[0]["device"] == "cpu" and rows[0]["peak origin"]
    if len(rows) == 1:
        assert "gpu: no NVIDIA driver/GPU found (tried NVML: " in result.stderr


def test_real_ncu_roofline_profile_gives_the_gemm_point_and_its_run_clock_efficiency() -> None:
    """ncu_csv_details_a100_roofline_printfp.csv, kernel ID 2 (gemm_v1<float>): ffma.sum
    34,359,738,368,000; smsp__cycles_elapsed.avg 25,610,472,227.46 at .per_second 764,999,999.31;
    dram__bytes.sum 807,658,682,624. CC 8.0, device unnamed in the CSV."""
    from gpuprof.derive.efficiency import VS_RUN_CLOCK, efficiencies
    from gpuprof.readers import read

    run = read(Path(__file__).parent / "fixtures/profiler-outputs/ncu_csv_details_a100_roofline_printfp.csv")
    frame, _ = points([run])
    [gemm] = frame[frame.op == "gemm_v1<float>"].to_dict("records")
    flops = 2 * 34_359_738_368_000
    seconds = 25_610_472_227.46 / 764_999_999.31
    assert gemm["ai"] == pytest.approx(flops / 807_658_682_624)
    assert gemm["flop_rate"] == pytest.approx(flops / seconds)
    assert gemm["device"] == "device 0 (CC 8.0), unnamed in ncu-csv"
    # ncu locked the clock at 765 MHz (--clock-control base): judged at that clock, not 1410 MHz.
    peaks = gpu_table.peaks(gpu_table.match("a100-pcie-40gb"))
    [at_clock] = [e for e in efficiencies(gemm["flop_rate"], None, "float32", peaks, 764_999_999.31)
                  if e.kind == VS_RUN_CLOCK]
    assert at_clock.percent == pytest.approx(100 * flops / seconds / (19492e9 * 765e6 / 1410e6), rel=1e-6)
