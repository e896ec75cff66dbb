"""Hostile and damaged profiler outputs (issue 34): long lines read in linear time, FIFOs and devices
refused before they are opened, unreadable numbers kept as missing with a note, cut files named.

Every check that could hang runs in a child process with a timeout, so a regression fails instead of
stalling the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fixture_paths import A100, FIXTURES, SRAD
from gpuprof import readers
from gpuprof.errors import FormatError

ROOT = Path(__file__).resolve().parent.parent
MB = 1 << 20
README = FIXTURES / "nsys_profile_stats_text_a100_vector_add_README.md"
SUMMARY_TEXT = FIXTURES / "ncu_text_print_summary_per_gpu_a100_roofline_EXCERPT.log"
BABEL = FIXTURES / "nvprof_text_summary_titanxp_babelstream.txt"


def _python(code: str, timeout: float = 60, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def _gpuprof(*args: str, timeout: float = 30, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpuprof", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd or ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          stdin=subprocess.DEVNULL)


def _widened(path: Path, old: str, new: str) -> bytes:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    return text.replace(old, new, 1).encode()


# (name, file bytes): one line of a real file grown past 1 MB where a pattern used to backtrack.
SPACES = " " * MB
LONG_LINES = [
    ("nvprof tool message", lambda: _widened(SRAD, "NVPROF is profiling", "NVPROF" + SPACES + "x is profiling")),
    ("nvprof Kernel: line", lambda: _widened(SRAD, "Kernel: compress", "Kernel: compress" + SPACES + "x")),
    ("nvprof device index", lambda: _widened(SRAD, 'GeForce GTX 1070 (0)', "GeForce GTX 1070" + SPACES + "x (0)")),
    ("ncu tool message", lambda: b"==PROF== Connected" + SPACES.encode() + b"x\n" + A100.read_bytes()),
    ("ncu summary section", lambda: _widened(SUMMARY_TEXT, "Section: Compute", "Section: C" + SPACES + "x")),
    ("ncu summary process", lambda: _widened(SUMMARY_TEXT, "raytrace-cuda@", "raytrace-cuda" + "a@" * (MB // 2) + " x")),
    ("ncu summary kernel", lambda: _widened(SUMMARY_TEXT, "PathTracer(int, Pixel *, int), Block",
                                            "PathTracer" + ", Block Size " * (MB // 13) + "x, Block")),
    ("nsys device line", lambda: _widened(README, "General Metrics for NVIDIA GA100",
                                          "General Metrics for NVIDIA" + SPACES + "x")),
    ("nvprof summary name", lambda: _widened(BABEL, "GPU activities:", "GPU activities:") + b"\n"),
]


@pytest.mark.parametrize("name", [name for name, _ in LONG_LINES])
def test_a_one_megabyte_line_reads_in_under_a_second(tmp_path: Path, name: str) -> None:
    """Failed before: lazy ``(.*?)`` before ``\\s*$`` (and similar) took hours on such a line."""
    data = dict(LONG_LINES)[name]()
    assert max(len(line) for line in data.splitlines()) > MB - 100 or name == "nvprof summary name"
    path = tmp_path / "long.txt"
    path.write_bytes(data)
    result = _python(f"""
        import time
        from gpuprof import readers
        from gpuprof.errors import GpuprofError
        for warm_up in {[str(SRAD), str(A100), str(README), str(SUMMARY_TEXT), str(BABEL)]!r}:
            readers.read(warm_up)  # imports pandas: not the time under test
        start = time.perf_counter()
        try:
            run = readers.read({str(path)!r})
            outcome = f"{{len(run.launches)}} launches"
        except GpuprofError as error:
            outcome = f"error: {{str(error)[:80]}}"
        print(f"{{time.perf_counter() - start:.3f}} {{outcome}}")
    """, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    seconds = float(result.stdout.split()[0])
    assert seconds < 1.0, result.stdout


def test_nsys_header_cell_unit_is_linear() -> None:
    """The nsys header cell ``Total Time (ns)``: a CSV cell may hold any whitespace run."""
    result = _python("""
        import time
        from gpuprof.readers.nsys_stats import _column
        start = time.perf_counter()
        found = _column("Total" + " " * (1 << 20) + "x (ns)")
        assert _column("Total Time (ns)") == ("Total Time", "ns")
        print(f"{time.perf_counter() - start:.3f}")
    """, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert float(result.stdout) < 1.0


def test_long_line_patterns_still_read_the_real_files() -> None:
    """The rewritten patterns take the same fields from the real files as before."""
    from gpuprof.readers import _nvprof
    from gpuprof.readers.ncu_text import _process
    from gpuprof.readers.nsys_stats import _device_name

    assert _nvprof.split_device("GeForce GTX 1070 (0)") == ("GeForce GTX 1070", 0)
    assert _process("[1146135] raytrace-cuda@127.0.0.1") == {"pid": "1146135", "process": "raytrace-cuda",
                                                               "host": "127.0.0.1"}
    assert _device_name("NVIDIA GA100 (any frequency)") == "NVIDIA GA100"
    run = readers.read(SUMMARY_TEXT)
    assert {launch.kernel for launch in run.launches} == {"PathTracer(int, Pixel *, int)"}
    srad = readers.read(SRAD)
    assert "compress(long, float*)" in {launch.kernel for launch in srad.launches}


def _one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0, result.stdout[-500:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr[-2000:]
    return lines[0]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "profile.csv"
    os.mkfifo(path)
    return path


# Every command argument that names a file to read; {input} is the FIFO or the device.
READ_COMMANDS = [
    ["import", "{input}", "--store", "{tmp}/s.sqlite"],
    ["import", "--reader", "ncu-csv", "{input}", "--store", "{tmp}/s.sqlite"],
    ["import", "--reader", "perf-stat", "{input}", "--store", "{tmp}/s.sqlite"],
    ["sweep", "{input}", "--store", "{tmp}/s.sqlite"],
    ["merge", "{tmp}/out.sqlite", "{input}"],
    ["compare", "--import", "{input}"],
    ["stalls", "{input}"],
    ["show", "--store", "{input}"],
]


@pytest.mark.parametrize("args", READ_COMMANDS, ids=lambda args: " ".join(args[:3]))
def test_a_fifo_is_refused_at_once_with_one_line(tmp_path: Path, fifo: Path, args: list[str]) -> None:
    """Failed before: ``import --reader NAME`` and ``sweep`` opened the FIFO and blocked forever."""
    line = _one_error_line(_gpuprof(*[a.format(input=fifo, tmp=tmp_path) for a in args], timeout=30))
    assert "named pipe (FIFO)" in line and "folder" not in line, line
    assert not (tmp_path / "s.sqlite").exists() and not (tmp_path / "out.sqlite").exists()


@pytest.mark.parametrize("args", READ_COMMANDS, ids=lambda args: " ".join(args[:3]))
def test_dev_zero_is_refused_at_once_with_one_line(tmp_path: Path, args: list[str]) -> None:
    """Failed before: ``/dev/zero`` given to ``import --reader NAME`` or ``sweep`` filled memory."""
    line = _one_error_line(_gpuprof(*[a.format(input="/dev/zero", tmp=tmp_path) for a in args], timeout=30))
    assert "character device" in line, line


def test_a_config_over_the_cap_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "big.toml"
    config.write_text('name = "x"\n' + "# padding\n" * 200_000)
    line = _one_error_line(_gpuprof("sweep", str(config), "--store", str(tmp_path / "s.sqlite")))
    assert "too big for a sweep config" in line


def test_a_failed_import_creates_no_store(tmp_path: Path) -> None:
    """Failed before: the store was created (empty) before the file was found unreadable."""
    bad = tmp_path / "notes.txt"
    bad.write_text("not a profile\n")
    store = tmp_path / "new.sqlite"
    _one_error_line(_gpuprof("import", str(bad), "--store", str(store)))
    assert not store.exists()
