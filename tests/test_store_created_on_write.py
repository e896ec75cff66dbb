"""A results store is created by its first write, and a command checks its store (and its
arguments) before any work: a bad size, a store on a read-only place or one that cannot be created
leaves nothing behind and costs no measurement (issue 27, item 8)."""

from __future__ import annotations

import os
import stat

import pytest
from click.testing import CliRunner

import gpuprof.calibrate
from gpuprof.cli import main
from gpuprof.errors import StoreError
from gpuprof.store import open_store


def test_a_bad_size_leaves_no_new_store(tmp_path):
    store = tmp_path / "new.sqlite"
    result = CliRunner().invoke(main, ["run", "--op", "dot", "--size", "6XB", "--device", "cpu", "--store", str(store)])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and len(result.output.strip().splitlines()) == 1
    assert sorted(os.listdir(tmp_path)) == []


def test_opening_a_new_store_creates_nothing_until_a_run_is_added(tmp_path):
    from test_compare import measured

    path = tmp_path / "sub" / "new.sqlite"
    with open_store(path) as store:
        assert store.run_ids() == [] and store.runs() == []
    assert not (tmp_path / "sub").exists()
    with open_store(path) as store:
        store.add(measured("add", [1000], [1e-3]))
    with open_store(path, read_only=True) as store:
        assert len(store.run_ids()) == 1


def test_a_store_that_cannot_be_created_is_refused_at_open(tmp_path):
    with pytest.raises(StoreError, match=r"cannot create results store /proc/nope/s.sqlite: No such file"):
        open_store("/proc/nope/s.sqlite")


def test_calibrate_refuses_a_read_only_store_before_measuring(tmp_path, monkeypatch):
    from test_compare import measured

    path = tmp_path / "s.sqlite"
    with open_store(path) as store:
        store.add(measured("add", [1000], [1e-3]))
    monkeypatch.setattr(os, "access", lambda place, mode, **kw: mode != os.W_OK)  # as on a read-only mount
    monkeypatch.setattr(
        gpuprof.calibrate, "calibrate", lambda **kwargs: pytest.fail("measured although the result could not be stored")
    )
    result = CliRunner().invoke(main, ["calibrate", "--quick", "--store", str(path)])
    assert result.exit_code == 6, result.output
    assert result.output.startswith(f"error: cannot write results store {path}: {path} is not writable")
    assert stat.S_ISREG(os.stat(path).st_mode)
