"""Every test gets its own gpuprof cache folder: the ncu metric list is cached per ncu across
processes, and the stand-in ncu answers differently from test to test under one path and version.

Tests see gpuprof's internal errors as the exceptions they are, not as the CLI's one-line report
(tests/test_cli_internal_error.py unsets GPUPROF_DEBUG to test that report)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("GPUPROF_DEBUG", "1")


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory, monkeypatch) -> None:
    from gpuprof.launch import ncu_metrics

    monkeypatch.setenv("GPUPROF_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    ncu_metrics.query.cache_clear()
