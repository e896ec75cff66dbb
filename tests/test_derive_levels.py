"""The hierarchical roofline per launch (gpuprof.derive.levels, gpuprof.derive.tensor): bytes per
level in ncu's own roofline form, the AI consistency check, the dominant work and the binding
ceiling against the device table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from fixture_paths import FIXTURES

from gpuprof import readers
from gpuprof.derive import counters, levels, tensor
from gpuprof.devices import gpu_table
from gpuprof.model import Launch, Metric, Run

REPORT = FIXTURES / "ncu_report_binary_2020_win_montecarlo_pi.ncu-rep"


def test_rtx3080_report_bytes_in_ncus_roofline_form_and_its_binding_ceiling() -> None:
    """The RTX 3080 report has no l1tex__t_bytes/lts__t_bytes: L1 = 128 x 29,726,488 LSU writeback
    cycles, L2 = 32 x 29,296,506 sectors; FP32 FLOPs 70,000,000 in 7,597,056 ns. The lowest roof
    of the table's RTX 3080 row (FP32 FMA 29.77 TFLOP/s, L1 14.88 TB/s at 1710 MHz, DRAM 760 GB/s;
    no L2 figure) at those intensities is L1's, taken at the SM clock the report measured
    (smsp__cycles_elapsed.avg.per_second 1,440,009,489.9 Hz); DRAM's does not follow that clock."""
    pytest.importorskip("ncu_report")
    derived = counters.frame(readers.read(REPORT))
    compute = derived.iloc[1]
    l1, l2, dram = 128 * 29_726_488, 32 * 29_296_506, 7_975_040 + 44_477_952
    assert (compute["l1_bytes"], compute["l2_bytes"], compute["dram_bytes"]) == (l1, l2, dram)
    assert "L1 bytes = 128 x l1tex__lsu_writeback_active_mem_lg.sum" in compute["basis"]
    assert "L2 bytes = 32 x lts__t_sectors.sum" in compute["basis"]
    assert tensor.RULES[tensor.IDLE] in compute["basis"]  # sm__pipe_tensor_cycles_active 0 %
    rate = 70_000_000 / 7_597_056e-9
    assert compute["flop_rate_total"] == pytest.approx(rate)
    at_run = 1_440_009_489.8989975 / 1710e6
    roofs = {
        "compute": 29_768e9 * at_run,
        "l1": 14_883.84e9 * at_run * 70_000_000 / l1,
        "dram": 760e9 * 70_000_000 / dram,
    }
    assert compute["dominant"] == "fp32/fma"
    assert compute["binding_ceiling"] == pytest.approx(min(roofs.values())) == pytest.approx(roofs["l1"])
    assert compute["binding_name"] == (
        "L1/shared 1.253e+04 GB/s at the SM clock measured, 1440 MHz (1.488e+04 GB/s derived at 1710 MHz boost) x AI L1"
    )
    assert compute["binding_percent"] == pytest.approx(100 * rate / roofs["l1"])
    assert compute["ai_check"] == ""  # 3.80 GB at L1 >= 0.94 GB at L2 >= 52 MB at DRAM


def test_consistency_names_the_counter_that_looks_wrong() -> None:
    l1 = np.array([100.0, 10.0, 100.0, 100.0, 50.0, 10.0, 100.0, 10.0, np.nan])
    l2 = np.array([80.0, 80.0, 80.0, 80.0, 80.0, 50.0, np.nan, 50.0, 80.0])
    dram = np.array([60.0, 60.0, 60.0, 90.0, 20.0, 90.0, 60.0, np.nan, 90.0])
    found = levels.consistency(l1, l2, dram).tolist()
    assert found[0] == ""
    assert found[1].endswith("L1 counted fewer bytes than L2 and DRAM; the L1 counter looks low")
    assert found[2] == ""
    assert found[3].endswith("DRAM counted more bytes than L2; the DRAM counter looks high or the L2 one low")
    assert found[4].endswith("L1 counted fewer bytes than L2; the L1 counter looks low or the L2 one high")
    assert found[5].startswith("AI falls from L1 to L2 to DRAM")
    assert found[6] == ""  # L1 >= DRAM, no L2
    assert found[7].endswith("the L1 counter looks low or the L2 one high")  # two levels only
    assert found[8].startswith("AI L2 > AI DRAM")
    assert levels.consistency(np.array([100.0]), np.array([103.0]), np.array([60.0]))[0] == ""  # within 5 %


def _launch(kernel: str, metrics: dict[str, float], cc: str) -> Launch:
    return Launch(
        kernel, 0, attributes={"cc": cc}, metrics=[Metric(name, value, "") for name, value in metrics.items()]
    )


