"""The one per-kernel aggregation step (gpuprof/derive/kernels.py): gpuprof.launches() gives the rows
every per-kernel table aggregates, by one rule per quantity; checked on real fixtures (an ncu CSV, a
.ncu-rep, nvprof files) by re-aggregating those rows here with plain pandas, and on tiny in-memory runs
for the completeness flags."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpuprof
from gpuprof.derive import kernels, roofline
from gpuprof.diffing import values
from gpuprof.model import Launch, Metric, Run

OUT = Path(__file__).parent / "fixtures" / "profiler-outputs"
NCU_CSV = OUT / "ncu_csv_details_a100_roofline_printfp.csv"
NCU_REP = OUT / "ncu_report_binary_2020_win_montecarlo_pi.ncu-rep"
NVPROF = OUT / "nvprof_csv_metrics_k40c_flop_stall.csv"
V100 = OUT / "ncu_csv_details_v100_2020_kernel_time_col.log"
PER_PRECISION = ("flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor", "flops_total")


def _path(path: Path) -> Path:
    if path.suffix == ".ncu-rep":
        pytest.importorskip("ncu_report", reason="reading a .ncu-rep needs NVIDIA's ncu_report module")
    return path


def _by_hand(rows: pd.DataFrame) -> pd.DataFrame:
    """The documented rules, re-done with a plain groupby over gpuprof.launches() rows."""
    out = []
    for _, group in rows.groupby(["file", "session", "device", "kernel"], sort=False):
        w = group["launches"].astype(float)
        time = group["time"]

        def per_launch(name: str, group: pd.DataFrame = group, w: pd.Series = w) -> float:
            known = group[name].notna()
            return (group[name][known] * w[known]).sum() / w[known].sum() if known.any() else math.nan

        def time_weighted(name: str, group: pd.DataFrame = group, w: pd.Series = w, time: pd.Series = time) -> float:
            both = group[name].notna() & time.notna()
            return ((group[name] * time * w)[both].sum() / (time * w)[both].sum()) if both.any() else per_launch(name)

        def over(top: str, bottom: str, group: pd.DataFrame = group, w: pd.Series = w) -> float:
            both = group[top].notna() & group[bottom].notna()
            below = (group[bottom] * w)[both].sum()
            return (group[top] * w)[both].sum() / below if both.any() and below > 0 else math.nan

        out.append(
            {
                "kernel": group["kernel"].iat[0],
                "launches": int(w.sum()),
                "time/launch (s)": per_launch("time"),
                "time total (s)": (time * w).sum(min_count=1),
                "flop_count_sp/launch (FLOP)": per_launch("flops_fp32"),
                "flop_count_dp/launch (FLOP)": per_launch("flops_fp64"),
                "total FLOP/launch": per_launch("flops_total"),
                "FLOP/s sp": time_weighted("flop_rate_fp32"),
                "SM clock (Hz)": time_weighted("sm_clock"),
                "DRAM bytes/launch": per_launch("dram_bytes"),
                "DRAM bandwidth (byte/s)": time_weighted("dram_bandwidth"),
                "FLOP/s total": over("flops_total", "time"),
                "AI DRAM (FLOP/byte)": over("flops_total", "dram_bytes"),
                "AI L2 (FLOP/byte)": over("flops_total", "l2_bytes"),
            }
        )
    return pd.DataFrame(out)


@pytest.mark.parametrize("path", [NCU_CSV, NCU_REP, NVPROF, V100], ids=lambda p: p.name[:30])
def test_the_kernel_table_aggregates_exactly_the_launch_rows(path: Path) -> None:
    rows = gpuprof.launches(_path(path))
    table = gpuprof.kernels(path)
    assert len(rows) == len(gpuprof.read(path).launch_table)
    assert set(PER_PRECISION) <= set(rows.columns) and rows["basis"].notna().all()
    expected = _by_hand(rows)
    assert table["kernel"].tolist() == expected["kernel"].tolist()
    checked = 0
    for column in expected.columns[1:]:
        if column not in table:  # the table drops a column no kernel has
            assert expected[column].isna().all(), column
            continue
        got, want = table[column].astype(float).to_numpy(), expected[column].astype(float).to_numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True, err_msg=column)
        checked += int(np.isfinite(want).sum())
    assert checked >= len(table) * 2  # real values compared, not only NaNs


NSYS = OUT / "nsys_export_sqlite_h200_nvfuser_nvtx_report1.sqlite"


@pytest.mark.parametrize("path", [NCU_CSV, NVPROF, V100, NSYS], ids=lambda p: p.name[:30])
def test_the_kernel_table_folded_a_few_launches_at_a_time_is_the_same_table(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run too large for one launch frame is aggregated a frame at a time (a 10 GB import): the
    sums folded launch by launch across frames give the one-frame table bit for bit (several
    kernels, invocation weights, NVTX and API spans beside kernels)."""
    from gpuprof.derive import kernel_table as kernel_table_module

    run = gpuprof.read(path)
    frame = kernels.launch_frame(run, kernel_table_module.KEY_METRICS, roofline=False)
    whole = kernels.aggregate(frame, kernel_table_module.KEY_METRICS)
    pieces = [frame.iloc[i : i + 1] for i in range(min(len(frame), 12))] + [frame.iloc[12:]]  # one by one, the rest
    pd.testing.assert_frame_equal(
        kernels.aggregate_frames(pieces, kernel_table_module.KEY_METRICS), whole, check_exact=True
    )
    table = kernel_table_module.kernel_table([run])
    monkeypatch.setattr(kernel_table_module, "FRAME_LAUNCHES", max(2, len(frame) // 4))
    pd.testing.assert_frame_equal(kernel_table_module.kernel_table([run]), table, check_exact=True)
    assert len(table) >= 1


def test_a_kernel_rate_is_its_flops_over_its_time_not_a_mean_of_rates() -> None:
    """randomInit ran twice in the A100 file. Before the one aggregation step the import table gave
    the mean of the two launches' FLOP/s (2.49715553e8); the kernel's FLOPs over its seconds is
    2.49715277e8, which is what the table now gives (each launch's own FLOP/s is its FLOPs / time)."""
    rows = gpuprof.launches(NCU_CSV)
    init = rows[rows["kernel"].str.startswith("void randomInit")]
    assert len(init) == 2 and init["flop_rate_fp32"].nunique() == 2
    np.testing.assert_allclose(init["flop_rate_fp32"], init["flops_fp32"] / init["time"], rtol=1e-12)
    truth = init["flops_fp32"].sum() / init["time"].sum()
    row = gpuprof.kernels(NCU_CSV).set_index("kernel").loc[init["kernel"].iat[0]]
    assert row["FLOP/s sp"] == pytest.approx(truth, rel=1e-12)
    assert row["FLOP/s sp"] == pytest.approx(2.49715277e8, rel=1e-8)
    assert init["flop_rate_fp32"].mean() == pytest.approx(2.49715553e8, rel=1e-8)  # the old, wrong, number


def test_the_sm_clock_of_a_kernel_is_weighted_by_its_time() -> None:
    rows = gpuprof.launches(V100)
    step = rows[rows["kernel"] == "cuda_compute_step_factor"]
    assert len(step) == 15
    row = gpuprof.kernels(V100).set_index("kernel").loc["cuda_compute_step_factor"]
    assert row["SM clock (Hz)"] == pytest.approx(
        (step["sm_clock"] * step["time"]).sum() / step["time"].sum(), rel=1e-12
    )
    assert row["SM clock (Hz)"] == pytest.approx(1.1593e9, rel=1e-4)


def test_nvprof_aggregate_rows_count_their_invocations() -> None:
    rows = gpuprof.launches(NVPROF)
    (row,) = rows.to_dict("records")
    assert row["launches"] == 3 and row["flops_fp32"] == 25264160800 and math.isnan(row["time"])
    (kernel,) = kernels.kernel_frame([gpuprof.read(NVPROF)]).to_dict("records")
    assert kernel["flops_fp32"] == 3 * 25264160800 and kernel["flops_fp32_per_launch"] == 25264160800
    assert kernel["flops_fp32_complete"] and not kernel["time_complete"]
    assert math.isnan(kernel["flop_rate_fp32"]) and math.isnan(kernel["ai_dram_fp32"])  # no time, no bytes


def _run(*launches: dict[str, float]) -> Run:
    names = {
        "time": ("gpu__time_duration.sum", "second"),
        "sp": ("flop_count_sp", "FLOP"),
        "dram": ("dram__bytes.sum", "byte"),
    }
    return Run(
        "import",
        "test",
        "memory.csv",
        device={"name": "Tesla V100-SXM2-16GB"},
        launches=[
            Launch("k", i, metrics=[Metric(names[k][0], v, names[k][1]) for k, v in launch.items()])
            for i, launch in enumerate(launches)
        ],
    )


def test_completeness_flags_and_sums_over_the_launches_that_have_a_value() -> None:
    run = _run({"time": 1e-3, "sp": 4e9, "dram": 1e8}, {"time": 3e-3, "dram": 3e8})
    (row,) = kernels.kernel_frame([run]).to_dict("records")
    assert row["launches"] == 2 and row["time"] == pytest.approx(4e-3) and row["time_complete"]
    assert row["flops_fp32"] == 4e9 and not row["flops_fp32_complete"] and row["flops_fp32_per_launch"] == 4e9
    assert row["flop_rate_fp32"] == pytest.approx(4e12)  # over the launch that has both
    assert row["ai_dram"] == pytest.approx(4e9 / 1e8)  # FLOPs over the bytes of the same launches
    assert row["dram_bandwidth"] == pytest.approx(4e8 / 4e-3)
    assert row["ai_dram_fp32"] == pytest.approx(4e9 / 1e8) and math.isnan(row["ai_dram_fp64"])
    # the roofline places a kernel only from complete sums
    points, skipped = roofline.points([run])
    assert points.empty and skipped == [
        f"1 run(s) with no FLOPs (counted in some launches only) to place (1 test): {run.run_id[:8]}"
    ]
    complete = _run({"time": 1e-3, "sp": 4e9, "dram": 1e8}, {"time": 3e-3, "sp": 2e9, "dram": 3e8})
    points, _ = roofline.points([complete])
    (point,) = points.to_dict("records")
    assert point["ai"] == pytest.approx(6e9 / 4e8) and point["flop_rate"] == pytest.approx(6e9 / 4e-3)


def test_an_empty_run_gives_empty_frames_with_the_columns() -> None:
    empty = Run("import", "test", "nothing.csv")
    assert len(kernels.launch_frame(empty)) == 0 and len(kernels.kernel_frame([empty])) == 0
    assert set(PER_PRECISION) <= set(kernels.kernel_frame([]).columns)
    assert "launches" in gpuprof.__all__ and len(gpuprof.launches([])) == 0


def test_each_kind_of_work_has_its_own_point() -> None:
    """The roofline per precision (a later chart draws FP64, FP32, FP16 and tensor apart): each kind's
    FLOPs over the kernel's bytes at each level, from the same launch rows."""
    rows = gpuprof.launches(NCU_CSV)
    frame = kernels.kernel_frame([gpuprof.read(NCU_CSV)]).set_index("kernel")
    for kernel, group in rows.groupby("kernel"):
        for level in ("l1", "l2", "dram"):
            for p in ("fp32", "fp16"):
                want = group[f"flops_{p}"].sum() / group[f"{level}_bytes"].sum()
                assert frame.loc[kernel, f"ai_{level}_{p}"] == pytest.approx(want, rel=1e-12)
    assert (frame["ai_dram_fp32"] > 0).all() and frame["ai_dram_fp16"].tolist()[0] == 0
    assert frame["ai_dram_fp16"].tolist()[1] > 0  # gemm_v1 ran FP16 instructions too


@pytest.mark.parametrize("path", [NCU_CSV, V100], ids=lambda p: p.name[:30])
def test_diff_compares_the_same_launch_rows(path: Path) -> None:
    run = gpuprof.read(path)
    rows, compared = gpuprof.launches(run), values.imported(run)
    for ours, theirs in (
        ("time", "time"),
        ("flops_total", "flops"),
        ("dram_bytes", "bytes"),
        ("l2_bytes", "l2_bytes"),
        ("sm_clock", "sm_clock"),
        ("ai_dram", "intensity"),
        ("flop_rate_total", "flop_rate"),
    ):
        np.testing.assert_array_equal(rows[ours].to_numpy(dtype=float), compared[theirs].to_numpy(dtype=float))
    assert np.isfinite(compared["time"]).all()
