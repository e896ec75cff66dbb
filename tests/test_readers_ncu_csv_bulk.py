"""The pandas fast path of the ncu details-CSV reader: it must give exactly what the
line-by-line reader gives, and leave every file it cannot read exactly to that reader."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from fixture_paths import A100, A100_ERRORS, B200, FIXTURES, V100
from hypothesis import given
from hypothesis import strategies as st

from gpuprof import model
from gpuprof.derive import kernel_table as kernel_table_module
from gpuprof.model import Run, tables
from gpuprof.readers import _ncu_csv_bulk, ncu_csv
from gpuprof.readers._text import column_numbers, metric_columns, metric_maker

FAST = _ncu_csv_bulk.read


@pytest.fixture(params=["native", "pyarrow", "pandas"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The tests of what the fast path reads run with each of its parsers: gpuprof's C scanner
    (when it was built), pyarrow's (when installed) and pandas' (used without either, for files
    over ARROW_MAX_BYTES and for those the others do not take). Each falls back to the next."""
    if request.param == "native":
        pytest.importorskip("gpuprof.readers._ncu_csv_native", reason="the C scanner was not built (no compiler)")
    else:
        monkeypatch.setattr(_ncu_csv_bulk, "_native_chunks", lambda *args: None)
    if request.param == "pyarrow":
        pytest.importorskip("pyarrow", reason="the parquet extra (pyarrow) is not installed")
    if request.param == "pandas":
        monkeypatch.setattr(_ncu_csv_bulk, "_arrow_chunks", lambda *args: None)
    return request.param


def _contents(run: Run) -> tuple:
    """Everything a reader decides, with NaN made comparable."""

    def value(v: object) -> object:
        return "nan" if isinstance(v, float) and math.isnan(v) else v

    launches = [
        (
            launch.kernel,
            launch.index,
            launch.device,
            launch.invocations,
            launch.attributes,
            [(m.name, value(m.value), m.unit, m.canonical, m.origin, m.minimum, m.maximum) for m in launch.metrics],
        )
        for launch in run.launches
    ]
    return launches, run.notes, run.device


def _read_both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[bool, Run, Run]:
    """(whether the fast path took the file, its run, the line-by-line reader's run)."""
    taken: list[bool] = []

    def spy(*args: object) -> bool:
        taken.append(FAST(*args))
        return taken[-1]

    monkeypatch.setattr(_ncu_csv_bulk, "read", spy)
    run = ncu_csv.read(path)
    monkeypatch.setattr(_ncu_csv_bulk, "read", lambda *args: False)
    return any(taken), run, ncu_csv.read(path)


@pytest.mark.parametrize("fixture", [A100, A100_ERRORS, B200, V100], ids=lambda p: p.name)
def test_clean_tables_take_the_fast_path_with_the_same_result(
    fixture: Path, monkeypatch: pytest.MonkeyPatch, parser: str
) -> None:
    fast, run, lines = _read_both(fixture, monkeypatch)
    assert fast
    assert _contents(run) == _contents(lines)


@pytest.mark.parametrize("fixture", [A100, B200, V100], ids=lambda p: p.name)
def test_pyarrow_takes_the_clean_tables(fixture: Path, parser: str) -> None:
    """pyarrow parses ncu's own files (the B200's rule rows through its invalid-row handler)."""
    with open(fixture, encoding="utf-8") as handle:
        header, _ = ncu_csv.find_csv_header(handle, ncu_csv._REQUIRED, ncu_csv.ToolLog("ncu"))
        skip = _ncu_csv_bulk.skip_for(fixture, handle, len(header))
    chunks = _ncu_csv_bulk._arrow_chunks(fixture, skip, ncu_csv._Table(header).layout())
    assert (chunks is not None) == (parser in ("native", "pyarrow"))
    if chunks:
        (rows,) = chunks
        assert rows.numbers is not None and len(rows.numbers) == rows.bounds[-1] >= 45
        assert (len(rows.rules) > 0) == (fixture == B200)


