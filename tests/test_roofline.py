"""Roofline points from runs, the chart files, and the `roofline`, `peaks` and `devices` commands."""

from __future__ import annotations

import io
import json
import re
import statistics
from importlib import resources
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from matplotlib.text import Text

from gpuprof.cli import main
from gpuprof.derive.roofline import POINT_COLUMNS, device_ceilings, drawable, points
from gpuprof.devices import gpu_table
from gpuprof.model import TIMED, Launch, Metric, Run
from gpuprof.render.roofline_plot import figure, plot
from gpuprof.store import open_store
from gpuprof.workloads import ops

K40 = "Tesla K40c"


def measured_run(op: str, size: int, times: list[float], device: str = K40) -> Run:
    shape = ops.shape_for_size(op, size, "float32")
    launches = [
        Launch(f"{op}_kernel", i, metrics=[Metric("kernel_duration", t, "second", "kernel_duration", TIMED)])
        for i, t in enumerate(times)
    ]
    return Run(
        kind="run",
        format="test",
        source=f"gpuprof run --op {op}",
        device={"name": device},
        workload={
            "op": op,
            "shape": list(shape),
            "dtype": "float32",
            "size_bytes": ops.footprint(op, shape, "float32"),
        },
        launches=launches,
    )


def imported_run() -> Run:
    metrics = [
        Metric("flop_count_sp", 2.0e9, "FLOP", "flop_count_sp"),
        Metric("dram_read_bytes", 3.0e8, "byte", "dram_read_bytes"),
        Metric("dram_write_bytes", 1.0e8, "byte", "dram_write_bytes"),
        Metric("Duration", 2.0e-3, "second", "kernel_duration"),
    ]
    return Run(
        kind="import",
        format="test",
        source="profile.csv",
        device={"name": K40},
        launches=[
            Launch("sgemm_128x64_nn", 0, K40, 3, metrics=metrics),
            Launch("memcpy_only", 1, K40, metrics=metrics[3:]),
        ],
    )


def study_points(gpu: str) -> pd.DataFrame:
    """The study's add, mul and dot rows of one GPU at analytic intensity (float32)."""
    text = resources.files("gpuprof.data").joinpath("theano_cuda_profiler_tables.csv").read_text()
    study = pd.read_csv(io.StringIO(text))
    rows = []
    for r in study[(study.gpu == gpu) & study.op.isin(["add", "mul", "dot"])].itertuples():
        shape = ops.shape_for_size(r.op, int(r.size_mb * 1e6), "float32")
        rows.append(
            {
                "device": gpu,
                "kernel": r.op,
                "label": f"{r.op} {r.size_mb:g} MB",
                "op": r.op,
                "precision": "fp32",
                "tensor_kind": "",
                "ai": ops.flops(r.op, shape) / ops.bytes_moved(r.op, shape, "float32"),
                "ai_l2": float("nan"),
                "ai_l1": float("nan"),
                "flop_rate": r.mflops_per_s * 1e6,
                "time": float("nan"),
                "clock": float("nan"),
                "origin": "the study's nvprof MFLOP/s",
                "run_id": "",
                "ai_check": "",
                "left_out": "",
            }
        )
    return pd.DataFrame(rows, columns=POINT_COLUMNS)


def test_measured_run_point_uses_analytic_counts_over_the_median_time() -> None:
    times = [2.0e-3, 1.0e-3, 4.0e-3]
    run = measured_run("add", 6 * 10**6, times)
    frame, skipped = points([run])
    assert skipped == []
    [point] = frame.to_dict("records")
    shape = tuple(run.workload["shape"])
    assert point["ai"] == pytest.approx(1 / 12)  # 1 FLOP per 3 x 4 bytes
    assert point["flop_rate"] == pytest.approx(ops.flops("add", shape) / statistics.median(times))
    assert point["label"] == "add 6 MB" and point["device"] == K40


def test_imported_launch_point_uses_counted_flops_and_dram_bytes() -> None:
    frame, skipped = points([imported_run(), Run(kind="import", format="x", source="empty.csv")])
    [point] = frame.to_dict("records")
    assert point["ai"] == pytest.approx(2.0e9 / 4.0e8)
    assert point["flop_rate"] == pytest.approx(2.0e9 / 2.0e-3)  # per-invocation averages
    assert point["precision"] == "fp32" and point["origin"].startswith("measured")
    assert len(skipped) == 1 and "no FLOPs, DRAM bytes and time" in skipped[0]


