"""Merging stores, run files and profiler outputs from several machines without duplicates."""

from __future__ import annotations

import sqlite3

import pytest
from click.testing import CliRunner
from fixture_paths import K40C

from gpuprof.cli import main
from gpuprof.errors import StoreError
from gpuprof.merge import collect, merge
from gpuprof.model import TIMED, Launch, Metric, Run
from gpuprof.store import open_store
from gpuprof.store import runfile as export


def make_run(host: str, seconds: float = 1e-3) -> Run:
    return Run(
        kind="run",
        format="cpu-numpy",
        source="test",
        device={"name": f"cpu of {host}", "kind": "cpu"},
        workload={"op": "add", "dtype": "float32", "shape": [100, 100], "size_bytes": 120_000},
        environment={"host": host},
        launches=[Launch("numpy:add", 0, metrics=[Metric("wall_time", seconds, "second", "kernel_duration", TIMED)])],
    )


def test_merge_combines_stores_run_files_and_profiler_outputs_once(tmp_path):
    a, b = make_run("alpha"), make_run("beta")
    with open_store(tmp_path / "alpha.sqlite") as store:
        store.add(a)
    export.append(tmp_path / "beta.jsonl", b)
    export.append(tmp_path / "beta.jsonl", a)  # a run both inputs hold
    out = tmp_path / "all.sqlite"
    first = merge(out, [tmp_path / "alpha.sqlite", tmp_path / "beta.jsonl", K40C])
    assert first.added == 3 and first.already == 1
    assert [i.kind for i in first.inputs] == ["store", "run file", "nvprof-csv-metrics"]
    again = merge(out, [tmp_path / "alpha.sqlite", tmp_path / "beta.jsonl", K40C])
    assert again.added == 0 and again.already == 4
    with open_store(out) as store:
        runs = store.runs()
    assert sorted(r.run_id for r in runs if r.kind == "run") == sorted([a.run_id, b.run_id])
    imported = [r for r in runs if r.kind == "import"]
    assert len(imported) == 1 and imported[0].launches[0].device == "Tesla K40c"
    assert imported[0].launches[0].value("flop_count_sp") == 25264160800


def test_a_foreign_sqlite_file_is_refused_and_left_untouched(tmp_path):
    foreign = tmp_path / "other.sqlite"
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    before = foreign.read_bytes()
    with pytest.raises(StoreError, match="not a gpuprof results store"):
        merge(tmp_path / "out.sqlite", [foreign])
    assert foreign.read_bytes() == before


def test_merge_refuses_its_own_output_and_missing_inputs(tmp_path):
    with open_store(tmp_path / "s.sqlite") as store:
        store.add(make_run("alpha"))
    with pytest.raises(StoreError, match="both the output store and an input"):
        merge(tmp_path / "s.sqlite", [tmp_path / "s.sqlite"])
    result = CliRunner().invoke(main, ["merge", str(tmp_path / "o.sqlite"), str(tmp_path / "nope.jsonl")])
    assert result.exit_code == 3 and "no such file" in result.output


def test_a_cut_off_run_file_keeps_its_whole_runs(tmp_path):
    path = tmp_path / "cut.jsonl"
    export.append(path, make_run("alpha"))
    with open(path, "a") as handle:
        handle.write('{"kind": "run", "format": "cpu-num')  # a writer killed mid-line
    result = merge(tmp_path / "o.sqlite", [path])
    assert result.added == 1 and len(result.notes) == 1 and "cut.jsonl:2" in result.notes[0]


def test_export_then_merge_on_another_machine_round_trips(tmp_path):
    with open_store(tmp_path / "a.sqlite") as store:
        store.add(make_run("alpha", 2e-3))
    runner = CliRunner()
    exported = runner.invoke(main, ["export", str(tmp_path / "a.jsonl"), "--store", str(tmp_path / "a.sqlite")])
    assert exported.exit_code == 0, exported.output
    merged = runner.invoke(main, ["merge", str(tmp_path / "b.sqlite"), str(tmp_path / "a.jsonl")])
    assert merged.exit_code == 0 and "1 run(s) added" in merged.output
    runs, sources, _ = collect([tmp_path / "b.sqlite", tmp_path / "a.sqlite"], [])
    assert len(runs) == 1 and runs[0].launches[0].value("kernel_duration") == 2e-3
    assert sources == [str(tmp_path / "b.sqlite"), str(tmp_path / "a.sqlite")]


