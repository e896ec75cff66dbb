"""A long run shows progress on a terminal, and nothing when its stderr is piped."""

from __future__ import annotations

import subprocess
import sys

from terminal_pty import in_terminal


def test_a_long_run_shows_progress_on_a_terminal_and_nothing_when_piped(tmp_path):
    argv = [sys.executable, "-m", "gpuprof", "run", "--op", "add", "--size", "24MB", "--repeat", "150",
            "--warmup", "1", "--device", "cpu", "--no-counters", "--store", str(tmp_path / "s.sqlite")]
    screen, _ = in_terminal(argv, 100, stdout_too=False)
    assert "add 24MB: repeat" in screen and "/150" in screen
    piped = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr.strip().splitlines()[-1].startswith("stored as run ")
    assert "repeat" not in piped.stderr and "━" not in piped.stderr
