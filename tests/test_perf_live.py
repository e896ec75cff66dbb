"""Live perf counting on this machine: only the timed region is counted, and what cannot be counted
(no perf, no PMU in a VM, unknown events) degrades to one note instead of an error."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from gpuprof.launch import perf as live

PERF = shutil.which("perf")
needs_perf = pytest.mark.skipif(
    PERF is None,
    reason="perf is not installed here (Debian: apt-get install "
    "linux-perf); test_missing_perf_degrades covers this machine",
)


def _busy(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def _perf_accepts(event: str) -> tuple[bool, bool]:
    """(perf knows the event, perf can count it) asked of perf directly, as the oracle."""
    done = subprocess.run(
        [PERF or "perf", "stat", "-x,", "-e", event, "--", "true"],
        capture_output=True,
        text=True,
        env={**os.environ, "LC_ALL": "C"},
    )
    return done.returncode == 0, done.returncode == 0 and "<not supported>" not in done.stderr


def test_missing_perf_degrades() -> None:
    found = live.probe(("cycles",), perf="/nonexistent/gpuprof-perf")
    assert found.usable == () and "perf is not installed" in (found.error or "")
    counters, notes = live.open_counters(("cycles",), perf="/nonexistent/gpuprof-perf")
    assert counters is None
    assert len(notes) == 1 and "\n" not in notes[0]
    assert notes[0].startswith("CPU hardware counters unavailable: perf is not installed")
    assert notes[0].endswith("FLOPs are analytic")


@needs_perf
def test_probe_agrees_with_perf() -> None:
    events = ("cycles", "instructions", "fp_arith_inst_retired.scalar_double", "task-clock")
    found = live.probe(events)
    for event in events:
        known, countable = _perf_accepts(event)
        assert (event in found.usable) == countable, event
        assert (event in found.unknown) == (not known), event
    reason = found.reason(in_vm=True)
    if not _perf_accepts("cycles")[1]:  # this build VM: no PMU
        assert reason is not None and "\n" not in reason
        assert "cycles, instructions <not supported>" in reason
        assert "(no PMU exposed in this VM)" in reason and "FLOPs are analytic" in reason
        assert "still counting task-clock" in reason


@needs_perf
def test_counts_only_the_enabled_windows() -> None:
    counters = live.PerfCounters(("task-clock",)).start()
    _busy(0.3)  # not counted: before enable
    with counters:
        _busy(0.1)
    _busy(0.3)  # not counted: after disable
    counters.enable()
    _busy(0.1)
    counters.disable()
    metrics = {m.name: m for m in counters.metrics()}
    assert counters.windows == 2 and counters.notes == []
    assert metrics["task-clock"].unit == "second" and metrics["task-clock"].origin == "measured"
    assert 0.15 < metrics["task-clock"].value < 0.35  # the two 0.1 s windows, not the 0.8 s in all
    assert counters.metrics() == list(metrics.values())  # perf stopped once, result kept


@needs_perf
def test_exact_argv_attaches_idle_to_this_process() -> None:
    counters = live.PerfCounters(("task-clock", "cycles"))
    argv = counters.argv
    ctl, ack = argv[argv.index("--control") + 1].removeprefix("fifo:").split(",")
    assert argv[:3] == ["perf", "stat", "-x,"]
    assert argv[argv.index("-D") + 1] == "-1"
    assert argv[argv.index("-e") + 1] == "task-clock,cycles"
    assert argv[argv.index("-p") + 1] == str(os.getpid())
    assert os.path.basename(ctl) == "ctl" and os.path.basename(ack) == "ack"
    counters.close()
    assert not os.path.exists(ctl)


@needs_perf
def test_perf_failing_leaves_one_note_not_an_error() -> None:
    counters = live.PerfCounters(("no_such_event_gpuprof",)).start()
    with counters:
        _busy(0.01)
    assert counters.metrics() == []
    assert len(counters.notes) == 1
    assert counters.notes[0].startswith("CPU counters lost: perf stat exited")
    assert "event syntax error" in counters.notes[0]


@needs_perf
def test_open_counters_on_this_machine() -> None:
    counters, notes = live.open_counters()
    assert len(notes) <= 1
    if counters is not None:
        with counters:
            _busy(0.05)
        names = {m.name for m in counters.metrics()}
        assert "task-clock" in names
    if not _perf_accepts("cycles")[1]:
        assert notes and notes[0].startswith("CPU hardware counters unavailable")


def test_permission_refusal_is_one_line(tmp_path) -> None:
    # A stand-in perf that answers as perf 6.1 does when perf_event_paranoid forbids counting
    # (message text from perf's evsel__open_strerror for EACCES).
    fake = tmp_path / "perf"
    fake.write_text(
        "#!/bin/sh\n"
        "if [ \"$1\" = --version ]; then echo 'perf version 6.1.187'; exit 0; fi\n"
        "printf 'Error:\\nAccess to performance monitoring and observability operations is limited.\\n"
        "Consider adjusting /proc/sys/kernel/perf_event_paranoid setting to open\\n' >&2\n"
        "exit 255\n"
    )
    fake.chmod(0o755)
    counters, notes = live.open_counters(("cycles",), perf=str(fake))
    assert counters is None
    assert notes == [
        "CPU hardware counters unavailable: perf stat failed: Access to performance monitoring "
        "and observability operations is limited; FLOPs are analytic"
    ]


def test_old_perf_without_control_fifo(tmp_path) -> None:
    fake = tmp_path / "perf"
    fake.write_text("#!/bin/sh\necho 'perf version 5.4.233'\n")
    fake.chmod(0o755)
    found = live.probe(("cycles",), perf=str(fake))
    assert (
        found.error == "perf version 5.4.233 is older than 5.10 and cannot count only the timed region "
        "(no --control fifo)"
    )


@pytest.mark.slow  # a 60 MB run under real perf, interrupted: 5-13 s
@needs_perf
def test_ctrl_c_during_a_run_leaves_no_perf_folder(tmp_path, ctrl_c_reaches_python) -> None:
    """perf's FIFOs and log live in a gpuprof-perf-XXXX folder; a Ctrl-C'd run must remove it."""
    import signal
    import sys

    temp = tmp_path / "tmp"
    temp.mkdir()
    argv = [
        sys.executable,
        "-m",
        "gpuprof",
        "run",
        "--op",
        "add",
        "--size",
        "60MB",
        "--repeat",
        "400",
        "--warmup",
        "0",
        "--device",
        "cpu",
        "--store",
        str(tmp_path / "s.sqlite"),
    ]
    child = subprocess.Popen(
        argv, env={**os.environ, "TMPDIR": str(temp)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    while not list(temp.glob("gpuprof-perf-*")) and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if not list(temp.glob("gpuprof-perf-*")):
        child.kill()
        pytest.skip("perf counts nothing here, so no perf session was opened")
    time.sleep(0.5)  # inside the timed repeats
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert err.strip().splitlines()[-1] == "error: interrupted. Results stored before the interrupt are kept."
    assert list(temp.iterdir()) == []
