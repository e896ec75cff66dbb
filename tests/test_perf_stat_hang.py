"""perf stat text with huge lines is read in linear time (fuzz case 2828 hung for minutes).

The fuzzer grew fields of a real capture by ~1 MB (digits, letters, blanks). Several patterns of
:mod:`gpuprof.readers.perf_stat` could split such a run in many ways and backtracked quadratically:
the shadow metric ``# <number> <words>`` with a second '#' after a digit run, a value followed by
no-break spaces (which are both value grouping marks and blanks), the lazy target of the
'Performance counter stats for' header and the '# started on' date before a run of blanks; and
:mod:`gpuprof.readers.perf_topdown`'s sniff ran ``^\\s*`` from every line start over all the blank
lines after it. Each input is read in a child process so that a regression fails the test at the
timeout instead of hanging the suite.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ITMO = Path(__file__).parent / "fixtures" / "cpu-counters" / "perf-stat-o-pid-hybrid-not-counted-itmo-linreg.txt"
SIZE = 600_000
LIMIT_S = 5.0  # CPU seconds (a loaded machine stretches the wall clock): the fixed reader takes well under 0.5 s
TIMEOUT_S = 30.0  # the child (interpreter start included) is killed after this

_CHILD = r"""
import json, sys, time
from pathlib import Path
from gpuprof import readers
from gpuprof.errors import GpuprofError
began = time.process_time()
try:
    run = readers.read(Path(sys.argv[1]))
except GpuprofError as error:
    print(json.dumps({"seconds": time.process_time() - began, "error": str(error)}))
    raise SystemExit(0)
seconds = time.process_time() - began
values = {}
for launch in run.launches:
    for metric in launch.metrics:
        values.setdefault(metric.name, metric.value)
print(json.dumps({"seconds": seconds, "format": run.format, "launches": len(run.launches),
                  "first": {m.name: m.value for m in run.launches[0].metrics}, "values": values}))
"""


def _replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def _insert_line(text: str, after: str, line: str) -> str:
    """``line`` inserted after the one line holding ``after``."""
    lines = text.splitlines(keepends=True)
    at = [i for i, old in enumerate(lines) if after in old]
    assert len(at) == 1, after
    return "".join(lines[: at[0] + 1] + [line + "\n"] + lines[at[0] + 1 :])


# Each shape is one kind of huge line the fuzzer made (or that makes the same pattern backtrack).
SHAPES: dict[str, Callable[[str], str]] = {
    # case 2828: a ~1 MB digit run grown into the cycles line, with a '#' inside it, plus
    # 'A's grown into the task-clock shadow words ('CPUs utilized').
    "case-2828": lambda text: _replace_once(
        _replace_once(text, "CPUs utilized", "CPUs u" + "A" * 140_000 + "tilized"),
        "cpu_core/cycles/ ",
        "cpu_core/cycles/ " + "9" * SIZE + "#" + "9" * SIZE,
    ),
    "shadow-digits-then-hash": lambda text: _insert_line(
        text, "cpu_atom/cycles/", "         1      cpu_core/branches/               # 1" + "9" * SIZE + " x #"
    ),
    "shadow-words-blanks-then-hash": lambda text: _insert_line(
        text, "cpu_atom/cycles/", "         1      cpu_core/branches/               # 1 x" + " " * SIZE + "y #"
    ),
    "value-no-break-spaces": lambda text: _insert_line(text, "cpu_atom/cycles/", "1" + "\u00a0" * SIZE + "!"),
    "value-narrow-no-break-spaces": lambda text: _insert_line(text, "cpu_atom/cycles/", "  1" + "\u202f" * SIZE),
    "started-on-blanks": lambda text: _insert_line(text, "seconds time elapsed", "# started on x" + " " * SIZE + "y"),
    # Blanks under 64 KiB: the counter lines must stay in the head the format is detected from.
    "header-blanks": lambda text: _replace_once(
        text, "process id '378972':", "process id '378972' (3 runs)" + " " * 50_000 + "x:"
    ),
    "blank-lines-after-the-table": lambda text: text + "\n" * SIZE,
    "blank-indented-lines": lambda text: text + " \n" * (SIZE // 2),
}


def _read_in_child(path: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.slow  # megabyte lines read by a timed child process: 2-9 s each
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_huge_lines_are_read_quickly_and_the_counters_survive(shape: str, tmp_path: Path) -> None:
    text = SHAPES[shape](ITMO.read_text())
    assert len(text) > len(ITMO.read_text()) + 50_000
    path = tmp_path / f"{shape}.txt"
    path.write_text(text, encoding="utf-8")
    result = _read_in_child(path)
    assert result["seconds"] < LIMIT_S, result["seconds"]
    assert "error" not in result, result.get("error")
    assert result["format"] == "perf-stat"
    first = result["first"]
    # Counts read from the fixture by hand (49,184,385,612 instructions, 14,082 cache misses).
    assert first["cpu_core/instructions"] == 49184385612
    assert first["cpu_core/cache-misses"] == 14082
    assert first["cpu_atom/instructions"] == "<not counted>"
    assert result["values"]["time elapsed"] == pytest.approx(4.004842306)


def test_case_2828_shape_keeps_the_grown_lines_counts(tmp_path: Path) -> None:
    """The grown lines themselves still parse as before: the cycles count (its cgroup column is
    now the digit run) and task-clock with its longer shadow words."""
    path = tmp_path / "case.txt"
    path.write_text(SHAPES["case-2828"](ITMO.read_text()), encoding="utf-8")
    result = _read_in_child(path)
    assert result["values"]["cpu_core/cycles"] == 9458407423
    assert result["first"]["task-clock"] == pytest.approx(3.02584)  # 3,025.84 msec


def test_header_target_and_runs_are_cut_as_before() -> None:
    from gpuprof.readers.perf_stat import _header

    assert _header(" Performance counter stats for 'sleep 1' (5 runs):") == ("'sleep 1'", "5")
    assert _header(" Performance counter stats for process id '378972':") == ("process id '378972'", None)
    assert _header("Performance counter stats for 'system wide':  ") == ("'system wide'", None)
    assert _header("Performance counter stats for (3 runs)") == ("(3 runs)", None)  # no target left
    assert _header("Performance counter stats for x" + " " * 10 + "(12 runs)") == ("x", "12")
    assert _header("Performance counter stats for    ") == (" ", None)
    assert _header("no header here") is None


@pytest.mark.parametrize("blank", ["\n", " \n", "\r\n", "\t \n"], ids=repr)
def test_topdown_sniff_is_linear_on_blank_lines(blank: str) -> None:
    """A 64 KiB head of blank lines: the old '^\\s*retiring' took 2-4 s here (every sniff runs on
    every file gpuprof detects); the answer is unchanged, also for an indented header after them."""
    import time

    from gpuprof.readers import HEAD_BYTES, perf_topdown

    head = blank * (HEAD_BYTES // len(blank))
    began = time.process_time()
    assert not perf_topdown.sniff(Path("x.txt"), head)
    assert time.process_time() - began < 0.5
    assert perf_topdown.sniff(Path("x.txt"), head + "   retiring      bad speculat   FE bound\n")
