"""``gpuprof simulate``: simulated accelerators (STONNE): read their outputs, or plan and run DLRM on them."""

from __future__ import annotations

import re
from typing import Any

import click

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
from gpuprof.errors import InputError

_TILE = re.compile(r"^T_(K|M|N)=(\d+)$")


def _tiles(text: str | None) -> dict[str, int] | None:
    if not text:
        return None
    parts = [part.strip() for part in text.split(",") if part.strip()]
    found = [_TILE.match(part) for part in parts]
    if not all(found) or sorted(m[1] for m in found) != ["K", "M", "N"]:  # type: ignore[index]
        raise InputError(f"--tiles '{text}' is not T_K=..,T_M=..,T_N=..", "give all three, e.g. T_K=64,T_M=2,T_N=1")
    return {f"T_{m[1]}": int(m[2]) for m in found}  # type: ignore[index]


_BINARY = "the stonne binary you built (else $GPUPROF_STONNE, else PATH)."
_DN_BW, _RN_BW = (
    "distribution network bandwidth (elements per cycle).",
    "reduction network bandwidth (elements per cycle).",
)

# The options of a STONNE device: the binary, the accelerator's size and bandwidths, tiles, sparsity.
stonne_options = options(
    text("--stonne", "stonne_path", metavar="PATH", help=f"STONNE device only: {_BINARY}"),
    count("--num-ms", "num_ms", default=256, help="STONNE device only: multipliers (a square number for stonne:tpu)."),
    count("--dn-bw", "dn_bw", default=64, help=f"STONNE device only: {_DN_BW}"),
    count("--rn-bw", "rn_bw", default=64, help=f"STONNE device only: {_RN_BW}"),
    count(
        "--sparsity",
        "sparsity",
        default=0,
        low=0,
        high=99,
        help="stonne:sigma only: percent of the first matrix's values that are zero.",
    ),
    text(
        "--tiles",
        "tiles",
        metavar="T_K=..,T_M=..,T_N=..",
        help="STONNE dense only: the tiles (default: chosen to fit the multipliers, and said).",
    ),
)


def _gemm(arch: str, num_ms: int, dn_bw: int, rn_bw: int, sparsity: int = 0, tiles: str | None = None) -> Any:
    from gpuprof.launch.stonne import Gemm

    return Gemm(
        m=1,
        n=1,
        k=1,
        arch=arch,
        multipliers=num_ms,
        dn_bw=dn_bw,
        rn_bw=rn_bw,
        sparsity=sparsity,
        given_tiles=_tiles(tiles),
    )


def simulate_op(
    op: str,
    shape: str | None,
    arch: str,
    fmt: str,
    store_path: str | None,
    *,
    stonne_path: str | None,
    num_ms: int,
    dn_bw: int,
    rn_bw: int,
    sparsity: int,
    tiles: str | None,
) -> None:
    """``gpuprof run --device stonne:ARCH``: simulate, store, print the layer table."""
    from gpuprof import simulate as simulating
    from gpuprof.derive import simulated
    from gpuprof.render import emit
    from gpuprof.store import open_store

    gemm = _gemm(arch, num_ms, dn_bw, rn_bw, sparsity, tiles)
    open_store(store_path).close()  # a store that cannot be written fails now, not after the simulation
    run = simulating.simulate_gemm(op, shape, stonne_path, gemm)
    run.source = command_line()
    with open_store(store_path) as store:
        store.add(run)
    echo(emit(simulated.layer_table(run), fmt, title=f"{op} on STONNE ({arch}, simulated)"))
    for line in run.notes:
        note(f"note: {line}")
    note(f"stored as run {run.run_id[:8]}")


@click.group("simulate")
def simulate() -> None:
    """Simulated accelerators (STONNE): per-layer cycles, utilisation, reads, writes, energy."""


