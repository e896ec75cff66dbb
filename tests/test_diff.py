"""``gpuprof diff`` on real pairs: profiler files from the fixtures (nvprof against ncu, K40 against
RTX 3080, A100 before and after) and CPU runs gpuprof measures here. Expected values are read from
the files by this test, independently of gpuprof's readers."""

from __future__ import annotations

import csv
import json
import re
import statistics
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result
from fixture_paths import A100, A100_ERRORS, EVENTS_MAXDNN, FIXTURES, K40C, SUMMARY_MS, V100

import gpuprof
from gpuprof.cli import main
from gpuprof.derive.stalls import fold_to_nvprof, stall_profiles
from gpuprof.derive.stats import timing_stats
from gpuprof.derive.summary import timings
from gpuprof.diffing import diff
from gpuprof.diffing.report import header
from gpuprof.model import Run
from gpuprof.store import open_store
from gpuprof.store.runfile import load as load_runs

MONTECARLO = FIXTURES / "ncu_report_binary_2020_win_montecarlo_pi.ncu-rep"
BERT = FIXTURES / "ncu_csv_a100_nersc_rule_columns_unnamed_ns_bert_EXCERPT.csv"
NERSC_A100 = FIXTURES / "ncu_csv_a100_nersc_roofline_metrics_with_duration_sgemm.csv"
TOTAL = "(matched kernels, time-weighted)"


def cli(*args: object) -> Result:
    return CliRunner().invoke(main, ["diff", *map(str, args)])


def rows(frame, kernel: str | None = None) -> dict[str, dict]:
    """metric -> row of one kernel (the first whose label contains ``kernel``, or the total)."""
    label = TOTAL if kernel is None else next(k for k in frame["kernel"] if kernel in k)
    return {r["metric"]: r for r in frame[frame["kernel"] == label].to_dict("records")}


def ncu_values(path: Path, metric: str) -> dict[int, tuple[str, float]]:
    """ID -> (kernel, value) of one metric, read from an Nsight Compute CSV with the csv module."""
    text = path.read_text()
    reader = csv.DictReader(text[text.index('"ID"') :].splitlines())
    return {
        int(r["ID"]): (r["Kernel Name"], float(r["Metric Value"].replace(",", "")))
        for r in reader
        if r.get("Metric Name") == metric
    }


# ---- profiler files -------------------------------------------------------------------------------


def test_nvprof_against_ncu_of_the_same_program_matches_kernels_by_function_name() -> None:
    """The same Rodinia cfd run on a V100 under nvprof (summary, names with parameters) and under
    Nsight Compute (names without them, 'Duration' instead of nvprof's 'Avg')."""
    result = diff(SUMMARY_MS, V100)
    flux = rows(result.frame, "cuda_compute_flux")
    nvprof = next(line.split() for line in SUMMARY_MS.read_text().splitlines() if "cuda_compute_flux(" in line)
    durations = [v for kernel, v in ncu_values(V100, "Duration").values() if kernel == "cuda_compute_flux"]
    assert flux["time"]["A"] == pytest.approx(float(nvprof[5]) * 1e-3)  # Avg column, in ms (-u ms)
    assert flux["time"]["B"] == pytest.approx(statistics.median(durations) * 1e-9)
    assert (flux["launches"]["A"], flux["launches"]["B"]) == (int(nvprof[4]), len(durations))
    low, high = float(nvprof[6]) * 1e-3, float(nvprof[7]) * 1e-3  # nvprof's Min and Max of the 6000 calls
    assert low <= flux["time"]["B"] <= high
    assert flux["time"]["verdict"] == (
        f"single measurement (n=1/{len(durations)}; B's median within A's min..max of 6000 calls)"
    )
    assert result.matched == 3 and result.only == (4, 0)
    only_a = set(result.frame.loc[result.frame["verdict"] == "only in A", "kernel"])
    assert only_a == {
        "[CUDA memcpy DtoD]",
        "[CUDA memcpy HtoD]",
        "[CUDA memset]",
        "cuda_initialize_variables(int, float*)",
    }
    assert any("without parameter lists" in n for n in result.notes)
    gated = diff(SUMMARY_MS, V100, fail_if=["time:+5%"])
    decided = {r["kernel"].split("(")[0]: r["gate"] for r in gated.frame.to_dict("records") if r["metric"] == "time"}
    assert decided["cuda_compute_flux"] == "time:+5% inconclusive"  # one aggregate whose range holds B
    assert decided["cuda_time_step"] == "time:+5% REGRESSED"  # ncu's median above nvprof's Max
    assert gated.exit_code == 1


