"""``gpuprof run --device cuda`` reports what the profiler counted for one call of the op: kernel time
beside the event time, counted FLOPs and their ratio to the analytic count, DRAM bytes, the SM clock,
and efficiency against the FMA pipe at that clock, the datasheet peak and the roofline.

The stand-in ncu replays converted/ncu_raw_page_rtx3080_montecarlo_FROM_REPORT.csv: the real RTX 3080 report's
two kernels (initRNG, computeValue) laid out as ncu's raw page, every value copied from the report
(fixtures/converted/README.md; the first test checks that). They play one call of the op that launches two kernels, as
a GEMM with a split-K reduction does. NVML and CuPy are stand-ins naming that GPU; the child's result
is a stand-in whose event times are plumbing values, asserted only where they pass through.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from fakes.environment import FIXTURES, stand_in_gpu, use_stand_ins

from gpuprof import readers
from gpuprof.cli import main
from gpuprof.devices import gpu_table
from gpuprof.launch import gpu_session

RAW = FIXTURES.parent / "converted" / "ncu_raw_page_rtx3080_montecarlo_FROM_REPORT.csv"
REPORT = FIXTURES / "ncu_report_binary_2020_win_montecarlo_pi.ncu-rep"
EVENT_TIME = 0.09  # plumbing value for the stand-in child result
# the report's own values (kernel initRNG, then computeValue)
TIMES = (77686368e-9, 7597056e-9)
CLOCKS = (1442244014.9875154, 1440009489.8989975)
DRAM = (3237481600.0, 52452992.0)  # dram__bytes_read.sum + dram__bytes_write.sum
FFMA_PEAK = 8704.0  # sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained, inst/cycle
COUNTED = 70_000_000.0  # computeValue: (fadd 2.742... + fmul 3.656...) per cycle x clock x time; initRNG: 0


def test_the_raw_page_holds_the_reports_values() -> None:
    pytest.importorskip("ncu_report")
    raw, report = readers.read(RAW), readers.read(REPORT)
    assert [launch.kernel for launch in raw.launches] == [launch.kernel for launch in report.launches]
    for mine, theirs in zip(raw.launches, report.launches):
        expected = {m.name: (m.value, m.unit) for m in theirs.metrics}
        assert len(mine.metrics) == len(expected) == 609
        assert {m.name: (m.value, m.unit) for m in mine.metrics} == expected


@pytest.fixture
def rtx3080_run(tmp_path, monkeypatch):
    use_stand_ins(tmp_path, monkeypatch)
    monkeypatch.setattr(
        gpu_session, "_nvml_gpu", lambda: (stand_in_gpu("NVIDIA GeForce RTX 3080", "8.6"), "NVML: stand-in")
    )
    monkeypatch.setattr(gpu_session, "_cupy_state", lambda: (True, "CuPy: stand-in"))
    child = tmp_path / "child-stand-in.json"
    child.write_text(
        json.dumps(
            {
                "schema": 1,
                "times": [EVENT_TIME] * 3,
                "batch": 1,
                "engine": "cupy",
                "device": {"name": "NVIDIA GeForce RTX 3080", "cc": "8.6"},
                "engine_version": "stand-in",
                "relative_error": 0.0,
                "kernel": None,
                "timer": "stand-in",
            }
        )
    )
    monkeypatch.setenv("GPUPROF_FAKE_CHILD", str(child))
    monkeypatch.setenv("GPUPROF_FAKE_LOG", str(RAW))
    monkeypatch.chdir(tmp_path)

    def run(fmt: str) -> str:
        result = CliRunner().invoke(
            main,
            [
                "run",
                "--op",
                "add",
                "--shape",
                "4096x4096",
                "--device",
                "cuda",
                "--profiler",
                "ncu",
                "--profiled",
                "1",
                "--repeat",
                "3",
                "--format",
                fmt,
                "--store",
                str(tmp_path / "s.sqlite"),
            ],
        )
        assert result.exit_code == 0, result.output
        run.stored = result.stderr.split("stored as run ")[1].split()[0]
        return result.stdout

    run.store = tmp_path / "s.sqlite"
    return run


def test_run_prints_counted_flops_their_ratio_the_clock_and_three_efficiencies(rtx3080_run) -> None:
    rows = {row["quantity"]: row for row in json.loads(rtx3080_run("json"))["quantities"]}
    time = sum(TIMES)
    clock = sum(c * t for c, t in zip(CLOCKS, TIMES)) / time
    analytic = 4096 * 4096  # add: one FLOP per element

    assert rows["time (profiler)"]["value"] == pytest.approx(time)
    assert rows["time (profiler)"]["origin"] == "measured"
    assert "2 kernel(s) summed, mean of 1 profiled call(s)" in rows["time (profiler)"]["basis"]
    assert f"profiler / event = {time / EVENT_TIME:.3f}" in rows["time (profiler)"]["basis"]
    assert "locked to base by ncu --clock-control base" in rows["time (profiler)"]["basis"]

    assert rows["FLOPs counted (FP32)"]["value"] == pytest.approx(COUNTED)
    assert rows["FLOPs counted (FP32)"]["origin"] == "measured"
    assert rows["FLOPs counted / analytic"]["value"] == pytest.approx(COUNTED / analytic)
    assert "above 1" in rows["FLOPs counted / analytic"]["basis"]  # 4.17: this page is not an add
    assert rows["DRAM bytes (counted)"]["value"] == pytest.approx(sum(DRAM))
    assert rows["SM clock (profiled)"]["value"] == pytest.approx(clock)

    rate = COUNTED / time
    at_clock = rows["efficiency: counted FLOP/s vs peak at run clock"]
    peak = sum(FFMA_PEAK * 2 * c * t for c, t in zip(CLOCKS, TIMES)) / time
    assert at_clock["value"] == pytest.approx(100 * rate / peak)
    assert "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained x 2 x SM clock" in at_clock["basis"]
    datasheet = gpu_table.peaks(gpu_table.find("NVIDIA GeForce RTX 3080")[0])
    vs_peak = rows["efficiency: counted FLOP/s vs peak"]
    assert vs_peak["value"] == pytest.approx(100 * rate / datasheet.flops["float32"])
    assert "peak-table" in vs_peak["basis"] and "29.77 TFLOP/s" in vs_peak["basis"]
    [roofline] = [row for name, row in rows.items() if name.startswith("efficiency: counted roofline (")]
    intensity = COUNTED / sum(DRAM)
    ceiling = min(datasheet.flops["float32"], intensity * datasheet.bandwidth)
    assert roofline["value"] == pytest.approx(100 * rate / ceiling)
    assert "memory-bound" in roofline["basis"] or "compute-bound" in roofline["basis"]
    # the analytic rows stay, event-timed
    assert rows["FLOPs"]["value"] == analytic and rows["FLOPs"]["origin"] == "analytic"
    assert rows["time (median)"]["value"] == pytest.approx(EVENT_TIME)

    # the store keeps what these rows are derived from: 'gpuprof show' prints the same
    shown = CliRunner().invoke(
        main, ["show", rtx3080_run.stored, "--format", "json", "--store", str(rtx3080_run.store)]
    )
    assert {row["quantity"]: row for row in json.loads(shown.stdout)["quantities"]} == rows


def test_the_table_names_the_profiler_and_every_counted_row(rtx3080_run, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the labels on one line each (an 80-column table wraps the longest)
    text = rtx3080_run("table")
    assert "note:     profiler: ncu 0.0.0-fake (" in text and "found by PATH)" in text
    for label in (
        "time (profiler)",
        "FLOPs counted (FP32)",
        "FLOPs counted / analytic",
        "SM clock (profiled)",
        "efficiency: counted FLOP/s vs peak at run clock",
        "efficiency: counted FLOP/s vs peak ",
        "efficiency: counted roofline (",
    ):
        assert label in text
    assert "70 MFLOP" in text and "1.442 GHz" in text and "85.28 ms" in text


def test_nvprof_counts_reach_the_report_with_event_time(tmp_path, monkeypatch) -> None:
    """Kepler: nvprof's flop_count_sp (the real K40c output: 3 invocations of one kernel) per profiled
    call; nvprof's metric mode reports no durations, so counted rates use the CUDA-event time."""
    use_stand_ins(tmp_path, monkeypatch)
    monkeypatch.setattr(gpu_session, "_nvml_gpu", lambda: (stand_in_gpu("Tesla K40c", "3.5"), "NVML: stand-in"))
    monkeypatch.setattr(gpu_session, "_cupy_state", lambda: (True, "CuPy: stand-in"))
    child = tmp_path / "child.json"
    child.write_text(
        json.dumps(
            {
                "schema": 1,
                "times": [EVENT_TIME] * 3,
                "batch": 1,
                "engine": "cupy",
                "device": {"name": "Tesla K40c", "cc": "3.5"},
                "engine_version": "stand-in",
                "relative_error": 0.0,
                "kernel": None,
                "timer": "stand-in",
            }
        )
    )
    monkeypatch.setenv("GPUPROF_FAKE_CHILD", str(child))
    monkeypatch.setenv("GPUPROF_FAKE_LOG", str(FIXTURES / "nvprof_csv_metrics_k40c_flop_stall.csv"))
    monkeypatch.chdir(tmp_path)  # the profiler's files go to reports/<run>/ below the working directory
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--op",
            "dot",
            "--shape",
            "1024",
            "--device",
            "cuda",
            "--repeat",
            "3",
            "--format",
            "json",
            "--store",
            str(tmp_path / "s.sqlite"),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = {row["quantity"]: row for row in json.loads(result.stdout)["quantities"]}
    counted = 25264160800.0  # flop_count_sp, Avg per invocation; 3 invocations = the 3 profiled calls
    assert rows["FLOPs counted (FP32)"]["value"] == counted
    assert rows["FLOPs counted / analytic"]["value"] == pytest.approx(counted / (2 * 1024**3))
    assert "time (profiler)" not in rows and "SM clock (profiled)" not in rows  # nvprof's metric mode has neither
    k40 = gpu_table.peaks(gpu_table.find("Tesla K40c")[0])
    vs_peak = rows["efficiency: counted FLOP/s vs peak"]
    assert vs_peak["value"] == pytest.approx(100 * counted / EVENT_TIME / k40.flops["float32"])
    assert "FLOPs counted / CUDA-event time" in vs_peak["basis"]


