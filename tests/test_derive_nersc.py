"""The NERSC roofline method on its real fixtures (tests/fixtures/profiler-outputs/SOURCES.md
section 6): per launch and per kernel, FLOPs (vector per precision + 512 x tensor-pipe instructions
on Volta), time (elapsed cycles / clock where no duration was measured), FLOP/s and arithmetic
intensity at L1, L2 and DRAM must agree with the method's own formulas to 0.1 %. Every expected
number is computed here by hand from the values printed in the files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_paths import A100, FIXTURES

from gpuprof import readers
from gpuprof.cli import main
from gpuprof.derive import counters, tensor
from gpuprof.derive.kernel_table import kernel_table
from gpuprof.importing import import_files, read_file
from gpuprof.readers import joining

V100_FILES = sorted(FIXTURES.glob("ncu_csv_v100_nersc_one_metric_per_run_tf_fp16_EXCERPT.*.csv"))
A100_SGEMM = FIXTURES / "ncu_csv_a100_nersc_roofline_metrics_with_duration_sgemm.csv"
A100_BERT = FIXTURES / "ncu_csv_a100_nersc_rule_columns_unnamed_ns_bert_EXCERPT.csv"
REL = 1e-3  # the 0.1 %


def close(value: float) -> object:
    return pytest.approx(value, rel=REL)


def test_a100_sgemm_flops_time_and_intensity_per_level() -> None:
    """6b, ID 0 ampere_sgemm_32x32_sliced1x4_tn: fadd 6,144, fmul 8,192, ffma 65,536; 7,488 ns;
    dram 512, lts 233,856, l1tex 384 bytes. ID 1 splitKreduce: fadd 12, fmul 4; 4,224 ns; dram 256."""
    derived = counters.frame(readers.read(A100_SGEMM))
    sgemm, reduce = derived.iloc[0], derived.iloc[1]
    flops = 6_144 + 8_192 + 2 * 65_536
    assert sgemm["flops_sp"] == flops == 145_408
    assert (sgemm["flops_dp"], sgemm["flops_hp"], sgemm["flops_tensor"]) == (0, 0, 0)
    assert sgemm["flops_total"] == flops
    assert sgemm["time"] == close(7_488e-9)
    assert sgemm["flop_rate_total"] == close(flops / 7_488e-9)  # 1.942e10
    assert (sgemm["ai_dram"], sgemm["ai_l2"], sgemm["ai_l1"]) == (close(284.0), close(0.6218), close(378.67))
    assert (sgemm["l2_bytes"], sgemm["l1_bytes"], sgemm["dram_bytes"]) == (233_856, 384, 512)
    assert "the L1 counter looks low" in sgemm["ai_check"]  # 384 B at L1 against 233,856 at L2
    assert sgemm["basis"].startswith("time measured by the profiler")
    assert reduce["flops_total"] == 16 and reduce["ai_dram"] == close(0.0625)


def test_a100_sgemm_time_from_cycles_agrees_with_the_duration() -> None:
    """Both kernel times are in 6b: 7,556.52 cycles / 1,009,150,443.18 Hz = 7,488 ns; no note."""
    run = read_file(A100_SGEMM)
    c = counters.Counters.of_run(run)
    assert counters.cycle_time(c)[0] == close(7_556.52 / 1_009_150_443.18)
    assert counters.cycle_time(c)[0] == close(7_488e-9)
    assert not [note for note in run.notes if "cycles" in note]


def test_a100_bert_time_is_derived_from_cycles_and_labelled_so() -> None:
    """6c has no gpu__time_duration.sum: ID 6 runs 9,523.07 cycles at 991,986,882.72 Hz; ID 19
    (softmax) 4,434.15 at 850,105,089.75. The file also counts SASS instructions, so the time is
    unchecked, and the run's notes and the basis say so."""
    run = read_file(A100_BERT)
    derived = counters.frame(run)
    sgemm, softmax = derived.iloc[0], derived.iloc[1]
    assert sgemm["time"] == close(9_523.07 / 991_986_882.72)  # 9.600e-6 s
    assert softmax["time"] == close(4_434.15 / 850_105_089.75)  # 5.216e-6 s
    assert sgemm["basis"].startswith("time derived = elapsed cycles / SM clock")
    assert counters.UNCHECKED in sgemm["basis"]
    assert any("without gpu__time_duration.sum this time cannot be checked" in note for note in run.notes)
    flops = 196_608 + 262_144 + 2 * 4_194_304
    assert sgemm["flops_total"] == flops == 8_847_360
    assert sgemm["flop_rate_total"] == close(flops / (9_523.07 / 991_986_882.72))  # 9.216e11
    assert (sgemm["ai_dram"], sgemm["ai_l2"], sgemm["ai_l1"]) == (
        close(flops / 303_360),
        close(flops / 1_952_544),
        close(flops / 1_015_808),
    )  # 29.16, 4.531, 8.710
    assert softmax["flops_sp"] == 81_920 + 10_240 + 2 * 85_760 == 263_680
    assert softmax["flops_hp"] == 2 * 3_200


