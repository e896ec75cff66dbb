"""gpuprof: profile compute kernels and tell how close they run to what the hardware can do.

Library use (every function returns Runs or pandas DataFrames; nothing prints)::

    import gpuprof
    run = gpuprof.run("dot", "6MB", device="cpu")   # measure and store
    gpuprof.summary([run])                          # one row per run
    gpuprof.results()                               # everything in the results store
    gpuprof.metrics()                               # long format: run × launch × metric
"""

from __future__ import annotations

from gpuprof.api import metrics, results, run, summary
from gpuprof.model import Launch, Metric, Run

__all__ = ["Launch", "Metric", "Run", "metrics", "results", "run", "summary"]