def test_config_matching_pairs_launches_by_grid_and_lists_the_renamed_kernel_on_each_side() -> None:
    """Two A100 captures of the same GEMM program: randomInit launched with two grids, gemm_v1 in
    one file and gemm_v0 in the other."""
    result = diff(A100, A100_ERRORS)
    frame = result.frame
    assert result.matched == 2 and result.only == (1, 1)
    assert frame.loc[frame["verdict"] == "only in A", "kernel"].iloc[0].startswith("void gemm_v1<float>")
    assert frame.loc[frame["verdict"] == "only in B", "kernel"].iloc[0].startswith("void gemm_v0<float>")
    cycles, clock = (ncu_values(A100, m) for m in ("smsp__cycles_elapsed.avg", "smsp__cycles_elapsed.avg.per_second"))
    wide = rows(frame, "grid 1280,640,1")  # ID 1 of the first file
    assert wide["time"]["A"] == pytest.approx(cycles[1][1] / clock[1][1])
    named = diff(A100, A100_ERRORS, match="name")
    assert rows(named.frame, "randomInit")["launches"]["A"] == 2  # both grids are one kernel by name


def test_order_matching_pairs_the_renamed_kernel() -> None:
    result = diff(A100, A100_ERRORS, match="order")
    gemm = rows(result.frame, "gemm_v1")
    assert "↔" in next(k for k in result.frame["kernel"] if "gemm_v1" in k)
    b_cycles, b_clock = (
        ncu_values(A100_ERRORS, m) for m in ("smsp__cycles_elapsed.avg", "smsp__cycles_elapsed.avg.per_second")
    )
    assert gemm["time"]["B"] == pytest.approx(b_cycles[2][1] / b_clock[2][1])
    assert result.only == (0, 0)
    # gemm_v1 ran the tensor pipe (smsp__inst_executed_pipe_tensor.sum > 0) and no metric counts its
    # FLOPs on an A100: no FLOP/s on either side, so a FLOP/s gate cannot pass
    assert ncu_values(A100, "smsp__inst_executed_pipe_tensor.sum")[2][1] > 0
    gated = diff(A100, A100_ERRORS, match="order", fail_if=["flop_rate:-3%"])
    assert rows(gated.frame, "gemm_v1")["flop_rate"]["verdict"] == "not in A or B"
    assert gated.gates[0].status == "inconclusive" and gated.exit_code == 2


def test_k40_nvprof_against_rtx3080_ncu_compares_renamed_metrics_and_folded_stalls() -> None:
    """nvprof's achieved_occupancy (a 0-1 ratio) against ncu's sm__warps_active percentage; ncu's
    warp states folded into nvprof's stall reasons (NVIDIA's mapping), checked against the object
    path of gpuprof.derive.stalls."""
    result = diff(K40C, MONTECARLO, match="order")
    pair = rows(result.frame, "forma_kernel")
    k40 = {r[3]: r[-1] for r in csv.reader(K40C.read_text().splitlines()[5:]) if len(r) == 8}
    assert pair["achieved_occupancy"]["A"] == pytest.approx(100 * float(k40["achieved_occupancy"]))
    init_rng = stall_profiles(gpuprof.read(MONTECARLO))[0]
    folded = fold_to_nvprof(init_rng)
    for reason in ("stall_sync", "stall_exec_dependency", "stall_memory_dependency"):
        assert pair[reason]["A"] == pytest.approx(float(k40[reason].rstrip("%")))
        assert pair[reason]["B"] == pytest.approx(100 * folded[reason])
    assert pair["peak_flop_rate"]["A"] == pytest.approx(4.291e12)  # device table: Tesla K40
    assert pair["peak_flop_rate"]["B"] == pytest.approx(29.768e12)  # GeForce RTX 3080
    assert pair["flops"]["A"] == float(k40["flop_count_sp"]) and pair["time"]["verdict"] == "not in A"
    assert result.only == (0, 1)  # computeValue has no partner: listed, not dropped


