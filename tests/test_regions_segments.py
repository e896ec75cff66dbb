"""The regions file's per-process segments (gpuprof.regions writes each process's lines into
``<file>.<pid>`` through a shared memory map): what survives SIGKILL, several processes on one
``$GPUPROF_REGIONS``, fork, the NUL padding of an unfinished segment, and damaged segments refused
with one line. Every recorder runs in a fresh interpreter (it reads its environment at import)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuprof.cli import main
from gpuprof.errors import FormatError
from gpuprof.readers import regions as reader
from gpuprof.regions import BLOCK

ROOT = Path(__file__).resolve().parents[1]


def _environment(path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "GPUPROF_REGIONS": str(path), "GPUPROF_RUN_ID": "run-1"}


def _python(script: str, path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)],
        env=_environment(path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _run(script: str, path: Path) -> str:
    child = _python(script, path)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    return out


def test_a_sigkilled_child_keeps_its_lines_and_its_open_regions_are_closed_by_the_reader(tmp_path: Path) -> None:
    path = tmp_path / "regions.jsonl"
    child = _python(
        """
        import sys, time, gpuprof
        for step in range(3):
            with gpuprof.region("step", index=step):
                pass
        gpuprof.begin("epoch", index=1)
        gpuprof.begin("step", index=3)
        print("inside", flush=True)
        time.sleep(60)
        """,
        path,
    )
    assert child.stdout is not None and child.stdout.readline() == "inside\n"
    child.send_signal(signal.SIGKILL)  # while inside its innermost region
    child.communicate(timeout=30)
    [segment] = reader.segments(path)
    assert segment.name == f"regions.jsonl.{child.pid}"
    raw = segment.read_bytes()
    assert len(raw) == BLOCK and raw.endswith(b"\0")  # never cut to its lines: killed before its exit
    found = reader.parse(path, "run-1", end_ns=10**19)
    assert [(r.name, r.index, r.unclosed) for r in found.regions] == [
        ("step", 0, None),
        ("step", 1, None),
        ("step", 2, None),
        ("epoch", 1, reader.KILLED),
        ("step", 3, reader.KILLED),
    ]
    epoch, innermost = found.regions[3:]
    assert innermost.parent == epoch.ident and innermost.end_ns == epoch.end_ns == 10**19
    assert found.processes == {child.pid: None}
    assert reader.notes(found) == [
        "2 region(s) of a process that ended without closing them (killed or crashed); closed at the command's end "
        "(marked unclosed=killed)"
    ]


def test_two_processes_recording_to_one_file_each_write_their_own_segment(tmp_path: Path) -> None:
    path = tmp_path / "regions.jsonl"
    script = """
    import os, threading, gpuprof
    def work(name):
        for i in range(300):
            with gpuprof.region(name, index=i):
                with gpuprof.region("inner"):
                    pass
    threads = [threading.Thread(target=work, args=(f"thread {n}",)) for n in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    print(os.getpid())
    """
    children = [_python(script, path) for _ in range(2)]  # at once: both create and write their segments
    pids = []
    for child in children:
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
        pids.append(int(out))
    assert sorted(one.name for one in reader.segments(path)) == sorted(f"regions.jsonl.{pid}" for pid in pids)
    assert all(b"\0" not in one.read_bytes() for one in reader.segments(path))  # cut to their lines at exit
    found = reader.parse(path, "run-1")
    assert sorted(found.processes) == sorted(pids)
    by_id = {(r.process, r.ident): r for r in found.regions}
    for pid in pids:
        mine = [r for r in found.regions if r.process == pid]
        assert len(mine) == 2 * 2 * 300 and all(r.unclosed is None for r in mine)
        for name in ("thread 0", "thread 1"):
            outer = [r for r in mine if r.name == name]
            assert [r.index for r in outer] == list(range(300)) and len({r.thread for r in outer}) == 1
        for inner in (r for r in mine if r.name == "inner"):
            parent = by_id[(pid, inner.parent)]
            assert parent.name.startswith("thread") and parent.thread == inner.thread


def test_a_forked_child_writes_its_own_segment_and_leaves_the_parents_alone(tmp_path: Path) -> None:
    path = tmp_path / "regions.jsonl"
    out = _run(
        """
        import os, gpuprof
        with gpuprof.region("epoch", index=0):
            with gpuprof.region("before fork"):
                pass
            child = os.fork()
            if child == 0:
                with gpuprof.region("loader", index=5):
                    pass
                os._exit(0)  # as multiprocessing's forked workers end: no atexit, no cut
            os.waitpid(child, 0)
            with gpuprof.region("after fork"):
                pass
        print(os.getpid(), child)
        """,
        path,
    )
    parent, child = map(int, out.split())
    segments = {one.name: one.read_bytes() for one in reader.segments(path)}
    assert sorted(segments) == sorted([f"regions.jsonl.{parent}", f"regions.jsonl.{child}"])
    assert not segments[f"regions.jsonl.{parent}"].endswith(b"\0")  # cut at its exit
    assert segments[f"regions.jsonl.{child}"].endswith(b"\0") and len(segments[f"regions.jsonl.{child}"]) == BLOCK
    assert b"loader" not in segments[f"regions.jsonl.{parent}"]
    found = reader.parse(path, "run-1")
    assert [(r.name, r.process) for r in found.regions] == [
        ("epoch", parent),
        ("before fork", parent),
        ("loader", child),
        ("after fork", parent),
    ]
    epoch, before, loader, after = found.regions
    assert before.parent == after.parent == epoch.ident and epoch.unclosed is None
    assert loader.parent is None and loader.index == 5 and loader.unclosed is None  # the child's own, no parent's
    assert found.processes == {parent: None, child: None}


def test_stopping_cuts_the_segment_and_recording_again_opens_another(tmp_path: Path) -> None:
    path = tmp_path / "regions.jsonl"
    script = f"""
    import os
    from gpuprof import regions
    regions.record_to({str(path)!r}, "run-1")
    with regions.region("first"):
        pass
    regions.record_to(None)
    print(os.path.getsize({str(path)!r} + f".{{os.getpid()}}"))
    with regions.region("not recorded"):
        pass
    regions.record_to({str(path)!r}, "run-1")
    with regions.region("second", index=2, note="kept"):
        regions.begin("left inside")  # closed with "second", marked
    print(os.getpid())
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        env={**{k: v for k, v in os.environ.items() if not k.startswith("GPUPROF_")}, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    size, pid = map(int, done.stdout.split())
    first, second = reader.segments(path)
    assert (first.name, second.name) == (f"regions.jsonl.{pid}", f"regions.jsonl.{pid}.1")
    assert first.stat().st_size == size == len(first.read_text()) and size < 400  # cut to its two lines
    found = reader.parse(path, "run-1")
    assert [(r.name, r.attributes, r.unclosed) for r in found.regions] == [
        ("first", {}, None),
        ("second", {"note": "kept"}, None),
        ("left inside", {}, "parent"),
    ]
    assert found.regions[2].parent == found.regions[1].ident and found.regions[2].end_ns <= found.regions[1].end_ns


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    """A killed process's segment (ending in NUL padding) and the header's file beside it."""
    path = tmp_path_factory.mktemp("killed") / "regions.jsonl"
    _killed(path)
    [segment] = reader.segments(path)
    return path, segment.read_bytes()


def _killed(path: Path) -> None:
    child = _python(
        """
        import os, signal, gpuprof
        for epoch in range(3):
            with gpuprof.region("epoch", index=epoch):
                pass
        os.kill(os.getpid(), signal.SIGKILL)
        """,
        path,
    )
    child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda raw: raw.rstrip(b"\0")[:-20], "its last line is cut short: the regions file is truncated or corrupt"),
        (lambda raw: raw.replace(b"\n", b"\n\0\0", 2), "line 2 is not JSON: the regions file is corrupt"),
        (lambda raw: raw.split(b"\n", 1)[1], "a segment that does not begin with its process line"),
    ],
    ids=["truncated", "nul-inside", "no-process-line"],
)
def test_a_truncated_or_corrupt_segment_is_refused_with_one_line(
    recorded: tuple[Path, bytes], tmp_path: Path, damage: object, said: str
) -> None:
    path, raw = recorded
    assert len(reader.parse(path, "run-1").regions) == 3  # intact: its NUL padding skipped
    copy = tmp_path / path.name
    copy.write_bytes(path.read_bytes())
    segment = tmp_path / reader.segments(path)[0].name
    segment.write_bytes(damage(raw))  # type: ignore[operator]
    with pytest.raises(FormatError, match=f"{segment.name}: {said}"):
        reader.parse(copy)
    result = CliRunner().invoke(main, ["import", str(copy), "--store", str(tmp_path / "s.sqlite")])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert len([line for line in result.output.splitlines() if said in line]) == 1