def test_ops_path_counters_are_summed_per_type_and_judged_by_their_ceiling() -> None:
    """No public file with sm__ops_path_tensor_* values was found, so this launch is written here
    with GA100's documented spellings (docs/tensor-cores.md section 2) and the counts an FP16 GEMM
    of m = n = k = 4096 would give if one ncu op is one FLOP (section 7, point 1): 2·m·n·k dense
    ops, here split across _sparsity_off and a small _sparsity_on part to check both are added."""
    mnk2 = 2 * 4096**3
    gemm = _launch(
        "sm80_xmma_gemm_f16f16_f32",
        {
            "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_off.sum": mnk2 - 4096,
            "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_on.sum": 4096,
            "sm__ops_path_tensor_src_tf32_dst_fp32_sparsity_off.sum": 0,
            "sm__inst_executed_pipe_tensor.sum": 4_194_304,  # never multiplied when ops are counted
            "sm__sass_thread_inst_executed_op_fadd_pred_on.sum": 0,
            "sm__sass_thread_inst_executed_op_fmul_pred_on.sum": 4096 * 4096,
            "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 0,
            "gpu__time_duration.sum": 0.5e-3,
            "dram__bytes.sum": 3 * 2 * 4096 * 4096,
        },
        "8.0",
    )
    gemm.device = "NVIDIA A100-SXM4-40GB"
    run = Run("import", "test", "written by the test", launches=[gemm])
    row = counters.frame(run).iloc[0]
    assert row["flops_tensor"] == mnk2 and row["tensor_kind"] == "fp16/tensor"
    assert row["flops_total"] == mnk2 + 4096 * 4096
    assert row["dominant"] == "fp16/tensor"
    assert "sparse (2:4) tensor ops included" in row["basis"] and tensor.RULES[tensor.OPS] in row["basis"]
    rate = (mnk2 + 4096 * 4096) / 0.5e-3
    a100 = gpu_table.match("NVIDIA A100-SXM4-40GB")
    dram_roof = gpu_table.memory_ceiling(a100, "dram").value * row["ai_dram"]
    assert row["binding_ceiling"] == pytest.approx(min(312e12, dram_roof)) == pytest.approx(312e12)
    assert row["binding_name"].startswith("FP16 tensor, FP32 acc 312 TFLOP/s (published")
    assert row["binding_percent"] == pytest.approx(100 * rate / 312e12)


def test_volta_rule_needs_compute_capability_7_0() -> None:
    """512 FLOP per tensor-pipe instruction on CC 7.0; on 7.5 the same count gives no number."""
    counts = {"sm__inst_executed_pipe_tensor.sum": 1000.0}
    volta = counters.Counters.of_launches(
        [
            _launch("k", counts, "7.0"),
            _launch("k", counts, "7.5"),
            _launch("k", {"sm__inst_executed_pipe_tensor.sum": 0.0}, "7.5"),
        ]
    )
    flops, rules, kinds = tensor.parts(volta)
    assert flops[0] == 512_000 and rules[0] == tensor.VOLTA and kinds[0] == "fp16/tensor"
    assert math.isnan(flops[1]) and rules[1] == tensor.UNCOUNTED
    assert flops[2] == 0 and rules[2] == tensor.NO_INST
    assert tensor.tensor_flops(_launch("k", counts, "7.0")) == (512_000, "FLOP")


def test_binding_above_100_percent_says_so() -> None:
    """A rate above the lowest roof (here FP32 on a K40 at its 745 MHz base-clock peak) is said to
    be a wrong ceiling or a wrong counter, not printed as an efficiency like any other."""
    frame = pd.DataFrame(
        # DRAM counted at an intensity far right of the ridge, so the compute roof binds (without any memory
        # counter the bound is unknown: test_no_binding_ceiling_without_memory_counters)
        {"dominant": ["fp32/fma"], "ai_l1": [np.nan], "ai_l2": [np.nan], "ai_dram": [1e6], "flop_rate_total": [5e12]}
    )
    value, text, percent = levels.binding(frame, ["Tesla K40c"])
    assert value[0] == gpu_table.ceiling(gpu_table.match("Tesla K40c"), "fp32", "fma").value == 4.291e12
    assert percent[0] > 100 and "above 100 %" in text[0]


