"""The Slurm tests run again and again, idle and with the CPU busy: a flaky test shows up here (issue 21).

Runs ``pytest tests/test_slurm_sweep.py`` (each run starts its own one-node cluster) ``--idle`` times,
then ``--busy`` times while ``--burners`` processes spin on the CPU. Every run and every burner has a
time limit, so the script always ends. A run counts as passed only when every test passed and none
skipped (a skip means no cluster, which proves nothing). Prints one line per run and a summary; the
output of a failed run is kept under ``--keep``. Exit status 1 when any run did not pass.

    .venv/bin/python benchmarks/slurm_repeat.py             # 20 idle + 10 busy, about 15 minutes
    .venv/bin/python benchmarks/slurm_repeat.py --idle 3 --busy 0
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = "tests/test_slurm_sweep.py"
BURN = "import sys, time\nend = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end:\n    pass\n"


@dataclass(frozen=True)
class Outcome:
    """One pytest run: counts from its JUnit report, wall time, and whether it passed."""

    passed: int
    failed: int
    skipped: int
    seconds: float
    status: int

    @property
    def ok(self) -> bool:
        return self.status == 0 and self.failed == 0 and self.skipped == 0 and self.passed > 0


def run_once(limit_s: float, keep: Path, label: str) -> Outcome:
    """One ``pytest TESTS`` in its own session: SIGTERM at the limit (the cluster fixture then stops
    its daemons), SIGKILL 30 s later."""
    with tempfile.TemporaryDirectory(prefix="slurm-repeat-") as folder:
        report, log = Path(folder) / "junit.xml", Path(folder) / "output.txt"
        start = time.monotonic()
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "pytest", TESTS, "-p", "no:cacheprovider", f"--junitxml={report}"],
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                status = process.wait(timeout=limit_s)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
                status = 124
        seconds = time.monotonic() - start
        passed = failed = skipped = 0
        if report.exists():
            suite = ElementTree.parse(report).getroot().find("testsuite")
            if suite is not None:
                total, skipped = int(suite.get("tests", 0)), int(suite.get("skipped", 0))
                failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
                passed = total - skipped - failed
        outcome = Outcome(passed, failed, skipped, seconds, status)
        if not outcome.ok:
            keep.mkdir(parents=True, exist_ok=True)
            (keep / f"{label}.txt").write_bytes(log.read_bytes())
    return outcome


def burners(count: int, limit_s: float) -> list[subprocess.Popen[bytes]]:
    """``count`` Python processes that spin on the CPU, each ending by itself after ``limit_s``."""
    return [subprocess.Popen([sys.executable, "-c", BURN, str(limit_s)], start_new_session=True) for _ in range(count)]


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.wait()


def series(name: str, runs: int, limit_s: float, keep: Path) -> list[Outcome]:
    outcomes = []
    for index in range(1, runs + 1):
        outcome = run_once(limit_s, keep, f"{name}-{index}")
        outcomes.append(outcome)
        print(
            f"{name:4} run {index:2}/{runs}: {'pass' if outcome.ok else 'FAIL'}  {outcome.passed} passed, "
            f"{outcome.failed} failed, {outcome.skipped} skipped  {outcome.seconds:5.1f} s  "
            f"load {os.getloadavg()[0]:.2f}",
            flush=True,
        )
    return outcomes


def summary(name: str, outcomes: list[Outcome]) -> str:
    if not outcomes:
        return f"{name}: no runs"
    times = sorted(o.seconds for o in outcomes)
    good = sum(o.ok for o in outcomes)
    return (
        f"{name}: {good} of {len(outcomes)} runs passed ({sum(o.passed for o in outcomes)} test passes, "
        f"{sum(o.failed for o in outcomes)} failures, {sum(o.skipped for o in outcomes)} skips); "
        f"run time {times[0]:.1f}-{times[-1]:.1f} s, median {statistics.median(times):.1f} s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=int, default=20, help="runs without added load (default 20)")
    parser.add_argument("--busy", type=int, default=10, help="runs with the CPU busy (default 10)")
    parser.add_argument(
        "--burners",
        type=int,
        default=os.cpu_count() or 2,
        help="busy-loop processes during the busy runs (default: one per core)",
    )
    parser.add_argument("--limit", type=float, default=300.0, help="seconds one pytest run may take (default 300)")
    parser.add_argument(
        "--keep",
        type=Path,
        default=Path(tempfile.gettempdir()) / "slurm-repeat",
        help="folder for the output of failed runs",
    )
    args = parser.parse_args()
    started = datetime.datetime.now().astimezone()
    print(
        f"{started:%Y-%m-%d %H:%M %Z} on {platform.node()}: {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, load {os.getloadavg()[0]:.2f}; {TESTS}",
        flush=True,
    )
    idle = series("idle", args.idle, args.limit, args.keep)
    load = burners(args.burners if args.busy else 0, args.busy * (args.limit + 30))
    try:
        busy = series("busy", args.busy, args.limit, args.keep)
    finally:
        stop(load)
    minutes = (datetime.datetime.now().astimezone() - started).total_seconds() / 60
    print(summary("idle", idle))
    print(summary(f"busy ({args.burners} burners)", busy))
    everything_passed = all(o.ok for o in idle + busy)
    print(f"total {minutes:.1f} min" + ("" if everything_passed else f"; failed runs' output in {args.keep}"))
    return 0 if everything_passed else 1


if __name__ == "__main__":
    sys.exit(main())