def test_a_file_of_the_single_file_layout_still_reads() -> None:
    """Files recorded before segments hold every line in the named file (real file, fixtures/regions)."""
    found = reader.parse(ROOT / "tests" / "fixtures" / "regions" / "regions_two_epochs_three_batches.jsonl")
    assert [(r.name, r.index) for r in found.regions] == [
        ("epoch", 0),
        *(("batch", i) for i in range(3)),
        ("epoch", 1),
        *(("batch", i) for i in range(3)),
    ]
    assert found.regions[0].seconds == pytest.approx((7512774734292 - 7512769065502) / 1e9)
    assert found.processes == {12323: None} and found.run_id == "10f118c78bcd428fb122ac2445a7d521"
    assert all(r.unclosed is None for r in found.regions)


def test_a_segment_without_lines_is_skipped(recorded: tuple[Path, bytes], tmp_path: Path) -> None:
    """A process killed as it created its segment leaves only NUL bytes (or nothing): no lines to read."""
    path, raw = recorded
    copy = tmp_path / path.name
    copy.write_bytes(path.read_bytes())
    (tmp_path / reader.segments(path)[0].name).write_bytes(raw)
    (tmp_path / f"{path.name}.7").write_bytes(b"\0" * BLOCK)
    (tmp_path / f"{path.name}.8").write_bytes(b"")
    assert len(reader.segments(copy)) == 3
    assert [(r.name, r.index) for r in reader.parse(copy, "run-1").regions] == [("epoch", i) for i in range(3)]


