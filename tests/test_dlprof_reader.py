"""DL-Prof's own counter files (real, from jlpadillas/DL-Prof; see tests/fixtures/dlprof/SOURCES.md)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from gpuprof.errors import FormatError
from gpuprof.readers import read

HERE = Path(__file__).parent / "fixtures" / "dlprof"
EPOCHS = HERE / "mnist_train_callback-single_thread.csv"
FIT = HERE / "mnist_train_papi-single_thread.csv"
ONE = HERE / "mnist_train_papi-one-block.csv"


def _totals(path: Path) -> Counter:
    totals: Counter = Counter()
    for launch in read(path).launches:
        for metric in launch.metrics:
            totals[metric.name] += metric.value
    return totals


def test_blocks_cpus_and_values_as_in_the_file():
    run = read(EPOCHS)
    assert run.format == "dlprof-papi"
    assert len(run.launches) == 5 * 30  # 5 blocks (epochs) x CPUs 2..31
    first = run.launches[0]
    assert (first.kernel, first.device, first.attributes["cpu"]) == ("block 0", "cpu2", "2")
    values = {m.name: m.value for m in first.metrics}
    assert values["PERF_COUNT_HW_INSTRUCTIONS"] == 193348191211  # line 1
    assert values["fp_arith_inst_retired.512b_packed_single"] == 122693346870  # line 9
    second = run.launches[30]
    assert second.kernel == "block 1"
    assert {m.name: m.value for m in second.metrics}["PERF_COUNT_HW_INSTRUCTIONS"] == 191548125053  # line 271
    assert all(m.origin == "measured" and m.unit == "event" for m in first.metrics)


def test_one_block_file():
    run = read(ONE)
    assert {launch.kernel for launch in run.launches} == {"block 0"}
    assert len(run.launches) == 30


def test_epoch_sum_against_the_whole_fit_file():
    """The study's check: the per-epoch file's sum against the whole-fit file. What the files hold:
    FP events agree within 0.02 %, instructions within 0.13 %, L1 stores differ by 0.54 %."""
    epochs, fit = _totals(EPOCHS), _totals(FIT)
    gap = {event: epochs[event] / fit[event] - 1 for event in fit if fit[event]}
    assert gap["fp_arith_inst_retired.512b_packed_single"] == pytest.approx(0.0, abs=1e-6)
    assert abs(gap["fp_arith_inst_retired.scalar_double"]) < 2e-4
    assert gap["PERF_COUNT_HW_INSTRUCTIONS"] == pytest.approx(0.00125, abs=5e-5)
    assert gap["L1-DCACHE-LOADS"] == pytest.approx(0.00106, abs=5e-5)
    assert gap["L1-DCACHE-STORES"] == pytest.approx(0.00538, abs=5e-5)  # beyond 0.11 %


def test_a_bad_line_is_one_clear_error(tmp_path):
    bad = tmp_path / "x.csv"
    bad.write_text(EPOCHS.read_text()[:200] + "garbage line\n")
    with pytest.raises(FormatError, match=r"not a DL-Prof counter line"):
        from gpuprof.readers import dlprof_papi

        dlprof_papi.read(bad)


def test_the_studys_matrix_product_at_n_512_counts_2n_cubed():
    """DL-Prof's results_SEQ_512.txt (its C product, n = 512, gcc): PAPI around the product alone
    counts 268,435,456 scalar double operations on each CPU = 2n³, which n²(2n−1) misses by n²;
    perf stat around the whole program counts more (set-up and the check included)."""
    from gpuprof.derive.cpu_flops import matmul_validation
    from gpuprof.model import Run

    run = read(HERE / "results_SEQ_512-c-matmul.txt")
    assert run.format == "dlprof-papi" and len(run.launches) == 22
    pinned = [l for l in run.launches if l.kernel == "multithread main_papi taskset=yes"]
    assert [l.device for l in pinned] == [f"cpu{k}" for k in range(8)]
    counted = {m.name: m.value for m in pinned[0].metrics}
    assert counted == {
        "cycles": 2524365619,
        "instructions": 3496373140,
        "fp_arith_inst_retired.scalar_double": 268435456,
    }
    assert {m.value for l in pinned for m in l.metrics if m.name.endswith("scalar_double")} == {268435456}
    whole = next(l for l in run.launches if l.kernel == "multithread main_perf taskset=no")
    assert [m.value for m in whole.metrics if m.name.endswith("scalar_double")] == [276441388]
    product = Run(
        kind="import",
        format=run.format,
        source=run.source,
        device={"kind": "cpu"},
        workload={"op": "dot", "shape": [512, 512, 512]},
        launches=[pinned[0]],
    )
    row = matmul_validation(product).iloc[0]
    assert row["counted FLOPs"] == row["2n³ (analytic)"] == "268,435,456"
    assert 268_435_456 - 512 * 512 * (2 * 512 - 1) == 512**2  # n²(2n−1) is short by exactly n²
    assert row["n²(2n−1) (analytic)"] == "268,173,312"