def test_k40_against_gtx980_gates_on_a_metric_only_one_side_has_as_inconclusive() -> None:
    outcome = cli(K40C, EVENTS_MAXDNN, "--match", "order", "--fail-if", "flop_sp_efficiency:-5%")
    assert outcome.exit_code == 2
    assert "gate flop_sp_efficiency:-5%: inconclusive" in outcome.output
    result = diff(K40C, EVENTS_MAXDNN, match="order")
    peaks = rows(result.frame, "forma")["peak_flop_rate"]
    assert (peaks["A"], peaks["B"]) == (pytest.approx(4.291e12), pytest.approx(4.981e12))


def test_v100_against_a100_with_the_devices_named_compares_peaks_and_occupancy() -> None:
    """Neither file names its GPU; --gpu-a/--gpu-b give the device table's peaks."""
    result = diff(V100, BERT, match="order", gpus=("V100-SXM2-16GB", "A100-SXM4-40GB"))
    pair = rows(result.frame, "cuda_compute_step_factor")

    def median(path: Path, metric: str, kernel: str) -> float:
        return statistics.median(v for k, v in ncu_values(path, metric).values() if k == kernel)

    assert pair["achieved_occupancy"]["A"] == median(V100, "Achieved Occupancy", "cuda_compute_step_factor")
    assert pair["achieved_occupancy"]["B"] == ncu_values(BERT, "Achieved Occupancy")[6][1]
    assert pair["time"]["A"] == pytest.approx(median(V100, "Duration", "cuda_compute_step_factor") * 1e-9)
    cycles, clock = (ncu_values(BERT, m)[6][1] for m in ("sm__cycles_elapsed.avg", "sm__cycles_elapsed.avg.per_second"))
    assert pair["time"]["B"] == pytest.approx(cycles / clock)
    assert pair["peak_bandwidth"]["A"] == pytest.approx(900e9) and pair["peak_bandwidth"]["B"] == pytest.approx(1555e9)
    assert "device: A100-SXM4-40GB (given with --gpu-b)" in header(result, ("V100", "A100-SXM4-40GB"))[1]
    wrong = cli(A100, BERT, "--gpu-a", "V100-SXM2-16GB")  # the file says compute capability 8.0
    assert wrong.exit_code == 2 and "compute capability 8.0" in wrong.output


