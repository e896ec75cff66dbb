"""Operating-system errors on real files, as one line with nothing half-written left (issue 34 item 8).

Two cases the path matrix cannot reach as root: a file this user may not read (EACCES; root reads
everything, so the commands run as the unprivileged user ``nobody``) and a full disk (ENOSPC; a
1 MiB tmpfs mounted in a private mount namespace, filled to a few KiB, so the kernel itself refuses
the write). Each runs every command in one child process through Click's test runner, with
``GPUPROF_DEBUG`` unset, as a user sees it.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixture_paths import A100, FIXTURES

ROOT = Path(__file__).resolve().parent.parent
NOBODY = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")

# The child: runs each command line of argv[1] (JSON) through the CLI and prints [exit code, stderr] each.
RUN_COMMANDS = textwrap.dedent(
    """
    import json, os, sys
    from click.testing import CliRunner
    from gpuprof.cli import main
    results = []
    for args in json.loads(sys.argv[1]):
        result = CliRunner().invoke(main, args)
        results.append([result.exit_code, result.stderr])
    print(json.dumps(results))
    """
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "GPUPROF_DEBUG"}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT), *site.getsitepackages()]), PYTHONDONTWRITEBYTECODE="1")
    return env


def _one_line(code: int, stderr: str) -> str:
    """The one error line, last on stderr (notes printed while working may come before it)."""
    lines = stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("error")]
    assert code != 0 and len(errors) == 1 and errors[0] == lines[-1].strip(), (code, stderr[-1500:])
    assert "internal error" not in errors[0] and "Traceback" not in stderr, errors[0]
    return errors[0]


# --- EACCES: an input this user cannot read ----------------------------------------------------------


def _as_nobody() -> list[str]:
    """The command prefix running Python as an unprivileged user; skip when there is none."""
    if os.geteuid() != 0:
        return [sys.executable]  # not root: chmod 000 already denies this user
    if not shutil.which("setpriv"):
        pytest.skip("running as root and setpriv (util-linux) is missing: no way to become an unprivileged user")
    # root's interpreter may sit in a folder 'nobody' cannot enter (/root/.pyenv): try the system one too
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for python in dict.fromkeys([sys.executable, shutil.which(version) or "", f"/usr/bin/{version}"]):
        probe = [*NOBODY, python, "-c", "import click"]
        if python and subprocess.run(probe, env=_env(), cwd="/", capture_output=True, timeout=60).returncode == 0:
            return [*NOBODY, python]
    pytest.skip(f"no {version} that the unprivileged user 'nobody' can run with gpuprof's dependencies")


@pytest.fixture(scope="module")
def unreadable() -> Iterator[Path]:
    """A folder everyone may enter, holding a profile (a real ncu CSV) only its owner may read."""
    with tempfile.TemporaryDirectory(prefix="gpuprof-eacces-") as folder:
        os.chmod(folder, 0o755)
        secret = Path(folder) / "profile.csv"
        shutil.copyfile(A100, secret)
        os.chmod(secret, 0o000 if os.geteuid() else 0o600)
        yield secret


@pytest.mark.slow  # nine commands in a child process run as another user: about 5 s
def test_an_input_this_user_cannot_read_is_one_line_in_every_command(unreadable: Path) -> None:
    """Failed before: ``diff`` on an unreadable file ended in ``internal error: PermissionError``."""
    folder = unreadable.parent
    commands = {
        "import": ["import", str(unreadable), "--store", f"{folder}/s.sqlite"],
        "import --reader": ["import", "--reader", "ncu-csv", str(unreadable), "--store", f"{folder}/s.sqlite"],
        "sweep": ["sweep", str(unreadable), "--store", f"{folder}/s.sqlite"],
        "merge": ["merge", f"{folder}/out.sqlite", str(unreadable)],
        "compare --import": ["compare", "--import", str(unreadable)],
        "stalls": ["stalls", str(unreadable)],
        "show --store": ["show", "--store", str(unreadable)],
        "diff (first)": ["diff", str(unreadable), str(A100), "--store", f"{folder}/s.sqlite"],
        "diff (second)": ["diff", str(A100), str(unreadable), "--store", f"{folder}/s.sqlite"],
    }
    child = subprocess.run(
        [*_as_nobody(), "-c", RUN_COMMANDS, json.dumps(list(commands.values()))],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
        env=_env(),
    )
    assert child.returncode == 0, child.stderr[-2000:]
    for name, (code, stderr) in zip(commands, json.loads(child.stdout)):
        line = _one_line(code, stderr)
        assert str(unreadable) in line and ("permission denied" in line or "is not readable" in line), (name, line)
    assert sorted(p.name for p in folder.iterdir()) == ["profile.csv"]  # no store, no merge output


# --- ENOSPC: a full disk while writing ----------------------------------------------------------------

# The child in its own mount namespace: a 1 MiB tmpfs at argv[1], filled up to argv[2] bytes left free,
# then each command line of argv[3]; prints [exit code, stderr, files left on the tmpfs] per command.
FULL_DISK = textwrap.dedent(
    """
    import json, os, subprocess, sys
    from click.testing import CliRunner
    from gpuprof.cli import main
    disk, free, commands = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", disk], check=True, timeout=30)
    stat = os.statvfs(disk)
    with open(os.path.join(disk, "filler"), "wb") as handle:
        handle.write(bytes(stat.f_bavail * stat.f_frsize - free))
    results = []
    for args in commands:
        result = CliRunner().invoke(main, args)
        left = sorted(os.path.relpath(os.path.join(d, n), disk) for d, ds, fs in os.walk(disk) for n in ds + fs)
        results.append([result.exit_code, result.stderr, left])
    print(json.dumps(results))
    """
)


def _on_a_full_disk(tmp_path: Path, free: int, commands: list[list[str]]) -> list[tuple[int, str, list[str]]]:
    disk = tmp_path / "disk"
    disk.mkdir()
    namespace = ["unshare", "--mount"] if os.geteuid() == 0 else ["unshare", "--user", "--map-root-user", "--mount"]
    if not shutil.which("unshare"):
        pytest.skip("unshare (util-linux) is missing: no private mount namespace for a small tmpfs")
    probe = subprocess.run([*namespace, "mount", "-t", "tmpfs", "tmpfs", str(disk)], capture_output=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs in a private namespace here: {probe.stderr.decode().strip()[:200]}")
    child = subprocess.run(
        [*namespace, sys.executable, "-c", FULL_DISK, str(disk), str(free), json.dumps(commands)],
        capture_output=True,
        text=True,
        timeout=180,
        env=_env(),
    )
    assert child.returncode == 0, child.stderr[-2000:]
    return [tuple(r) for r in json.loads(child.stdout)]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with a real A100 import: a roofline chart (PNG then SVG), an HTML report and exports."""
    path = tmp_path_factory.mktemp("full-disk") / "s.sqlite"
    result = subprocess.run(
        [sys.executable, "-m", "gpuprof", "import", str(A100), "--store", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
    )
    assert result.returncode == 0, result.stderr
    return path


@pytest.mark.slow  # seven writers (two draw charts) in a mount namespace: about 20 s
def test_a_full_disk_leaves_no_partial_output_and_one_line(tmp_path: Path, store: Path) -> None:
    """Every writer on a disk with 8 KiB free: one line naming the full disk and its fix, and nothing of
    it left on the disk (no partial file, no empty file, no folder it made)."""
    disk = tmp_path / "disk"
    stalls = FIXTURES / "nvprof_csv_metrics_k40c_flop_stall.csv"
    commands = [
        ["compare", "--store", str(store), "--html", f"{disk}/report.html"],
        ["roofline", "--store", str(store), "--out", f"{disk}/charts"],
        ["roofline", "--store", str(store), "--out", f"{disk}/roofline.svg"],
        ["stalls", str(stalls), "--plot", f"{disk}/stalls.png"],
        ["export", f"{disk}/runs.csv", "--store", str(store)],
        ["export", f"{disk}/runs.jsonl", "--store", str(store)],
        ["merge", f"{disk}/merged.sqlite", str(store)],
    ]
    for args, (code, stderr, left) in zip(commands, _on_a_full_disk(tmp_path, 8 * 1024, commands)):
        assert left == ["filler"], (args, left)
        line = _one_line(code, stderr)
        assert "no space left on the device" in line and "free space on that disk" in line, (args, line)


@pytest.mark.slow  # draws the roofline twice to learn its first chart's size: about 15 s
def test_a_disk_full_at_the_second_chart_removes_the_first(tmp_path: Path, store: Path) -> None:
    """Failed before: the PNG written, the SVG refused, and the PNG and its new folder left behind as if
    the roofline had been drawn."""
    charts = tmp_path / "charts"
    drawn = subprocess.run(
        [sys.executable, "-m", "gpuprof", "roofline", "--store", str(store), "--out", str(charts)],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
    )
    assert drawn.returncode == 0, drawn.stderr
    png = next(charts.glob("*.png"))
    (code, stderr, left) = _on_a_full_disk(
        tmp_path, png.stat().st_size + 16 * 1024, [["roofline", "--store", str(store), "--out", f"{tmp_path}/disk/c"]]
    )[0]
    assert left == ["filler"]
    assert "no space left on the device" in _one_line(code, stderr) and ".svg" in stderr
