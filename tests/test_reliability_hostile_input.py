"""Hostile and damaged profiler outputs (issue 34): long lines read in linear time, FIFOs and devices
refused before they are opened, unreadable numbers kept as missing with a note, cut files named.

Every check that could hang runs in a child process with a timeout, so a regression fails instead of
stalling the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fixture_paths import A100, FIXTURES, SRAD

from gpuprof import readers

ROOT = Path(__file__).resolve().parent.parent
MB = 1 << 20
README = FIXTURES / "nsys_profile_stats_text_a100_vector_add_README.md"
SUMMARY_TEXT = FIXTURES / "ncu_text_print_summary_per_gpu_a100_roofline_EXCERPT.log"
BABEL = FIXTURES / "nvprof_text_summary_titanxp_babelstream.txt"


def _python(code: str, timeout: float = 60, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def _gpuprof(*args: str, timeout: float = 30, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuprof", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd or ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.DEVNULL,
    )


def _widened(path: Path, old: str, new: str) -> bytes:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    return text.replace(old, new, 1).encode()


# (name, file bytes): one line of a real file grown past 1 MB where a pattern used to backtrack.
SPACES = " " * MB
LONG_LINES = [
    ("nvprof tool message", lambda: _widened(SRAD, "NVPROF is profiling", "NVPROF" + SPACES + "x is profiling")),
    ("nvprof Kernel: line", lambda: _widened(SRAD, "Kernel: compress", "Kernel: compress" + SPACES + "x")),
    ("nvprof device index", lambda: _widened(SRAD, "GeForce GTX 1070 (0)", "GeForce GTX 1070" + SPACES + "x (0)")),
    ("ncu tool message", lambda: b"==PROF== Connected" + SPACES.encode() + b"x\n" + A100.read_bytes()),
    ("ncu summary section", lambda: _widened(SUMMARY_TEXT, "Section: Compute", "Section: C" + SPACES + "x")),
    (
        "ncu summary process",
        lambda: _widened(SUMMARY_TEXT, "raytrace-cuda@", "raytrace-cuda" + "a@" * (MB // 2) + " x"),
    ),
    (
        "ncu summary kernel",
        lambda: _widened(
            SUMMARY_TEXT,
            "PathTracer(int, Pixel *, int), Block",
            "PathTracer" + ", Block Size " * (MB // 13) + "x, Block",
        ),
    ),
    (
        "nsys device line",
        lambda: _widened(README, "General Metrics for NVIDIA GA100", "General Metrics for NVIDIA" + SPACES + "x"),
    ),
    ("nvprof summary name", lambda: _widened(BABEL, "GPU activities:", "GPU activities:") + b"\n"),
]


def _quick_few(values: list[object], every: int, ids: object = None) -> list[object]:
    """Every ``every``-th value in the quick loop, the others marked slow (each case starts a fresh
    gpuprof process: about a second, three on a loaded machine)."""
    return [
        pytest.param(value, marks=() if index % every == 0 else pytest.mark.slow, id=ids(value) if ids else None)
        for index, value in enumerate(values)
    ]


@pytest.mark.parametrize("name", _quick_few([name for name, _ in LONG_LINES], 3))
def test_a_one_megabyte_line_reads_in_under_a_second(tmp_path: Path, name: str) -> None:
    """Failed before: lazy ``(.*?)`` before ``\\s*$`` (and similar) took hours on such a line."""
    data = dict(LONG_LINES)[name]()
    assert max(len(line) for line in data.splitlines()) > MB - 100 or name == "nvprof summary name"
    path = tmp_path / "long.txt"
    path.write_bytes(data)
    result = _python(
        f"""
        import time
        from gpuprof import readers
        from gpuprof.errors import GpuprofError
        for warm_up in {[str(SRAD), str(A100), str(README), str(SUMMARY_TEXT), str(BABEL)]!r}:
            readers.read(warm_up)  # imports pandas: not the time under test
        start = time.process_time()  # CPU time: a loaded machine stretches the wall clock
        try:
            run = readers.read({str(path)!r})
            outcome = f"{{len(run.launches)}} launches"
        except GpuprofError as error:
            outcome = f"error: {{str(error)[:80]}}"
        print(f"{{time.process_time() - start:.3f}} {{outcome}}")
    """,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    seconds = float(result.stdout.split()[0])
    assert seconds < 1.0, result.stdout


def test_nsys_header_cell_unit_is_linear() -> None:
    """The nsys header cell ``Total Time (ns)``: a CSV cell may hold any whitespace run."""
    result = _python(
        """
        import time
        from gpuprof.readers.nsys_stats import _column
        start = time.process_time()  # CPU time: a loaded machine stretches the wall clock
        found = _column("Total" + " " * (1 << 20) + "x (ns)")
        assert _column("Total Time (ns)") == ("Total Time", "ns")
        print(f"{time.process_time() - start:.3f}")
    """,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert float(result.stdout) < 1.0


def test_long_line_patterns_still_read_the_real_files() -> None:
    """The rewritten patterns take the same fields from the real files as before."""
    from gpuprof.readers import _nvprof
    from gpuprof.readers.ncu_text import _process
    from gpuprof.readers.nsys_stats import _device_name

    assert _nvprof.split_device("GeForce GTX 1070 (0)") == ("GeForce GTX 1070", 0)
    assert _process("[1146135] raytrace-cuda@127.0.0.1") == {
        "pid": "1146135",
        "process": "raytrace-cuda",
        "host": "127.0.0.1",
    }
    assert _device_name("NVIDIA GA100 (any frequency)") == "NVIDIA GA100"
    run = readers.read(SUMMARY_TEXT)
    assert {launch.kernel for launch in run.launches} == {"PathTracer(int, Pixel *, int)"}
    srad = readers.read(SRAD)
    assert "compress(long, float*)" in {launch.kernel for launch in srad.launches}


def _one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0, result.stdout[-500:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr[-2000:]
    return lines[0]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "profile.csv"
    os.mkfifo(path)
    return path


# Every command argument that names a file to read; {input} is the FIFO or the device.
READ_COMMANDS = [
    ["import", "{input}", "--store", "{tmp}/s.sqlite"],
    ["import", "--reader", "ncu-csv", "{input}", "--store", "{tmp}/s.sqlite"],
    ["import", "--reader", "perf-stat", "{input}", "--store", "{tmp}/s.sqlite"],
    ["sweep", "{input}", "--store", "{tmp}/s.sqlite"],
    ["merge", "{tmp}/out.sqlite", "{input}"],
    ["compare", "--import", "{input}"],
    ["stalls", "{input}"],
    ["show", "--store", "{input}"],
]


def _command(args: list[str]) -> str:
    return " ".join(args[:3])


@pytest.mark.parametrize("args", _quick_few(READ_COMMANDS, 4, _command))
def test_a_fifo_is_refused_at_once_with_one_line(tmp_path: Path, fifo: Path, args: list[str]) -> None:
    """Failed before: ``import --reader NAME`` and ``sweep`` opened the FIFO and blocked forever."""
    line = _one_error_line(_gpuprof(*[a.format(input=fifo, tmp=tmp_path) for a in args], timeout=30))
    assert "named pipe (FIFO)" in line and "folder" not in line, line
    assert not (tmp_path / "s.sqlite").exists() and not (tmp_path / "out.sqlite").exists()


@pytest.mark.parametrize("args", _quick_few(READ_COMMANDS[2:] + READ_COMMANDS[:2], 4, _command))
def test_dev_zero_is_refused_at_once_with_one_line(tmp_path: Path, args: list[str]) -> None:
    """Failed before: ``/dev/zero`` given to ``import --reader NAME`` or ``sweep`` filled memory."""
    line = _one_error_line(_gpuprof(*[a.format(input="/dev/zero", tmp=tmp_path) for a in args], timeout=30))
    assert "character device" in line, line


def test_a_config_over_the_cap_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "big.toml"
    config.write_text('name = "x"\n' + "# padding\n" * 200_000)
    line = _one_error_line(_gpuprof("sweep", str(config), "--store", str(tmp_path / "s.sqlite")))
    assert "too big for a sweep config" in line


def test_a_failed_import_creates_no_store(tmp_path: Path) -> None:
    """Failed before: the store was created (empty) before the file was found unreadable."""
    bad = tmp_path / "notes.txt"
    bad.write_text("not a profile\n")
    store = tmp_path / "new.sqlite"
    _one_error_line(_gpuprof("import", str(bad), "--store", str(store)))
    assert not store.exists()


# --- item 3: a value that cannot be read is missing, with a note; never another number ---------------
PERF = Path(__file__).parent / "fixtures" / "cpu-counters" / "perf-stat-human-fp-multiplexed-intel-simd-lecture.txt"
SOURCE_CSV = FIXTURES / "ncu-source-page-sass-csv-HET-RGNNMatmul-excerpt.csv"
XU = "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active"


def _read_text(tmp_path: Path, text: str, name: str = "profile.txt"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return readers.read(path)


def _values(run, metric: str) -> list[object]:
    table = run.metric_table
    return table.loc[table["metric"] == metric, "value"].tolist()


@pytest.mark.parametrize("elapsed", ["-1", "1e308", "nan", "-0.05"])
def test_perf_elapsed_that_perf_never_prints_is_missing_with_a_note(tmp_path: Path, elapsed: str) -> None:
    """Failed before: such a line vanished without a word (or, in other shapes, lost its sign)."""
    run = _read_text(tmp_path, PERF.read_text().replace("0.056711689 seconds time", f"{elapsed} seconds time"))
    assert _values(run, "time elapsed") == []
    assert any(f"line 18: '{elapsed}' is not a duration" in note for note in run.notes), run.notes
    assert _values(run, "instructions") == [284766972.0]  # the rest is read as before


@pytest.mark.parametrize("count", ["nan", "n/a", "inf", "-5", "2,84.766,97", "284,76a,972"])
def test_perf_count_that_is_no_number_is_missing_with_a_note(tmp_path: Path, count: str) -> None:
    """Failed before: '2,84.766,97' read as 284.76697; the others vanished without a note."""
    run = _read_text(tmp_path, PERF.read_text().replace("284,766,972      instr", f"{count}      instr"))
    assert _values(run, "instructions") == []
    assert any(f"line 6: '{count}' is not a count" in note and "instructions" in note for note in run.notes)


@pytest.mark.parametrize(
    ("text", "decimal", "value"),
    [
        ("2,84.766,97", ".", None),
        ("1,2,3", ".", None),
        ("nan", ".", None),
        ("inf", ".", None),
        ("12,34,567", ".", 1234567),
        ("1.234,5", ",", 1234.5),
        ("1,5", ",", 1.5),
        ("14,059", ".", 14059),
    ],
)
def test_locale_numbers_are_whole_tokens(text: str, decimal: str, value: float | None) -> None:
    from gpuprof.model.units import parse_locale_number

    assert parse_locale_number(text, decimal) == value


@pytest.mark.parametrize("cell", ["nan", "n/a", "inf", "1.2.3"])
def test_ncu_csv_value_that_is_no_number_is_missing_with_a_note(tmp_path: Path, cell: str) -> None:
    """Failed before: 'nan' and 'inf' were stored as NaN and inf, and none of the four had a note."""
    run = _read_text(tmp_path, A100.read_text().replace('"5,323,503,232.00"', f'"{cell}"', 1), "a100.csv")
    table = run.metric_table
    row = table[(table["launch"] == 0) & (table["metric"] == "dram__bytes.sum")]
    assert row["value"].isna().all() and row["text"].tolist() == [cell]
    assert any(f"dram__bytes.sum = '{cell}'" in note and "kept as missing" in note for note in run.notes)


@pytest.mark.parametrize(
    ("label", "old", "new", "expected"),
    [
        # spaces collapsed by a copy-paste: the row reads by its tokens
        (
            "collapsed",
            f"{XU}             %           13.043705 13.043705 13.043705",
            f"{XU} % 13.043705 13.043705 13.043705",
            (13.043705, 13.043705, 13.043705),
        ),
        # a minimum wider than its column: its digits do not spill into the next one (was 13.043705 / 10 ...)
        (
            "wider",
            "13.043705 13.043705 13.043705",
            "1013.043705 13.043705 13.043705",
            (13.043705, 1013.043705, 13.043705),
        ),
    ],
)
def test_ncu_print_summary_reads_whole_tokens(
    tmp_path: Path, label: str, old: str, new: str, expected: tuple[float, float, float]
) -> None:
    """Failed before: fixed columns sliced the wider value and its neighbour into wrong digits."""
    run = _read_text(tmp_path, SUMMARY_TEXT.read_text().replace(old, new, 1), "summary.log")
    table = run.metric_table
    row = table[(table["launch"] == 0) & (table["metric"] == XU)]
    assert tuple(row[["value", "minimum", "maximum"]].iloc[0]) == pytest.approx(expected)


def test_ncu_print_summary_nan_minimum_is_noted(tmp_path: Path) -> None:
    run = _read_text(
        tmp_path,
        SUMMARY_TEXT.read_text().replace("13.043705 13.043705 13.043705", "NaN       13.043705 13.043705", 1),
        "s.log",
    )
    assert any(XU in note and "minimum 'NaN'" in note for note in run.notes), run.notes


@pytest.mark.parametrize("cell", ["NaN", "n/a"])
def test_sass_source_sample_that_is_no_count_is_not_zero(tmp_path: Path, cell: str) -> None:
    """Failed before: a 'NaN' or 'n/a' sample count counted as 0 in the kernel's sum."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(SOURCE_CSV.read_text())))
    header = rows[1]
    column = (
        next(i for i, name in enumerate(header) if name == "stall_barrier")
        if "stall_barrier" in header
        else next(i for i, name in enumerate(header) if name.startswith("stall_") and "(" not in name)
    )
    original = readers.read(SOURCE_CSV)
    rows[2][column] = cell
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    run = _read_text(tmp_path, out.getvalue(), "source.csv")
    changed = [m for m in run.launches[0].metrics if m.value is None]
    assert len(changed) == 1 and original.launches[0].value(changed[0].name) is not None
    assert any(header[column] in note and f"'{cell}'" in note for note in run.notes), run.notes


