"""Nsight Compute raw page (``--page raw --csv``): one wide row per launch, units in row two.
Expected values were read from the B200 flash-attention fixture by eye."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof import readers
from gpuprof.errors import FormatError
from gpuprof.readers import ncu_raw

RAW = Path(__file__).parent / "fixtures" / "profiler-outputs" / "ncu_csv_raw_page_b200_flashattn.csv"
FLASH = (
    "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, 0, 0, bfloat16_t, "
    "Flash_kernel_traits<128, 128, 64, 4, bfloat16_t>>, 0, 0, 0, 0, 0, 1, 0, 0>(Flash_fwd_params)"
)


def test_one_launch_per_row_with_units_from_the_second_row() -> None:
    run = readers.read(RAW)
    assert run.format == "ncu-raw"
    assert [launch.index for launch in run.launches] == list(range(16))
    assert all(launch.kernel == FLASH for launch in run.launches)
    # 475 columns: 11 per-launch columns, launch__kernel_name empty, 463 metrics
    assert all(len(launch.metrics) == 463 for launch in run.launches)
    durations = [launch.value("kernel_duration") for launch in run.launches]
    assert durations[:3] == pytest.approx([687488e-9, 685792e-9, 687968e-9], rel=1e-12)
    assert durations[-1] == pytest.approx(687872e-9, rel=1e-12)
    first = run.launches[0]
    assert first.metric("gpu__time_duration.sum").unit == "second"
    assert (first.value("ipc"), first.metric("ipc").unit) == (1.63, "inst/cycle")
    assert (first.value("launch__shared_mem_per_block"), first.metric("launch__shared_mem_per_block").unit) == (
        66560,
        "byte/block",
    )
    assert first.value("launch__grid_size") == 512
    assert first.value("launch__cluster_scheduling_policy") == "PolicySpread"
    assert first.value("device__attribute_display_name") == "NVIDIA B200"
    assert first.attributes["block"] == "(128, 1, 1)" and first.attributes["grid"] == "(1, 64, 8)"
    assert run.device == {"name": "NVIDIA B200", "index": "0", "cc": "10.0"}
    assert first.device == "NVIDIA B200"
    assert run.notes == []


def test_cut_raw_page_keeps_whole_rows(tmp_path: Path) -> None:
    text = RAW.read_text()
    path = tmp_path / "cut.csv"
    path.write_text(text[: len(text) - 2000])
    run = ncu_raw.read(path)
    assert len(run.launches) == 15
    assert any("truncated" in note for note in run.notes)


def test_raw_page_without_rows_is_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "header-only.csv"
    path.write_text("".join(RAW.read_text().splitlines(keepends=True)[:4]))
    with pytest.raises(FormatError, match="no launch rows"):
        ncu_raw.read(path)