def test_binding_ceilings_follow_the_sm_clock_measured_but_not_dram() -> None:
    """The same 5 TFLOP/s on a K40 whose SMs ran at 875 MHz (its boost clock, as a profiler would
    measure it): the FP32 roof stated at 745 MHz becomes 4.291e12 x 875 / 745 = 5.040e12 FLOP/s, so
    the rate is 99.2 % of it, not above 100 %. A DRAM roof stays at its memory clock."""
    frame = pd.DataFrame(
        {
            "dominant": ["fp32/fma", "fp32/fma", "fp32/fma"],
            "ai_l1": [np.nan] * 3,
            "ai_l2": [np.nan] * 3,
            "ai_dram": [1e6, 1e6, 1.0],  # the first two far right of the ridge: compute binds
            "flop_rate_total": [5e12, 5e12, 1e11],
        }
    )
    value, text, percent = levels.binding(frame, ["Tesla K40c"] * 3, np.array([875e6, np.nan, 875e6]))
    assert value[0] == pytest.approx(4.291e12 * 875 / 745) and percent[0] == pytest.approx(100 * 5e12 / value[0])
    assert (
        text[0] == "FP32 FMA 5.04 TFLOP/s at the SM clock measured, 875 MHz (4.291 TFLOP/s published at 745 MHz base)"
    )
    assert value[1] == 4.291e12 and "above 100 %" in text[1]  # no clock measured: the table's
    dram = gpu_table.memory_ceiling(gpu_table.match("Tesla K40c"), "dram")
    assert (
        value[2] == dram.value
        and text[2] == f"DRAM {dram.display[0]:.4g} GB/s ({dram.origin} at {dram.clock_mhz:g} MHz memory) x AI DRAM"
    )


def test_report_without_a_duration_takes_its_time_from_cycles_and_says_so() -> None:
    """Item 3 for .ncu-rep files: the RTX 3080 report with its gpu__time_duration.sum rows taken out
    by the test (no public report without one was found) gives computeValue's time as ncu's
    'Elapsed Cycles' (gpc__cycles_elapsed.max; the report has no *__cycles_elapsed.avg) / SM
    clock, labelled derived: 10,939,877 / 1,440,009,489.9 Hz = 7.5970 ms, the duration it had."""
    pytest.importorskip("ncu_report")
    run = readers.read(REPORT)
    cycles = run.launches[1].value("gpc__cycles_elapsed.max")  # 10,939,877 'Elapsed Cycles'
    clock = run.launches[1].value("smsp__cycles_elapsed.avg.per_second")
    metrics = run.metric_table[run.metric_table["metric"] != "gpu__time_duration.sum"].reset_index(drop=True)
    without = Run("import", run.format, run.source, run.device, tables=(run.launch_table, metrics))
    compute = counters.frame(without).iloc[1]
    assert cycles == 10_939_877
    assert compute["time"] == pytest.approx(cycles / clock) == pytest.approx(7_597_056e-9, rel=1e-4)
    assert compute["basis"].startswith(counters.TIME_RULES[2] + "; " + counters.UNCHECKED)  # it counts SASS too


@pytest.mark.parametrize(
    ("chip", "cc", "stem"),
    [
        ("GA100", "8.0", "sm__ops_path_tensor_src_fp16_dst_fp32"),  # combined and ±sp on GA100 (tensor-cores.md §2)
        ("GA100", "8.0", "sm__ops_path_tensor_src_tf32_dst_fp32"),
        ("GA100", "8.0", "sm__ops_path_tensor_src_int8"),
        ("GH100", "9.0", "sm__ops_path_tensor_src_fp8"),  # GH100's only type with combined and ±sp
    ],
)
def test_a_combined_tensor_counter_is_not_added_to_its_sparsity_split(chip, cc, stem) -> None:
    """ncu collects the combined counter and both halves of its split when the catalog asks for all
    three: the work is the combined counter, not twice it; without the combined one, off + on."""
    work, sparse = 2 * 1024**3, 8192
    both = _launch(
        f"{chip} gemm",
        {f"{stem}.sum": work, f"{stem}_sparsity_off.sum": work - sparse, f"{stem}_sparsity_on.sum": sparse},
        cc,
    )
    split_only = _launch(
        f"{chip} gemm", {f"{stem}_sparsity_off.sum": work - sparse, f"{stem}_sparsity_on.sum": sparse}, cc
    )
    combined_only = _launch(f"{chip} gemm", {f"{stem}.sum": work}, cc)
    flops, rules, _ = tensor.parts(counters.Counters.of_launches([both, split_only, combined_only]))
    assert flops.tolist() == [work, work, work] and set(rules.tolist()) == {tensor.OPS}
    listed = {name for _, _, names in tensor.kinds() for name in names}
    assert {
        f"{stem}.sum",
        f"{stem}_sparsity_off.sum",
        f"{stem}_sparsity_on.sum",
    } <= listed  # the catalog asks for all three