def test_v100_nersc_join_against_a100_compares_tensor_flops_and_every_level(tmp_path: Path) -> None:
    """NERSC's method on both GPUs: the V100's twelve one-metric files joined into one stored run
    (import --join --gpu), against the A100 capture with the same metric list; FLOPs with tensor
    work, DRAM/L2/L1 bytes and intensities under one vocabulary. SOURCES.md 6a and 6b give the
    hand-computed truths these files are checked against."""
    store = tmp_path / "v100.sqlite"
    parts = sorted(FIXTURES.glob("ncu_csv_v100_nersc_one_metric_per_run_tf_fp16_EXCERPT.*.csv"))
    imported = CliRunner().invoke(
        main, ["import", "--join", "--gpu", "V100-SXM2-16GB", "--store", str(store), *map(str, parts)]
    )
    assert imported.exit_code == 0, imported.output
    result = diff(store, NERSC_A100, match="order", gpus=(None, "A100-SXM4-40GB"))
    gemm = rows(result.frame, "volta_fp16_s884gemm")

    def value(metric: str, launch: int) -> float:
        path = next(p for p in parts if p.name.endswith(f".{metric}.csv"))
        return ncu_values(path, metric)[launch][1]

    tensor = [512 * value("sm__inst_executed_pipe_tensor.sum", i) for i in (123, 124)]  # the Volta factor
    total = [t + value("sm__sass_thread_inst_executed_op_fmul_pred_on.sum", i) for t, i in zip(tensor, (123, 124))]
    assert gemm["flops_tensor"]["A"] == pytest.approx(statistics.median(tensor))
    assert gemm["flops"]["A"] == pytest.approx(statistics.median(total))
    assert gemm["intensity_l2"]["A"] == pytest.approx(
        statistics.median([f / value("lts__t_bytes.sum", i) for f, i in zip(total, (123, 124))])
    )
    sgemm = rows(result.frame, "ampere_sgemm_32x32_sliced1x4_tn")
    flops = sum(
        w * ncu_values(NERSC_A100, f"sm__sass_thread_inst_executed_op_f{op}_pred_on.sum")[0][1]
        for op, w in (("add", 1), ("mul", 1), ("fma", 2))
    )
    for metric, counter in (
        ("intensity", "dram__bytes.sum"),
        ("intensity_l2", "lts__t_bytes.sum"),
        ("intensity_l1", "l1tex__t_bytes.sum"),
    ):
        assert sgemm[metric]["B"] == pytest.approx(flops / ncu_values(NERSC_A100, counter)[0][1])
    assert sgemm["peak_bandwidth"]["B"] == pytest.approx(1555e9)  # --gpu-b: the A100's own ceiling


def test_totals_are_time_weighted_over_kernels_with_a_joint_bootstrap() -> None:
    """The V100 profile against itself with cuda_compute_flux's durations made 20 % longer: the
    kernel regressed, the others did not move, and the total moved by flux's share of the time."""
    run = gpuprof.read(V100)
    metrics = run.metric_table.copy()
    kernels = run.launch_table["kernel"].to_numpy()[metrics["launch"].to_numpy()]
    slower = (metrics["metric"] == "Duration").to_numpy() & (kernels == "cuda_compute_flux")
    metrics.loc[slower, "value"] *= 1.2
    after = Run(run.kind, run.format, "flux 20 % slower", run.device, tables=(run.launch_table, metrics))
    result = diff(run, after)
    durations: dict[str, list[float]] = {}
    for kernel, value in ncu_values(V100, "Duration").values():
        durations.setdefault(kernel, []).append(value)
    before = sum(sum(v) for v in durations.values())
    expected = (before + 0.2 * sum(durations["cuda_compute_flux"])) / before
    total = rows(result.frame)["time"]
    assert total["A"] == pytest.approx(before * 1e-9)
    assert 1 + total["change %"] / 100 == pytest.approx(expected)
    assert total["verdict"].startswith("regressed") and total["CI low %"] > 0
    assert rows(result.frame, "cuda_compute_flux")["time"]["verdict"].startswith("regressed")
    assert rows(result.frame, "cuda_time_step")["time"]["verdict"].startswith("unchanged")


# ---- CPU runs measured here ----------------------------------------------------------------------


STABLE_RUN = FIXTURES.parent / "stores" / "cpu_add_1MB_60_repeats_stable_epyc_2026-11-27.jsonl"


@pytest.fixture(scope="module")
def measured() -> Run:
    """A real CPU run of 60 repeats of a small add (each about 20 microseconds) that gpuprof calls
    stable (spread at most 10 %), recorded on the idle build VM (tests/fixtures/stores/SOURCES.md).
    Measured live, most such runs read unstable even on an idle VM (spreads of 11-41 %), and a 20 %
    slowdown inside 20 % noise is rightly no significant change, so these tests read the recording."""
    (run,), skipped = load_runs(STABLE_RUN)
    assert skipped == [] and timing_stats(timings(run)).stable
    return run


