"""Long commands (run, calibrate, compare --html) show progress on a terminal from the first second,
through one bar (gpuprof.cli.progress), and nothing when their stderr is piped."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from terminal_pty import in_terminal

# calibrate with a plan of seconds, not minutes: the command is the same, only the sizes shrink
TINY_CALIBRATE = textwrap.dedent(
    """
    import sys
    from gpuprof import calibrate
    from gpuprof.cli import main
    calibrate.plan = lambda *_: calibrate.CalibrationPlan(matmul_n=64, stream_array_bytes=2**20, warmup=1, repeats=2)
    main(["calibrate", "--store", sys.argv[1]])
    """
)

# compare --html with charts that cost nothing to draw: the steps are the real ones
QUICK_CHARTS = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from gpuprof.render import compare_plots
    from gpuprof.cli import main
    compare_plots.lines_by_op = compare_plots.best_rate_bars = lambda *_: None
    def plot_device(points, device, peaks, folder):
        path = Path(folder) / "r.png"
        path.write_bytes(b"png")
        return [path]
    compare_plots.roofline_plot.plot_device = plot_device
    main(["compare", "--reference", "paper", "--op", "add", "--store", sys.argv[1], "--html", sys.argv[2]])
    """
)


@pytest.mark.slow  # real commands on a pseudo-terminal and piped: 5-11 s
def test_a_long_run_shows_progress_on_a_terminal_and_nothing_when_piped(tmp_path):
    argv = [
        sys.executable,
        "-m",
        "gpuprof",
        "run",
        "--op",
        "add",
        "--size",
        "24MB",
        "--repeat",
        "150",
        "--warmup",
        "1",
        "--device",
        "cpu",
        "--no-counters",
        "--store",
        str(tmp_path / "s.sqlite"),
    ]
    screen, _ = in_terminal(argv, 100, stdout_too=False)
    assert "add 24MB: repeat" in screen and "/150" in screen
    piped = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr.strip().splitlines()[-1].startswith("stored as run ")
    assert "repeat" not in piped.stderr and "━" not in piped.stderr


@pytest.mark.slow  # a real command on a pseudo-terminal: 2-5 s
def test_the_steps_before_the_timed_calls_are_shown_from_the_start(tmp_path):
    # allocating the operands, the first call and the float64 reference check of a large run took
    # 15 s without a word on a terminal; each is now named as it starts
    argv = [
        sys.executable,
        "-m",
        "gpuprof",
        "run",
        "--op",
        "dot",
        "--size",
        "12MB",
        "--repeat",
        "1",
        "--warmup",
        "0",
        "--device",
        "cpu",
        "--no-counters",
        "--store",
        str(tmp_path / "s.sqlite"),
    ]
    screen, _ = in_terminal(argv, 100, stdout_too=False)
    # the bar starts before pandas and NumPy are loaded (seconds on a busy host), then names each step
    steps = ("loading NumPy and the engine", "operands (12.00 MB)", "first call", "float64 reference check")
    for phase in (f"dot 12MB: {step}" for step in steps):
        assert phase in screen, screen


@pytest.mark.slow  # a real calibration on a pseudo-terminal and piped: 4-10 s
def test_calibrate_shows_each_step_on_a_terminal_and_nothing_when_piped(tmp_path):
    # calibrate sat 16-30 s without a word on a terminal
    argv = [sys.executable, "-c", TINY_CALIBRATE, str(tmp_path / "s.sqlite")]
    screen, _ = in_terminal(argv, 100, stdout_too=False)
    for step in ("calibrate: loading NumPy", "calibrate: float32 matmul 64²: repeat", "calibrate: np.add: arrays (3 ×"):
        assert step in screen, screen
    assert "stored calibration" in screen
    piped = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert piped.returncode == 0, piped.stderr
    assert "━" not in piped.stderr and "matmul 64²:" not in piped.stderr


@pytest.mark.slow  # a whole HTML report on a pseudo-terminal and piped: 4-11 s
def test_compare_html_shows_each_chart_on_a_terminal_and_nothing_when_piped(tmp_path):
    # compare --html drew its charts for 18-41 s without a word on a terminal
    from test_compare import measured

    from gpuprof.store import open_store

    store = tmp_path / "s.sqlite"
    with open_store(store) as opened:
        opened.add(measured("add", [1000, 1000], [2e-3]))
    argv = [sys.executable, "-c", QUICK_CHARTS, str(store), str(tmp_path / "r.html")]
    screen, _ = in_terminal(argv, 100, stdout_too=False)
    for step in (
        "compare: loading pandas, reading the runs",
        "compare: chart of FLOP efficiency against size per op",
        "compare: chart of best MFLOP/s per device and op",
        "compare: roofline of K40 (paper)",
    ):
        assert step in screen, screen
    assert "HTML report written to" in screen
    piped = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert piped.returncode == 0, piped.stderr
    assert "━" not in piped.stderr and "chart of" not in piped.stderr
