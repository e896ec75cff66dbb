"""Every writer leaves what the user owns as it was: a symlink stays a link (its target gets the new
contents), a FIFO's reader gets the data, a character device stays a device, and only a regular
file is written beside itself and renamed over. An SQLite store cannot live in a device or FIFO, so
there it is one line and nothing changed.

Writers: export (replace and --append), merge (its output store), run's store, compare --html,
roofline --out FILE, stalls --plot FILE. The character device is a null device made with mknod in
the test's folder where that is permitted, else /dev/null itself (only written through, never
replaced: the test checks it is still a character device).
"""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_paths import K40C
from test_roofline import imported_run, measured_run

from gpuprof.cli import main
from gpuprof.store import open_store


@pytest.fixture
def store(tmp_path) -> Path:
    path = tmp_path / "good.sqlite"
    with open_store(path) as opened:
        opened.add(measured_run("add", 6 * 10**6, [1.1e-3, 1.2e-3]))
        opened.add(imported_run())
    return path


def _null_device(tmp_path: Path, suffix: str = "") -> Path:
    path = tmp_path / f"null{suffix}"
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        return Path(os.devnull)
    return path


@pytest.fixture(autouse=True)
def dev_null_untouched():
    yield
    assert stat.S_ISCHR(os.stat(os.devnull, follow_symlinks=False).st_mode)


def _fifo_reader(path: Path) -> tuple[threading.Thread, list[bytes]]:
    """A thread reading everything written into the FIFO ``path``."""
    os.mkfifo(path)
    got: list[bytes] = []

    def read() -> None:
        with open(path, "rb") as handle:
            got.append(handle.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread, got


def _finish(thread: threading.Thread, path: Path) -> None:
    thread.join(10)
    if thread.is_alive():  # the writer never opened it: release the reader, the test then fails
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(5)


# (name, argv builder taking (out path, store), suffix, check of the written bytes)
WRITERS: list[tuple[str, Callable[[Path, Path], list[str]], str, Callable[[bytes], bool]]] = [
    (
        "export",
        lambda out, store: ["export", str(out), "--store", str(store)],
        ".jsonl",
        lambda data: [json.loads(line)["kind"] for line in data.splitlines()] == ["run", "import"],
    ),
    (
        "export --append",
        lambda out, store: ["export", str(out), "--append", "--store", str(store)],
        ".jsonl",
        lambda data: data.count(b"\n") == 2 and b'"run_id"' in data,
    ),
    (
        "compare --html",
        lambda out, store: ["compare", "--import", str(K40C), "--html", str(out), "--store", str(store)],
        ".html",
        lambda data: data.startswith(b"<!DOCTYPE html>") and b"Tesla K40c" in data,
    ),
    (
        "roofline --out",
        lambda out, store: ["roofline", "--store", str(store), "--out", str(out)],
        ".svg",
        lambda data: data.startswith(b"<?xml") and b"sgemm_128x64_nn" in data,
    ),
    (
        "stalls --plot",
        lambda out, store: ["stalls", str(K40C), "--plot", str(out)],
        ".svg",
        lambda data: data.startswith(b"<?xml") and b"</svg>" in data,
    ),
]
# compare --html draws every chart of a report (5-7 s a case): slow, the other writers stay in the quick loop
WRITER_CASES = [
    pytest.param(*writer, id=writer[0], marks=pytest.mark.slow if writer[0] == "compare --html" else ())
    for writer in WRITERS
]


@pytest.mark.parametrize(("name", "argv", "suffix", "check"), WRITER_CASES)
def test_a_symlink_is_written_through_and_stays_a_link(tmp_path, store, name, argv, suffix, check):
    target = tmp_path / "elsewhere" / f"real{suffix}"
    target.parent.mkdir()
    target.write_bytes(b"")
    link = tmp_path / f"link{suffix}"
    link.symlink_to(target)
    result = CliRunner().invoke(main, argv(link, store))
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert check(target.read_bytes())
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]  # no partial file left


@pytest.mark.parametrize(("name", "argv", "suffix", "check"), WRITER_CASES)
def test_a_fifo_reader_gets_the_output_and_the_fifo_stays(tmp_path, store, name, argv, suffix, check):
    fifo = tmp_path / f"pipe{suffix}"
    thread, got = _fifo_reader(fifo)
    result = CliRunner().invoke(main, argv(fifo, store))
    _finish(thread, fifo)
    assert result.exit_code == 0, result.output
    assert stat.S_ISFIFO(os.stat(fifo, follow_symlinks=False).st_mode)
    assert got and check(got[0])


@pytest.mark.parametrize(("name", "argv", "suffix", "check"), WRITER_CASES)
def test_a_character_device_is_written_through_and_stays_a_device(tmp_path, store, name, argv, suffix, check):
    device = _null_device(tmp_path, suffix)
    path = device
    if device.suffix != suffix:  # /dev/null: the suffix picks the chart format, so a link with it
        path = tmp_path / f"null{suffix}"
        path.symlink_to(device)
    result = CliRunner().invoke(main, argv(path, store))
    assert result.exit_code == 0, result.output
    assert stat.S_ISCHR(os.stat(device, follow_symlinks=False).st_mode)
    assert os.stat(device).st_size == 0


def test_a_store_behind_a_symlink_is_the_target(tmp_path, store):
    target = tmp_path / "elsewhere" / "merged.sqlite"
    target.parent.mkdir()
    link = tmp_path / "link.sqlite"
    link.symlink_to(target)
    result = CliRunner().invoke(main, ["merge", str(link), str(store)])
    assert result.exit_code == 0, result.output
    assert link.is_symlink()
    with open_store(target, read_only=True) as merged:
        assert len(merged.runs()) == 2
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("link.sqlite-")]  # journal beside the target


@pytest.mark.parametrize("kind", ["fifo", "device"])
@pytest.mark.parametrize("command", ["merge", "run"])
def test_a_store_in_a_fifo_or_device_is_refused_with_one_line(tmp_path, store, kind, command):
    if kind == "fifo":
        path = tmp_path / "pipe.sqlite"
        os.mkfifo(path)
    else:
        path = _null_device(tmp_path)
    argv = (
        ["merge", str(path), str(store)]
        if command == "merge"
        else ["run", "--op", "add", "--size", "1KB", "--device", "cpu", "--repeat", "1", "--store", str(path)]
    )
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 6, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"error: {path} is a device or FIFO, not a results store: it must be a regular file. give "
    )
    mode = os.stat(path, follow_symlinks=False).st_mode
    assert stat.S_ISFIFO(mode) if kind == "fifo" else stat.S_ISCHR(mode)
    assert not list(path.parent.glob(f"{path.name}-*"))


def test_a_regular_file_is_still_replaced_whole(tmp_path, store):
    out = tmp_path / "runs.jsonl"
    out.write_text("old contents\n")
    inode = out.stat().st_ino
    result = CliRunner().invoke(main, ["export", str(out), "--store", str(store)])
    assert result.exit_code == 0, result.output
    assert out.read_text().count("\n") == 2 and "old contents" not in out.read_text()
    assert out.stat().st_ino != inode  # written beside it and renamed over it
