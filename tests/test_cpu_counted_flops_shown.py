"""Counted FLOPs from CPU FP events shown by import, gpuprof.kernels and show (issue 28, item 5),
on real perf stat outputs: an Intel i7-1185G7 (fp_arith_inst_retired.*, AVX-512) and an AMD Zen 3
(fp_ret_sse_avx_ops.all beside .mac_flops, multiplexed). Truth from the files' counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_paths import FIXTURES

import gpuprof
from gpuprof.cli import main

CPU = FIXTURES.parent / "cpu-counters"
INTEL = CPU / "perf-stat-human-fp512-i7-1185G7-suanpan.txt"
AMD = CPU / "perf-stat-amd-zen3-fp-ret-all-and-mac-flops-multiplexed-5600X-gemm.txt"
# 563,539,901,688 x 8 + 3,849,289 x 4 + 17,075,053 x 2 + 122,202,329 x 1 (double lanes)
INTEL_FLOPS = 563_539_901_688 * 8 + 3_849_289 * 4 + 17_075_053 * 2 + 122_202_329
INTEL_SECONDS = 39.428329959
AMD_FLOPS = 189_842_679_235  # fp_ret_sse_avx_ops.all already counts FLOPs: not weighted, mac_flops not added
AMD_SECONDS = 1.424528639


def imported(tmp_path: Path, path: Path) -> dict:
    result = CliRunner().invoke(main, ["import", "--store", str(tmp_path / "s.sqlite"), str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)[0]


def test_import_shows_intel_counted_flops_and_rate_with_the_lane_weights(tmp_path: Path) -> None:
    row = imported(tmp_path, INTEL)
    assert row["flop_count_dp/launch (FLOP)"] == INTEL_FLOPS
    assert row["FLOP/s dp"] == pytest.approx(INTEL_FLOPS / INTEL_SECONDS)
    assert row["time/launch (s)"] == pytest.approx(INTEL_SECONDS)
    assert "FP_ARITH_INST_RETIRED × lanes" in row["basis"] and "measured" in row["origin"]


def test_import_takes_amd_fp_ret_all_as_flops_without_reweighting(tmp_path: Path) -> None:
    row = imported(tmp_path, AMD)
    assert row["total FLOP/launch"] == AMD_FLOPS
    assert row["FLOP/s total"] == pytest.approx(AMD_FLOPS / AMD_SECONDS)
    assert "flop_count_sp/launch (FLOP)" not in row  # .all does not say the precision
    assert "mac_flops also counted: part of .all, not added again" in row["basis"]


def test_library_kernels_and_show_give_the_same_counted_flops(tmp_path: Path) -> None:
    table = gpuprof.kernels(INTEL)
    assert table.iloc[0]["flop_count_dp/launch (FLOP)"] == INTEL_FLOPS
    assert table.iloc[0]["FLOP/s dp"] == pytest.approx(INTEL_FLOPS / INTEL_SECONDS)
    store = tmp_path / "s.sqlite"
    CliRunner().invoke(main, ["import", "--store", str(store), str(INTEL)])
    shown = CliRunner().invoke(main, ["show", "--store", str(store), "c7b6b9", "--format", "json"])
    assert shown.exit_code == 0, shown.output
    rows = {row["metric"]: row for row in json.loads(shown.stdout)}
    assert rows["counted FLOPs"]["value"] == INTEL_FLOPS and rows["counted FLOPs"]["origin"] == "measured"
    assert rows["counted FLOP/s"]["value"] == pytest.approx(INTEL_FLOPS / INTEL_SECONDS)
    assert "FP_ARITH_INST_RETIRED × lanes" in rows["counted FLOPs"]["text"]


def test_compare_shows_counted_flops_and_rate_of_cpu_imports_with_their_basis(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    CliRunner().invoke(main, ["import", "--store", str(store), str(INTEL)])
    result = CliRunner().invoke(main, ["compare", "--store", str(store), "--import", str(AMD), "--wide"])
    assert result.exit_code == 0, result.output
    from gpuprof.compare import imported_frame
    from gpuprof.readers import read

    frame, _ = imported_frame([read(INTEL), read(AMD)])
    intel, amd = frame.to_dict("records")
    assert intel["counted FLOPs/launch (all precisions)"] == INTEL_FLOPS
    assert intel["counted MFLOP/s (all precisions)"] == pytest.approx(INTEL_FLOPS / INTEL_SECONDS / 1e6)
    assert amd["counted FLOPs/launch (all precisions)"] == AMD_FLOPS  # .all as FLOPs, mac_flops not added
    assert amd["counted MFLOP/s (all precisions)"] == pytest.approx(AMD_FLOPS / AMD_SECONDS / 1e6)
    assert "FP_ARITH_INST_RETIRED × lanes" in intel["MFLOP/s origin"] and intel["MFLOP/s origin"].startswith("measured")
    assert "not added again" in amd["MFLOP/s origin"]
    # the table the command printed carries them (114,346 MFLOP/s = 4.508e12 FLOPs / 39.43 s)
    assert "4.508e+12" in result.output and "114,346" in result.output and "133,267" in result.output
    # --dtype float64 also fills the study's per-precision columns from the Intel double-precision lanes
    frame64, _ = imported_frame([read(INTEL)], "float64")
    assert frame64.iloc[0]["FLOPs/launch (float64)"] == INTEL_FLOPS


def test_roofline_input_carries_the_counted_cpu_flops() -> None:
    # the roofline's per-kernel sums (derive input) hold the Intel FP64 FLOPs and AMD's total; with no
    # memory counter in a perf stat file there is no intensity, so no point is drawn (roofline's rule)
    from gpuprof.derive.roofline import _kernel_sums
    from gpuprof.readers import read

    intel = _kernel_sums(read(INTEL)).iloc[0]
    assert intel["flops_fp64"] == INTEL_FLOPS and intel["time"] == pytest.approx(INTEL_SECONDS)
    assert _kernel_sums(read(AMD)).iloc[0]["flops_all"] == AMD_FLOPS
