"""``gpuprof profile -- CMD``: run any program under ncu, nvprof or perf, store and print what it measured."""

from __future__ import annotations

import click

from gpuprof.cli.common import choice, command_line, count, echo, format_option, handle_errors, note, store_option, text

SETS = ("roofline", "stalls", "full")  # gpuprof/data/metric_sets.toml


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@choice(
    "--set",
    "metric_set",
    choices=SETS,
    default="roofline",
    help="What to answer: roofline (time, FLOPs, bytes, peaks at the clock), stalls (warp-stall "
    "reasons), full (the whole catalog). Fewer metrics, fewer replay passes.",
)
@text(
    "--kernel",
    metavar="REGEX",
    help="Profile only kernels whose demangled name matches this regular expression.",
)
@text(
    "--nvtx", metavar="RANGE", help="ncu only: profile only kernels inside this NVTX push/pop range (default domain)."
)
@count(
    "--launch-skip",
    default=0,
    low=0,
    help="ncu only: launches (after the other filters) left out before profiling starts.",
)
@count("--launch-count", default=None, help="ncu only: profile at most this many launches (after the other filters).")
@choice(
    "--device",
    choices=("auto", "cuda", "cpu"),
    default="auto",
    help="auto = the GPU when NVML finds one, else the CPU (perf stat around the command).",
)
@text(
    "--profiler",
    default="auto",
    metavar="auto|ncu|nvprof|PATH",
    help="GPU profiler, or the path to an ncu/nvprof executable (default: by compute capability).",
)
@choice(
    "--processes",
    choices=("split", "merge"),
    default="split",
    help="When the command starts several processes (MPI ranks): one run per process, or one merged run.",
)
@choice(
    "--clock-control",
    choices=("base", "none"),
    default="base",
    help="ncu only: lock clocks to base while profiling, or leave them to the driver.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=1800.0,
    show_default=True,
    help="Seconds before the profiler and the command are stopped (the partial report is kept).",
)
@text(
    "--torch-hooks",
    default="steps",
    metavar="none|steps[,layers]",
    help="PyTorch programs, unchanged: a region per optimizer step (forward, backward, step) and, "
    "with layers, per module forward (a Python call per module call).",
)
@click.option(
    "--energy",
    is_flag=True,
    help="Sample RAPL (package, DRAM) and NVML (every GPU) while the command runs: the power series, "
    "energy per device and per region, with and without idle devices.",
)
@text("--interval", default="0.5s", metavar="SECONDS", help="--energy: time between power samples (0.5s, 100ms).")
@text(
    "--label",
    metavar="NAME",
    help="The set-up's name (e.g. cpu, 1gpu, ddp2), for gpuprof compare --scaling --baseline NAME.",
)
@count("--devices", default=None, help="Devices this set-up uses (x in the parallel efficiency E = S / x). Default 1.")
@click.option(
    "--counters",
    default="",
    metavar="SET[,SET]",
    help="CPU counters read at every region's begin and end (sets: mix, fp, topdown): per-region "
    "IPC, instruction mix, counted FLOPs by vector width, Top-Down level 1. Backend: perf_event_open, "
    "else PAPI, in the program; else perf stat -I around the command, attributed to regions by time.",
)
@click.option(
    "--counter-interval",
    default="100ms",
    show_default=True,
    metavar="SECONDS",
    help="--counters through perf stat -I: its interval (the resolution of the per-region counts; >= 10ms).",
)
@click.option("--dry-run", is_flag=True, help="Print the exact profiler command line(s) and exit.")
@click.option(
    "--trace",
    "trace",
    type=click.Choice(("torch", "jax", "tf")),
    default=None,
    help="Run 'python SCRIPT ARGS' under the framework's own profiler instead (PyTorch, JAX, "
    "TensorFlow), unedited, and store the trace it writes: per-op, per-kernel, per-step tables.",
)
@count("--steps", default=2, help="--trace torch: optimizer steps recorded (after --warmup), each a ProfilerStep#N.")
@count("--warmup", default=1, low=0, help="--trace torch: optimizer steps run under the profiler but not recorded.")
@format_option
@store_option
@handle_errors
def profile(
    command: tuple[str, ...],
    metric_set: str,
    kernel: str | None,
    nvtx: str | None,
    launch_skip: int,
    launch_count: int | None,
    device: str,
    profiler: str,
    processes: str,
    clock_control: str,
    timeout: float,
    torch_hooks: str,
    energy: bool,
    interval: str,
    label: str | None,
    devices: int | None,
    counters: str,
    counter_interval: str,
    dry_run: bool,
    trace: str | None,
    steps: int,
    warmup: int,
    fmt: str,
    store_path: str | None,
) -> None:
    """Run COMMAND (after '--') under a profiler, store it as a run and print its kernels.

    On a GPU: ncu (compute capability 7.0 and newer) or nvprof with the smallest metric set for the
    question; the report stays in reports/<run-id>/. On the CPU: perf stat with the FP events and
    Top-Down level 1, as far as the machine allows. Whatever goes wrong, what was collected is stored.
    With --trace: the framework's profiler (on a GPU its kernel rows come from CUPTI).
    """
    if trace:
        _profile_trace(trace, command, steps, warmup, timeout, fmt, store_path)
        return
    from gpuprof import profile as library
    from gpuprof.render.profile_report import profile_report
    from gpuprof.store import open_store

    settings = library.ProfileSettings(
        command=command,
        metric_set=metric_set,
        kernel=kernel,
        nvtx=nvtx,
        launch_skip=launch_skip,
        launch_count=launch_count,
        device=device,
        profiler=profiler,
        processes=processes,
        clock_control=clock_control,
        timeout=timeout,
        command_line=command_line(),
        torch_hooks=tuple(kind for kind in torch_hooks.split(",") if kind and kind != "none"),
        energy=energy,
        interval=_seconds(interval, "--interval"),
        label=label,
        devices=devices,
        counters=counters,
        counter_interval=_seconds(counter_interval, "--counter-interval"),
    )
    plan = library.plan(settings, store_path)
    if not dry_run:
        with open_store(store_path) as store:  # a store that cannot be written fails now, not after the profiling
            store.writable()
    for line in plan.before:
        note(f"plan: {line}")
    for line in plan.warnings:
        note(f"warning: {line}")
    if dry_run:
        for line in library.commands(plan):
            echo(line)
        return
    note(f"running: {library.commands(plan)[-1]}")
    note(f"the command's own output goes to {plan.run_dir}/stdout.txt and stderr.txt")
    outcome = library.execute(plan)
    with open_store(store_path) as store:
        for run in outcome.runs:
            store.add(run)
        where = store.path
    if settings.energy and outcome.runs:
        from gpuprof.render.compare_plots import png
        from gpuprof.render.power_plot import power_chart

        chart = png(power_chart(outcome.runs[0]))
        if chart:
            (plan.run_dir / "power.png").write_bytes(chart)
            note(f"power chart: {plan.run_dir / 'power.png'} (power series: {plan.run_dir / 'power.csv'})")
    table = profile_report(outcome.runs, fmt)
    if table:
        echo(table)
    for line in dict.fromkeys(line for run in outcome.runs for line in run.notes):
        if line not in plan.before and not line.startswith("problem: "):
            note(f"note: {line}")
    note(
        f"stored as run{'s' if len(outcome.runs) > 1 else ''} {', '.join(r.run_id[:8] for r in outcome.runs)} "
        f"in {where}; report files in {plan.run_dir}"
    )
    if outcome.problem is not None:
        raise outcome.problem


