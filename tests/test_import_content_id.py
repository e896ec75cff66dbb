"""The run id of an imported file is its content's hash, taken on a thread of the lowest priority
that waits while a parser holds the cores: the same id either way, and only that thread lowered."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import pytest
from fixture_paths import A100

from gpuprof import importing
from gpuprof.readers import _cores

CHECK = textwrap.dedent(
    """
    import os, sys, threading
    from gpuprof import importing

    seen = {}
    content_id = importing.content_id

    def spy(path, fmt, *between):
        seen["nice"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        seen["thread"] = threading.get_native_id()
        return content_id(path, fmt, *between)

    importing.content_id = spy
    run, identify = importing._read_with_id(sys.argv[1], None, "")
    run_id = identify()
    assert run_id == content_id(sys.argv[1], "ncu-csv"), run_id
    assert seen["thread"] != threading.get_native_id()
    print(seen["nice"], os.getpriority(os.PRIO_PROCESS, 0))
    """
)


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's priority is set on Linux only")
def test_the_file_is_hashed_on_a_thread_of_the_lowest_priority_alone() -> None:
    """In a child process: a priority lowered in this one could not be raised again."""
    out = subprocess.run([sys.executable, "-c", CHECK, str(A100)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    hashing, process = map(int, out.stdout.split())
    assert (hashing, process) == (19, os.getpriority(os.PRIO_PROCESS, 0))  # the child's as it started


def test_the_run_id_is_the_hash_of_the_bytes_and_the_format() -> None:
    run, identify = importing._read_with_id(A100, None, "")
    run_id = identify()
    assert run.format == "ncu-csv"
    assert run_id == importing.content_id(A100, "ncu-csv") != importing.content_id(A100, "ncu-text")
    assert len(run_id) == 32


def test_the_hash_waits_while_a_parse_holds_the_cores() -> None:
    """Not one block is hashed while a parse runs; the hash goes on, the same, once it ends."""
    ids: list[str] = []
    hashing = threading.Thread(target=lambda: ids.append(importing._content_id_behind(A100, "ncu-csv")))
    with _cores.held():
        hashing.start()
        hashing.join(0.5)
        assert hashing.is_alive() and not ids
    hashing.join(30)
    assert ids == [importing.content_id(A100, "ncu-csv")]
