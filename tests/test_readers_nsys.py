"""Nsight Systems readers: kernel summaries in real ``nsys profile --stats=true`` console output
(a README holding five sessions among prose), and the binary .nsys-rep answered with the command
that converts it. Expected values read by hand from the fixture files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpuprof import readers
from gpuprof.errors import FormatError, ProfilerError
from gpuprof.readers import nsys_rep, nsys_stats
from fixture_paths import README, REP

VECTOR_ADD = "vectorAdd(const float *, const float *, float *, int)"


def test_stats_text_one_launch_per_kernel_table_with_its_session() -> None:
    assert readers.detect(README) is nsys_stats
    run = readers.read(README)
    assert run.format == "nsys-stats" and run.device == {"name": "NVIDIA GA100"}
    sessions = ["vector_add_profile_v3", "vector_add_profile_v4", "vector_add_profile_v5_N50M",
                "vector_add_profile_serial", "vector_add_profile_streamed"]
    assert run.environment == {"tool": "nsys", "reports": sessions}
    # Only the cuda_gpu_kern_sum tables: no NVTX range, OS runtime or CUDA API row.
    assert [launch.kernel for launch in run.launches] == [VECTOR_ADD] * 5
    assert [launch.attributes["report"] for launch in run.launches] == sessions
    assert [launch.invocations for launch in run.launches] == [1010, 1010, 1010, 110, 410]


def test_stats_text_thousands_separators_and_nanoseconds() -> None:
    first, _, n50m, _, streamed = readers.read(README).launches
    #  100.0  1,831,281  1,010  1,813.1  1,823.0  1,791  4,705  93.3  vectorAdd(...)
    duration = first.metric("kernel_duration")
    assert duration.unit == "second"
    assert (duration.value, duration.minimum, duration.maximum) == pytest.approx((1813.1e-9, 1791e-9, 4705e-9))
    assert first.value("Total Time") == pytest.approx(1_831_281e-9)
    assert first.value("Med") == pytest.approx(1823.0e-9) and first.value("StdDev") == pytest.approx(93.3e-9)
    assert first.value("Time (%)") == 100.0
    assert n50m.value("Total Time") == pytest.approx(383_261_009e-9)
    assert n50m.value("kernel_duration") == pytest.approx(379_466.3e-9)
    assert streamed.metric("kernel_duration").maximum == pytest.approx(374_496e-9)


def test_stats_csv_output_as_gpuprof_tells_users_to_produce(tmp_path: Path) -> None:
    # The first session's table in the form 'nsys stats --format csv' prints, after its progress lines.
    path = tmp_path / "kern_sum.csv"
    path.write_text(
        "Generating SQLite file vector_add_profile_v3.sqlite from vector_add_profile_v3.nsys-rep\n"
        "Processing [vector_add_profile_v3.sqlite] with [/opt/nvidia/nsight-systems/reports/cuda_gpu_kern_sum.py]... \n"
        '"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)","StdDev (ns)","Name"\n'
        f'100.0,1831281,1010,1813.1,1823.0,1791,4705,93.3,"{VECTOR_ADD}"\n')
    assert readers.detect(path) is nsys_stats
    [launch] = readers.read(path).launches
    assert launch.kernel == VECTOR_ADD and launch.invocations == 1010
    assert launch.attributes["report"] == "vector_add_profile_v3"
    assert launch.value("Total Time") == pytest.approx(1_831_281e-9)


def test_stats_old_gpukernsum_column_names(tmp_path: Path) -> None:
    # nsys before 2022 named the report gpukernsum and its columns Average/Minimum/Maximum.
    path = tmp_path / "gpukernsum.txt"
    path.write_text(
        " Time(%)  Total Time (ns)  Instances   Average   Minimum  Maximum                          Name\n"
        " -------  ---------------  ---------  ---------  -------  -------  ----------------------------------------------------\n"
        f"   100.0        1,831,281      1,010    1,813.1    1,791    4,705  {VECTOR_ADD}\n")
    [launch] = readers.read(path).launches
    duration = launch.metric("kernel_duration")
    assert (launch.invocations, duration.minimum, duration.maximum) == (1010, pytest.approx(1791e-9),
                                                                        pytest.approx(4705e-9))
    assert launch.value("Time (%)") == 100.0


def test_stats_truncated_in_a_row(tmp_path: Path) -> None:
    text = README.read_text()
    second_table = text.index("[6/8]", text.index("[6/8]") + 1)
    cut = text.index("vectorAdd(", second_table) + 20
    path = tmp_path / "cut.md"
    path.write_text(text[:cut])
    run = readers.read(path)
    assert len(run.launches) == 1  # the second session's row was cut
    assert any("truncated" in note for note in run.notes)


def test_stats_without_kernel_rows(tmp_path: Path) -> None:
    text = README.read_text()
    path = tmp_path / "head.md"
    path.write_text(text[: text.index("[6/8]")])
    with pytest.raises(FormatError):  # nvtx/osrt/api tables only: nothing gpuprof would read
        readers.read(path)
    skipped = tmp_path / "skipped.txt"
    skipped.write_text(
        "Processing [r.sqlite] with [/opt/nvidia/nsight-systems/reports/cuda_gpu_kern_sum.py]... \n"
        " Time (%)  Total Time (ns)  Instances  Avg (ns)  Med (ns)  Min (ns)  Max (ns)  StdDev (ns)  Name\n"
        "SKIPPED: r.sqlite does not contain CUDA kernel data.\n")
    with pytest.raises(ProfilerError, match="does not contain CUDA kernel data"):
        readers.read(skipped)


def test_stats_row_that_does_not_fit_its_header(tmp_path: Path) -> None:
    path = tmp_path / "edited.txt"
    lines = README.read_text().splitlines()
    start = lines.index("[6/8] Executing 'cuda_gpu_kern_sum' stats report")
    # the first kernel table with its row's last columns (StdDev, Name) cut away by hand
    row = lines[start + 4]
    path.write_text("\n".join(lines[start:start + 4] + [row[: row.index("4,705") + 5]]) + "\n")
    with pytest.raises(FormatError, match="line 5 does not fit the kernel summary"):
        readers.read(path)


def test_nsys_rep_recognised_by_content_with_the_command_to_run(tmp_path: Path) -> None:
    assert REP.read_bytes().startswith(b"NVIDIA Tegra Profiler Report")
    renamed = tmp_path / "profile.bin"
    shutil.copy(REP, renamed)
    assert readers.detect(renamed) is nsys_rep
    with pytest.raises(FormatError) as error:
        readers.read(renamed)
    message = str(error.value)
    assert f"nsys stats --report cuda_gpu_kern_sum --format csv {renamed}" in message
    assert "gpuprof import profile_kern_sum.csv" in message
