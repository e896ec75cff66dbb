"""Bad paths, for every path-taking option and argument of every command: one line naming the
problem and the fix, a non-zero exit, no traceback.

``CASES`` is the list: a path that is missing, a folder where a file belongs, a binary file where
text belongs, a file in a folder that does not exist or cannot be written. A test fails when a
command gains a path option without a case here.
"""

from __future__ import annotations

import gzip
import os
import stat
from pathlib import Path

import click
import pytest
import read_only
from click.testing import CliRunner
from fixture_paths import K40C

from gpuprof.cli import COMMANDS, main
from gpuprof.store import open_store

# (command, parameter name, arguments) with {missing} a folder that does not exist, {ro} a folder
# this process cannot write (holding results.sqlite and notes.txt), {dir} an existing folder,
# {bin} a binary file, {store} a good store, {k40} a real profiler output, {fifo} a FIFO (no reader),
# {null} a character device (a null device), {dangling} a symlink to a file in a missing folder, {loop} a
# symlink to itself, {rep} a damaged .ncu-rep (NVIDIA's ncu_report aborts loading it), and /proc, where
# folders cannot be created even by root.
HTA_RANK = str(Path(__file__).parent / "fixtures" / "traces" / "hta_sampled_rank-0.json.gz")

CASES = [
    ("calibrate", "store_path", ["calibrate", "--store", "{null}"]),
    ("compare", "stores", ["compare", "--store", "{fifo}"]),
    ("compare", "html", ["compare", "--import", "{k40}", "--html", "/proc/nope.html", "--store", "{store}"]),
    ("export", "out", ["export", "/proc/nope.jsonl", "--store", "{store}"]),
    ("export", "out", ["export", "{dangling}", "--store", "{store}"]),
    ("import", "store_path", ["import", "{k40}", "--store", "{fifo}"]),
    ("import", "store_path", ["import", "{k40}", "--store", "/proc/nope/s.sqlite"]),
    ("merge", "out_store", ["merge", "{null}", "{store}"]),
    ("merge", "out_store", ["merge", "{fifo}", "{store}"]),
    ("roofline", "out", ["roofline", "--store", "{store}", "--out", "/proc/nope"]),
    ("roofline", "out", ["roofline", "--store", "{store}", "--out", "/proc/nope.png"]),
    ("run", "store_path", ["run", "--op", "add", "--size", "1MB", "--device", "cpu", "--store", "{fifo}"]),
    ("show", "store_path", ["show", "--store", "{fifo}"]),
    ("show", "store_path", ["show", "--store", "{null}"]),
    ("stalls", "plot", ["stalls", "{k40}", "--plot", "/proc/nope.png"]),
    ("sweep", "store_path", ["sweep", "{quick}", "--device", "cpu", "--store", "{null}"]),
    ("import", "files", ["import", "{rep}", "--store", "{dir}/s.sqlite"]),
    ("stalls", "files", ["stalls", "{rep}"]),
    ("compare", "imports", ["compare", "--import", "{rep}", "--store", "{store}"]),
    ("export", "out", ["export", "{loop}", "--store", "{store}"]),
    ("compare", "html_path", ["compare", "--store", "{store}", "--html", "{loop}"]),
    ("run", "store_path", ["run", "--op", "add", "--size", "1MB", "--device", "cpu", "--store", "{loop}"]),
    ("import", "files", ["import", "{loop}", "--store", "{dir}/s.sqlite"]),
    ("calibrate", "store_path", ["calibrate", "--store", "{ro}/new.sqlite"]),
    ("calibrate", "store_path", ["calibrate", "--store", "{dir}"]),
    ("compare", "stores", ["compare", "--store", "{missing}/s.sqlite"]),
    ("compare", "stores", ["compare", "--store", "{bin}"]),
    ("compare", "stores", ["compare", "--store", "{dir}"]),
    ("compare", "imports", ["compare", "--import", "{missing}/k40.csv"]),
    ("compare", "imports", ["compare", "--import", "{bin}"]),
    ("compare", "imports", ["compare", "--import", "{dir}"]),
    ("compare", "html_path", ["compare", "--store", "{store}", "--html", "{missing}/r.html"]),
    ("compare", "html_path", ["compare", "--store", "{store}", "--html", "{ro}/r.html"]),
    ("compare", "html_path", ["compare", "--store", "{store}", "--html", "{dir}"]),
    ("diff", "store_path", ["diff", "c196", "af48", "--store", "{missing}/s.sqlite"]),
    ("diff", "store_path", ["diff", "c196", "af48", "--store", "{bin}"]),
    ("diff", "store_path", ["diff", "c196", "af48", "--store", "{dir}"]),
    ("export", "out", ["export", "{missing}/runs.jsonl", "--store", "{store}"]),
    ("export", "out", ["export", "{ro}/runs.jsonl", "--store", "{store}"]),
    ("export", "out", ["export", "{ro}/notes.txt", "--store", "{store}"]),
    ("export", "out", ["export", "{dir}", "--store", "{store}"]),
    ("export", "store_path", ["export", "{dir}/runs.jsonl", "--store", "{missing}/s.sqlite"]),
    ("export", "store_path", ["export", "{dir}/runs.jsonl", "--store", "{bin}"]),
    ("import", "files", ["import", "{missing}/k40.csv", "--store", "{dir}/s.sqlite"]),
    ("import", "files", ["import", "{bin}", "--store", "{dir}/s.sqlite"]),
    ("import", "files", ["import", "{dir}", "--store", "{dir}/s.sqlite"]),
    ("import", "store_path", ["import", "{k40}", "--store", "{ro}/new.sqlite"]),
    ("import", "store_path", ["import", "{k40}", "--store", "{bin}"]),
    ("merge", "out_store", ["merge", "{ro}/new.sqlite", "{store}"]),
    ("merge", "out_store", ["merge", "{bin}", "{store}"]),
    ("merge", "out_store", ["merge", "{dir}", "{store}"]),
    ("merge", "inputs", ["merge", "{dir}/m.sqlite", "{missing}/runs.jsonl"]),
    ("merge", "inputs", ["merge", "{dir}/m.sqlite", "{bin}"]),
    ("merge", "inputs", ["merge", "{dir}/m.sqlite", "{dir}"]),
    ("profile", "store_path", ["profile", "--device", "cpu", "--store", "{ro}/new.sqlite", "--", "true"]),
    ("profile", "store_path", ["profile", "--device", "cpu", "--store", "{bin}", "--", "true"]),
    ("roofline", "store_path", ["roofline", "--store", "{missing}/s.sqlite", "--out", "{dir}/charts"]),
    ("roofline", "store_path", ["roofline", "--store", "{bin}", "--out", "{dir}/charts"]),
    ("roofline", "out", ["roofline", "--store", "{store}", "--out", "{ro}/charts"]),
    ("roofline", "out", ["roofline", "--store", "{store}", "--out", "{bin}"]),
    ("roofline", "out", ["roofline", "--store", "{store}", "--out", "{missing}/r.png"]),
    ("roofline", "out", ["roofline", "--store", "{store}", "--out", "{ro}/r.svg"]),
    ("roofline", "out", ["roofline", "--store", "{store}", "--out", "{dir}/r.pdf"]),
    ("run", "store_path", ["run", "--op", "add", "--size", "1MB", "--device", "cpu", "--store", "{ro}/new.sqlite"]),
    ("run", "store_path", ["run", "--op", "add", "--size", "1MB", "--device", "cpu", "--store", "{bin}"]),
    ("show", "store_path", ["show", "--store", "{missing}/s.sqlite"]),
    ("show", "store_path", ["show", "--store", "{bin}"]),
    ("show", "store_path", ["show", "--store", "{dir}"]),
    ("trace", "file", ["trace", "{missing}/t.pt.trace.json"]),
    ("trace", "file", ["trace", "{bin}"]),
    ("trace", "file", ["trace", "{dir}"]),
    ("trace", "against", ["trace", HTA_RANK, "--against", "{missing}/b.pt.trace.json"]),
    ("trace", "against", ["trace", HTA_RANK, "--against", "{bin}"]),
    ("stalls", "files", ["stalls", "{missing}/k40.csv"]),
    ("stalls", "files", ["stalls", "{bin}"]),
    ("stalls", "files", ["stalls", "{dir}"]),
    ("stalls", "plot", ["stalls", "{k40}", "--plot", "{missing}/p.png"]),
    ("stalls", "plot", ["stalls", "{k40}", "--plot", "{ro}/p.png"]),
    ("stalls", "plot", ["stalls", "{k40}", "--plot", "{dir}/p.gif"]),
    ("sweep", "config", ["sweep", "{missing}/quick.toml", "--store", "{dir}/s.sqlite"]),
    ("sweep", "config", ["sweep", "{bin}", "--store", "{dir}/s.sqlite"]),
    ("sweep", "config", ["sweep", "{dir}", "--store", "{dir}/s.sqlite"]),
    ("sweep", "store_path", ["sweep", "{quick}", "--device", "cpu", "--store", "{ro}/new.sqlite"]),
    ("sweep", "store_path", ["sweep", "{quick}", "--device", "cpu", "--store", "{bin}"]),
    ("sweep", "slurm_dir", ["sweep", "{quick}", "--slurm", "--slurm-dir", "{ro}/jobs", "--store", "{dir}/s.sqlite"]),
]


