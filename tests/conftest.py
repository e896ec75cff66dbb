"""Every test gets its own gpuprof cache folder: the ncu metric list is cached per ncu across
processes, and the stand-in ncu answers differently from test to test under one path and version."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory, monkeypatch) -> None:
    from gpuprof.launch import ncu_metrics

    monkeypatch.setenv("GPUPROF_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    ncu_metrics.query.cache_clear()
