"""A store written by gpuprof 0.1 (schema 1: one SQLite row per metric) is read as it is and
migrated to whole columns on its first write. tests/fixtures/stores/schema1.sqlite was written by
gpuprof at commit 6e118a3: `gpuprof import` of the K40c nvprof metrics CSV and the RTX 3080
.ncu-rep, then `gpuprof run --op add --shape 64x64 --device cpu --repeat 3 --no-counters`."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from gpuprof.model import Launch, Metric, Run
from gpuprof.store import open_store

SCHEMA1 = Path(__file__).parent / "fixtures" / "stores" / "schema1.sqlite"
FORMA = "__kernel___forma_kernel__0__(float*, int, int, int, int, int, int, float*)"


@pytest.fixture
def old_store(tmp_path: Path) -> Path:
    path = tmp_path / "schema1.sqlite"
    shutil.copyfile(SCHEMA1, path)
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _check_values(runs: list[Run]) -> None:
    nvprof, ncu, measured = runs
    assert (nvprof.format, ncu.format, measured.format) == ("nvprof-csv-metrics", "ncu-rep", "cpu-numpy")
    forma = nvprof.launches[0]
    assert (forma.kernel, forma.invocations, forma.device) == (FORMA, 3, "Tesla K40c")
    assert forma.metric("flop_count_sp").value == 25_264_160_800
    issued = forma.metric("inst_issued")
    assert (issued.value, issued.minimum, issued.maximum) == (3227173467, 3226322455, 3227709091)
    assert [launch.kernel.split("(")[0] for launch in ncu.launches] == ["initRNG", "void computeValue<float>"]
    assert ncu.launches[1].value("gpu__time_duration.sum") == pytest.approx(7_597_056e-9)
    assert ncu.launches[1].value("launch__grid_dim_x") == 1220  # as ncu_report reads it: nothing lost
    assert measured.workload["shape"] == [64, 64]
    assert [m.origin for launch in measured.launches[:3] for m in launch.metrics] == ["timed"] * 3


def test_a_schema1_store_is_read_without_being_changed(old_store: Path) -> None:
    before = _digest(old_store)
    with open_store(old_store) as store:
        runs = store.runs()
    _check_values(runs)
    assert _digest(old_store) == before
    assert sqlite3.connect(old_store).execute("SELECT value FROM meta").fetchone() == ("1",)


def test_the_first_write_migrates_every_run_whole(old_store: Path) -> None:
    with open_store(old_store) as store:
        old = store.runs()
        new = Run(kind="import", format="test", source="x", launches=[Launch("k", 0, metrics=[Metric("m", 1.0)])])
        store.add(new)
    db = sqlite3.connect(old_store)
    assert db.execute("SELECT value FROM meta").fetchone() == ("2",)
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"meta", "runs", "columns"}
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    with open_store(old_store) as store:
        migrated = store.runs()
    assert migrated == [*old, new]
    _check_values(migrated[:3])
