"""``gpuprof import``: read profiler output files into the results store."""

from __future__ import annotations

import click

from gpuprof import readers
from gpuprof.cli.common import echo, format_option, handle_errors, note, store_option
from gpuprof.readers import ncu_rep


def _formats() -> str:
    """The formats gpuprof reads, from the reader registry, for --help."""
    return "\b\nFormats (--reader NAME):\n" + "\n".join(f"  {name}: {text}" for name, text in readers.formats())


@click.command("import", epilog=_formats())
@click.argument("files", nargs=-1, required=True, type=click.Path())
@click.option(
    "--reader",
    "reader",
    default=None,
    metavar="NAME",
    help="Read every file as this format (listed below) instead of detecting it from the content.",
)
@click.option(
    "--join",
    "join",
    is_flag=True,
    help="Store FILES as one run: files of one application that each hold some of the metrics "
    "(one ncu run per metric); launches join by ID where every file names the same kernel.",
)
@click.option(
    "--gpu",
    "gpu",
    default=None,
    metavar="NAME",
    help="The GPU the files were profiled on, for files that do not name it (ncu CSVs): sets the "
    "tensor-FLOP rule and the ceilings. A device-table name or key ('gpuprof peaks' lists them).",
)
@click.option(
    "--tensor-flop-per-inst",
    "tensor_flop_per_inst",
    default=None,
    metavar="N",
    type=click.FloatRange(min=0, min_open=True, max=1e6),
    help="FLOPs per tensor-pipe warp instruction on GPUs after Volta, whose files count tensor "
    "instructions but not sm__ops_path_tensor_* work: 512 reproduces NERSC's roofline method. "
    "An estimate, said so in the table's basis (docs/tensor-cores.md).",
)
@click.option(
    "--nvtx-include",
    "nvtx_include",
    multiple=True,
    metavar="PATTERN",
    help="Keep only the launches made inside an NVTX range matching PATTERN (a glob on a range's "
    "name, or 'outer/inner' for nested ranges), from files that record NVTX ranges. Repeatable.",
)
@click.option(
    "--l2-bytes",
    "l2_bytes",
    type=click.Choice(["lts", "l1-reads"]),
    default="lts",
    show_default=True,
    help="L2 traffic counted for the hierarchical roofline: lts = NERSC's lts__t_bytes (every request "
    "that reached L2); l1-reads = the L1 unit's reads from L2, as Nsight Compute's memory chart "
    "(32 x lts__t_sectors_srcunit_tex_op_read.sum), checked against DRAM reads. The basis says which.",
)
@format_option
@store_option
@handle_errors
def import_(
    files: tuple[str, ...],
    reader: str | None,
    join: bool,
    gpu: str | None,
    tensor_flop_per_inst: float | None,
    nvtx_include: tuple[str, ...],
    l2_bytes: str,
    fmt: str,
    store_path: str | None,
) -> None:
    """Read FILES (profiler output in any of the formats below) into the results store.

    Each file is stored as one run, whole or not at all (with --join, all files as one run); the
    first file that cannot be read stops the import, and the files before it stay stored. Prints
    one row per kernel.
    """
    import contextlib
    from concurrent.futures import Future, ThreadPoolExecutor

    from gpuprof.cli.heap import keep_freed_memory

    keep_freed_memory()  # before the first column is made
    ahead = contextlib.ExitStack()
    if len(files) == 1:  # one report: its reading child starts now and reads while the library loads
        ahead.enter_context(ncu_rep.ahead(files[0], reader))
    from gpuprof import importing
    from gpuprof.derive import traces
    from gpuprof.derive.kernel_table import kernel_table
    from gpuprof.errors import GpuprofError
    from gpuprof.model import Run
    from gpuprof.render import emit

    imported: list[Run] = []
    # One file's per-kernel table is derived on a thread while SQLite stores the run (it lets go of
    # the GIL as it writes), instead of after it.
    deriving = ahead.enter_context(ThreadPoolExecutor(max_workers=1)) if len(files) == 1 else None
    derived: list[tuple[Run, Future]] = []  # the one file's run and its table to come

    def ready(run: Run) -> None:
        if deriving and run.format not in traces.TRACE_FORMATS and len(run.launch_table):
            derived.append((run, deriving.submit(kernel_table, [run])))

    def stored(run: Run, added: bool) -> None:
        imported.append(run)
        if not added:
            note(f"{run.source} was already in the store as run {run.run_id}")
            return
        note(f"imported {run.source} as {run.format}: {len(run.launch_table)} launches, run {run.run_id}")
        for line in run.notes:
            note(f"  note: {line}")

    try:
        importing.import_files(
            files,
            store_path,
            reader,
            on_stored=stored,
            on_ready=ready,
            join=join,
            gpu=gpu,
            tensor_flop_per_inst=tensor_flop_per_inst,
            nvtx_include=nvtx_include,
            l2_bytes=l2_bytes,
        )
    except GpuprofError:
        if imported:
            note(f"stored before the error: {', '.join(run.source for run in imported)}")
        raise
    finally:
        ahead.close()

    # framework traces: their GPU activities here; their ops, steps and breakdown with 'gpuprof trace'
    kernels = [traces.gpu_launches(run) if run.format in traces.TRACE_FORMATS else run for run in imported]
    for run in imported:
        if run.format in traces.TRACE_FORMATS:
            note(f"{run.source}: per-op, per-step and per-GPU tables: gpuprof trace {run.source} --table ops")
    kernels = [run for run in kernels if len(run.launch_table)]
    simulated = bool(kernels) and all(run.device.get("kind") == "simulated" for run in kernels)
    title = (
        "Imported layers (simulated: cycles and counts from the simulator; see origin)"
        if simulated
        else "Imported kernels (measured by the profiler; base units; values per launch, rates time-weighted)"
    )
    if kernels:  # a CPU-only trace has no kernel rows
        ahead_of = [table for run, table in derived if len(kernels) == 1 and kernels[0] is run]
        echo(emit(ahead_of[0].result() if ahead_of else kernel_table(kernels), fmt, title=title))