def test_a100_softmax_tensor_instructions_are_not_multiplied_by_volta_512() -> None:
    """6c ID 19 (a softmax) executed 160 tensor-pipe instructions on an Ampere GPU: no source gives
    a FLOP factor there, so the tensor work, and with it the total, is left unknown and said so."""
    run = readers.read(A100_BERT)
    derived = counters.frame(run)
    softmax = derived.iloc[1]
    assert math.isnan(softmax["flops_tensor"]) and math.isnan(softmax["flops_total"])
    assert tensor.RULES[tensor.UNKNOWN_GPU] in softmax["basis"]  # the file names no GPU
    run.device = {"name": "A100, SXM4 40 GB", "cc": "8.0"}
    assert tensor.RULES[tensor.UNCOUNTED] in counters.frame(run).iloc[1]["basis"]
    assert derived.iloc[0]["flops_tensor"] == 0  # ID 6: 0 tensor-pipe instructions, 0 work anywhere
    # FP16 weights: nvprof's and NERSC's, with ncu's 2025 half2 weighting named beside them
    assert softmax["flops_hp"] == 6_400 and counters.HALF_NOTE in softmax["basis"]
    assert counters.HALF_NOTE not in derived.iloc[0]["basis"]


@pytest.fixture(scope="module")
def v100() -> object:
    run = joining.join([readers.read(path) for path in V100_FILES])
    run.device = {"name": "Tesla V100-SXM2-16GB"}
    return run


def test_v100_files_join_only_where_every_run_names_the_same_kernel(v100) -> None:
    """The 12 one-metric runs agree on IDs 122-125 only; 104, 110, 116, 120 and 121 name other
    kernels in some runs (ID 120: bn_fw_tr_1C11 in six files, SwapDimension1And2InTensor3 in six)."""
    assert len(V100_FILES) == 12
    assert v100.launch_table["index"].tolist() == [122, 123, 124, 125]
    assert v100.launch_table["kernel"].tolist()[1:3] == ["volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn"] * 2
    assert any(
        note.startswith("5 of 9 launch IDs name different kernels in different files and were left out")
        for note in v100.notes
    )
    assert len(v100.metric_table) == 4 * 12


def test_v100_tensor_gemm_by_the_nersc_formula(v100) -> None:
    """ID 123: 7,077,888 tensor-pipe instructions x 512 = 3,623,878,656 FLOP, + fmul 28,311,552;
    180,758.90 cycles / 1,297,716,360.00 Hz; dram 70,852,192, lts 107,347,328, l1tex 112,917,760."""
    gemm = counters.frame(v100).iloc[1]
    assert gemm["flops_tensor"] == 512 * 7_077_888 == 3_623_878_656
    assert gemm["flops_sp"] == 28_311_552 and gemm["flops_hp"] == 0 and math.isnan(gemm["flops_dp"])
    assert gemm["flops_total"] == 3_652_190_208
    time = 180_758.90 / 1_297_716_360.00
    assert gemm["time"] == close(time) == close(1.39290e-4)
    assert gemm["flop_rate_total"] == close(3_652_190_208 / time) == close(2.622e13)
    assert (gemm["ai_dram"], gemm["ai_l2"], gemm["ai_l1"]) == (close(51.55), close(34.02), close(32.34))
    assert gemm["ai_check"] == ""  # 112.9 MB at L1 >= 107.3 MB at L2 >= 70.9 MB at DRAM
    assert gemm["dominant"] == "fp16/tensor"
    assert tensor.RULES[tensor.VOLTA] in gemm["basis"]
    # Consistent with 2·m·n·k: if the 28,311,552 FP32 multiplies are the epilogue's one per output
    # element (m·n), the tensor work is 2·m·n·k with k = 64 exactly (docs/tensor-cores.md section 1).
    assert gemm["flops_tensor"] == 2 * 28_311_552 * 64