def part(run: Run, start: int, slower: float = 1.0) -> Run:
    """Every other timed repeat of ``run`` from ``start``, their times × ``slower``: a run of its own."""
    timed = [launch for launch in run.launches if launch.invocations == 1][start::2]
    launches = [
        replace(
            launch,
            metrics=[
                replace(m, value=float(m.value) * slower) if m.canonical == "kernel_duration" else m
                for m in launch.metrics
            ],
        )
        for launch in timed
    ]
    return Run(run.kind, run.format, run.source, run.device, run.workload, run.environment, launches)


def test_the_same_op_measured_twice_shows_no_significant_change(measured: Run) -> None:
    """Separate runs on this shared 2-core VM drift by up to ~20 % with other sessions' load, and
    diff rightly reports that; interleaving the repeats of one run into two measurements holds the
    machine equal, so equal work must read as no change."""
    time = rows(diff(part(measured, 0), part(measured, 1)).frame, "add")["time"]
    assert time["verdict"].startswith("no significant change"), time
    assert (time["n A"], time["n B"]) == (30, 30)


def test_a_planted_20_percent_slowdown_in_the_repeat_times_is_regressed(measured: Run) -> None:
    result = diff(part(measured, 0), part(measured, 1, slower=1.2), fail_if=["time:+5%", "flop_rate:-3%"])
    time, rate = (rows(result.frame, "add")[m] for m in ("time", "flop_rate"))
    assert time["verdict"].startswith("regressed (p=") and time["p"] < 1e-3
    assert rate["verdict"].startswith("regressed")
    assert not (result.frame["kernel"] == TOTAL).any()  # one kernel: its rows are the total
    assert [o.status for o in result.gates] == ["REGRESSED", "REGRESSED"] and result.exit_code == 1


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, measured: Run) -> Path:
    """A store with three runs: two halves of one measurement, and the second half made 20 % slower."""
    path = tmp_path_factory.mktemp("diff") / "runs.sqlite"
    with open_store(path) as opened:
        for run_id, run in (
            ("aaaa0001", part(measured, 0)),
            ("aaaa0002", part(measured, 1)),
            ("bbbb0003", part(measured, 1, slower=1.2)),
        ):
            run.run_id = run_id
            opened.add(run)
    return path


def test_exit_codes_passed_regressed_inconclusive(store: Path) -> None:
    passed = cli("aaaa0001", "aaaa0002", "--store", store, "--fail-if", "time:+10%")
    assert passed.exit_code == 0, passed.output
    assert "gate time:+10%: passed" in passed.output
    regressed = cli("aaaa0001", "bbbb0003", "--store", store, "--fail-if", "time:+5%")
    assert regressed.exit_code == 1 and "gate time:+5%: REGRESSED" in regressed.output
    inconclusive = cli("aaaa0001", "bbbb0003", "--store", store, "--fail-if", "achieved_occupancy:-5%")
    assert inconclusive.exit_code == 2
    assert (
        "gate achieved_occupancy:-5%: inconclusive: 1 of 1 row(s): add 288x288 float32 numpy: not in A or B"
        in inconclusive.output
    )  # a CPU run has no occupancy: the gate cannot pass on it