def test_nvprofs_own_efficiency_is_the_run_clock_one() -> None:
    """nvprof's flop_sp_efficiency divides by the peak at the clock the kernel ran at: reported as
    measured when one kernel makes the call (a synthesized launch; no captured file has the metric)."""
    from gpuprof.derive import profiled
    from gpuprof.model import Launch, Metric, Run

    launch = Launch(
        "sgemm",
        3,
        "Tesla V100",
        3,
        {"phase": "profiled"},
        [
            Metric("flop_count_sp", 2.0e9, "FLOP", "flop_count_sp"),
            Metric("flop_sp_efficiency", 61.25, "%", "flop_sp_efficiency"),
        ],
    )
    run = Run(
        kind="run",
        format="cuda-cupy",
        source="test",
        environment={"kernels_per_call": 1, "profiler": "nvprof"},
        workload={"op": "dot", "dtype": "float32", "shape": [1000, 1000, 1000], "profiled": 3},
        launches=[launch],
    )
    [row] = [q for q in profiled.quantities(run, 2e9, 12e6, 1e-3) if "run clock" in q.name]
    assert (row.value, row.origin) == (61.25, "measured")
    assert row.basis.startswith("nvprof flop_sp_efficiency: achieved / peak FP32 FLOP/s at the clock")
    assert profiled.per_call(run).flops["sp"] == 2.0e9  # 3 invocations x 2e9 / 3 calls


