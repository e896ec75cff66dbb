"""``gpuprof --help`` wall time vs a minimal Click hello-world (target ratio <= 1.5)."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

HELLO = "import click\n@click.command()\ndef hello():\n    'Say hello.'\nhello()\n"
GPUPROF = "from gpuprof.cli import main\nmain()\n"
RUNS = 15


def wall(code: str) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code, "--help"], check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


if __name__ == "__main__":
    wall(HELLO)  # warm the OS file cache for both
    wall(GPUPROF)
    hello, ours = wall(HELLO), wall(GPUPROF)
    print(
        f"click hello --help {hello * 1e3:.1f} ms   gpuprof --help {ours * 1e3:.1f} ms   "
        f"ratio {ours / hello:.2f}  (target <= 1.5)"
    )