def test_runs_file_store_and_sweep_inputs(store: Path, tmp_path: Path) -> None:
    """A JSON-lines run file, a whole store and a sweep's results name the same kind of runs."""
    run_file = tmp_path / "runs.jsonl"
    assert CliRunner().invoke(main, ["export", str(run_file), "--store", str(store)]).exit_code == 0
    whole = diff(run_file, store)
    assert whole.matched == 1 and whole.sides[0].kind == "run file" and whole.sides[1].kind == "store"
    # three runs of one (op, shape, dtype, engine) a side: the newest is compared, the others named
    assert sum("2 older run(s) of the same op, shape, dtype and engine left out" in n for n in whole.notes) == 2
    assert rows(whole.frame, "add")["time"]["n A"] == 30  # one run's repeats, not three pooled
    config = tmp_path / "tiny.toml"
    config.write_text(
        'name = "tiny"\nrepeat = 5\nwarmup = 1\ncounters = false\n[[grid]]\nops = ["add"]\nsizes = ["1MB"]\n'
    )
    swept = tmp_path / "sweep.sqlite"
    assert CliRunner().invoke(main, ["sweep", str(config), "--device", "cpu", "--store", str(swept)]).exit_code == 0
    result = diff("sweep:tiny", swept, store=swept)
    assert result.sides[0].label == "sweep tiny" and result.matched == 1
    assert rows(result.frame, "add")["time"]["n A"] == 5
    missing = cli("sweep:nope", swept, "--store", swept)
    assert missing.exit_code == 2 and "stored sweeps: tiny" in missing.output


def test_stores_are_read_without_creating_or_changing_files(store: Path, tmp_path: Path) -> None:
    before = sorted(p.name for p in store.parent.iterdir())
    stamp = store.stat().st_mtime_ns
    assert cli("aaaa0001", store, "--store", store).exit_code == 0
    assert sorted(p.name for p in store.parent.iterdir()) == before and store.stat().st_mtime_ns == stamp
    absent = tmp_path / "none.sqlite"
    assert cli("aaaa0001", K40C, "--store", absent).exit_code == 2 and not absent.exists()