def _tensor_run(cc: str, metrics: list) -> object:
    """A GPU run's stored shape with one profiled GEMM launch of a 1024 x 1024 x 1024 float16 dot.
    No public capture of such a launch exists: the counter names are NVIDIA's documented ones
    (docs/tensor-cores.md) and the counts are chosen here, each as the formula says it must be."""
    from gpuprof.model import Launch, Metric, Run

    launch = Launch(
        "sm80_xmma_gemm_f16f16_f16f32",
        0,
        "GPU",
        1,
        {"phase": "profiled"},
        [
            Metric("gpu__time_duration.sum", 1.0e-4, "second", "kernel_duration"),
            *(
                Metric(f"smsp__sass_thread_inst_executed_op_h{op}_pred_on.sum", 0.0, "inst")
                for op in ("add", "mul", "fma")
            ),
            *metrics,
        ],
    )
    return Run(
        kind="run",
        format="gpu-cupy",
        source="gpuprof run",
        device={"name": "GPU", "cc": cc},
        workload={"op": "dot", "shape": [1024, 1024, 1024], "dtype": "float16", "profiled": 1},
        environment={"kernels_per_call": 1, "profiler": "ncu"},
        launches=[launch],
    )


@pytest.mark.parametrize(
    "cc, metrics",
    [
        ("8.0", [("sm__ops_path_tensor_src_fp16_dst_fp32.sum", 2 * 1024**3, "")]),  # Ampere: ops counted as such
        ("7.0", [("sm__inst_executed_pipe_tensor.sum", 2 * 1024**3 / 512, "inst")]),  # Volta: 512 per HMMA.884
    ],
    ids=["ampere-ops-path", "volta-512-per-instruction"],
)
def test_tensor_core_flops_count_toward_the_ratio_to_analytic(cc: str, metrics: list) -> None:
    from gpuprof.derive.profiled import quantities
    from gpuprof.model import Metric

    run = _tensor_run(cc, [Metric(name, value, unit) for name, value, unit in metrics])
    rows = {q.name: q for q in quantities(run, 2 * 1024**3, 3 * 2 * 1024**2, 1.0e-4)}
    assert rows["FLOPs counted (tensor cores)"].value == 2 * 1024**3
    assert rows["FLOPs counted / analytic"].value == pytest.approx(1.0)
    assert "and tensor cores" in rows["FLOPs counted / analytic"].basis


def test_tensor_work_a_file_cannot_count_is_said_beside_the_ratio() -> None:
    from gpuprof.derive.profiled import quantities
    from gpuprof.model import Metric

    # Ampere without the ops_path counters: only Volta's instruction factor is documented
    run = _tensor_run("8.0", [Metric("sm__inst_executed_pipe_tensor.sum", 1.0e6, "inst")])
    rows = {q.name: q for q in quantities(run, 2 * 1024**3, 3 * 2 * 1024**2, 1.0e-4)}
    assert "FLOPs counted (tensor cores)" not in rows
    assert "tensor pipe active but its work not counted" in rows["FLOPs counted / analytic"].basis
