"""Skip marks for tests that need an optional extra, so a venv without it skips them with the reason."""

from __future__ import annotations

import importlib.util

import pytest


def needs(*modules: str, extra: str) -> pytest.MarkDecorator:
    """Skip unless every one of ``modules`` is importable; the reason names the extra that brings them."""
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    return pytest.mark.skipif(bool(missing), reason=f"needs {', '.join(missing)}: pip install 'gpuprof-hpc[{extra}]'")


NCU_REPORT = needs("ncu_report", extra="ncu")
PYTENSOR = needs("pytensor", extra="theano")
BACKENDS = needs("pytensor", "jax", "torch", extra="test")
