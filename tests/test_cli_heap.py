"""The import command's process keeps freed memory for its next columns (gpuprof/cli/heap.py):
glibc otherwise hands each dropped million-row column back to the kernel and faults the next one
in page by page. Process-global allocator state: each case runs in a fresh interpreter."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or sys.implementation.name != "cpython", reason="glibc's mallopt"
)

COLUMNS = """
import resource, sys
import numpy as np
from gpuprof.cli.heap import keep_freed_memory
took = keep_freed_memory() if sys.argv[1] == "keep" else None
def columns():
    held = [np.ones(1_000_000) for _ in range(6)]  # six million-row columns of float64, then dropped
    del held
columns()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    columns()
print(took, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(how: str) -> tuple[str, int]:
    out = subprocess.run([sys.executable, "-c", COLUMNS, how], capture_output=True, text=True, check=True).stdout
    took, faults = out.split()
    return took, int(faults)


def test_dropped_columns_are_reused_not_faulted_in_again() -> None:
    took, kept = _faults("keep")
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("the thresholds are glibc's")
    assert took == "True"  # glibc takes them: a False here would leave the import faulting again
    _, default = _faults("default")
    # ten rounds of 48 MB: thousands of pages faulted in again each round by default (30,000 in
    # all with glibc 2.36), none once the memory is kept
    assert default > 10_000 and kept < 1_000


def test_the_import_command_sets_it_before_reading(tmp_path) -> None:
    """In the command's own process: its thresholds are set before the first file is read."""
    code = """
import sys
from gpuprof.cli import heap, main
calls = []
real = heap.keep_freed_memory
heap.keep_freed_memory = lambda: calls.append("heap") or real()
import gpuprof.importing as importing
read = importing.read_file
importing.read_file = lambda *a, **k: calls.append("read") or read(*a, **k)
main(["import", sys.argv[1], "--store", sys.argv[2]], standalone_mode=False)
print(calls[:2])
"""
    from fixture_paths import A100

    out = subprocess.run(
        [sys.executable, "-c", code, str(A100), str(tmp_path / "s.sqlite")], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().splitlines()[-1] == "['heap', 'read']"
