"""How fast and how lean a framework trace imports, against json.load of the same file (and
HolisticTraceAnalysis's parser when it is installed).

The trace is the real Kineto ResNet-50 sample in tests/fixtures/traces (35 MB uncompressed), or,
with ``--synthetic-mb N``, a trace of about N MB built from it: its events repeated with their
times shifted by the trace's span and their correlation ids and ``ProfilerStep`` numbers offset,
so every copy is a new stretch of the same training. Each engine runs in its own subprocess on the
uncompressed file (best of ``--repeat``), and reports its time and the rise of its peak resident
memory over what it held before reading (``ru_maxrss``; gpuprof reads a tiny trace first, so the
modules a read imports are loaded, as in a long-lived process):

- ``json.load``: the standard library parse alone, the floor any JSON reader pays;
- ``gpuprof``: ``gpuprof.readers.read`` end to end (parse, dialect, nesting, links, steps, the Run's
  tables);
- ``hta``: ``hta.common.trace.Trace.parse_traces`` on the same file, when ``hta`` imports (in this
  interpreter, or the one ``--hta-python`` names).

Targets: gpuprof >= 0.5 x json.load's speed, faster than HTA's parser; peak memory <= 3 x the
uncompressed size. Not part of the test suite: ``python benchmarks/bench_trace_import.py``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "tests" / "fixtures" / "traces" / "kineto_resnet50_v100_2021_worker0.pt.trace.json.gz"

_CHILD = r"""
import json, resource, sys, time
engine, path = sys.argv[1], sys.argv[2]
if engine == "gpuprof":
    from gpuprof import readers
    # a small trace first: the modules a read imports are loaded before the baseline, as in a
    # long-lived process
    readers.read("tests/fixtures/traces/local_capture_jax_0.10.2_cpu_matmul_two_steps.trace.json.gz")
    parse = lambda: readers.read(path)
elif engine == "hta":
    import os
    from hta.common.trace import Trace
    folder, name = os.path.split(path)
    def parse():
        trace = Trace(trace_files={0: name}, trace_dir=folder)
        trace.parse_traces(max_ranks=1, use_multiprocessing=False)
        return trace
else:
    def parse():
        with open(path, "rb") as handle:
            return json.load(handle)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
result = parse()
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "peak_rise_bytes": (peak - before) * 1024}))
"""


def build(target: Path, megabytes: float) -> int:
    """The sample repeated (times shifted, ids offset) to about ``megabytes`` MB, written event by
    event (nothing but one copy of the sample in memory); its size."""
    doc = json.loads(gzip.decompress(SAMPLE.read_bytes()))
    events = doc.pop("traceEvents")
    span = max(e.get("ts", 0) + e.get("dur", 0) for e in events) - min(e["ts"] for e in events if "ts" in e)
    step = re.compile(r"^ProfilerStep#(\d+)$")
    with open(target, "w") as handle:
        handle.write(json.dumps(doc)[:-1] + ', "traceEvents": [')
        copy, first = 0, True
        while copy == 0 or handle.tell() < megabytes * 1e6:
            shift, offset = copy * (span + 1000), copy * 10_000_000
            for event in events:
                if event.get("ph") == "M" and copy:
                    continue
                e = dict(event)
                if "ts" in e:
                    e["ts"] = e["ts"] + shift
                if isinstance(e.get("id"), int):
                    e["id"] += offset
                args = e.get("args")
                if isinstance(args, dict) and "correlation" in args:
                    e["args"] = {**args, "correlation": args["correlation"] + offset}
                if (found := step.match(e.get("name", ""))) is not None:
                    e["name"] = f"ProfilerStep#{int(found.group(1)) + 6 * copy}"
                handle.write(("" if first else ",\n") + json.dumps(e))
                first = False
            copy += 1
        handle.write("]}\n")
    return target.stat().st_size


def measure(python: str, engine: str, path: Path, repeat: int) -> dict[str, float] | None:
    """Best time and its peak-memory rise over ``repeat`` fresh processes; None when the engine
    cannot run there."""
    best = None
    for _ in range(repeat):
        try:
            done = subprocess.run(
                [python, "-c", _CHILD, engine, str(path)],
                capture_output=True,
                text=True,
                cwd=ROOT,
                env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                check=False,
            )
        except OSError as error:
            print(f"  {engine}: not run ({error})")
            return None
        if done.returncode:
            print(
                f"  {engine}: failed ({done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode})"
            )
            return None
        got = json.loads(done.stdout.strip().splitlines()[-1])
        if best is None or got["seconds"] < best["seconds"]:
            best = got
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic-mb", type=float, default=0, help="build a trace of about this size (MB)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--hta-python", default=sys.executable, help="interpreter that has hta installed")
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        choices=("json.load", "gpuprof", "hta"),
        help="leave an engine out (repeatable)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.pt.trace.json"
        if args.synthetic_mb:
            size = build(path, args.synthetic_mb)
            print(f"synthetic trace: {size / 1e6:.0f} MB ({SAMPLE.name} repeated, times shifted)")
        else:
            path.write_bytes(gzip.decompress(SAMPLE.read_bytes()))
            size = path.stat().st_size
            print(f"trace: {SAMPLE.name}, {size / 1e6:.1f} MB uncompressed")
        engines = {
            "json.load": (sys.executable, "json"),
            "gpuprof": (sys.executable, "gpuprof"),
            "hta": (args.hta_python, "hta"),
        }
        results = {
            name: None if name in args.skip else measure(python, engine, path, args.repeat)
            for name, (python, engine) in engines.items()
        }
    base = results["json.load"]
    for name, got in results.items():
        if got is None:
            continue
        speed = base["seconds"] / got["seconds"] if base else float("nan")
        print(
            f"  {name:10s} {got['seconds']:8.2f} s  {size / 1e6 / got['seconds']:7.1f} MB/s  "
            f"speed vs json.load {speed:4.2f}x  peak memory rise {got['peak_rise_bytes'] / 1e6:8.0f} MB "
            f"= {got['peak_rise_bytes'] / size:4.2f} x file size"
        )
    ours = results["gpuprof"]
    if base and ours:
        print(f"gpuprof / json.load speed: {base['seconds'] / ours['seconds']:.2f} (target >= 0.5)")
        print(f"gpuprof peak memory / file size: {ours['peak_rise_bytes'] / size:.2f} (target <= 3)")
    if results["hta"] and ours:
        print(f"gpuprof speed / HTA parser speed: {results['hta']['seconds'] / ours['seconds']:.2f} (target > 1)")


if __name__ == "__main__":
    main()