def test_a_run_file_with_no_readable_line_fails_after_merging_the_rest(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": 1}\n{"kind": "run"}\n')
    good = tmp_path / "good.jsonl"
    export.append(good, make_run("alpha"))
    out = tmp_path / "m.sqlite"
    result = CliRunner().invoke(main, ["merge", str(out), str(bad), str(good)])
    assert result.exit_code == 3, result.output
    assert result.output.strip().splitlines()[-1] == (
        f"error: no line of {bad} is a gpuprof run, so nothing was added from it. "
        "give run files written by 'gpuprof export' or 'gpuprof sweep --slurm'"
    )
    assert f"{bad}:1: skipped, not a whole gpuprof run (a: not a field of a run)" in result.output
    assert "TypeError" not in result.output  # no Python exception text in a note
    with open_store(out) as store:
        assert len(store.run_ids()) == 1  # the readable input was merged all the same


def test_an_output_that_is_not_a_store_is_named_as_merge_names_it(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    with open_store(tmp_path / "in.sqlite") as store:
        store.add(make_run("alpha"))
    result = CliRunner().invoke(main, ["merge", str(text), str(tmp_path / "in.sqlite")])
    assert result.exit_code == StoreError.exit_code
    assert result.output.strip().splitlines() == [
        f"error: cannot open results store {text}: file is not a database. "
        "give another OUT_STORE: a gpuprof results store or a new file"
    ]
    assert "--store" not in result.output and text.read_text() == "hello\n"


def test_export_replaces_its_file_unless_asked_to_append(tmp_path):
    store = tmp_path / "a.sqlite"
    with open_store(store) as opened:
        opened.add(make_run("alpha"))
        opened.add(make_run("beta"))
    out = tmp_path / "a.jsonl"
    runner = CliRunner()
    for _ in range(2):
        done = runner.invoke(main, ["export", str(out), "--store", str(store)])
        assert done.exit_code == 0, done.output
    assert len(export.load(out)[0]) == 2
    assert done.stderr.strip() == (
        f"2 run(s) from {store} written to {out} (replacing its contents; --append adds instead)"
    )
    done = runner.invoke(main, ["export", str(out), "--store", str(store), "--append"])
    assert done.exit_code == 0 and done.stderr.strip() == f"2 run(s) from {store} appended to {out}"
    assert len(export.load(out)[0]) == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "a.sqlite"]  # no partial file left


def test_a_damaged_input_store_names_merges_own_fix(tmp_path):
    fake = tmp_path / "fake.sqlite"
    fake.write_bytes(b"SQLite format 3\x00" + b"garbage" * 20)
    result = CliRunner().invoke(main, ["merge", str(tmp_path / "out.sqlite"), str(fake)])
    assert result.exit_code == 6
    assert result.output.startswith(f"error: cannot open results store {fake}: ")
    assert result.output.rstrip().endswith("give results stores, .jsonl run files or profiler outputs as inputs")
    assert "--store" not in result.output  # merge has no --store option
    assert not (tmp_path / "out.sqlite").exists()


@pytest.mark.parametrize("given", ["profiler output", "binary"])
def test_compare_store_that_is_not_a_store_says_so(tmp_path, given):
    from fixture_paths import K40C

    path = K40C if given == "profiler output" else tmp_path / "bin.sqlite"
    if given == "binary":
        path.write_bytes(bytes(range(256)) * 8)
    result = CliRunner().invoke(main, ["compare", "--store", str(path)])
    assert result.exit_code == 6, result.output
    assert result.output == (
        f"error: {path} is not a gpuprof results store (not an SQLite file). give a store "
        "written by gpuprof with --store; profiler outputs go to --import\n"
    )