def test_v100_gemm_kernel_row_divides_the_kernels_sums(v100) -> None:
    """IDs 123 and 124 are one kernel: NERSC's per-kernel values are sums over its launches (ID 124:
    tensor 3,538,944 x 512 + fmul 14,155,776; 94,587.12 cycles / 1,299,887,048.19 Hz; dram
    28,344,480, lts 32,189,120, l1tex 35,165,312)."""
    row = kernel_table([v100]).set_index("kernel").loc["volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn"]
    flops = 3_652_190_208 + 512 * 3_538_944 + 14_155_776
    time = 180_758.90 / 1_297_716_360.00 + 94_587.12 / 1_299_887_048.19
    assert row["launches"] == 2
    assert row["total FLOP/launch"] == close(flops / 2)
    assert row["tensor FLOP/launch"] == close((3_623_878_656 + 1_811_939_328) / 2)
    assert row["FLOP/s total"] == close(flops / time)  # 2.583e13
    assert row["AI DRAM (FLOP/byte)"] == close(flops / (70_852_192 + 28_344_480))
    assert row["AI L2 (FLOP/byte)"] == close(flops / (107_347_328 + 32_189_120))
    assert row["AI L1 (FLOP/byte)"] == close(flops / (112_917_760 + 35_165_312))
    # the V100 SXM2's DRAM roof (900 GB/s x AI 55.2) is below its 125 TFLOP/s FP16 tensor roof
    assert row["binding ceiling"].startswith("DRAM 900 GB/s")
    assert row["binding ceiling (FLOP/s)"] == close(900e9 * flops / (70_852_192 + 28_344_480))
    assert row["% of binding ceiling"] == close(100 * (flops / time) / row["binding ceiling (FLOP/s)"])


def test_v100_tensor_work_needs_the_gpu_named() -> None:
    """The V100 files do not name their GPU: 512 per instruction is Volta's, so without the GPU the
    GEMM's tensor work and total stay empty, and the basis says how to name it."""
    gemm = counters.frame(joining.join([readers.read(path) for path in V100_FILES])).iloc[1]
    assert math.isnan(gemm["flops_total"]) and gemm["flops_sp"] == 28_311_552
    assert "gpuprof import --gpu" in gemm["basis"]


def test_a100_gemm_tensor_pipe_instructions_leave_its_total_open() -> None:
    """The A100 roofline capture's gemm_v1<float> ran 67,161,292,800 tensor-pipe instructions but
    the file has no sm__ops_path_tensor_* counter: its total FLOPs are not the FP32 + FP16 count.
    Its L2 counted more bytes (40,927,345,510,272) than its L1 (38,708,392,755,200): flagged."""
    gemm = counters.frame(readers.read(A100)).iloc[2]
    assert gemm["flops_sp"] == 2 * 34_359_738_368_000 and gemm["flops_hp"] == 2 * 2_149_161_369_600
    assert math.isnan(gemm["flops_tensor"]) and math.isnan(gemm["flops_total"])
    assert tensor.RULES[tensor.UNCOUNTED] in gemm["basis"]  # the file says CC 8.0
    assert gemm["ai_check"].startswith("AI L1 > AI L2")


def _import_json(tmp_path: Path, *args: str) -> tuple[list[dict], str]:
    result = CliRunner().invoke(main, ["import", *args, "--format", "json", "--store", str(tmp_path / "s.sqlite")])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result.stderr


def test_import_shows_flops_rate_and_intensity_of_nersc_files(tmp_path: Path) -> None:
    rows, _ = _import_json(tmp_path, str(A100_SGEMM), str(A100_BERT))
    sgemm, bert = rows[0], rows[2]
    assert sgemm["total FLOP/launch"] == 145_408 and sgemm["FLOP/s total"] == close(1.942e10)
    assert sgemm["AI DRAM (FLOP/byte)"] == close(284.0) and sgemm["AI L1 (FLOP/byte)"] == close(378.67)
    assert bert["total FLOP/launch"] == 8_847_360 and bert["FLOP/s total"] == close(9.216e11)
    assert bert["AI L2 (FLOP/byte)"] == close(4.531)
    assert "time derived = elapsed cycles / SM clock" in bert["basis"]


