"""Suite-wide fixtures: every test gets its own gpuprof cache folder, and leaves nothing in the working tree
(tests write under tmp_path, stores included).

Tests see gpuprof's internal errors as the exceptions they are, not as the CLI's one-line report
(tests/test_cli_internal_error.py unsets GPUPROF_DEBUG to test that report)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuprof.launch import ncu_metrics

ROOT = Path(__file__).resolve().parent.parent
# What running pytest itself creates; everything else new at the top or under reports/ came from a test.
TOOL_CACHES = {".pytest_cache", ".hypothesis", "__pycache__", ".ruff_cache"}

os.environ.setdefault("GPUPROF_DEBUG", "1")


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ncu metric list is cached per ncu across processes, and the stand-in ncu answers differently
    from test to test under one path and version."""
    monkeypatch.setenv("GPUPROF_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    ncu_metrics.query.cache_clear()


def _entries() -> set[str]:
    found = {name.name for name in ROOT.iterdir()} - TOOL_CACHES
    reports = ROOT / "reports"
    if reports.is_dir():
        found |= {f"reports/{name.name}" for name in reports.iterdir()}
    return found


@pytest.fixture(autouse=True)
def _leaves_nothing_in_the_working_tree() -> Iterator[None]:
    before = _entries()
    yield
    left = sorted(_entries() - before)
    assert not left, f"the test left {', '.join(left)} in the working tree: write under tmp_path"


@pytest.fixture
def ctrl_c_reaches_python() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt in this process, as at a terminal, and child processes start
    with SIGINT at its default (a handler is reset at exec, an ignored signal stays ignored), for the
    tests that press Ctrl-C: a pytest started in the background of a non-interactive shell inherits
    SIGINT ignored."""
    import signal

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)