# --- item 4: a file cut at a line boundary says it looks truncated -------------------------------------
DETAILS = FIXTURES / "ncu_text_details_page_cc89_sgemm_default_sections.log"


def test_a100_csv_cut_after_the_last_launchs_first_metric_says_truncated(tmp_path: Path) -> None:
    """Failed before: the cut file imported as a smaller profile without a word (1 of 15 metrics)."""
    lines = A100.read_text().splitlines(keepends=True)
    whole = readers.read(A100)
    per_launch = whole.metric_table.groupby("launch").size()
    assert per_launch.nunique() == 1 and per_launch.iloc[0] == 15  # every launch: 15 metric rows
    cut = lines[: 1 + 15 * (len(whole.launch_table) - 1) + 1]  # header, all launches but the last, one row
    run = _read_text(tmp_path, "".join(cut), "cut.csv")
    assert len(run.launch_table) == len(whole.launch_table)
    notes = [note for note in run.notes if "looks truncated" in note]
    assert notes and "has 1 metric row(s), every other launch at least 15" in notes[0], run.notes
    assert not any("truncated" in note for note in whole.notes)


def test_ncu_details_table_without_its_closing_rule_says_truncated(tmp_path: Path) -> None:
    """Failed before: the page cut inside a table read as a shorter table, no note."""
    lines = DETAILS.read_text().splitlines(keepends=True)
    row = next(i for i, line in enumerate(lines) if "SM Active Cycles" in line)
    run = _read_text(tmp_path, "".join(lines[: row + 1]), "cut.log")
    assert any("looks truncated" in note for note in run.notes), run.notes
    assert not any("truncated" in note for note in readers.read(DETAILS).notes)


