"""Nsight Compute binary report (.ncu-rep) through NVIDIA's ncu_report module: the RTX 3080
Monte-Carlo-pi report (initRNG, computeValue; 621 metrics each). Truth comes from ncu_report
itself, called directly here, and from numbers read off its output."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gpuprof import readers
from gpuprof.errors import FormatError
from gpuprof.readers import ncu_rep

ncu_report = pytest.importorskip("ncu_report")

REP = Path(__file__).parent / "fixtures" / "profiler-outputs" / "ncu_report_binary_2020_win_montecarlo_pi.ncu-rep"


@pytest.fixture(scope="module")
def actions() -> list:
    report = ncu_report.load_report(str(REP))
    profiled = report.range_by_idx(0)
    return [profiled.action_by_idx(i) for i in range(profiled.num_actions())]


@pytest.fixture(scope="module")
def run():
    return readers.read(REP)


def test_two_kernels_with_their_demangled_names(run) -> None:
    assert run.format == "ncu-rep"
    assert [launch.kernel for launch in run.launches] == [
        "initRNG(curandStateXORWOW*, unsigned int)",
        "void computeValue<float>(unsigned int*, curandStateXORWOW*, unsigned int)",
    ]
    assert [launch.attributes["function"] for launch in run.launches] == ["initRNG", "computeValue"]
    assert run.device == {"name": "GeForce RTX 3080", "index": "0", "cc": "8.6"}
    assert run.launches[1].attributes["block"] == "(128, 1, 1)"
    assert run.launches[1].attributes["grid"] == "(1220, 1, 1)"


def test_values_match_what_ncu_report_returns(run, actions) -> None:
    for launch, action in zip(run.launches, actions, strict=True):
        duration = action.metric_by_name("gpu__time_duration.sum")
        assert duration.unit() == "ns"
        assert launch.value("kernel_duration") == pytest.approx(duration.as_double() * 1e-9, rel=1e-12)
        for name in ("dram__bytes_read.sum", "dram__bytes_write.sum", "smsp__inst_executed.sum"):
            assert launch.value(name) == action.metric_by_name(name).as_double()
        clock = action.metric_by_name("smsp__cycles_elapsed.avg.per_second")
        assert (launch.metric(clock.name()).value, launch.metric(clock.name()).unit) == (clock.as_double(), "hertz")
        assert launch.value("device__attribute_display_name") == "GeForce RTX 3080"


def test_every_measurement_is_kept(run, actions) -> None:
    for launch, action in zip(run.launches, actions, strict=True):
        names = list(action.metric_names())
        assert len(names) == 621
        measurements = [
            n for n in names if not n.startswith(("group:", "breakdown:")) and action.metric_by_name(n).has_value()
        ]
        # 9 group:/breakdown: entries; memory_access_size_type, memory_access_type, memory_type have
        # instance values only
        assert len(names) - len(measurements) == 9 + 3
        assert [m.name for m in launch.metrics] == measurements


def test_numbers_read_off_the_report(run) -> None:
    compute = run.launches[1]
    assert compute.value("kernel_duration") == pytest.approx(7_597_056e-9, rel=1e-12)
    assert compute.value("dram_write_bytes") == 44_477_952.0
    assert compute.value("smsp__pcsamp_warps_issue_stalled_wait") == 249_846.0
    assert compute.metric("dram__bytes.sum.per_second").unit == "byte/second"


def test_missing_ncu_report_module_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ncu_report", None)
    with pytest.raises(FormatError, match=r'pip install "gpuprof-hpc\[ncu\]"'):
        ncu_rep.read(REP)


def test_truncated_report_is_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "cut.ncu-rep"
    path.write_bytes(REP.read_bytes()[:100_000])
    with pytest.raises(FormatError, match="no profiled kernels"):
        readers.read(path)


# Byte offsets and XOR masks (13 bits) that make the report lose both kernels' names: found by
# flipping random bits of REP (random.Random(0)); ncu_report then returns no name for either action.
NAMELESS = [
    (309298, 32),
    (397749, 16),
    (1085975, 128),
    (1182113, 4),
    (1300853, 2),
    (1483908, 64),
    (1698416, 16),
    (1764005, 1),
    (1980310, 2),
    (1998992, 32),
    (2116810, 4),
    (2233733, 4),
    (2446881, 8),
]


def test_a_launch_without_a_kernel_name_keeps_a_placeholder_and_a_note(tmp_path: Path) -> None:
    from gpuprof.derive.kernel_table import kernel_table

    data = bytearray(REP.read_bytes())
    for offset, mask in NAMELESS:
        data[offset] ^= mask
    path = tmp_path / "flipped.ncu-rep"
    path.write_bytes(bytes(data))
    run = readers.read(path)
    assert run.launch_table["kernel"].tolist() == ["(unnamed kernel 1)", "(unnamed kernel 2)"]
    assert run.notes == ["launch(es) 1, 2 have no kernel name in the report (damaged?): shown as '(unnamed kernel N)'"]
    table = kernel_table([run])  # was: ValueError: cannot convert float NaN to integer
    assert table["kernel"].tolist() == ["(unnamed kernel 1)", "(unnamed kernel 2)"]
    assert table["launches"].tolist() == [1, 1]


@pytest.fixture
def aborting_report(tmp_path: Path) -> Path:
    """A report on which ncu_report aborts its process (tests/fixtures/damaged/README.md)."""
    import gzip

    packed = Path(__file__).parent / "fixtures" / "damaged" / "ncu_report_aborts_loader.ncu-rep.gz"
    path = tmp_path / "damaged.ncu-rep"
    path.write_bytes(gzip.decompress(packed.read_bytes()))
    return path


def test_a_report_that_aborts_ncu_report_is_caught_in_another_process(aborting_report: Path) -> None:
    import signal

    assert ncu_rep._in_child(aborting_report, "load") == (signal.SIGABRT, None)
    assert ncu_rep._in_child(REP, "load") == (0, ("ok", None))


def test_reading_a_report_that_aborts_ncu_report_is_one_line(aborting_report: Path) -> None:
    with pytest.raises(FormatError, match=r"ncu_report crashed loading it \(signal 6\): the report is damaged"):
        readers.read(aborting_report)


@pytest.fixture
def child_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The reading child, with ``ncu_report.load_report`` replaced by the given code (the child is a
    new interpreter: a monkeypatch in this process cannot reach it)."""

    def use(load: str, before: str = "") -> None:
        script = tmp_path / "child.py"
        script.write_text(
            f"import runpy, sys\n{before}\nsys.path.insert(0, sys.argv[3])\nimport ncu_report\n"
            f"ncu_report.load_report = {load}\n"
            f"runpy.run_path({str(ncu_rep._CHILD)!r}, run_name='__main__')\n"
        )
        monkeypatch.setattr(ncu_rep, "_CHILD", script)

    return use


