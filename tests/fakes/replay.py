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

``--version`` prints a banner in the tool's format with the version ``GPUPROF_FAKE_VERSION``
(default 0.0.0-fake).
"""

from __future__ import annotations

import json
import os
import shutil
import sys

BANNER = {
    "ncu": "NVIDIA (R) Nsight Compute Command Line Profiler\nVersion {version} (stand-in)\n",
    "nvprof": "nvprof: NVIDIA (R) Cuda command line profiler\nRelease version {version} (stand-in)\n",
}


def _value(argv: list[str], option: str) -> str | None:
    return argv[argv.index(option) + 1] if option in argv else None


def main(tool: str) -> int:
    argv = sys.argv[1:]
    record = os.environ.get("GPUPROF_FAKE_RECORD")
    if record:
        with open(record, "a") as handle:
            handle.write(json.dumps({"tool": tool, "argv": argv}) + "\n")
    if argv == ["--version"]:
        sys.stdout.write(BANNER[tool].format(version=os.environ.get("GPUPROF_FAKE_VERSION", "0.0.0-fake")))
        return 0
    if "--query-metrics" in argv:
        query = os.environ.get("GPUPROF_FAKE_QUERY")
        if query:
            with open(query) as listing:
                sys.stdout.write(listing.read())
        return 0
    copies = [("GPUPROF_FAKE_LOG", _value(argv, "--log-file")),
              ("GPUPROF_FAKE_CHILD", _value(argv, "--result"))]
    export = _value(argv, "--export")
    if export:
        copies.append(("GPUPROF_FAKE_REPORT", export + ".ncu-rep"))
    for variable, target in copies:
        source = os.environ.get(variable)
        if source and target:
            shutil.copyfile(source, target)
    return int(os.environ.get("GPUPROF_FAKE_EXIT", "0"))