def _path_parameters() -> set[tuple[str, str]]:
    """(command, parameter) for every parameter of every command that takes a path."""
    found = set()
    for name in COMMANDS:
        command = main.get_command(click.Context(main), name)
        found |= {(name, p.name) for p in command.params if isinstance(p.type, click.Path)}
    return found


def test_every_path_parameter_has_bad_input_cases():
    assert _path_parameters() - {(c, p) for c, p, _ in CASES} == set()


@pytest.fixture(scope="module")
def places(tmp_path_factory):
    root = tmp_path_factory.mktemp("paths")
    store = root / "good.sqlite"
    with open_store(store) as opened:
        from test_compare import measured

        opened.add(measured("add", [1000, 1000], [2e-3]))
    (root / "folder").mkdir()
    (root / "binary.bin").write_bytes(bytes(range(256)) * 64)
    os.mkfifo(root / "fifo")
    null = root / "null"
    try:
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        null = Path(os.devnull)
    (root / "dangling.jsonl").symlink_to(root / "no-such-folder" / "runs.jsonl")
    (root / "loop.jsonl").symlink_to(root / "loop.jsonl")
    damaged = Path(__file__).parent / "fixtures" / "damaged" / "ncu_report_aborts_loader.ncu-rep.gz"
    (root / "damaged.ncu-rep").write_bytes(gzip.decompress(damaged.read_bytes()))
    quick = root / "quick.toml"
    quick.write_text('repeat = 1\nwarmup = 0\n[[grid]]\nops = ["add"]\nsizes = ["1MB"]\n')

    def fill(folder: Path) -> None:
        with open_store(folder / "results.sqlite") as store:
            store._db  # noqa: B018 - created now, with no run (a store is otherwise created by its first write)
        (folder / "notes.txt").write_text("not a run file\n")

    with read_only.read_only_folder(root / "ro", fill) as ro:
        yield {
            "missing": str(root / "no-such-folder"),
            "ro": str(ro),
            "dir": str(root / "folder"),
            "bin": str(root / "binary.bin"),
            "store": str(store),
            "k40": str(K40C),
            "quick": str(quick),
            "fifo": str(root / "fifo"),
            "null": str(null),
            "dangling": str(root / "dangling.jsonl"),
            "loop": str(root / "loop.jsonl"),
            "rep": str(root / "damaged.ncu-rep"),
        }


@pytest.mark.parametrize(("command", "parameter", "args"), CASES, ids=[" ".join(a) for _, _, a in CASES])
def test_a_bad_path_is_one_line_and_a_non_zero_exit(places, command, parameter, args):
    result = CliRunner().invoke(main, [a.format(**places) for a in args])
    assert isinstance(result.exception, SystemExit) and result.exit_code not in (0, None), result.output
    assert "Traceback" not in result.output
    print(result.output)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output


def test_run_refuses_an_unwritable_store_before_measuring(places, monkeypatch):
    import gpuprof.measure

    def measured(*args, **kwargs):
        raise AssertionError("measured although the result could not be stored")

    monkeypatch.setattr(gpuprof.measure, "measure", measured)
    result = CliRunner().invoke(
        main, ["run", "--op", "dot", "--size", "6MB", "--device", "cpu", "--store", f"{places['ro']}/new.sqlite"]
    )
    assert result.exit_code == 6
    assert result.output.startswith(f"error: cannot create results store {places['ro']}/new.sqlite")
