"""gpuprof: profile compute kernels and tell how close they run to what the hardware can do.

Library use (every function returns Runs or pandas DataFrames; nothing prints)::

    import gpuprof
    run = gpuprof.run("dot", "6MB", device="cpu")   # measure and store
    gpuprof.summary([run])                          # one row per run
    gpuprof.results()                               # everything in the results store
    gpuprof.metrics()                               # long format: run × launch × metric
    profile = gpuprof.read("report.ncu-rep")        # any profiler output gpuprof reads
    gpuprof.kernels([profile])                      # per kernel: time, FLOP/s, efficiencies
    gpuprof.stall_reasons([profile])                # stall reasons per device and kernel
    gpuprof.compare_runs(gpuprof.runs(), reference=True)   # with the study's rows
    gpuprof.diff("before.ncu-rep", "after.ncu-rep")  # per kernel: A, B, change, verdict

Names avoid the submodules' (``gpuprof.compare``, ``gpuprof.stalls``), which importing would shadow.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Launch", "Metric", "Run", "compare_runs", "diff", "kernels", "launches", "metrics", "read", "results",
           "run", "runs", "stall_reasons", "summary"]


def __getattr__(name: str) -> Any:
    """Load the library on first use, so ``gpuprof --help`` (which imports this package) stays fast."""
    if name in ("Launch", "Metric", "Run"):
        from gpuprof import model

        return getattr(model, name)
    if name in __all__:
        from gpuprof import api

        return getattr(api, name)
    raise AttributeError(f"module 'gpuprof' has no attribute {name!r}")