def test_fast_path_values_read_by_eye(monkeypatch: pytest.MonkeyPatch, parser: str) -> None:
    """V100 launch 99 (the last) and a B200 rule row, through the fast path."""
    fast, run, _ = _read_both(V100, monkeypatch)
    assert fast and len(run.launches) == 100
    last = run.launches[99]
    assert (last.index, last.kernel, len(last.metrics)) == (99, "cuda_compute_flux", 52)
    assert (last.metric("Duration").value, last.metric("Duration").unit) == (38560 / 1e9, "second")
    assert (last.value("SM Frequency"), last.metric("SM Frequency").unit) == (1_229_525_414.94, "hertz")
    assert last.value("Achieved Occupancy") == 38.79
    assert last.attributes["time"] == "2020-Apr-09 15:40:29"
    fast, run, _ = _read_both(B200, monkeypatch)
    assert fast
    assert run.launches[0].attributes["rules"].startswith("SOLBottleneck [OPT]: This workload exhibits low compute")


def _variant(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "variant.csv"
    path.write_bytes(text.encode())
    return path


def _a100() -> str:
    return A100.read_text()


def _with_line_after_row(text: str, row: int, line: str) -> str:
    lines = text.splitlines(keepends=True)
    header = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    lines.insert(header + 1 + row, line)
    return "".join(lines)


def _b200_rule_moved(to_launch: str) -> str:
    """The B200 capture (launch 0) with its rows again as launch 1, then its first rule row moved
    to the end under launch ID ``to_launch``."""
    lines = B200.read_text().splitlines(keepends=True)
    rows = [line for line in lines if line.startswith('"0",')]
    rule = next(line for line in rows if ',"","","",' in line)
    lines.remove(rule)
    return "".join(lines + ['"1"' + row[3:] for row in rows] + [f'"{to_launch}"' + rule[3:]])


def _b200_with_rules(*changes) -> str:
    """The B200 capture (launch 0) with its rows again as launches 1, 2 ..., each with its rule
    rows as ``changes`` (one per launch) leave them: launches of other rules, or another order."""
    lines = B200.read_text().splitlines(keepends=True)
    rows = [line for line in lines if line.startswith('"0",')]
    rules = [line for line in rows if ',"","","",' in line]
    metrics = [line for line in rows if line not in rules]
    for launch, change in enumerate(changes, start=1):
        lines += [f'"{launch}"' + row[3:] for row in metrics + change(rules)]
    return "".join(lines)


# (name, the file's text, whether the fast path may take it)
VARIANTS = [
    (
        "the same number of rules per launch, in other orders",
        lambda: _b200_with_rules(lambda rules: rules[::-1], lambda rules: rules, lambda rules: rules[1:] + rules[:1]),
        True,
    ),
    (
        "launches of more and fewer rules",
        lambda: _b200_with_rules(lambda rules: rules[2:], lambda rules: rules + rules[:3], lambda rules: rules[2:]),
        True,
    ),
    ("a rule row after another launch's rows", lambda: _b200_rule_moved("0"), False),
    ("a launch of a rule row only", lambda: _b200_rule_moved("123456"), True),
    ("windows line ends and BOM", lambda: "\ufeff" + _a100().replace("\n", "\r\n"), True),
    (
        "blank lines and messages before the header",
        lambda: "\n==PROF== Connected to process 1\n\nprogram output, with a comma\n" + _a100(),
        True,
    ),
    (
        "launch rows out of order",
        lambda: _with_line_after_row(
            _a100(),
            2,
            '"2","1961118","profile","127.0.0.1","void f<float>(float *, int)","1","7","(1, 1, 1)",'
            '"(1, 1, 1)","0","8.0","Command line profiler metrics","dram__bytes.sum","byte","1.00"\n',
        ),
        False,
    ),
    (
        "string-valued and percent metrics",
        lambda: (
            _a100().replace('"5,323,503,232.00"', '"PolicySpread"', 1).replace('"693,482,995,584.00"', '"28.05%"', 1)
        ),
        True,
    ),
    (
        "a tool message between rows",
        lambda: _with_line_after_row(_a100(), 20, "==PROF== Disconnected from process 1961118\n"),
        False,
    ),
    ("program output after the table", lambda: _a100() + "Done.\n", False),
    ("a row cut short", lambda: _with_line_after_row(_a100(), 5, '"0","1961118","profile"\n'), False),
    ("an odd quote before the header", lambda: 'said "hello\n' + _a100(), False),
    (
        "a quoted line break in a kernel name",
        lambda: _a100().replace(
            '"void gemm_v1<float>(float *, float *, float *, int, int, int)"', '"void f<\n2>(int)"'
        ),
        True,
    ),
    ("a file cut mid-row", lambda: _a100()[:-20], False),
    # found by fuzzing the three parsers against the line-by-line reader: a quote doubled inside a
    # metric name is one quote to every reader, and a section met again after another is kept once
    ("a doubled quote in a metric name", lambda: _a100().replace('"lts__t_bytes.sum"', '"lts__""t""_bytes.sum"'), True),
    (
        "a section again after another",
        lambda: V100.read_text().replace('"Memory Workload Analysis","Mem Busy"', '"GPU Speed Of Light","Mem Busy"', 1),
        True,
    ),
    (
        "a row longer than the header",
        lambda: _a100().replace('"5,323,503,232.00"', '"5,323,503,232.00",' + ",x" * 5000, 1),
        False,
    ),
    (
        "a first row longer than the header",
        lambda: _with_line_after_row(_a100(), 0, '"0"' + "," * 140_000 + "\n"),
        False,
    ),
]


@pytest.mark.parametrize("name, make, fast_expected", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_variants_read_the_same_either_way(
    name: str, make, fast_expected: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parser: str
) -> None:
    fast, run, lines = _read_both(_variant(tmp_path, make()), monkeypatch)
    assert fast == (fast_expected and not (parser == "native" and name in NATIVE_LEAVES))
    assert _contents(run) == _contents(lines)


# What the C scanner leaves to the line-by-line reader though pyarrow or pandas would take it: a
# quote it does not judge (a line break inside one here) is read by the reference reader itself.
NATIVE_LEAVES = {"a quoted line break in a kernel name"}


def test_a_file_the_scanner_refuses_goes_to_the_line_reader_not_to_pandas(tmp_path: Path) -> None:
    """A stray quote after a closing one: pyarrow and pandas read the field on, the csv module
    as the line-by-line reader does; the scanner refuses the row, and the file is read line by line."""
    pytest.importorskip("gpuprof.readers._ncu_csv_native", reason="the C scanner was not built (no compiler)")
    text = _a100().replace('"void gemm_v1<float>(float *, float *, float *, int, int, int)"', '"void g"x"(int)"', 1)
    path = _variant(tmp_path, text)
    with open(path, encoding="utf-8") as handle:
        header, _ = ncu_csv.find_csv_header(handle, ncu_csv._REQUIRED, ncu_csv.ToolLog("ncu"))
        skip = _ncu_csv_bulk.skip_for(path, handle, len(header))
    assert _ncu_csv_bulk._native_chunks(path, skip, ncu_csv._Table(header).layout()) == [None]
    assert not FAST(path, skip, ncu_csv._Table(header).layout(), lambda rows: True)


def test_data_start_counts_lines_and_refuses_what_pandas_reads_otherwise(tmp_path: Path) -> None:
    path = tmp_path / "head.csv"
    head = b'a\r\n\r\n"ID","x"\n'
    path.write_bytes(head + b'"0","1"\n')
    assert _ncu_csv_bulk.data_start(path, len(head), 2) == 3
    assert _ncu_csv_bulk.data_start(path, len(head), 1) is None  # the first row is longer than the header
    assert _ncu_csv_bulk.data_start(path, 2**64 + len(head), 2) is None  # a tell() cookie, not an offset
    path.write_bytes(b'a "b\n"ID","x"\n"0","1"\n')
    assert _ncu_csv_bulk.data_start(path, len(b'a "b\n"ID","x"\n'), 2) is None


UNITS = [
    "",
    "%",
    "byte",
    "Kbyte",
    "nsecond",
    "usecond",
    "cycle/second",
    "cycle/nsecond",
    "byte/second",
    "Gbyte/second",
    "register/thread",
    "warp",
]
TEXTS = [
    "0",
    "38560",
    "5,323,503,232.00",
    "1.3746e+11",
    "28.05%",
    "n/a",
    "",
    " 7 ",
    "PolicySpread",
    "nan",
    "-inf",
    "1_000",
    "0.00040624",
]


@pytest.mark.parametrize(
    ("units", "base", "values"),
    [
        (["second", "usecond"], "second", [2.0, 2e-6]),
        (["usecond", "second"], "second", [2e-6, 2.0]),
        (["byte/second", "Gbyte/second"], "byte/second", [2.0, 2e9]),
    ],
)
def test_every_row_gets_its_base_unit_whatever_order_the_units_come_in(units, base, values) -> None:
    # Hypothesis found ('byte/second', 'Gbyte/second'): the second row's value was converted but its
    # unit kept; with sorted categories the same befell 'usecond' after 'second'.
    columns = metric_columns(["Duration"] * 2, units, ["2", "2"])
    assert list(columns["unit"]) == [base, base] and list(columns["value"]) == pytest.approx(values)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["Duration", "dram__bytes.sum", "SM Frequency", "x"]),
            st.sampled_from(UNITS),
            st.sampled_from(TEXTS),
        ),
        max_size=40,
    )
)
def test_column_conversion_equals_the_row_by_row_one(rows: list[tuple[str, str, str]]) -> None:
    """metric_columns (both paths' converter) gives exactly metric_maker's Metrics, but for a NaN
    value, which the columnar model holds as no value."""
    names, units, texts = (list(column) for column in zip(*rows)) if rows else ([], [], [])
    one = metric_maker()
    table = tables.metric_table([0] * len(names), **metric_columns(names, units, texts))
    [launch] = model.launch_views(tables.launch_table(["k"], [0], [""], [1], [{}]), table)
    assert _comparable(launch.metrics) == _comparable(map(one, names, units, texts))


