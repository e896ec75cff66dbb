"""Stand-in for ``ncu``/``nvprof`` in tests: records its argv and replays recorded profiler output.

It never runs the workload it is given (that needs a GPU). Environment variables (set by a test):

* ``GPUPROF_FAKE_RECORD``  file to append one JSON line per call: ``{"tool", "argv"}``
* ``GPUPROF_FAKE_LOG``     real profiler output (a fixture) copied to the ``--log-file`` path
* ``GPUPROF_FAKE_REPORT``  real ``.ncu-rep`` (a fixture) copied to ``<--export>.ncu-rep``
* ``GPUPROF_FAKE_CHILD``   stand-in for the workload child's result file, copied to its ``--result``
                           path; tests use it to check plumbing, never as a GPU measurement
* ``GPUPROF_FAKE_EXIT``    exit code of the profiling call (default 0)
* ``GPUPROF_FAKE_QUERY``   real ``--query-metrics`` output (a fixture) printed for a metric query;
                           without it a query prints nothing (no recorded nvprof listing exists)
* ``GPUPROF_FAKE_QUERY_CHIPS`` the same for ``--query-metrics --chips X`` (ncu's query for a named
                           chip, which needs no GPU); without it such a query prints nothing
* ``GPUPROF_FAKE_LOGS``    for a ``--log-file`` name with ``%p`` (one log per process): real outputs,
                           separated by ``os.pathsep``, each written under the process ID its own
                           ``==PID==`` lines name (else 4001, 4002 ...)
* ``GPUPROF_FAKE_TRACE``   real ``--print-gpu-trace`` output, copied to the log of a trace call
                           (``GPUPROF_FAKE_TRACES``: one per process, as ``GPUPROF_FAKE_LOGS``)
* ``GPUPROF_FAKE_CONSOLE`` real console output printed to stdout by a profiling call that names no
                           ``--log-file`` (as the profiler prints its results there)
* ``GPUPROF_FAKE_RUN``     set: run the command after the profiler's options, as the profiler would,
                           and exit with its exit code (``gpuprof profile`` tests, with commands that
                           need no GPU); the recorded output is written first, so it is there when
                           the command hangs or is stopped
* ``GPUPROF_FAKE_OWN_PATH`` folders put first on the command's PATH, as perf puts its own there

``--version`` prints a banner in the tool's format with the version ``GPUPROF_FAKE_VERSION``
(default 0.0.0-fake).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

BANNER = {
    "ncu": "NVIDIA (R) Nsight Compute Command Line Profiler\nVersion {version} (stand-in)\n",
    "nvprof": "nvprof: NVIDIA (R) Cuda command line profiler\nRelease version {version} (stand-in)\n",
}


# ncu's and nvprof's options that take a value (the others gpuprof passes are flags)
VALUED = {
    "--nvtx-include",
    "--metrics",
    "--clock-control",
    "--cache-control",
    "--replay-mode",
    "--export",
    "--page",
    "--log-file",
    "--kernel-name",
    "--kernel-name-base",
    "--launch-skip",
    "--launch-count",
    "--target-processes",
    "--profile-from-start",
    "--kernels",
    "--devices",
}


def _value(argv: list[str], option: str) -> str | None:
    return argv[argv.index(option) + 1] if option in argv else None


def _command(argv: list[str]) -> list[str]:
    """What follows the profiler's own options: the program it runs."""
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in VALUED else 1
    return argv[i:]


def _own_path() -> dict[str, str]:
    """The environment for the command: as perf does, a profiler may put its own folders first on
    the command's PATH (``GPUPROF_FAKE_OWN_PATH`` names them here)."""
    own = os.environ.get("GPUPROF_FAKE_OWN_PATH")
    path = os.environ.get("PATH", "")
    return {**os.environ, "PATH": f"{own}{os.pathsep}{path}" if own else path}


def _per_process(pattern: str, variable: str) -> None:
    """Each file listed in ``variable`` written as the log of the process it names."""
    for number, source in enumerate(os.environ.get(variable, "").split(os.pathsep), start=1):
        if source:
            text = open(source).read()
            pid = re.search(r"^==(\d+)==", text, re.MULTILINE)
            shutil.copyfile(source, pattern.replace("%p", pid.group(1) if pid else str(4000 + number)))


def main(tool: str) -> int:
    argv = sys.argv[1:]
    record = os.environ.get("GPUPROF_FAKE_RECORD")
    if record:
        with open(record, "a") as handle:
            handle.write(json.dumps({"tool": tool, "argv": argv, "pid": os.getpid()}) + "\n")
    if argv == ["--version"]:
        sys.stdout.write(BANNER[tool].format(version=os.environ.get("GPUPROF_FAKE_VERSION", "0.0.0-fake")))
        return 0
    if "--query-metrics" in argv:
        query = os.environ.get("GPUPROF_FAKE_QUERY_CHIPS" if "--chips" in argv else "GPUPROF_FAKE_QUERY")
        if query:
            with open(query) as listing:
                sys.stdout.write(listing.read())
        return 0
    log, trace = _value(argv, "--log-file"), "--print-gpu-trace" in argv
    if log and "%p" in log:
        _per_process(log, "GPUPROF_FAKE_TRACES" if trace else "GPUPROF_FAKE_LOGS")
        log = None
    copies = [
        ("GPUPROF_FAKE_TRACE" if trace else "GPUPROF_FAKE_LOG", log),
        ("GPUPROF_FAKE_CHILD", _value(argv, "--result")),
    ]
    export = _value(argv, "--export")
    if export:
        copies.append(("GPUPROF_FAKE_REPORT", export + ".ncu-rep"))
    for variable, target in copies:
        source = os.environ.get(variable)
        if source and target:
            shutil.copyfile(source, target)
    console = os.environ.get("GPUPROF_FAKE_CONSOLE")
    if console and "--log-file" not in argv:
        with open(console) as recorded:
            sys.stdout.write(recorded.read())
    code = 0
    if os.environ.get("GPUPROF_FAKE_RUN"):
        try:
            code = subprocess.call(_command(argv), env=_own_path())
        except KeyboardInterrupt:  # Ctrl-C reached the group: the profiler stops with its program
            return 130
    return int(os.environ.get("GPUPROF_FAKE_EXIT", code))
