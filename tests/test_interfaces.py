"""The plug-in kinds follow their declared interfaces: every reader, profiler backend and engine module has
each member of its Protocol with the same parameters, and ``gpuprof import --help`` lists the registry."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gpuprof import readers, render, workloads
from gpuprof.cli import main
from gpuprof.launch import profilers


def _members(protocol: type) -> dict[str, Any]:
    """The protocol's own methods and annotated attributes (its bases' included)."""
    found: dict[str, Any] = {}
    for klass in reversed(protocol.__mro__):
        if klass is object or not getattr(klass, "_is_protocol", False):
            continue
        found.update({name: None for name in getattr(klass, "__annotations__", {})})
        found.update(
            {
                name: value
                for name, value in vars(klass).items()
                if inspect.isfunction(value) and not name.startswith("_")
            }
        )
    return found


def _check(module: Any, protocol: type) -> None:
    for name, method in _members(protocol).items():
        assert hasattr(module, name), f"{module.__name__} lacks {name} ({protocol.__name__})"
        if method is not None:
            wanted = list(inspect.signature(method).parameters)[1:]  # without self
            assert list(inspect.signature(getattr(module, name)).parameters) == wanted, (
                f"{module.__name__}.{name} takes {inspect.signature(getattr(module, name))}, not {wanted}"
            )


def test_every_reader_follows_the_reader_interface():
    on_disk = {path.stem for path in Path(readers.__file__).parent.glob("*.py")} - {"__init__", "joining"}
    registered = [module.__name__.rsplit(".", 1)[1] for module in readers.modules()]
    assert set(registered) == {name for name in on_disk if not name.startswith("_")}  # every format is listed
    for module in readers.modules():
        _check(module, readers.Reader)


@pytest.mark.parametrize("name", ["ncu", "nvprof"])
def test_both_profiler_backends_follow_one_interface(name):
    _check(importlib.import_module(f"gpuprof.launch.{name}"), profilers.ProfilerBackend)
    assert profilers.Choice(name, "test").module().NAME == name


@pytest.mark.parametrize("name", list(workloads.ENGINES))
def test_every_engine_follows_the_engine_interface(name):
    module_name, devices = workloads.ENGINES[name]
    try:
        module = importlib.import_module(f"gpuprof.workloads.{module_name}")
    except ImportError as error:
        pytest.skip(f"engine {name} needs {error.name}, not installed here")
    _check(module, workloads.FrameworkEngine if hasattr(module, "place") else workloads.Engine)
    assert module.NAME == name


def test_every_text_format_is_a_renderer():
    import pandas as pd

    frame = pd.DataFrame({"kernel": ["k"], "time": [1.5]})
    for fmt, renderer in render.renderers().items():
        assert fmt in render.FORMATS
        assert "1.5" in renderer(frame, None) and render.emit(frame, fmt) == renderer(frame, None)


def test_import_help_lists_the_formats_from_the_registry():
    result = CliRunner().invoke(main, ["import", "--help"])
    assert result.exit_code == 0
    for name, description in readers.formats():
        assert f"{name}: {description}" in result.output
