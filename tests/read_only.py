"""A folder this process cannot change, for tests of read-only stores and unwritable outputs."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def read_only_folder(folder: Path, fill: Callable[[Path], object] = lambda folder: None) -> Iterator[Path]:
    """``folder``, filled by ``fill`` and then made unchangeable: a tmpfs remounted read-only when
    running as root (root ignores permission bits), else a folder and files without write permission."""
    folder.mkdir()
    if os.geteuid() != 0:
        fill(folder)
        for path in folder.iterdir():
            path.chmod(0o444)
        folder.chmod(0o555)
        try:
            yield folder
        finally:
            folder.chmod(0o755)
        return
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(folder)], capture_output=True, text=True, timeout=30
    )
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        fill(folder)
        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True, timeout=30)
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True, timeout=30)