def _comparable(metrics) -> list[tuple]:
    return [
        (m.name, None if isinstance(m.value, float) and math.isnan(m.value) else m.value, m.unit, m.canonical, m.origin)
        for m in metrics
    ]


# The NERSC-method fixtures of SOURCES.md section 6, and byte-level variants of them: no public ncu
# CSV with a UTF-8 BOM, CRLF line ends or the 'unnamed>::' spelling beside rule columns was found,
# so those are the real files with only that changed, by the functions below.
V100_TENSOR = FIXTURES / "ncu_csv_v100_nersc_one_metric_per_run_tf_fp16_EXCERPT.sm__inst_executed_pipe_tensor.sum.csv"
A100_BERT = FIXTURES / "ncu_csv_a100_nersc_rule_columns_unnamed_ns_bert_EXCERPT.csv"
A100_SGEMM = FIXTURES / "ncu_csv_a100_nersc_roofline_metrics_with_duration_sgemm.csv"
BYTE_VARIANTS = {
    "as published": lambda data: data,
    "UTF-8 BOM": lambda data: b"\xef\xbb\xbf" + data,
    "CRLF line ends": lambda data: data.replace(b"\n", b"\r\n"),
    "BOM and CRLF": lambda data: b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n"),
    "ncu's 'unnamed>::' spelling": lambda data: data.replace(b"<unnamed>::", b"unnamed>::"),
}


