"""``gpuprof run``: measure one op at one size and say how close it ran to the device's peaks."""

from __future__ import annotations

from typing import Any

import click
from click.core import ParameterSource

from gpuprof.cli.common import (
    choice,
    command_line,
    count,
    echo,
    format_option,
    handle_errors,
    note,
    options,
    store_option,
    text,
)
from gpuprof.cli.progress import bar
from gpuprof.cli.simulate import simulate_op, stonne_options
from gpuprof.workloads import ENGINES
from gpuprof.workloads.ops import DTYPES, OPS

gpu_options = options(
    text(
        "--profiler",
        metavar="ncu|nvprof|none|PATH",
        help="GPU only: profiler to run under, or the path to an ncu/nvprof executable "
        "(default: by compute capability, found on PATH or in NVIDIA's install folders).",
    ),
    count(
        "--profiled",
        default=3,
        help="GPU only: calls of the op run under the profiler (each is replayed once per pass).",
    ),
    choice(
        "--clock-control",
        choices=("base", "none"),
        default="base",
        help="GPU/ncu only: ncu locks clocks to base by default; 'none' leaves them free.",
    ),
    choice(
        "--cache-control",
        choices=("all", "none"),
        default="all",
        help="GPU/ncu only: 'all' flushes caches before each replay pass; 'none' keeps them warm.",
    ),
    choice(
        "--replay-mode",
        choices=("kernel", "application"),
        default="kernel",
        help="GPU/ncu only: replay each kernel, or rerun the whole workload, once per pass.",
    ),
)  # how a GPU run is profiled


@click.command()
@click.option("--op", required=True, type=click.Choice(OPS), help="Operation to measure.")
@click.option("--size", default=None, help="Total bytes of all operands (inputs + output): 6MB, 6MiB, 512KB, 1GB.")
@click.option("--shape", default=None, help="Explicit dimensions instead of --size: ROWSxCOLS, or MxKxN for dot.")
@click.option("--dtype", default="float32", show_default=True, type=click.Choice(sorted(DTYPES)))
@click.option(
    "--engine",
    default=None,
    type=click.Choice(ENGINES),
    help="Workload engine. Default: numpy on the CPU, cupy on a GPU.",
)
@choice(
    "--device",
    choices=("auto", "cpu", "cuda", "stonne:maeri", "stonne:tpu", "stonne:sigma"),
    default="auto",
    help="auto = CUDA when a GPU is usable, else the CPU. stonne:ARCH simulates --op dot on STONNE "
    "(MAERI or TPU-like dense, SIGMA sparse); docs/simulators.md.",
)
@click.option("--repeat", default=10, show_default=True, type=int, help="Timed repeats.")
@click.option("--warmup", default=3, show_default=True, type=int, help="Untimed warm-up calls before timing.")
@choice(
    "--cache",
    choices=("warm", "cold"),
    default="warm",
    help="warm: same buffers every repeat; cold: rotate through buffers larger than the last-level cache.",
)
@click.option(
    "--counters/--no-counters",
    default=True,
    show_default=True,
    help="Count hardware events (perf on CPUs, ncu/nvprof on GPUs) where the machine allows.",
)
@gpu_options
@stonne_options
@format_option
@store_option
@handle_errors
def run(
    op: str,
    size: str | None,
    shape: str | None,
    dtype: str,
    engine: str | None,
    device: str,
    repeat: int,
    warmup: int,
    cache: str,
    counters: bool,
    profiler: str | None,
    profiled: int,
    clock_control: str,
    cache_control: str,
    replay_mode: str,
    fmt: str,
    store_path: str | None,
    **simulator: Any,
) -> None:
    """Measure OP at one size on the CPU or a GPU, store the run, and print what it achieved."""
    if device.startswith("stonne:"):
        simulate_op(op, shape, device.split(":", 1)[1], fmt, store_path, **simulator)
        return
    # from the first second (loading pandas and NumPy takes seconds on a busy host); nothing when piped
    progress = bar(f"{op} {size or shape}", "loading NumPy and the engine")
    try:
        from gpuprof.api import measure_and_store
        from gpuprof.measure import RunSettings, slow_dtype_warning
        from gpuprof.render.run_report import run_report
        from gpuprof.store import open_store

        given = click.get_current_context().get_parameter_source
        gpu = {
            name: value
            for name, value in (
                ("profiler", profiler),
                ("profiled", profiled),
                ("clock_control", clock_control),
                ("cache_control", cache_control),
                ("replay_mode", replay_mode),
            )
            if given(name) is not ParameterSource.DEFAULT
        }
        settings = RunSettings(
            op=op,
            size=size,
            shape=shape,
            dtype=dtype,
            engine=engine,
            device=device,
            repeat=repeat,
            warmup=warmup,
            cache=cache,
            counters=counters,
            command=command_line(),
            gpu=gpu,
            progress=progress,
        )
        with open_store(store_path) as store:  # a store that cannot be written fails now, not after the measurement
            store.writable()
        slow = slow_dtype_warning(settings)
        if slow:
            if progress is not None:
                progress.stop()  # the warning stays on the screen; the next step draws the bar again
            note(f"warning: {slow}")
        result, where = measure_and_store(settings, store_path)
    finally:
        if progress is not None:
            progress.stop()
    echo(run_report(result, fmt))
    note(f"stored as run {result.run_id[:8]} in {where}")
