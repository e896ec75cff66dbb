"""Regions of a user's program: the recorder (gpuprof.regions) in fresh interpreters (it reads its
environment at import), the reader (gpuprof.readers.regions) on the files they wrote and on corrupt
or foreign ones, and ``gpuprof profile`` setting $GPUPROF_REGIONS and storing each instance as a
launch of kind "region"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuprof.cli import main
from gpuprof.derive.regions import region_frame, without_regions
from gpuprof.errors import FormatError
from gpuprof.readers import regions as reader
from gpuprof.store import open_store

ROOT = Path(__file__).resolve().parents[1]

NESTED = """
import threading, time
import gpuprof

for epoch in range(2):
    with gpuprof.region("epoch", index=epoch):
        with gpuprof.region("train", index=epoch):
            time.sleep(0.03)
        handle = gpuprof.begin("validation", index=epoch)
        time.sleep(0.01)
        gpuprof.end(handle)

@gpuprof.region("step")
def step():
    time.sleep(0.005)

def worker():
    with gpuprof.region("loader", index=7):
        step()

threads = [threading.Thread(target=worker) for _ in range(2)]
[t.start() for t in threads]
[t.join() for t in threads]
gpuprof.begin("left open")
"""


def _python(script: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _record(tmp_path: Path, script: str, run_id: str = "run-1") -> Path:
    path = tmp_path / "regions.jsonl"
    done = _python(script, {"GPUPROF_REGIONS": str(path), "GPUPROF_RUN_ID": run_id}, tmp_path)
    assert done.returncode in (0, -9), done.stderr
    return path


def test_nested_threaded_decorated_and_unclosed_regions_are_each_their_own_instance(tmp_path: Path) -> None:
    found = reader.parse(_record(tmp_path, NESTED), run_id="run-1")
    names = [r.name for r in found.regions]
    assert names.count("epoch") == 2 and names.count("train") == 2 and names.count("step") == 2
    assert names.count("loader") == 2 and names.count("validation") == 2 and names.count("left open") == 1
    by_id = {r.ident: r for r in found.regions}
    for train in (r for r in found.regions if r.name == "train"):
        parent = by_id[train.parent]
        assert parent.name == "epoch" and parent.index == train.index  # nested in its own epoch
        assert parent.begin_ns <= train.begin_ns <= train.end_ns <= parent.end_ns
        assert 0.03 <= train.seconds < 1.0  # slept 30 ms inside it
    steps = [r for r in found.regions if r.name == "step"]
    assert {by_id[s.parent].name for s in steps} == {"loader"}  # each thread nests in its own loader
    assert len({s.thread for s in steps}) == 2 and steps[0].thread != by_id[found.regions[0].ident].thread
    [left] = [r for r in found.regions if r.name == "left open"]
    assert left.unclosed == "exit"
    assert all(r.unclosed is None for r in found.regions if r is not left)
    assert reader.notes(found) == ["1 region(s) still open when the program exited; closed then (marked unclosed=exit)"]


def test_each_instance_is_a_timed_launch_of_kind_region_never_summed(tmp_path: Path) -> None:
    path = _record(tmp_path, NESTED)
    run = reader.read(path)
    frame = region_frame(run)
    assert len(frame) == len(run.launches) == 11  # 2 epochs x 3 + 2 loaders + 2 steps + 1 left open
    first = run.launches[1]
    assert first.attributes["kind"] == "region" and first.attributes["name"] == "train"
    assert first.attributes["parent"] == "0" and first.attributes["index"] == "0"
    wall = first.metric("wall time")
    assert wall.origin == "timed" and wall.unit == "second"
    assert wall.value == pytest.approx(first.value("end") - first.value("begin"))
    assert list(frame["name"][:3]) == ["epoch", "train", "validation"]
    assert without_regions(run).launches == []
    import gpuprof

    assert gpuprof.region_table(run).equals(frame)  # the library's name for it


def test_a_killed_process_keeps_its_closed_regions_and_its_open_ones_are_closed_at_the_end(tmp_path: Path) -> None:
    script = """
    import os, signal, time
    import gpuprof
    with gpuprof.region("epoch", index=0):
        time.sleep(0.01)
    gpuprof.begin("epoch", index=1)
    time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGKILL)
    """
    path = _record(tmp_path, script)
    end_ns = reader.parse(path).regions[-1].begin_ns + 5_000_000_000
    found = reader.parse(path, "run-1", end_ns=end_ns)
    assert [(r.index, r.unclosed) for r in found.regions] == [(0, None), (1, reader.KILLED)]
    assert found.regions[1].end_ns == end_ns and found.regions[1].seconds == pytest.approx(5.0)
    assert "killed or crashed" in reader.notes(found)[0]


def test_recording_nothing_costs_nothing_and_writes_nothing(tmp_path: Path) -> None:
    script = """
    import sys, gpuprof
    with gpuprof.region("epoch", index=0):
        pass
    assert gpuprof.begin("x") == 0
    gpuprof.end()
    heavy = [m for m in ("pandas", "numpy", "gpuprof.model", "gpuprof.api", "click") if m in sys.modules]
    print(heavy)
    """
    done = _python(script, {}, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"  # importing gpuprof for regions loads no library
    assert list(tmp_path.iterdir()) == []


def test_a_hook_adds_its_values_to_begin_and_end(tmp_path: Path) -> None:
    script = """
    import gpuprof.regions as regions
    class Counter:
        n = 0
        def begin(self, event):
            Counter.n += 1
            event["count"] = Counter.n
        def end(self, event):
            Counter.n += 10
            event["count"] = Counter.n
    regions.add_hook(Counter())
    with regions.region("epoch"):
        pass
    """
    [one] = reader.parse(_record(tmp_path, script)).regions
    assert one.extra == {"begin": {"count": 1}, "end": {"count": 11}}
    assert json.loads(reader.launches(reader.parse(tmp_path / "regions.jsonl"))[0].attributes["extra"]) == one.extra


def test_a_corrupt_file_or_one_from_another_run_is_refused_with_one_line(tmp_path: Path) -> None:
    path = _record(tmp_path, NESTED)
    with pytest.raises(FormatError, match=r"belongs to run 'run-1', not to this run 'other'"):
        reader.parse(path, "other")
    [segment] = reader.segments(path)  # the one process's lines, beside the header's file
    lines = segment.read_text().splitlines()
    segment.write_text("\n".join([*lines[:3], lines[3][:10], *lines[4:]]) + "\n")
    with pytest.raises(FormatError, match=f"{segment.name}: line 4 is not JSON: the regions file is corrupt"):
        reader.parse(path)
    segment.write_text("\n".join([lines[0].replace('"run-1"', '"run-2"'), *lines[1:]]) + "\n")
    with pytest.raises(FormatError, match="lines of two runs in one file"):
        reader.parse(path)
    segment.write_text("\n".join([*lines[:3], lines[3][:10], *lines[4:]]) + "\n")
    result = CliRunner().invoke(main, ["import", str(path), "--store", str(tmp_path / "s.sqlite")])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert len([line for line in result.output.splitlines() if "corrupt" in line]) == 1


def test_profile_sets_the_variable_and_stores_each_region(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(NESTED))
    result = CliRunner().invoke(
        main, ["profile", "--device", "cpu", "--store", str(tmp_path / "s.sqlite"), "--", sys.executable, str(script)]
    )
    assert result.exit_code == 0, result.output
    with open_store(tmp_path / "s.sqlite") as store:
        [run] = store.runs()
    frame = region_frame(run)
    assert len(frame) == 11 and frame["unclosed"].tolist().count("exit") == 1
    assert run.environment["regions"]["instances"] == 11
    assert (tmp_path / "reports" / run.run_id / "regions.jsonl").is_file()
    assert "Regions of the program" in result.stdout and "still open when the program exited" in result.stderr
    [process] = without_regions(run).launches  # the command's own launch, as before
    assert process.value("wall time") >= frame["wall time (s)"].max()


def test_profile_keeps_its_measurements_when_the_regions_file_is_from_another_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "rewrite.py"
    script.write_text(
        "import os, json\npath = os.environ['GPUPROF_REGIONS']\n"
        "open(path, 'w').write(json.dumps({'format': 'gpuprof-regions', 'version': 1, 'run': 'old'}) + '\\n')\n"
    )
    result = CliRunner().invoke(
        main, ["profile", "--device", "cpu", "--store", str(tmp_path / "s.sqlite"), "--", sys.executable, str(script)]
    )
    assert result.exit_code == 0, result.output
    with open_store(tmp_path / "s.sqlite") as store:
        [run] = store.runs()
    assert any(n.startswith("regions not read: ") and "belongs to run 'old'" in n for n in run.notes)
    assert run.launches[0].value("wall time") > 0


@pytest.mark.slow  # waits for a hanging program's 4 s limit
@pytest.mark.parametrize(
    ("script", "timeout", "mark", "said"),
    [
        (
            (
                "import gpuprof\nwith gpuprof.region('epoch', index=0):\n    pass\ngpuprof.begin('epoch', index=1)\n"
                "with gpuprof.region('step'):\n    raise RuntimeError('diverged')\n"
            ),
            "60",
            "exit",
            "exited with code 1",
        ),
        (
            (
                "import time, gpuprof\nwith gpuprof.region('epoch', index=0):\n    pass\nwith gpuprof.region('epoch', index=1):\n"
                "    time.sleep(600)\n"
            ),
            "4",
            "",
            "did not finish within 4 s",
        ),
    ],
)
def test_a_crashing_or_hanging_program_keeps_its_regions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str, timeout: str, mark: str, said: str
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    (tmp_path / "job.py").write_text(script)
    result = CliRunner().invoke(
        main,
        [
            "profile",
            "--device",
            "cpu",
            "--torch-hooks",
            "none",
            "--timeout",
            timeout,
            "--store",
            str(tmp_path / "s.sqlite"),
            "--",
            sys.executable,
            "job.py",
        ],
    )
    assert result.exit_code != 0 and said in result.output
    with open_store(tmp_path / "s.sqlite") as store:
        [run] = store.runs()
    frame = region_frame(run)
    epochs = frame[frame["name"] == "epoch"]
    assert epochs["index"].tolist() == ["0", "1"] and epochs["unclosed"].tolist() == ["", mark]
    if not mark:  # the timeout's SIGINT ended the hanging epoch (KeyboardInterrupt), where it was stopped
        hung = run.launches[int(epochs["launch"].iloc[1])]
        assert hung.attributes["raised"] == "KeyboardInterrupt" and 3.5 < hung.value("wall time") < 4 + 15
    else:  # the step the exception ended says so; its epoch was closed at exit
        assert any(f"marked unclosed={mark}" in note for note in run.notes)
        [step] = [launch for launch in run.launches if launch.attributes.get("name") == "step"]
        assert step.attributes["raised"] == "RuntimeError" and "unclosed" not in step.attributes


def test_numpy_numbers_as_index_or_attributes_are_recorded_as_plain_numbers(tmp_path: Path) -> None:
    """Failed before: ``index=np.int64(3)`` (a loop over ``np.arange``) made the region raise
    TypeError (not JSON serializable) inside the user's program."""
    path = _record(
        tmp_path,
        """
        import numpy as np
        import gpuprof
        for epoch in np.arange(2):
            with gpuprof.region("epoch", index=epoch, lr=np.float32(0.5), batch=np.int32(8)):
                pass
        """,
    )
    frame = region_frame(reader.read(path))
    assert list(frame["index"]) == ["0", "1"]
    first = reader.read(path).launches[0].attributes
    assert json.loads(first["attributes"]) == {"lr": 0.5, "batch": 8}