@pytest.mark.parametrize("variant", BYTE_VARIANTS)
@pytest.mark.parametrize("fixture", [V100_TENSOR, A100_BERT, A100_SGEMM], ids=lambda p: p.name[:40])
def test_nersc_files_and_their_byte_variants_read_the_same_either_way(
    fixture: Path, variant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parser: str
) -> None:
    path = tmp_path / fixture.name
    path.write_bytes(BYTE_VARIANTS[variant](fixture.read_bytes()))
    fast, run, lines = _read_both(path, monkeypatch)
    assert fast
    assert _contents(run) == _contents(lines)
    assert _contents(run)[0] == _contents(ncu_csv.read(fixture))[0] or "unnamed" in variant


def test_nersc_v100_program_output_before_the_header_is_no_launch(monkeypatch: pytest.MonkeyPatch, parser: str) -> None:
    """38 lines of TensorFlow's stdout ('Loading data...', 'All done') sit between '==PROF==
    Connected' and the header: 9 launches, IDs 104-125, and no note (the ==PROF== lines are info)."""
    fast, run, _ = _read_both(V100_TENSOR, monkeypatch)
    assert fast and run.notes == []
    assert run.launch_table["index"].tolist() == [104, 110, 116, 120, 121, 122, 123, 124, 125]
    gemm = run.launches[6]
    assert gemm.kernel == "volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn"
    assert (
        gemm.value("sm__inst_executed_pipe_tensor.sum"),
        gemm.metric("sm__inst_executed_pipe_tensor.sum").canonical,
        gemm.attributes["time"],
    ) == (7_077_888, "tensor_inst", "2020-Jun-09 11:54:24")