@simulate.command("layers")
@click.argument("path", type=click.Path())
@click.option(
    "--clock",
    "clock_mhz",
    default=None,
    type=click.FloatRange(min=0, min_open=True),
    metavar="MHZ",
    help="The accelerator's clock in MHz: gives each layer a time (a simulator has none of its own).",
)
@click.option(
    "--energy-table",
    "energy_table",
    default=None,
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="An energy table in STONNE's format (energy_tables/energy_model.txt): energy per layer, "
    "in that table's units.",
)
@format_option
@handle_errors
def layers(path: str, clock_mhz: float | None, energy_table: str | None, fmt: str) -> None:
    """Per layer of a STONNE output (a folder of layer files, one file, or console output): cycles, MACs,
    multipliers, utilisation, global-buffer reads and writes. Reads only; stores nothing."""
    from gpuprof import importing
    from gpuprof.derive import simulated
    from gpuprof.render import emit

    run = importing.read_file(path, "stonne")
    table = simulated.layer_table(run, clock_mhz * 1e6 if clock_mhz else None, energy_table)
    echo(emit(table, fmt, title=f"Simulated layers of {path}"))


@simulate.command("dlrm")
@click.option(
    "--arch-embedding-size",
    "embedding_sizes",
    required=True,
    metavar="E1-E2-..",
    help="Rows of each embedding table, as DLRM takes it (4 tables: 1000-1000-1000-1000).",
)
@click.option(
    "--arch-sparse-feature-size",
    "feature_size",
    required=True,
    type=click.IntRange(min=1),
    help="Embedding dimension (the bottom MLP's last size).",
)
@click.option("--arch-mlp-bot", "mlp_bot", required=True, metavar="D-..-F", help="Bottom MLP, e.g. 64-32.")
@click.option(
    "--arch-mlp-top",
    "mlp_top",
    required=True,
    metavar="..-1",
    help="Top MLP without its input (DLRM prepends the interaction's width), e.g. 16-1.",
)
@count("--num-indices-per-lookup", "indices", default=10)
@count("--batch", "batch", default=1, help="Inference batch.")
@choice(
    "--dense", "dense", choices=("maeri", "tpu"), default="maeri", help="Accelerator of the MLPs and the interaction."
)
@choice(
    "--sparse", "sparse", choices=("sigma",), default="sigma", help="Accelerator of the EmbeddingBags (sparse GEMMs)."
)
@count("--dense-ms", "dense_ms", default=256)
@count("--sparse-ms", "sparse_ms", default=128)
@count("--dn-bw", "dn_bw", default=64)
@count("--rn-bw", "rn_bw", default=64)
@click.option("--plan", "plan_only", is_flag=True, help="Print the planned GEMMs and stop (no STONNE needed).")
@text("--stonne", "stonne_path", metavar="PATH", help=_BINARY[0].upper() + _BINARY[1:])
@format_option
@store_option
@handle_errors
def dlrm(
    embedding_sizes: str,
    feature_size: int,
    mlp_bot: str,
    mlp_top: str,
    indices: int,
    batch: int,
    dense: str,
    sparse: str,
    dense_ms: int,
    sparse_ms: int,
    dn_bw: int,
    rn_bw: int,
    plan_only: bool,
    stonne_path: str | None,
    fmt: str,
    store_path: str | None,
) -> None:
    """DLRM inference as GEMMs on two simulated accelerators: per component (bottom MLP, EmbeddingBags,
    interaction, top MLP) cycles, global-buffer reads and writes, and share of cycles."""
    import pandas as pd

    from gpuprof import simulate as simulating
    from gpuprof.render import emit
    from gpuprof.store import open_store

    layers = simulating.plan_dlrm(
        embedding_sizes,
        feature_size,
        mlp_bot,
        mlp_top,
        indices,
        batch,
        _gemm(dense, dense_ms, dn_bw, rn_bw),
        _gemm(sparse, sparse_ms, dn_bw, rn_bw),
    )
    if plan_only:
        echo(
            emit(
                pd.DataFrame(
                    [
                        {
                            "component": layer.component,
                            "layer": layer.name,
                            "arch": layer.gemm.arch,
                            "M": layer.gemm.m,
                            "K": layer.gemm.k,
                            "N": layer.gemm.n,
                            "sparsity (%)": layer.gemm.sparsity,
                            "runs": layer.count,
                        }
                        for layer in layers
                    ]
                ),
                fmt,
                title="DLRM inference planned as GEMMs (M outputs, K inputs, N batch; FC convention)",
            )
        )
        return
    open_store(store_path).close()
    run = simulating.simulate_dlrm(layers, stonne_path, command_line(), progress=note)
    with open_store(store_path) as store:
        store.add(run)
    echo(emit(simulating.component_table(run), fmt, title="DLRM inference per component (simulated on STONNE)"))
    note(f"stored as run {run.run_id[:8]}")
