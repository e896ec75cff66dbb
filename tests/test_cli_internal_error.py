"""The CLI's last resort: an exception no gpuprof error explains is one line naming a file with the
traceback, exit code 70, and runs already stored stay stored; GPUPROF_DEBUG=1 or --debug shows
the exception itself."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

import gpuprof.render.run_report
from gpuprof.cli import INTERNAL_ERROR_EXIT, main
from gpuprof.store import open_store

RUN = ["run", "--op", "add", "--size", "1KB", "--device", "cpu", "--repeat", "2", "--warmup", "0"]


@pytest.fixture
def broken_report(monkeypatch):
    """The run report fails after the run was measured and stored, as a bug would."""

    def report(*args, **kwargs):
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(gpuprof.render.run_report, "run_report", report)


def test_an_internal_error_is_one_line_a_traceback_file_and_the_run_kept(tmp_path, monkeypatch, broken_report):
    monkeypatch.delenv("GPUPROF_DEBUG", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the temp folder, where the details go
    store = tmp_path / "s.sqlite"
    result = CliRunner().invoke(main, [*RUN, "--store", str(store)])
    assert result.exit_code == INTERNAL_ERROR_EXIT == 70
    [line] = result.output.strip().splitlines()
    found = re.fullmatch(
        r"error: internal error: ZeroDivisionError: float division by zero; details in (\S+); "
        r"please report it\. Results stored before the error are kept\.",
        line,
    )
    assert found, line
    details = Path(found.group(1)).read_text()
    assert details.startswith("command: ") and "Traceback (most recent call last)" in details
    assert 'raise ZeroDivisionError("float division by zero")' in details
    assert Path(found.group(1)).parent == tmp_path
    with open_store(store, read_only=True) as opened:
        [run] = opened.runs()
    assert run.workload["op"] == "add"


@pytest.mark.parametrize("how", ["environment", "--debug"])
def test_debug_shows_the_exception_itself(tmp_path, monkeypatch, broken_report, how):
    monkeypatch.delenv("GPUPROF_DEBUG", raising=False)
    if how == "environment":
        monkeypatch.setenv("GPUPROF_DEBUG", "1")
    args = ["--debug", *RUN] if how == "--debug" else RUN
    result = CliRunner().invoke(main, [*args, "--store", str(tmp_path / "s.sqlite")])
    assert isinstance(result.exception, ZeroDivisionError)
