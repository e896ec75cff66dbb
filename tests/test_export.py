"""Portable run files survive a writer killed mid-line."""

from gpuprof.store import runfile as export
from gpuprof.model import Launch, Metric, Run


def test_append_load_and_partial_line(tmp_path):
    path = tmp_path / "runs.jsonl"
    first = Run("run", "cpu-numpy", "gpuprof run", {"name": "cpu"}, {"op": "add"}, {},
                [Launch("numpy:add", 0, "cpu", 1, {}, [Metric("wall_time", 0.5, "second", "kernel_duration", "timed")])])
    second = Run("import", "x", "f", {}, None, {}, [])
    export.append(path, first)
    export.append(path, second)
    with open(path, "a") as handle:
        handle.write('{"kind": "run", "format": "cpu-nu')  # a writer killed mid-line
    runs, notes = export.load(path)
    assert runs == [first, second]
    assert len(notes) == 1 and ":3: skipped" in notes[0]
