"""The SQLite results store: runs read back exactly as written, whole or not at all."""

import sqlite3

import pytest

from gpuprof.errors import StoreError
from gpuprof.model import ANALYTIC, TIMED, Launch, Metric, Run
from gpuprof.store import PAGE_BYTES, open_store


def _run(**extra):
    launches = [
        Launch(
            "void f<float>(T*, int)",
            0,
            "Tesla K40c (0)",
            1,
            {"grid": "(8, 1, 1)"},
            [
                Metric("gpu__time_duration.sum", 1.5e-6, "second", "kernel_duration", TIMED),
                Metric("launch__cache_config", "CachePreferNone"),
                Metric("flop_count_sp", 2.0e9, "FLOP", "flop_count_sp", ANALYTIC, 1.0e9, 3.0e9),
            ],
        ),
        Launch("k2", 1, "Tesla K40c (0)", 100, {}, []),
    ]
    return Run(
        kind="import",
        format="test",
        source="/tmp/x.csv",
        device={"name": "K40c"},
        workload=None,
        environment={"host": "h"},
        launches=launches,
        notes=["a note"],
        **extra,
    )


def test_round_trip(tmp_path):
    run = _run()
    with open_store(tmp_path / "s.sqlite") as store:
        store.add(run)
    with open_store(tmp_path / "s.sqlite") as store:
        assert store.get(run.run_id) == run
        assert store.run_ids() == [run.run_id]


def test_a_new_store_has_large_pages_and_one_of_small_pages_is_written_as_it_is(tmp_path):
    """A new store is made with PAGE_BYTES pages (its column BLOBs written in fewer pages); a store
    made with SQLite's default 4 KiB pages keeps them and takes runs all the same."""
    run, other = _run(), _run(run_id="another")
    with open_store(tmp_path / "new.sqlite") as store:
        store.add(run)
    assert sqlite3.connect(tmp_path / "new.sqlite").execute("PRAGMA page_size").fetchone() == (PAGE_BYTES,)
    with open_store(tmp_path / "old.sqlite") as store:
        store.add(run)
    old = tmp_path / "old.sqlite"
    db = sqlite3.connect(old, isolation_level=None)
    db.execute("PRAGMA journal_mode = DELETE")
    db.execute("PRAGMA page_size = 4096")
    db.execute("VACUUM")
    db.close()
    assert sqlite3.connect(old).execute("PRAGMA page_size").fetchone() == (4096,)
    with open_store(old) as store:
        store.add(other)
    with open_store(old) as store:
        assert [store.get(run.run_id), store.get(other.run_id)] == [run, other]
    assert sqlite3.connect(old).execute("PRAGMA page_size").fetchone() == (4096,)


def test_adding_twice_keeps_one(tmp_path):
    run = _run()
    with open_store(tmp_path / "s.sqlite") as store:
        store.add(run)
        store.add(run)
        assert len(store.runs()) == 1


def test_an_unstorable_value_is_refused_when_the_run_is_built():
    launches = [Launch("k", 0, metrics=[Metric("bad", object())])]
    with pytest.raises(TypeError, match="value of type object"):
        Run(kind="import", format="test", source="x", launches=launches)


def test_failed_write_leaves_nothing(tmp_path, monkeypatch):
    from gpuprof.store import columns as store_columns

    real = store_columns.encode
    # every column twice: the second insert of a column breaks its primary key mid-transaction
    monkeypatch.setattr(store_columns, "encode", lambda *a, **k: [*real(*a, **k), *real(*a, **k)])
    run = _run()
    with open_store(tmp_path / "s.sqlite") as store:
        with pytest.raises(StoreError, match="cannot write results store"):
            store.add(run)
        assert store.run_ids() == []
        db = sqlite3.connect(tmp_path / "s.sqlite")
        assert db.execute("SELECT count(*) FROM columns").fetchone()[0] == 0


def test_env_variable_and_newer_schema(tmp_path, monkeypatch):
    path = tmp_path / "env.sqlite"
    monkeypatch.setenv("GPUPROF_STORE", str(path))
    with open_store() as store:
        assert store.path == path
        store.add(_run())  # a store is created by its first write
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    db.commit()
    with pytest.raises(StoreError, match="newer gpuprof"):
        open_store(path)


def test_not_a_database(tmp_path):
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="cannot open results store"):
        open_store(path)


def test_metrics_frame_long_format():
    frame = _run().metrics_frame()
    assert list(frame["metric"]) == ["gpu__time_duration.sum", "launch__cache_config", "flop_count_sp"]
    assert frame.loc[2, "minimum"] == 1.0e9 and frame.loc[0, "unit"] == "second"


@pytest.mark.parametrize(
    ("attributes", "encoding"),
    [
        ([{"grid": "(640, 1280, 1)", "cc": "8.0"}, {"cc": "8.0"}, {}, {"stream": "7", "grid": "(1, 1, 1)"}], "keyed"),
        ([{"cc": "8.0"}, {"cc": None}], "json"),  # a None value is not an absent key
        ([{"calls": 3}], "json"),
        ([], "keyed"),
    ],
)
def test_launch_attributes_come_back_as_they_went_in(attributes, encoding):
    import json

    from gpuprof.store import columns as store_columns

    found, data = store_columns._keyed(attributes)
    assert found == encoding
    assert (store_columns._from_keyed(data) if found == "keyed" else json.loads(data)) == attributes


def test_shared_attribute_dicts_encode_to_the_bytes_of_separate_ones():
    """Each shared dict is encoded once; the bytes are those of one dict per launch (the real A100
    CSV's launches, with the reader's sharing and with every dict copied)."""
    from fixture_paths import A100

    from gpuprof.readers import read
    from gpuprof.store import columns as store_columns

    shared = [launch.attributes for launch in read(A100).launches]
    shared = [*shared, shared[0], {"cc": "8.0"}, shared[1]]  # later launches sharing earlier dicts
    copied = [dict(attrs) for attrs in shared]
    assert len({id(a) for a in shared}) < len(shared) == len({id(a) for a in copied})
    assert store_columns._keyed(shared) == store_columns._keyed(copied)
    assert store_columns._keyed(shared)[0] == "keyed"
    assert store_columns._from_keyed(store_columns._keyed(shared)[1]) == copied


def test_a_nan_attribute_is_stored_as_json_not_dropped():
    import json
    import math

    from gpuprof.store import columns as store_columns

    found, data = store_columns._keyed([{"cc": "8.0"}, {"x": float("nan")}])
    assert found == "json" and math.isnan(json.loads(data)[1]["x"])
