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

    with gpuprof.region("epoch", index=i):          # a region of your program, recorded under
        ...                                         # `gpuprof profile` (also @gpuprof.region(...),
                                                    # gpuprof.begin(...)/gpuprof.end())

Names avoid the submodules' (``gpuprof.compare``, ``gpuprof.stalls``), which importing would shadow.
"""

from __future__ import annotations

from typing import Any

REGIONS = ("region", "begin", "end")  # from gpuprof.regions: standard library only, cheap to import
__all__ = [
    "Launch",
    "Metric",
    "Run",
    "begin",
    "compare_runs",
    "diff",
    "end",
    "kernels",
    "launches",
    "metrics",
    "read",
    "region",
    "region_table",
    "results",
    "run",
    "runs",
    "stall_reasons",
    "summary",
]


def __getattr__(name: str) -> Any:
    """Load the library on first use, so ``gpuprof --help`` (which imports this package) stays fast."""
    if name in REGIONS:
        from gpuprof import regions

        return getattr(regions, name)
    if name in ("Launch", "Metric", "Run"):
        from gpuprof import model

        return getattr(model, name)
    if name == "__version__":  # the installed distribution's, as --version prints it
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("gpuprof-hpc")
        except PackageNotFoundError:
            return "unknown"
    if name == "read":
        return _read
    if name in __all__:
        from gpuprof import api

        return getattr(api, name)
    raise AttributeError(f"module 'gpuprof' has no attribute {name!r}")


def _read(path: Any, fmt: str | None = None) -> Any:
    """A profiler output file as a Run, format detected from its content (nothing stored).

    An ``.ncu-rep``'s reading child is started before the library is loaded, which then loads
    beside it: a cold ``gpuprof.read`` costs about what ncu_report alone does."""
    from gpuprof.readers import ncu_rep  # no pandas: quick to load

    with ncu_rep.ahead(path, fmt):
        from gpuprof import importing  # what api.read calls, without the rest of the library

        return importing.read_file(path, fmt)