# --- item 7: a sweep config's name is one safe folder name --------------------------------------------
@pytest.mark.parametrize("name", ["../../../tmp/x", "a/b", "..", ".hidden", "", "a\\b", "x\ny", "/abs"])
def test_a_sweep_name_that_is_not_one_folder_name_is_refused(tmp_path: Path, name: str) -> None:
    """Failed before: name = "../../x" placed the Slurm job folder outside reports/slurm/."""
    from gpuprof.errors import InputError
    from gpuprof.sweep import load_config

    config = tmp_path / "c.toml"
    config.write_text(
        f'name = {name!r}\n[[grid]]\nops = ["add"]\nsizes = ["1KB"]\n'.replace("'", '"')
        if "\\" not in name and "\n" not in name
        else f'name = """{name}"""\n[[grid]]\nops = ["add"]\nsizes = ["1KB"]\n'.replace("\\", "\\\\")
    )
    with pytest.raises(InputError, match="key 'name' .* is not one folder name"):
        load_config(config)


def test_a_sweep_name_taken_from_the_file_name_is_made_safe(tmp_path: Path) -> None:
    from gpuprof.sweep import load_config

    config = tmp_path / "my sweep;$(x).toml"
    config.write_text('[[grid]]\nops = ["add"]\nsizes = ["1KB"]\n')
    assert load_config(config).name == "my_sweep___x_"
    named = tmp_path / "ok.toml"
    named.write_text('name = "quick-2.v1"\n[[grid]]\nops = ["add"]\nsizes = ["1KB"]\n')
    assert load_config(named).name == "quick-2.v1"