def test_import_join_with_the_gpu_named(tmp_path: Path) -> None:
    rows, notes = _import_json(tmp_path, "--join", "--gpu", "v100-sxm2", *map(str, V100_FILES))
    assert "as ncu-csv: 4 launches" in notes and "5 of 9 launch IDs" in notes
    assert "GPU named on the command line (--gpu): Tesla V100, SXM2 16/32 GB, compute capability 7.0" in notes
    gemm = next(row for row in rows if row["kernel"].startswith("volta_fp16_s884gemm"))
    assert gemm["file"] == "ncu_csv_v100_nersc_one_metric_per_run_tf_fp16_EXCERPT.*.csv"
    assert gemm["device"] == "Tesla V100, SXM2 16/32 GB"
    assert gemm["total FLOP/launch"] == close((3_652_190_208 + 1_826_095_104) / 2)


def test_gpu_named_must_match_the_files_compute_capability(tmp_path: Path) -> None:
    from gpuprof.errors import InputError

    with pytest.raises(InputError, match="compute capability 8.0, but --gpu v100-sxm2"):
        import_files([A100], tmp_path / "s.sqlite", gpu="v100-sxm2")


def test_a100_gemm_total_by_nersc_512_when_the_user_asks(tmp_path: Path) -> None:
    """With --tensor-flop-per-inst 512, gemm_v1<float> (A100, ID 2) gets NERSC's total, computed by hand
    from the file: 2 x ffma 34,359,738,368,000 + 2 x hfma 2,149,161,369,600 + 512 x tensor-pipe
    67,161,292,800 = 107,404,381,388,800 FLOP, over 25,610,472,227.46 cycles at 764,999,999.31 Hz."""
    rows, notes = _import_json(tmp_path, "--tensor-flop-per-inst", "512", str(A100))
    gemm = rows[1]
    assert gemm["tensor FLOP/launch"] == 512 * 67_161_292_800
    assert gemm["total FLOP/launch"] == 107_404_381_388_800
    assert gemm["FLOP/s total"] == close(107_404_381_388_800 / (25_610_472_227.46 / 764_999_999.31))
    assert gemm["AI DRAM (FLOP/byte)"] == close(107_404_381_388_800 / 807_658_682_624)
    assert (
        "tensor FLOPs = 512 x tensor-pipe warp instructions, the factor given with --tensor-flop-per-inst"
        in gemm["basis"]
        and "an estimate, not a count" in gemm["basis"]
    )
    assert "--tensor-flop-per-inst 512: tensor FLOPs = 512 x tensor-pipe warp instructions" in notes
    assert rows[0]["tensor FLOP/launch"] == 0  # randomInit ran no tensor-pipe instruction: nothing to multiply
    stored = import_files([A100], tmp_path / "s.sqlite")[0]  # without the factor: another run, total left open
    assert math.isnan(counters.frame(stored).iloc[2]["flops_total"])


def test_the_given_factor_does_not_override_counted_or_documented_work(tmp_path: Path) -> None:
    """Volta keeps its documented 512 whatever the user gives (V100 GEMM, ID 123: 7,077,888 tensor
    instructions); the factor applies only where no rule counts the work."""
    from gpuprof.importing import take_tensor_factor

    run = joining.join([readers.read(path) for path in V100_FILES])
    take_tensor_factor(run, 1024)
    gemm = counters.frame(run).iloc[1]
    assert gemm["flops_tensor"] == 1024 * 7_077_888  # the GPU is unnamed: the user's factor, said so
    assert "the factor given with --tensor-flop-per-inst" in gemm["basis"]
    [named] = import_files(V100_FILES, tmp_path / "s.sqlite", join=True, gpu="v100-sxm2", tensor_flop_per_inst=1024)
    assert counters.frame(named).iloc[1]["flops_tensor"] == 512 * 7_077_888
    assert tensor.RULES[tensor.VOLTA] in counters.frame(named).iloc[1]["basis"]


def test_tensor_factor_must_be_positive(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["import", "--tensor-flop-per-inst", "0", str(A100), "--store", str(tmp_path / "s.sqlite")]
    )
    assert result.exit_code == 2 and "0<x<=1000000" in result.output.replace(" ", "")
    assert not (tmp_path / "s.sqlite").exists()
