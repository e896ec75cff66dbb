"""Nsight Systems readers: kernel summaries in real ``nsys profile --stats=true`` console output
(a README holding five sessions among prose), and the binary .nsys-rep answered, where no nsys is on
PATH, with the command that converts it (read through the real nsys: tests/test_nvidia_tools.py). Expected values read by hand from the fixture files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fixture_paths import NSYS_2020, NSYS_2021, NSYS_2022, README, REP

from gpuprof import readers
from gpuprof.errors import FormatError, ProfilerError
from gpuprof.readers import nsys_rep, nsys_stats

VECTOR_ADD = "vectorAdd(const float *, const float *, float *, int)"


def test_stats_text_one_launch_per_kernel_table_with_its_session() -> None:
    assert readers.detect(README) is nsys_stats
    run = readers.read(README)
    assert run.format == "nsys-stats" and run.device == {"name": "NVIDIA GA100"}
    sessions = [
        "vector_add_profile_v3",
        "vector_add_profile_v4",
        "vector_add_profile_v5_N50M",
        "vector_add_profile_serial",
        "vector_add_profile_streamed",
    ]
    assert run.environment == {"tool": "nsys", "reports": sessions}
    # Kernels, memory operations and NVTX ranges; no OS runtime or CUDA API row.
    kernels = [launch for launch in run.launches if launch.attributes["kind"] == "kernel"]
    assert [launch.kernel for launch in kernels] == [VECTOR_ADD] * 5
    assert [launch.attributes["report"] for launch in kernels] == sessions
    assert [launch.invocations for launch in kernels] == [1010, 1010, 1010, 110, 410]
    assert {launch.attributes["kind"] for launch in run.launches} == {"kernel", "memcpy", "nvtx"}
    # [5/8] cuda_api_sum: 6 + 6 + 6 + 6 + 10 rows, host side.
    assert run.notes == ["skipped 34 CUDA API rows (host side)"]


def test_stats_text_thousands_separators_and_nanoseconds() -> None:
    first, _, n50m, _, streamed = [
        launch for launch in readers.read(README).launches if launch.attributes["kind"] == "kernel"
    ]
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
        f'100.0,1831281,1010,1813.1,1823.0,1791,4705,93.3,"{VECTOR_ADD}"\n'
    )
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
        f"   100.0        1,831,281      1,010    1,813.1    1,791    4,705  {VECTOR_ADD}\n"
    )
    [launch] = readers.read(path).launches
    duration = launch.metric("kernel_duration")
    assert (launch.invocations, duration.minimum, duration.maximum) == (
        1010,
        pytest.approx(1791e-9),
        pytest.approx(4705e-9),
    )
    assert launch.value("Time (%)") == 100.0


def test_stats_truncated_in_a_row(tmp_path: Path) -> None:
    text = README.read_text()
    second_table = text.index("[6/8]", text.index("[6/8]") + 1)
    cut = text.index("vectorAdd(", second_table) + 20
    path = tmp_path / "cut.md"
    path.write_text(text[:cut])
    run = readers.read(path)
    gpu = [launch for launch in run.launches if launch.attributes["kind"] != "nvtx"]
    assert [launch.kernel for launch in gpu][-1] == "[CUDA memcpy DtoH]"  # the first session
    assert len(gpu) == 3  # the second session's kernel row was cut
    assert any("truncated" in note for note in run.notes)


def test_stats_without_kernel_rows(tmp_path: Path) -> None:
    text = README.read_text()
    path = tmp_path / "head.md"
    path.write_text(text[: text.index("[6/8]")])
    # nvtx, osrt and cuda_api_sum tables only: the API calls (and the NVTX ranges after them) are
    # all there is to import.
    run = readers.read(path)
    assert [launch.kernel for launch in run.launches] == [
        "cudaMalloc",
        "cudaLaunchKernel",
        "cudaFree",
        "cudaMemcpy",
        "cudaDeviceSynchronize",
        "cuModuleGetLoadingMode",
        "Profile_Loop",
        "Warmup",
    ]
    assert [launch.attributes["kind"] for launch in run.launches] == ["api"] * 6 + ["nvtx"] * 2
    malloc = run.launches[0]
    #  96.9  106,912,410  3  35,637,470.0  6,584.0  4,697  106,901,129  61,716,139.1  cudaMalloc
    assert malloc.invocations == 3 and malloc.metric("kernel_duration") is None
    assert (malloc.value("Avg"), malloc.value("Total Time")) == pytest.approx((35_637_470.0e-9, 106_912_410e-9))
    assert run.notes == ["only a CUDA API summary: host-side calls, imported as launches of kind 'api'"]
    nvtx = tmp_path / "nvtx.md"
    nvtx.write_text(text[: text.index("[4/8]")])
    ranges = readers.read(nvtx).launches  # an NVTX range summary only: its ranges (host side)
    assert [(r.kernel, r.attributes["kind"], r.attributes["style"]) for r in ranges] == [
        ("Profile_Loop", "nvtx", "PushPop"),
        ("Warmup", "nvtx", "PushPop"),
    ]
    #  95.0  3,481,709  1  3,481,709.0  3,481,709.0  3,481,709  3,481,709  0.0  PushPop  Profile_Loop
    assert ranges[0].value("Total Time") == pytest.approx(3_481_709e-9) and ranges[0].invocations == 1
    assert ranges[0].metric("kernel_duration") is None
    skipped = tmp_path / "skipped.txt"
    skipped.write_text(
        "Processing [r.sqlite] with [/opt/nvidia/nsight-systems/reports/cuda_gpu_kern_sum.py]... \n"
        " Time (%)  Total Time (ns)  Instances  Avg (ns)  Med (ns)  Min (ns)  Max (ns)  StdDev (ns)  Name\n"
        "SKIPPED: r.sqlite does not contain CUDA kernel data.\n"
    )
    with pytest.raises(ProfilerError, match="does not contain CUDA kernel data"):
        readers.read(skipped)


def test_stats_row_that_does_not_fit_its_header(tmp_path: Path) -> None:
    path = tmp_path / "edited.txt"
    lines = README.read_text().splitlines()
    start = lines.index("[6/8] Executing 'cuda_gpu_kern_sum' stats report")
    # the first kernel table with its row's last columns (StdDev, Name) cut away by hand
    row = lines[start + 4]
    path.write_text("\n".join(lines[start : start + 4] + [row[: row.index("4,705") + 5]]) + "\n")
    with pytest.raises(FormatError, match="line 5 does not fit the summary table"):
        readers.read(path)


def test_nsys_rep_recognised_by_content_with_the_command_to_run(tmp_path: Path, monkeypatch) -> None:
    """Without nsys on PATH the answer is the export command (tests/test_nvidia_tools.py reads with nsys)."""
    assert REP.read_bytes().startswith(b"NVIDIA Tegra Profiler Report")
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    renamed = tmp_path / "profile.bin"
    shutil.copy(REP, renamed)
    assert readers.detect(renamed) is nsys_rep
    with pytest.raises(FormatError) as error:
        readers.read(renamed)
    message = str(error.value)
    assert "no nsys is on PATH" in message
    assert f"nsys export --type sqlite --output profile.sqlite {renamed}" in message
    assert "gpuprof import profile.sqlite" in message


def test_stats_text_memory_operations_by_time_and_size_merged() -> None:
    run = readers.read(README)
    n50m = [
        launch
        for launch in run.launches
        if launch.attributes["report"] == "vector_add_profile_v5_N50M" and launch.attributes["kind"] != "nvtx"
    ]
    assert [(launch.kernel, launch.attributes["kind"]) for launch in n50m] == [
        (VECTOR_ADD, "kernel"),
        ("[CUDA memcpy DtoH]", "memcpy"),
        ("[CUDA memcpy HtoD]", "memcpy"),
    ]
    htod = n50m[2]
    # by time:  30.7  42,069,868  2  21,034,934.0  21,034,934.0  20,909,527  21,160,341  177,352.3
    duration = htod.metric("kernel_duration")
    assert htod.invocations == 2 and duration.unit == "second"
    assert (duration.value, duration.minimum, duration.maximum) == pytest.approx(
        (21_034_934.0e-9, 20_909_527e-9, 21_160_341e-9)
    )
    assert htod.value("Total Time") == pytest.approx(42_069_868e-9)
    # by size:  400.000  2  200.000  200.000  200.000  200.000  0.000  (MB = 10**6 bytes)
    size = htod.metric("Avg Size")
    assert (size.value, size.unit, size.minimum, size.maximum) == (200e6, "byte", 200e6, 200e6)
    assert htod.value("Total Size") == 400e6 and htod.value("StdDev Size") == 0.0


def test_stats_2020_layout_average_columns_and_sizes_in_kib() -> None:
    assert readers.detect(NSYS_2020) is nsys_stats
    run = readers.read(NSYS_2020)
    assert run.notes == ["skipped 13 CUDA API rows (host side)"]
    gpu = [launch for launch in run.launches if launch.attributes["kind"] != "nvtx"]
    assert [(launch.kernel.split("<")[0], launch.invocations) for launch in gpu] == [
        ("void VectorOperation", 15),
        ("void VectorOperation", 15),
        ("[CUDA memcpy DtoH]", 30),
        ("[CUDA memcpy HtoD]", 30),
    ]
    add = run.launches[0]
    #  50.4  67,362,653  15  4,490,843.5  4,469,005  4,518,252  void VectorOperation<Add<float>, float>(...)
    assert add.kernel == "void VectorOperation<Add<float>, float>(int, float, float*, Add<float>)"
    duration = add.metric("kernel_duration")
    assert (duration.value, duration.minimum, duration.maximum) == pytest.approx(
        (4_490_843.5e-9, 4_469_005e-9, 4_518_252e-9)
    )
    assert add.value("Time (%)") == 50.4 and add.value("Total Time") == pytest.approx(67_362_653e-9)
    dtoh = run.launches[2]
    #  by time: 50.8  5,314,309,114  30  177,143,637.1  162,980,699  191,320,991  [CUDA memcpy DtoH]
    assert dtoh.value("kernel_duration") == pytest.approx(177_143_637.1e-9)
    #  by size in KiB: 31,457,280.000  30  1,048,576.000 ...: 1 GiB copies, as the README's 1073741824 B
    assert dtoh.value("Avg Size") == 1_048_576 * 1024 == 1073741824
    assert dtoh.value("Total Size") == 31_457_280 * 1024


def test_stats_2021_layout_average_ns_columns() -> None:
    run = readers.read(NSYS_2021)  # nsys 2021.3.1 on Polaris (A100), 'CUDA Kernel Statistics:' titles
    assert run.notes == ["skipped 5 CUDA API rows (host side)"]
    assert run.environment["reports"][0] == "nsys-report-f594-c524-6b4c-300a"
    add = run.launches[0]
    #  24.5  58,415,138  100  584,151.4  582,522  585,817  543.0  void add_kernel<double>(const T1 *, const T1 *, T1 *)
    assert add.kernel == "void add_kernel<double>(const T1 *, const T1 *, T1 *)" and add.invocations == 100
    assert add.metric("kernel_duration").maximum == pytest.approx(585_817e-9)
    assert add.value("StdDev") == pytest.approx(543.0e-9) and add.metric("Med") is None  # no median before 2022
    [dtoh] = [launch for launch in run.launches if launch.attributes["kind"] == "memcpy"]
    #  100.0  61,323,171  103  595,370.6  2,399  20,470,146  3,439,982.0  [CUDA memcpy DtoH]
    #  805.511  103  7.820  0.002  268.435  45.361  [CUDA memcpy DtoH]   (MB)
    assert dtoh.invocations == 103 and dtoh.metric("kernel_duration").minimum == pytest.approx(2_399e-9)
    size = dtoh.metric("Avg Size")
    assert (size.value, size.minimum, size.maximum) == pytest.approx((7.820e6, 0.002e6, 268.435e6))
    assert dtoh.value("Total Size") == pytest.approx(805.511e6)


def test_stats_2022_old_report_names_and_grid_columns_with_spaces() -> None:
    run = readers.read(NSYS_2022)  # '[6/8] Executing 'gpukernsum' stats report' with GridXYZ/BlockXYZ
    assert run.notes == ["skipped 5 CUDA API rows (host side)"]
    dot = run.launches[2]
    #  18.3  43,518,576  100  435,185.8  435,581.5  420,702  446,877  3,654.1   256    1    1   1024    1    1  void dot_kernel<double>(...)
    assert dot.kernel == "void dot_kernel<double>(const T1 *, const T1 *, T1 *, int)"
    assert (dot.attributes["grid"], dot.attributes["block"]) == ("(256, 1, 1)", "(1024, 1, 1)")
    assert dot.value("Med") == pytest.approx(435_581.5e-9) and dot.value("kernel_duration") == pytest.approx(
        435_185.8e-9
    )
    dtoh = run.launches[-1]  # gpumemtimesum and gpumemsizesum
    assert dtoh.kernel == "[CUDA memcpy DtoH]" and dtoh.value("Med") == pytest.approx(2_401.0e-9)
    assert dtoh.value("Med Size") == pytest.approx(0.002e6)


def test_stats_csv_reports_with_old_and_new_names(tmp_path: Path) -> None:
    # Written from the report columns nsys documents (no public CSV of these reports was found);
    # values are the Polaris run's (NSYS_2021 and NSYS_2022), digits grouped by four as one locale prints.
    old = tmp_path / "gpukernsum.csv"
    old.write_text(
        "Running [/opt/nvidia/nsight-systems/2021.3.1/target-linux-x64/reports/gpukernsum.py r.sqlite]... \n"
        '"Time(%)","Total Time (ns)","Instances","Average","Minimum","Maximum","StdDev","Name"\n'
        '24.5,"5841,5138",100,"58,4151.4","58,2522","58,5817",543.0,"void add_kernel<double>(const T1 *, const T1 *, T1 *)"\n'
    )
    [add] = readers.read(old).launches
    assert add.kernel == "void add_kernel<double>(const T1 *, const T1 *, T1 *)" and add.invocations == 100
    assert add.value("Total Time") == pytest.approx(58_415_138e-9)
    assert add.metric("kernel_duration").minimum == pytest.approx(582_522e-9)
    sizes = tmp_path / "cuda_gpu_mem_size_sum.csv"
    sizes.write_text(
        "Total (MB),Count,Avg (MB),Med (MB),Min (MB),Max (MB),StdDev (MB),Operation\n"
        "805.511,103,7.820,0.002,0.002,268.435,45.361,[CUDA memcpy DtoH]\n"
    )
    assert readers.detect(sizes) is nsys_stats
    [dtoh] = readers.read(sizes).launches
    assert (dtoh.kernel, dtoh.invocations, dtoh.attributes["kind"]) == ("[CUDA memcpy DtoH]", 103, "memcpy")
    assert dtoh.value("Total Size") == pytest.approx(805.511e6) and dtoh.metric("kernel_duration") is None
    times = tmp_path / "gpumemtimesum.csv"
    times.write_text(
        '"Time (%)","Total Time (ns)","Count","Avg (ns)","Med (ns)","Min (ns)","Max (ns)",'
        '"StdDev (ns)","Operation"\n'
        '100.0,"6138,1882",103,"59,5940.6","2,401.0","2,048","2046,7582","344,3386.5",'
        '"[CUDA memcpy DtoH]"\n'
    )
    [dtoh] = readers.read(times).launches
    assert dtoh.value("kernel_duration") == pytest.approx(595_940.6e-9)
    assert dtoh.metric("kernel_duration").maximum == pytest.approx(20_467_582e-9)
    api = tmp_path / "cuda_api_sum.csv"  # no report name in the file: the 'cu' names say CUDA API
    api.write_text(
        "Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
        "42.4,197136841,401,491613.1,529743.0,384591,601517,97227.2,cudaDeviceSynchronize\n"
        "34.1,158470102,4,39617525.5,312771.5,150142,157694417,78717966.1,cudaMalloc\n"
    )
    sync, malloc = readers.read(api).launches
    assert (sync.kernel, sync.invocations, sync.attributes["kind"]) == ("cudaDeviceSynchronize", 401, "api")
    assert malloc.value("Avg") == pytest.approx(39_617_525.5e-9) and malloc.value("Med") == pytest.approx(312_771.5e-9)
    osrt = tmp_path / "osrt_sum.csv"  # the OS runtime summary has the same columns: not read
    osrt.write_text(
        "Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
        "85.4,600324911,20,30016245.6,2954740.5,1874,100153187,42448177.7,poll\n"
    )
    with pytest.raises(FormatError, match="no kernel, memory or CUDA API summary rows"):
        readers.read(osrt)


def test_stats_text_digit_groups_of_four(tmp_path: Path) -> None:
    # A locale that groups digits by four (written: no public sample found) reads like one that groups by three.
    text = NSYS_2021.read_text().replace("58,415,138", "5841,5138").replace("584,151.4", "58,4151.4")
    path = tmp_path / "grouped.md"
    path.write_text(text)
    add = readers.read(path).launches[0]
    assert add.value("Total Time") == pytest.approx(58_415_138e-9)
    assert add.value("kernel_duration") == pytest.approx(584_151.4e-9)