# --- items 8, 9: operating-system errors and messages, one line each ------------------------------------
@pytest.mark.parametrize("packer", ["gzip", "xz", "bz2"])
def test_a_compressed_profile_no_reader_takes_gets_a_hint_to_decompress(tmp_path: Path, packer: str) -> None:
    """Failed before: 'not a profiler output gpuprof recognises', with no word about compression."""
    import bz2
    import gzip
    import lzma

    packed = tmp_path / "profile.csv.packed"
    content = b"timestamp,cpu_percent\n2024-01-01T00:00:00,12.5\n"  # no profiler's output, once unpacked
    packed.write_bytes({"gzip": gzip.compress, "xz": lzma.compress, "bz2": bz2.compress}[packer](content))
    line = _one_error_line(_gpuprof("import", str(packed), "--store", str(tmp_path / "s.sqlite")))
    assert f"compressed ({packer}) and no reader takes it" in line and "decompress it first" in line


def _path_cases(tmp: Path) -> dict[str, tuple[str, str]]:
    """name -> (path, what the one line must say)."""
    loop = tmp / "loop.csv"
    os.symlink(loop, loop)
    a_file = tmp / "file.csv"
    a_file.write_text("x\n")
    return {
        "name too long": (str(tmp / ("x" * 5000 + ".csv")), "the name is too long for the file system"),
        "symlink loop": (str(loop), "symbolic link loop"),
        "file as a folder": (str(a_file / "inner.csv"), "is a file, not a folder"),
        "missing": (str(tmp / "missing.csv"), "no such file"),
        "newline in the name": (str(tmp / "new\nline.csv"), "no such file"),
    }