@pytest.mark.parametrize(
    "args,message",
    [
        (["no/such/file.csv", K40C], "no/such/file.csv: no such file"),
        (["deadbeef", K40C], "'deadbeef' is neither a file nor a run id in"),
        (["aaaa", K40C], "'aaaa' matches 2 runs in"),
        ([FIXTURES, K40C], "is a folder"),
        ([FIXTURES / "ncu_err_failed_to_find_metric_QUOTED.log", K40C], "error:"),
        ([K40C, K40C, "--fail-if", "speed:+5%"], "unknown metric 'speed'"),
        ([K40C, K40C, "--fail-if", "time>5"], "cannot read the gate 'time>5'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(store: Path, args: list, message: str) -> None:
    outcome = cli(*args, "--store", store)
    assert outcome.exit_code == 2, outcome.output
    assert message in outcome.output and "Traceback" not in outcome.output
    assert len([line for line in outcome.output.splitlines() if line.startswith("error:")]) == 1


def test_nothing_matched_lists_both_sides_renders_every_format_and_exits_2() -> None:
    """No kernel of the K40 profile is in the V100 one: everything is listed as only on one side."""
    result = diff(K40C, V100)
    assert result.matched == 0 and result.exit_code == 2
    assert set(result.frame["verdict"]) == {"only in A", "only in B"}
    for fmt in ("table", "markdown", "csv", "json", "junit"):
        outcome = cli(K40C, V100, "--format", fmt)
        assert outcome.exit_code == 2 and "nothing to compare" in outcome.output
    assert ET.fromstring(cli(K40C, V100, "--format", "junit").stdout).get("skipped") == "4"


def test_runs_measured_with_other_settings_are_matched_and_said(measured: Run) -> None:
    warm = part(measured, 0)
    cold = Run(
        warm.kind,
        warm.format,
        warm.source,
        warm.device,
        {**warm.workload, "cache": "cold"},
        warm.environment,
        warm.launches,
    )
    result = diff(warm, cold)
    assert result.matched == 1
    assert any("measured differently: A warm cache" in n and "B cold cache" in n for n in result.notes)


# ---- output formats -------------------------------------------------------------------------------


def test_formats_stay_whole_and_parse(store: Path) -> None:
    result = diff("aaaa0001", "bbbb0003", store=store, fail_if=["time:+5%"])
    as_json = cli("aaaa0001", "bbbb0003", "--store", store, "--fail-if", "time:+5%", "--format", "json")
    assert as_json.exit_code == 1
    printed = json.loads(as_json.stdout)
    assert len(printed) == len(result.frame) and printed[0]["metric"] == "time"
    assert [r["verdict"] for r in printed] == result.frame["verdict"].tolist()
    as_csv = cli("aaaa0001", "bbbb0003", "--store", store, "--format", "csv")
    parsed = list(csv.DictReader(as_csv.stdout.splitlines()))
    assert len(parsed) == len(result.frame) and parsed[0]["basis"] == result.frame["basis"].iat[0]


def test_junit_has_a_test_case_per_kernel_with_the_regression_as_failure(store: Path) -> None:
    outcome = cli("aaaa0001", "bbbb0003", "--store", store, "--fail-if", "time:+5%", "--format", "junit")
    root = ET.fromstring(outcome.stdout)
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == ["add 288x288 float32 numpy"]
    assert cases[0].find("failure") is not None and root.get("failures") == "1"
    kernels = cli(A100, A100_ERRORS, "--format", "junit")
    tree = ET.fromstring(kernels.stdout)
    names = [c.get("name") for c in tree.iter("testcase")]
    assert any(n.startswith("void gemm_v1<float>(float *") for n in names)  # XML-escaped on disk, whole here
    assert tree.get("skipped") == "2" and "&lt;float&gt;" in kernels.stdout


def test_markdown_is_a_pull_request_comment_with_escaped_kernel_names() -> None:
    outcome = cli(A100, A100_ERRORS, "--format", "markdown", "--fail-if", "time:+5%")
    text = outcome.stdout
    assert text.startswith("### gpuprof diff: `") and "- **gate time:+5%: passed**" in text
    assert "void randomInit&lt;float&gt;" in text and "<float>" not in text.split("<details>")[0]
    assert re.search(r"^\| kernel \| metric \| A \| B \| change \|", text, re.M)


def test_library_returns_the_frame_the_command_prints(store: Path) -> None:
    frame = gpuprof.diff(A100, A100_ERRORS, match="order")
    printed = json.loads(cli(A100, A100_ERRORS, "--match", "order", "--format", "json").stdout)
    assert frame["verdict"].tolist() == [r["verdict"] for r in printed]
    printed_a = [np.nan if r["A"] is None else r["A"] for r in printed]
    assert np.allclose(frame["A"].astype(float), printed_a, equal_nan=True)
    assert frame.attrs["exit_code"] == 0 and frame.attrs["matched"] == 3  # randomInit twice (two grids), gemm


def test_imported_runs_are_compared_column_wise(monkeypatch: pytest.MonkeyPatch) -> None:
    """No Launch objects are built for a profile: every value comes from whole columns, so a
    million launches cost column operations, not a Python loop per launch."""
    runs = gpuprof.read(V100), gpuprof.read(BERT)
    views = Run.launches

    def refuse(run: Run) -> list:
        if run.kind == "import":
            raise AssertionError("diff built per-launch objects of an imported run")
        return views.fget(run)

    monkeypatch.setattr(Run, "launches", property(refuse))
    result = diff(runs[0], runs[1], match="order")
    assert result.matched == 2


def test_counts_are_integers_in_json(tmp_path):
    import json

    from click.testing import CliRunner
    from fixture_paths import K40C

    from gpuprof.cli import main

    result = CliRunner().invoke(main, ["diff", str(K40C), str(K40C), "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    [launches] = [row for row in rows if row["metric"] == "launches"]
    assert launches["A"] == 3 and isinstance(launches["A"], int) and isinstance(launches["B"], int)
    assert all(row["n A"] is None or isinstance(row["n A"], int) for row in rows)
