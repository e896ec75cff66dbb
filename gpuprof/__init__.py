"""gpuprof: profile compute kernels and tell how close they run to what the hardware can do.

Library use (every function returns Runs or pandas DataFrames; nothing prints)::

    import gpuprof
    run = gpuprof.run("dot", "6MB", device="cpu")   # measure and store
    gpuprof.summary([run])                          # one row per run
    gpuprof.results()                               # everything in the results store
    gpuprof.metrics()                               # long format: run × launch × metric
    profile = gpuprof.read("report.ncu-rep")        # any profiler output gpuprof reads
    gpuprof.kernels([profile])                      # per kernel: time, FLOP/s, efficiencies
    gpuprof.stalls([profile])                       # stall reasons per device and kernel
    gpuprof.compare(gpuprof.runs(), reference=True)  # with the study's rows
"""

from __future__ import annotations

from gpuprof.api import compare, kernels, metrics, read, results, run, runs, stalls, summary
from gpuprof.model import Launch, Metric, Run

__all__ = ["Launch", "Metric", "Run", "compare", "kernels", "metrics", "read", "results", "run", "runs", "stalls",
           "summary"]