COMMANDS_READING = [
    ["import", "{path}", "--store", "{tmp}/s.sqlite"],
    ["import", "--reader", "ncu-csv", "{path}", "--store", "{tmp}/s.sqlite"],
    ["sweep", "{path}", "--store", "{tmp}/s.sqlite"],
    ["merge", "{tmp}/out.sqlite", "{path}"],
    ["compare", "--import", "{path}"],
    ["stalls", "{path}"],
    ["diff", "{path}", str(A100), "--store", "{tmp}/s.sqlite"],
]


PATH_CASES = ["name too long", "symlink loop", "file as a folder", "missing", "newline in the name"]


@pytest.mark.parametrize(
    ("args", "case"),
    [
        # the quick loop: every command once and every case at least once (a process each)
        pytest.param(
            args,
            case,
            marks=() if i % len(PATH_CASES) == j else pytest.mark.slow,
            id=f"{_command(args)}-{case}",
        )
        for j, case in enumerate(PATH_CASES)
        for i, args in enumerate(COMMANDS_READING)
    ],
)
def test_os_errors_on_input_paths_are_one_line_naming_the_case(tmp_path: Path, case: str, args: list[str]) -> None:
    """Failed before: ENAMETOOLONG and ELOOP were tracebacks in several commands, a symlink loop read as
    'no such file', ENOENT/ENOTDIR with --reader were tracebacks, a newline split the error line."""
    path, expected = _path_cases(tmp_path)[case]
    result = _gpuprof(*[a.format(path=path, tmp=tmp_path) for a in args])
    line = _one_error_line(result)
    assert "Traceback" not in result.stderr
    if args[0] == "diff" and case in ("missing", "newline in the name", "name too long", "file as a folder"):
        return  # diff reads a missing path as a run id or a file: its own one line, checked above
    assert expected in line, line
    assert len(line) < 1200