def test_two_processes_that_had_one_pid_stay_apart(tmp_path: Path) -> None:
    """A pid used again (a long job's workers) gives a second segment ``<pid>.1`` whose region ids
    start over: each process line's ``since`` keeps the two processes' regions apart."""
    path = tmp_path / "regions.jsonl"
    script = """
    import os, gpuprof
    with gpuprof.region("epoch", index=INDEX):
        with gpuprof.region("step"):
            pass
    print(os.getpid())
    """
    first, second = (int(_run(script.replace("INDEX", str(index)), path)) for index in (0, 1))
    moved = path.with_name(f"{path.name}.{second}")  # as if the second process had had the first's pid
    path.with_name(f"{path.name}.{first}.1").write_bytes(
        moved.read_bytes().replace(b'"p":%d,' % second, b'"p":%d,' % first)
    )
    moved.unlink()
    found = reader.parse(path, "run-1")
    assert [(r.name, r.index, r.process) for r in found.regions] == [
        ("epoch", 0, first),
        ("step", None, first),
        ("epoch", 1, first),
        ("step", None, first),
    ]
    assert [r.ident for r in found.regions] == [1, 2, 1, 2] and len({r.since for r in found.regions}) == 2
    assert [launch.attributes["parent"] for launch in reader.launches(found)] == ["", "0", "", "2"]
