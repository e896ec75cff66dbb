"""A long run shows progress on a terminal, and nothing when its stderr is piped."""

from __future__ import annotations

import subprocess
import sys

from terminal_pty import in_terminal


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
    for phase in ("dot 12MB: operands (12.00 MB)", "dot 12MB: first call", "dot 12MB: float64 reference check"):
        assert phase in screen, screen