def test_rule_rows_short_of_the_speedup_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parser: str) -> None:
    """A rule row that stops after its description, and one that stops before its speedup: the
    launch's rules leave out the speedup, on either path, its other rules kept in file order."""
    lines = B200.read_text().splitlines(keepends=True)
    assert lines[14].endswith('potential reasons.","",""\n') and lines[33].endswith('configurations.","global","50"\n')
    lines[14] = lines[14].replace('reasons.","",""', 'reasons."')
    lines[33] = lines[33].replace('configurations.","global","50"', 'configurations.","global"')
    _, run, lines_run = _read_both(_variant(tmp_path, "".join(lines)), monkeypatch)
    assert _contents(run) == _contents(lines_run)
    rules = run.launches[0].attributes["rules"].splitlines()
    assert len(rules) == 8
    assert rules[0].endswith("Look at Scheduler Statistics and Warp State Statistics for potential reasons.")
    assert rules[2].startswith("LaunchConfiguration [OPT]: A wave of thread blocks is defined as")
    assert rules[2].endswith("for more details on launch configurations.")
    assert rules[3].endswith("(estimated speedup local 81.25%)")


@pytest.mark.parametrize("spelling", ["<unnamed>::", "unnamed>::"])
def test_anonymous_namespace_names_and_empty_units_are_kept(
    spelling: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parser: str
) -> None:
    """6c's softmax kernel keeps ncu's spelling of its anonymous namespace, either one; counts with
    an empty unit ('Block Size', 'Grid Size') read as plain numbers; rule rows become the launch's
    rules."""
    path = tmp_path / "bert.csv"
    path.write_bytes(A100_BERT.read_bytes().replace(b"<unnamed>::", spelling.encode()))
    _, run, _ = _read_both(path, monkeypatch)
    softmax = run.launches[1]
    assert softmax.kernel == (
        f"void {spelling}softmax_warp_forward<float, float, float, (int)5, (bool)0, (bool)0>"
        "(T2 *, const T1 *, int, int, int, const bool *, int, bool)"
    )
    assert (softmax.value("Block Size"), softmax.metric("Block Size").unit, softmax.value("Grid Size")) == (128, "", 40)
    assert softmax.value("smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum") == 0
    assert softmax.attributes["rules"].startswith(
        "LaunchConfiguration [WRN]: The grid for this launch is configured to execute only 40 blocks"
    )