def test_a_load_that_hangs_is_killed_at_the_time_limit(monkeypatch: pytest.MonkeyPatch, child_with) -> None:
    import time

    child_with("lambda path: time.sleep(60)", "import time")
    monkeypatch.setattr(ncu_rep, "PROBE_TIMEOUT_S", 0.5)
    for reading in (ncu_rep.check_loadable, readers.read):
        started = time.monotonic()
        with pytest.raises(FormatError, match="did not finish loading it within 0.5 s"):
            reading(REP)
        assert time.monotonic() - started < 10


def test_an_error_in_the_reading_child_comes_back_as_one_line(child_with) -> None:
    child_with("broken", "def broken(path):\n    raise RuntimeError('Failed to load report')")
    with pytest.raises(FormatError, match=r"ncu_report could not load it \(Failed to load report\)"):
        readers.read(REP)


def test_the_reader_goes_on_once_the_answer_is_complete(child_with) -> None:
    # The child's exit unmaps ncu_report's libraries (~12 ms): the parent takes the complete answer without
    # waiting for it; a child that ends without one, or by a signal, is still told apart.
    import signal
    import time

    child_with(
        "ncu_report.load_report",
        "import os, time\nexit_now = os._exit\nos._exit = lambda code: (time.sleep(20), exit_now(code))",
    )
    started = time.monotonic()
    status, answer = ncu_rep._in_child(REP, "read")
    assert status == 0 and answer[0] == "ok" and len(answer[1]["kernels"]) == 2
    assert time.monotonic() - started < 15  # a new interpreter's start and read, not the 20 s exit
    child_with("ncu_report.load_report", "import sys\nsys.exit(0)")
    assert ncu_rep._in_child(REP, "read") == (0, None)
    child_with("ncu_report.load_report", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    assert ncu_rep._in_child(REP, "read") == (signal.SIGKILL, None)


def test_reading_starts_no_fork_in_a_process_with_threads() -> None:
    # Forking a process that runs threads can deadlock (Python 3.12 warns of it): the reader starts a
    # new interpreter. Run in a fresh process with a thread running and fork made to fail.
    import subprocess
    import sys

    code = (
        "import os, threading, time, warnings\n"
        "warnings.simplefilter('error')\n"
        "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
        "def no_fork(*a, **k):\n    raise AssertionError('forked')\n"
        "os.fork = no_fork\n"
        "from gpuprof.readers import read\n"
        f"run = read({str(REP)!r})\n"
        "print(len(run.launch_table))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout == "2\n", done.stderr


def test_a_child_started_ahead_is_taken_by_the_read_or_ended(run, tmp_path: Path) -> None:
    """gpuprof.read starts the report's reading child before loading the library (issue 33): the
    read of that path takes the child's answer, the same run as a read that starts its own; a child
    no read took is ended; a file that is no report starts nothing."""
    assert ncu_rep.start(REP)
    ahead = ncu_rep.read(REP)
    assert ncu_rep._started == {}
    own = run  # read by a child of its own
    assert ahead.metric_table.astype(str).equals(own.metric_table.astype(str)) and len(own.metric_table) > 100
    assert ahead.launch_table.astype(str).equals(own.launch_table.astype(str))
    assert ncu_rep.start(REP)
    (child, _) = ncu_rep._started[(str(REP), "read")]
    ncu_rep.forget(REP)
    assert ncu_rep._started == {} and child.returncode is not None
    other = tmp_path / "details.csv"
    other.write_text('"ID","Kernel Name"\n')
    assert not ncu_rep.start(other) and not ncu_rep.start(tmp_path)
