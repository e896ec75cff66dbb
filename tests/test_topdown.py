"""CPU Top-Down level 1 from recorded perf outputs (truth values: tests/fixtures/cpu-counters/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof.derive.topdown import explain_topdown, topdown_breakdowns, topdown_frame
from gpuprof.errors import FormatError
from gpuprof.readers import perf_topdown, read, read_head

CPU = Path(__file__).parent / "fixtures" / "cpu-counters"
PERCORE = CPU / "perf-stat-topdown-percore-intel-7zip-perfbook.txt"  # 2a
DEFAULT_L1 = CPU / "perf-stat-default-TopdownL1-cpu_core-intel-perfbook.txt"  # 2b
AMD = CPU / "perf-stat-M-PipelineL1-L2-amd-zen4-7950X-perfbook.txt"  # 2c
METRIC_ONLY = CPU / "perf-stat-topdown-metric-only-system-wide-intel-6c12t.txt"  # 2d
INTERVAL = CPU / "perf-stat-topdown-interval-I1000-metric-only-linux-doc.txt"  # 2f


def _levels(breakdown) -> dict[str, float]:
    return {s.key: s.percent for s in breakdown.shares}


def test_old_per_core_table_2a() -> None:
    run = read(PERCORE)
    assert run.format == "perf-topdown"
    cores = {b.scope: _levels(b) for b in topdown_breakdowns(run)}
    assert list(cores) == ["S0-C0", "S0-C1", "S0-C2", "S0-C3"]
    assert cores["S0-C0"] == {"retiring": 30.8, "bad_speculation": 41.8, "frontend_bound": 8.8, "backend_bound": 18.6}
    assert cores["S0-C3"]["backend_bound"] == 49.6
    assert run.launches[0].kernel == "taskset -c 0 ./7zip-benchmark b"


def test_perf6_default_topdownl1_block_2b() -> None:
    run = read(DEFAULT_L1)
    (breakdown,) = topdown_breakdowns(run)
    assert _levels(breakdown) == {
        "backend_bound": 53.4,
        "bad_speculation": 0.2,
        "frontend_bound": 13.8,
        "retiring": 32.5,
    }
    assert breakdown.scope == "cpu_core"
    assert breakdown.shares[0].key == "backend_bound"
    assert run.launches[0].metric("tma_backend_bound").value == 53.4


def test_amd_pipeline_l1_l2_2c() -> None:
    run = read(AMD)
    (breakdown,) = topdown_breakdowns(run)
    assert _levels(breakdown) == {
        "retiring": 26.3,
        "backend_bound": 67.5,
        "frontend_bound": 6.1,
        "bad_speculation": 0.0,
    }
    assert run.launches[0].value("retiring_microcode") == 6.1
    assert (breakdown.memory_bound, breakdown.core_bound) == (1.7, 65.9)
    assert run.device["vendor"] == "AMD"
    assert any("19.99-20.08%" in n for n in run.notes)
    text = explain_topdown(breakdown)
    assert "Backend bound dominates (67.5%" in text and "core-bound" in text


def test_metric_only_table_2d() -> None:
    run = read(METRIC_ONLY)
    (breakdown,) = topdown_breakdowns(run)
    assert _levels(breakdown) == {
        "bad_speculation": 3.8,
        "backend_bound": 48.1,
        "retiring": 24.4,
        "frontend_bound": 23.7,
    }
    assert run.launches[0].value("seconds time elapsed") == pytest.approx(0.818694856)


def test_interval_table_2f() -> None:
    breakdowns = topdown_breakdowns(read(INTERVAL))
    assert [b.scope for b in breakdowns][0] == "t=1.001141351 s"
    assert len(breakdowns) == 6
    assert _levels(breakdowns[0]) == {
        "retiring": 11.5,
        "backend_bound": 34.9,
        "frontend_bound": 46.9,
        "bad_speculation": 6.7,
    }
    assert breakdowns[-1].scope == "t=5.704818971 s" and _levels(breakdowns[-1])["frontend_bound"] == 51.3
    assert "Frontend bound dominates (46.9%" in explain_topdown(breakdowns[0])
    assert "instruction-cache" in explain_topdown(breakdowns[0])


def test_explanations_follow_the_dominant_category() -> None:
    (c0, c1, *_) = topdown_breakdowns(read(PERCORE))
    assert "Bad speculation dominates (41.8%" in explain_topdown(c0)
    assert "branch mispredictions" in explain_topdown(c0)
    assert "Backend bound dominates (68.2%" in explain_topdown(c1)


def test_frame_is_ranked_and_says_its_origin() -> None:
    frame = topdown_frame(topdown_breakdowns(read(DEFAULT_L1)))
    assert list(frame["category"]) == ["backend_bound", "retiring", "frontend_bound", "bad_speculation"]
    assert set(frame["origin"]) == {"measured"}


@pytest.mark.parametrize(
    "name",
    [
        "perf-stat-human-fp512-i7-1185G7-suanpan.txt",
        "perf-stat-csv-interval-cgroup-fp-cpubops.csv",
        "perf-stat-o-pid-hybrid-not-counted-itmo-linreg.txt",
        "perf-stat-o-hybrid-locale-de-comma-decimal-tiled-matmul.profile",
    ],
)
def test_plain_perf_stat_files_are_not_claimed(name: str) -> None:
    assert not perf_topdown.sniff(CPU / name, read_head(CPU / name))


def test_file_without_level1_values_is_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "x.txt"
    path.write_text(" 5.0 %  frontend_bound_latency\n")
    with pytest.raises(FormatError, match="no Top-Down level-1 values"):
        perf_topdown.read(path)