@pytest.mark.parametrize("fixture", [A100, B200, V100], ids=lambda p: p.name)
@pytest.mark.parametrize("chunk", [37, 500])
def test_chunked_read_stores_the_same_run_as_a_whole_file_read(
    fixture: Path, chunk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files larger than ARROW_MAX_BYTES are parsed by pandas CHUNK_ROWS rows at a time (37: every
    launch of the three is cut somewhere); launches cut by a chunk's end go on in the next, and the
    stored run is the whole-file read's, row for row."""
    from gpuprof.store import open_store

    whole = ncu_csv.read(fixture)
    monkeypatch.setattr(_ncu_csv_bulk, "ARROW_MAX_BYTES", 0)
    monkeypatch.setattr(_ncu_csv_bulk, "CHUNK_ROWS", chunk)
    fast, chunked, _ = _read_both(fixture, monkeypatch)
    assert fast
    assert _contents(chunked) == _contents(whole)
    frames = []
    for name, run in (("whole", whole), ("chunked", chunked)):
        with open_store(tmp_path / f"{name}.sqlite") as store:
            store.add(run)
            (stored,) = store.runs()
        frames.append(stored.metrics_frame().drop(columns="run_id").astype(str))
    assert len(frames[0]) == sum(len(launch.metrics) for launch in whole.launches) >= 45
    assert frames[0].equals(frames[1])


def test_a_launch_split_across_chunks_by_another_goes_line_by_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A launch whose rows come back after another launch's, in a later chunk, is a launch in
    pieces: the chunked fast path refuses it as the whole-file one does, and nothing of it is kept."""
    lines = V100.read_text().splitlines(keepends=True)
    header = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = lines[header + 1 :]
    first_id = rows[0].split(",")[0]
    first = [row for row in rows if row.split(",")[0] == first_id]
    path = tmp_path / "pieces.csv"
    path.write_text("".join(lines[: header + 1] + rows + first[:3]))
    monkeypatch.setattr(_ncu_csv_bulk, "ARROW_MAX_BYTES", 0)
    monkeypatch.setattr(_ncu_csv_bulk, "CHUNK_ROWS", 50)
    fast, run, lines_run = _read_both(path, monkeypatch)
    assert not fast
    assert _contents(run) == _contents(lines_run)
    assert len(run.launches) == 100 and len(run.launches[0].metrics) == len(first) + 3


def test_pyarrow_value_cast_reads_each_cell_as_the_python_converter_does() -> None:
    """The one-cast conversion of pyarrow's value column gives what ``number`` gives per cell
    (thousands separators, percents, exponents, names and n/a), and keeps the text of the rest."""
    pa = pytest.importorskip("pyarrow", reason="the parquet extra (pyarrow) is not installed")
    cells = [t for t in TEXTS if t] + ["+1.5", "1.", ".5", "-0", "1e400", "0.1e-3", "12,345"]
    numbers, texts = _ncu_csv_bulk._numbers(pa.chunked_array([cells]))
    expected = column_numbers(cells)  # a cell that is no finite number is kept as its text either way
    finite = [math.isfinite(number) for number in expected]
    assert [math.isfinite(number) for number in numbers] == finite
    assert [n for n, f in zip(numbers.tolist(), finite) if f] == [n for n, f in zip(expected.tolist(), finite) if f]
    assert texts == {i: cell for i, cell in enumerate(cells) if not finite[i]}
    assert numbers[cells.index("12,345")] == 12345 and numbers[cells.index("28.05%")] == 28.05


@pytest.mark.parametrize("fixture", [A100, B200, V100], ids=lambda p: p.name)
@pytest.mark.parametrize(
    ("chunk", "options"), [(37, {}), (500, {"l2_bytes": "l1-reads", "tensor_flop_per_inst": 512.0})]
)
def test_streamed_import_stores_the_same_run_as_a_whole_file_import(
    fixture: Path, chunk: int, options: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file over STREAM_MIN_BYTES goes into the store chunk by chunk (its metric rows spilled to
    disk, then written column by column): the stored run is the whole-file import's, row for row,
    and the per-kernel table from the rows it holds is the whole run's, with the options that
    change what that table looks up too."""
    from gpuprof import importing
    from gpuprof.derive.kernel_table import kernel_table
    from gpuprof.store import open_store

    (whole,) = importing.import_files([fixture], tmp_path / "whole.sqlite", **options)
    streamed_reads: list[bool] = []
    chunked_read = ncu_csv.read_chunked
    monkeypatch.setattr(ncu_csv, "read_chunked", lambda *args: streamed_reads.append(True) or chunked_read(*args))
    monkeypatch.setattr(importing, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(_ncu_csv_bulk, "STREAM_CHUNK_ROWS", chunk)
    (lean,) = importing.import_files([fixture], tmp_path / "streamed.sqlite", **options)
    assert streamed_reads and lean.run_id == whole.run_id
    stored = []
    for name in ("whole", "streamed"):
        with open_store(tmp_path / f"{name}.sqlite", read_only=True) as store:
            (run,) = store.runs()
        stored.append(run)
    assert _contents(stored[1]) == _contents(stored[0])
    frames = [run.metrics_frame().drop(columns="run_id").astype(str) for run in stored]
    assert len(frames[0]) == len(whole.metric_table) >= 45
    assert frames[0].equals(frames[1])
    assert lean.notes == whole.notes
    # the launch attributes dictionary-encoded: one dict object per distinct content, shared by its launches
    attributes = lean.launch_table["attributes"].tolist()
    assert len({id(a) for a in attributes}) == len({json.dumps(a, sort_keys=True) for a in attributes})
    whole_table = kernel_table([whole]).astype(str)
    # the lean run's launches folded a few at a time (two of the A100's three, 16 of the V100's 100)
    monkeypatch.setattr(kernel_table_module, "FRAME_LAUNCHES", max(2, len(lean.launch_table) // 6))
    assert kernel_table([lean]).astype(str).equals(whole_table)


def test_launches_with_the_same_attributes_share_one_dict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of the V100 layout's first launch repeated under new IDs (as a long profile repeats
    its kernels): streamed into the store, its launches hold one attribute dict between them, and
    the store gives each launch that dict's content (the per-launch sections and kernel time too)."""
    from gpuprof import importing
    from gpuprof.store import open_store

    lines = V100.read_text().splitlines(keepends=True)
    header = next(line for line in lines if line.startswith('"ID",'))
    body = [line for line in lines if line.startswith('"0",')]
    path = tmp_path / "repeated.csv"
    path.write_text(header + "".join(f'"{launch}",' + line[4:] for launch in range(30) for line in body))
    monkeypatch.setattr(importing, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(_ncu_csv_bulk, "STREAM_CHUNK_ROWS", 37)
    (run,) = importing.import_files([path], tmp_path / "s.sqlite")
    attributes = run.launch_table["attributes"].tolist()
    assert len(attributes) == 30 and len({id(a) for a in attributes}) == 1
    assert attributes[0]["time"] == "2020-Apr-09 15:38:19" and attributes[0]["sections"].startswith(
        "GPU Speed Of Light"
    )
    with open_store(tmp_path / "s.sqlite", read_only=True) as store:
        (stored,) = store.runs()
    assert stored.launch_table["attributes"].tolist() == attributes
    assert stored.launch_table["index"].tolist() == list(range(30))


@pytest.mark.parametrize("fixture", [B200, V100], ids=lambda p: p.name)
def test_past_the_distinct_attribute_sets_shared_each_launch_keeps_its_own(
    fixture: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file whose launches differ in a field (the V100 file's kernel time: 100 launches, 100
    attribute sets) shares only the first DISTINCT_ATTRIBUTES sets; the rest keep their own dicts,
    with the same content (rule rows and sections added, both parsers) as when every set is shared."""
    shared_all = ncu_csv.read(fixture)
    monkeypatch.setattr(ncu_csv, "DISTINCT_ATTRIBUTES", 3)
    fast, capped, lines_run = _read_both(fixture, monkeypatch)
    assert fast
    assert _contents(capped) == _contents(shared_all) == _contents(lines_run)
    attributes = capped.launch_table["attributes"].tolist()
    dicts = len({id(a) for a in attributes})
    assert dicts == len({json.dumps(a, sort_keys=True) for a in attributes})  # each distinct set once
    assert dicts == (100 if fixture == V100 else 1) == len(attributes)


@pytest.mark.parametrize(
    "cells",
    [
        ["5,323,503,232.00", "1.3746e+11", "-0", "+1.5", "1.", ".5", "1e400", "inf", "nan", "0.1e-3"],
        ["406240", "0.00040624", "1E+05", "-12.5", "7"],
    ],
    ids=["separators", "plain"],
)
def test_pyarrow_one_cast_of_decimal_columns_reads_as_python_does(cells: list[str]) -> None:
    """A value column of decimals only is converted by Arrow's cast in one call (the cell-by-cell
    path is for columns with percents or names): each cell as ``number`` reads it, 'inf', 'nan' and
    an overflow kept as their text."""
    pa = pytest.importorskip("pyarrow", reason="the parquet extra (pyarrow) is not installed")
    numbers, texts = _ncu_csv_bulk._numbers(pa.chunked_array([cells[:3], cells[3:]]))
    expected = column_numbers(cells)
    finite = [math.isfinite(number) for number in expected]
    assert [math.isfinite(number) for number in numbers] == finite
    assert [n for n, f in zip(numbers.tolist(), finite) if f] == [n for n, f in zip(expected.tolist(), finite) if f]
    assert texts == {i: cell for i, cell in enumerate(cells) if not finite[i]}


def test_run_lookup_keeps_what_it_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run.lookup gives what one pass over the metric table gives, in any order of keys, whether
    it answers from what it kept (an import's notes and per-kernel table share counters) or not."""
    run = ncu_csv.read(V100)
    names = list(run.metric_table["metric"].cat.categories[:6])
    keys = [*names, "kernel_duration", "no such counter", "sm_clock"]
    values, units = tables.lookup(run.metric_table, len(run.launch_table), keys)
    assert (~np.isnan(values)).sum(axis=0)[:6].min() == len(run.launch_table) == 100
    first = run.lookup(keys[:4])
    assert np.array_equal(first[0], values[:, :4], equal_nan=True) and first[1] == units[:4]
    order = [8, 0, 6, 7, 3, 5, 1, 2, 4]
    again = run.lookup([keys[i] for i in order])
    assert np.array_equal(again[0], values[:, order], equal_nan=True) and again[1] == [units[i] for i in order]
    again[0][:] = 0  # the caller's to change: what is kept stays as found
    assert np.array_equal(run.lookup(keys)[0], values, equal_nan=True)
    monkeypatch.setattr(model, "LOOKUP_CELLS", 0)
    fresh = ncu_csv.read(V100)
    assert np.array_equal(fresh.lookup(keys)[0], values, equal_nan=True) and fresh.lookup(keys)[1] == units


_MUTATIONS = [b'"', b",", b"\n", b"\r\n", b'""', b"\xff", b"1e999", b"-", b".", b'"0",', b'",,"', b'"n/a"', b'"28.5%"']


@pytest.mark.parametrize("seed", range(4))
def test_mutated_files_the_fast_path_takes_read_as_the_line_reader_reads_them(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random damage near line starts of the three real layouts (a quote, a separator, a line
    break, bytes that are no UTF-8 ...): whatever the C scanner takes, it reads as the reference.
    pyarrow's and pandas' readings of a stray quote still differ from the line reader's (they
    read the field on past it); an install without a compiler parses with them."""
    import random

    pytest.importorskip("gpuprof.readers._ncu_csv_native", reason="the C scanner was not built (no compiler)")

    rng = random.Random(seed)
    taken = 0
    for case in range(15):
        data = bytearray(rng.choice([A100, B200, V100]).read_bytes())
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(len(data) + 1)
            line = data.find(b"\n", at)
            if line >= 0 and rng.random() < 0.7:
                at = line + 1 + rng.randrange(0, 60)
            change = rng.randrange(3)
            if change == 0:
                data[at:at] = rng.choice(_MUTATIONS)
            elif change == 1:
                del data[at : at + rng.randrange(1, 6)]
            elif at < len(data):
                data[at] = rng.choice(b'0123456789",.\n-ex ')
        path = tmp_path / f"mutated{case}.csv"
        path.write_bytes(bytes(data))
        try:
            fast, run, lines = _read_both(path, monkeypatch)
        except model.FormatError:  # no header left, or nothing readable: both readers refuse alike
            continue
        taken += fast
        assert _contents(run) == _contents(lines), f"seed {seed}, case {case}"
    assert taken, "no mutated file went down the fast path"