def test_ceilings_come_from_the_device_table_when_the_run_stored_none() -> None:
    ceilings = device_ceilings([measured_run("dot", 9 * 10**6, [1e-3])])
    [peaks] = ceilings[K40]
    assert peaks.flops["float32"] == 4291e9 and peaks.bandwidth == 288e9


def svg_texts(path: Path) -> list[str]:
    """The texts of a chart as drawn (SVG text stays text), unescaped."""
    import html
    import re

    return [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", path.read_text())]


@pytest.mark.slow  # draws and reads back a roofline: 2-4 s
def test_chart_draws_the_table_ceilings_with_origins_and_numbers_every_point(tmp_path: Path) -> None:
    peaks = {"K40": [gpu_table.peaks(gpu_table.match("K40"))]}
    written = plot(study_points("K40"), peaks, tmp_path)
    assert sorted(p.name for p in written) == ["roofline-k40.png", "roofline-k40.svg"]
    png = (tmp_path / "roofline-k40.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 20_000
    texts = svg_texts(tmp_path / "roofline-k40.svg")
    # ceilings on their lines, with the table's origin; the notes give the clock each assumes
    assert {
        "DRAM 288 GB/s (published)",
        "FP32 FMA (published): 4.29 TFLOP/s",
        "FP32 no-FMA (derived): 2.15 TFLOP/s",
    } <= set(texts)
    assert any("FP32 FMA 4.29 TFLOP/s published (745 MHz base)" in t for t in texts)
    # coincident points share a number, numbered left to right; the key names each with its values
    assert "1  add 6, 12, 24, 48, 96 MB; mul 6, 12, 24, 48, 96 MB: 10-11 GFLOP/s, AI 0.083 FLOP/byte" in texts
    assert "2  dot 5 MB: 1.53 TFLOP/s, AI 108 FLOP/byte" in texts  # Table 2: K40 dot 5 MB, 1525.69 GFLOP/s
    assert [t for t in texts if t.isdigit() and int(t) < 10][-6:] == ["1", "2", "3", "4", "5", "6"]
    assert not any("no memory ceiling" in t for t in texts)


@pytest.mark.slow  # draws two rooflines of the study's devices: 3-8 s
def test_no_memory_ceiling_is_said_only_where_none_is_drawn(tmp_path: Path) -> None:
    table = gpu_table.peaks(gpu_table.match("K40"))
    no_bandwidth = type(table)(table.device, table.flops, None, table.clock_hz, "derived", "test")
    plot(study_points("K40"), {"K40": [no_bandwidth]}, tmp_path / "none")
    assert any(
        t.startswith("no memory ceiling: the derived peaks of this device have no bandwidth")
        for t in svg_texts(tmp_path / "none" / "roofline-k40.svg")
    )
    plot(study_points("K40"), {"K40": [table, no_bandwidth]}, tmp_path / "both")
    texts = svg_texts(tmp_path / "both" / "roofline-k40.svg")
    assert "DRAM 288 GB/s (published)" in texts and not any("no memory ceiling" in t for t in texts)


PROFILES = Path(__file__).parent / "fixtures" / "profiler-outputs"
A100_PRINTFP = PROFILES / "ncu_csv_details_a100_roofline_printfp.csv"
V100_NERSC = sorted(PROFILES.glob("ncu_csv_v100_nersc_one_metric_per_run_tf_fp16_EXCERPT.*.csv"))


def imported(tmp_path: Path, *args: str) -> list[Run]:
    """Runs as 'gpuprof import ARGS' stores them."""
    store = tmp_path / "import.sqlite"
    result = CliRunner().invoke(main, ["import", "--store", str(store), *args])
    assert result.exit_code == 0, result.output
    with open_store(store) as opened:
        return opened.runs()


@pytest.mark.slow  # imports the NERSC pair and draws its roofline: 2-4 s
def test_nersc_v100_gemm_is_three_points_at_its_summed_flops_under_the_fp16_tensor_roof(tmp_path: Path) -> None:
    """SOURCES.md 6a, IDs 123 and 124 (one kernel): 512 x (7,077,888 + 3,538,944) tensor + fmul
    (28,311,552 + 14,155,776) = 5,478,285,312 FLOP in 180,758.90 / 1,297,716,360.00 +
    94,587.12 / 1,299,887,048.19 s; dram 70,852,192 + 28,344,480, lts 107,347,328 + 32,189,120,
    l1tex 112,917,760 + 35,165,312 byte."""
    runs = imported(tmp_path, "--join", "--gpu", "v100-sxm2", *map(str, V100_NERSC))
    frame, _ = points(runs)
    mine = frame[frame.kernel == "volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn"]
    assert mine["precision"].tolist() == ["fp32", "tensor", "fp32+tensor"]  # each kind of work, then the total
    [gemm] = mine[mine.precision == "fp32+tensor"].to_dict("records")
    flops = 5_478_285_312
    seconds = 180_758.90 / 1_297_716_360.00 + 94_587.12 / 1_299_887_048.19
    assert gemm["flop_rate"] == pytest.approx(flops / seconds, rel=1e-3) == pytest.approx(2.583e13, rel=1e-3)
    assert gemm["ai"] == pytest.approx(flops / (70_852_192 + 28_344_480), rel=1e-3)  # 55.23
    assert gemm["ai_l2"] == pytest.approx(flops / (107_347_328 + 32_189_120), rel=1e-3)  # 39.26
    assert gemm["ai_l1"] == pytest.approx(flops / (112_917_760 + 35_165_312), rel=1e-3)  # 36.99
    assert gemm["label"].endswith("(2 launches)") and gemm["precision"] == "fp32+tensor"
    assert gemm["tensor_kind"] == "fp16/tensor" and gemm["ai_check"] == ""
    assert gemm["clock"] == pytest.approx((180_758.90 + 94_587.12) / seconds, rel=1e-3)  # 1.298 GHz, time-weighted
    fig = figure(frame[frame.device == gemm["device"]], gemm["device"], device_ceilings(runs)[gemm["device"]])
    joined = [line for line in fig.axes[0].get_lines() if len(line.get_xdata()) == 3]
    assert any(
        sorted(line.get_xdata()) == pytest.approx(sorted([gemm["ai_l1"], gemm["ai_l2"], gemm["ai"]])) for line in joined
    )
    texts = {t.get_text() for t in fig.findobj(Text)}
    # roofs at the points' 1.298 GHz, not the 1530 MHz boost (125 TFLOP/s x 1298 / 1530); DRAM does not scale
    assert {
        "FP16 tensor, FP32 acc (published): 106 TFLOP/s",
        "FP16 no-FMA (half2) (derived) = FP32 FMA (published): 13.3 TFLOP/s",  # equal roofs, one label
        "L1/shared 13.3 TB/s (derived)",
        "L2 2.66 TB/s (derived)",
        "DRAM 900 GB/s (published)",
        "AI at L1",
        "AI at L2",
        "AI at DRAM",
    } <= texts


def test_nersc_a100_sgemm_points_and_the_counter_that_looks_wrong(tmp_path: Path) -> None:
    """SOURCES.md 6c, ID 6 ampere_sgemm_32x32_sliced1x4_tn: SP 8,847,360 FLOP in 9,523.07 /
    991,986,882.72 s over dram 303,360, lts 1,952,544, l1tex 1,015,808 byte (AI 29.16 / 4.531 /
    8.710); ID 19 softmax: 160 tensor-pipe instructions on a GPU whose factor no source gives."""
    runs = imported(tmp_path, str(PROFILES / "ncu_csv_a100_nersc_rule_columns_unnamed_ns_bert_EXCERPT.csv"))
    every, skipped = points(runs)
    placed = drawable(every)
    assert placed.precision.tolist() == ["fp32", "fp32", "fp16"]  # softmax keeps its counted FP32 and FP16 points
    [sgemm] = placed[placed.op == "ampere_sgemm_32x32_sliced1x4_tn"].to_dict("records")
    assert sgemm["flop_rate"] == pytest.approx(8_847_360 / (9_523.07 / 991_986_882.72), rel=1e-3)  # 9.216e11
    assert (sgemm["ai"], sgemm["ai_l2"], sgemm["ai_l1"]) == (
        pytest.approx(29.16, rel=1e-3),
        pytest.approx(4.531, rel=1e-3),
        pytest.approx(8.710, rel=1e-3),
    )
    assert sgemm["ai_check"].startswith("AI L1 > AI L2: L1 counted fewer bytes than L2")
    [softmax_left_out] = skipped
    assert "softmax_warp_forward" in softmax_left_out and "total FLOPs unknown" in softmax_left_out
    assert every.left_out.tolist() == ["", "", "", softmax_left_out.split(": ", 2)[2]]  # a row, without a place
    fp32, _ = points(runs, "fp32")
    assert fp32.op.tolist() == [
        "ampere_sgemm_32x32_sliced1x4_tn",
        "<unnamed>::softmax_warp_forward<float, float, float, (int)5…",
    ]
    fig = figure(every, sgemm["device"], [gpu_table.peaks(gpu_table.match("a100-pcie-40gb"))])
    notes = " ".join(t.get_text() for t in fig.findobj(Text)).replace("\n", " ")
    assert "3 ampere_sgemm_32x32_sliced1x4_tn: AI L1 > AI L2: L1 counted fewer bytes than L2" in notes  # numbered by AI
    assert "(int)5… total: total FLOPs unknown (tensor work not counted" in notes


@pytest.mark.slow  # draws rooflines per memory level: 2-4 s
def test_a_level_the_table_lacks_is_left_out_and_said_so() -> None:
    from gpuprof.readers import read

    frame, _ = points([read(A100_PRINTFP)], "fp32")
    fig = figure(frame, "K40 stand-in", [gpu_table.peaks(gpu_table.match("K40"))], "fp32")
    texts = [t.get_text() for t in fig.findobj(Text)]
    assert "L1/shared 2.94 TB/s (derived)" in texts and not any(t.startswith("L2 ") for t in texts)
    assert "L2: the device table has no L2 bandwidth for this GPU" in " ".join(texts).replace("\n", " ")
    unnamed = " ".join(t.get_text() for t in figure(frame, "device 0", [], "fp32").findobj(Text))
    assert "no ceilings: no peaks are known for this device" in unnamed.replace("\n", " ")
    assert "bandwidth for this GPU" not in unnamed and "compute ceiling" not in unnamed


def test_precision_picks_the_flops_and_the_ceilings() -> None:
    """ncu_csv_details_a100_roofline_printfp.csv, ID 2 gemm_v1<float>: ffma 34,359,738,368,000,
    hfma 2,149,161,369,600 and 67,161,292,800 tensor-pipe instructions, whose work no source
    counts on an A100: its total is unknown, its FP32 and FP16 parts are not."""
    from gpuprof.readers import read

    run = read(A100_PRINTFP)
    every, skipped = points([run])
    assert drawable(every).op.tolist() == ["randomInit<float>", "gemm_v1<float> FP32", "gemm_v1<float> FP16"]
    assert any(
        "gemm_v1<float> total: total FLOPs unknown" in line and "FP32 and FP16 points are drawn" in line
        for line in skipped
    )
    fp32, _ = points([run], "fp32")
    [gemm] = fp32[fp32.op == "gemm_v1<float>"].to_dict("records")
    flops = 2 * 34_359_738_368_000
    assert (gemm["ai"], gemm["ai_l2"], gemm["ai_l1"]) == (
        pytest.approx(flops / 807_658_682_624),
        pytest.approx(flops / 40_927_345_510_272),
        pytest.approx(flops / 38_708_392_755_200),
    )
    fp16, _ = points([run], "fp16")
    assert fp16.op.tolist() == ["gemm_v1<float>"]  # randomInit has no FP16 work
    assert fp16.iloc[0]["ai"] == pytest.approx(2 * 2_149_161_369_600 / 807_658_682_624)
    fig = figure(fp16, gemm["device"], [gpu_table.peaks(gpu_table.match("a100-pcie-40gb"))], "fp16")
    texts = {t.get_text() for t in fig.findobj(Text)}
    assert "FP16 FMA (half2) (derived): 42.3 TFLOP/s" in texts  # 108 SM x 256 lanes x 2 x 765 MHz (the points')
    assert not any(t.startswith("FP32") for t in texts)
    with pytest.raises(ValueError, match="precision must be"):
        points([run], "fp8")


@pytest.mark.slow  # roofline commands drawing charts: 2-6 s
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


@pytest.mark.slow  # several roofline commands drawing charts: 4-10 s
def test_roofline_command_filters_by_kernel_run_and_op_and_writes_the_file_named(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    add, dot = measured_run("add", 6 * 10**6, [1.1e-3]), measured_run("dot", 9 * 10**6, [2.0e-3])
    with open_store(store) as s:
        for run in (add, dot, imported_run()):
            s.add(run)
    fixture = Path(__file__).parent / "fixtures/profiler-outputs/ncu_csv_details_a100_roofline_printfp.csv"
    runner = CliRunner()
    assert runner.invoke(main, ["import", "--store", str(store), str(fixture)]).exit_code == 0

    def drawn(*options: str) -> list[str]:
        out = tmp_path / "one.svg"
        result = runner.invoke(main, ["roofline", "--store", str(store), "--out", str(out), *options])
        assert result.exit_code == 0, result.output
        assert result.stdout.split() == [str(out)]
        return [t.split(":")[0] for t in svg_texts(out) if t[:1].isdigit() and "  " in t]  # the key

    assert drawn("--kernel", "GEMM_v1", "--peaks", "a100-pcie-40gb", "--precision", "fp32") == ["1  gemm_v1<float>"]
    assert drawn("--op", "dot") == ["1  dot 9 MB"]
    assert drawn("--run", add.run_id[:8], "--run", dot.run_id[:6]) == ["1  add 6 MB", "2  dot 9 MB"]
    assert drawn("--device", "k40", "--kernel", "sgemm") == ["1  sgemm_128x64_nn (3 launches)"]
    bad = runner.invoke(main, ["roofline", "--store", str(store), "--kernel", "gemm_v1<float>("])
    assert bad.exit_code == 2 and "error: --kernel 'gemm_v1<float>(' is not a regular" in bad.stderr
    pdf = runner.invoke(main, ["roofline", "--store", str(store), "--out", str(tmp_path / "r.pdf")])
    assert pdf.exit_code == 2 and "'r.pdf' is neither a .png or .svg file name nor a folder" in pdf.stderr
    none = runner.invoke(main, ["roofline", "--store", str(store), "--op", "tanh"])
    assert none.exit_code == 2 and "for op tanh" in none.stderr


def test_roofline_command_on_an_empty_store_is_one_error_line(tmp_path: Path) -> None:
    with open_store(tmp_path / "e.sqlite") as store:
        store._db  # noqa: B018 - created now, with no run (a store is otherwise created by its first write)
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
    frame, _ = points([run], "fp32")
    [gemm] = frame[frame.op == "gemm_v1<float>"].to_dict("records")
    flops = 2 * 34_359_738_368_000
    seconds = 25_610_472_227.46 / 764_999_999.31
    assert gemm["ai"] == pytest.approx(flops / 807_658_682_624)
    assert gemm["flop_rate"] == pytest.approx(flops / seconds)
    assert gemm["device"] == "device 0 (CC 8.0), unnamed in ncu-csv"
    # ncu locked the clock at 765 MHz (--clock-control base): judged at that clock, not 1410 MHz.
    peaks = gpu_table.peaks(gpu_table.match("a100-pcie-40gb"))
    [at_clock] = [
        e for e in efficiencies(gemm["flop_rate"], None, "float32", peaks, 764_999_999.31) if e.kind == VS_RUN_CLOCK
    ]
    assert at_clock.percent == pytest.approx(100 * flops / seconds / (19492e9 * 765e6 / 1410e6), rel=1e-6)


@pytest.mark.slow  # roofline commands drawing charts: 3-8 s
def test_runs_without_points_are_one_summary_line(tmp_path: Path) -> None:
    from fixture_paths import K40C

    store = tmp_path / "s.sqlite"
    with open_store(store) as s:
        s.add(measured_run("add", 6 * 10**6, [1.1e-3, 1.2e-3]))
    for copy in range(4):  # four imports of a file with FLOPs but no DRAM bytes or time: nothing to place
        path = tmp_path / f"k40-{copy}.csv"
        path.write_text(K40C.read_text().replace("Tesla K40c", f"Tesla K40c {copy}"))
        assert CliRunner().invoke(main, ["import", str(path), "--store", str(store)]).exit_code == 0
    result = CliRunner().invoke(main, ["roofline", "--store", str(store), "--out", str(tmp_path / "charts")])
    assert result.exit_code == 0, result.output
    skipped = [line for line in result.stderr.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == 1, result.stderr
    assert re.fullmatch(
        r"skipped 4 run\(s\) with no DRAM bytes and time to place \(4 nvprof-csv-metrics\): "
        r"\w{8}, \w{8}, \w{8}, \.\.\.",
        skipped[0],
    ), skipped[0]