def _seconds(text: str, option: str) -> float:
    """``0.5s``, ``500ms`` or ``0.5`` as seconds."""
    from gpuprof.errors import InputError

    value = text.strip().lower()
    scale = 1e-3 if value.endswith("ms") else 1.0
    try:
        return float(value.removesuffix("ms").removesuffix("s")) * scale
    except ValueError:
        raise InputError(f"{option} {text!r} is not a time", f"give seconds, e.g. {option} 0.5s or 500ms") from None


def _profile_trace(
    framework: str, command: tuple[str, ...], steps: int, warmup: int, timeout: float, fmt: str, store_path: str | None
) -> None:
    from gpuprof import tracing
    from gpuprof.derive import traces
    from gpuprof.render import emit
    from gpuprof.store import open_store

    settings = tracing.TraceSettings(framework, command, steps, warmup, timeout, command_line=command_line())
    open_store(store_path).close()  # a store that cannot be written fails now, not after the program ran
    note(f"running under the {framework} profiler: {' '.join(command)}")
    run, run_dir = tracing.profile_trace(settings)
    with open_store(store_path) as store:
        store.add(run)
        where = store.path
    echo(
        emit(
            traces.op_table(run).head(30) if fmt == "table" else traces.op_table(run),
            fmt,
            title=f"Ops in the {framework} trace (measured by the profiler; times in seconds)",
        )
    )
    for line in run.notes:
        note(f"note: {line}")
    note(f"stored as run {run.run_id[:8]} in {where}; trace and program output in {run_dir}")
