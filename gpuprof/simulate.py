"""Work on a simulated accelerator (STONNE): one GEMM, or DLRM inference planned as GEMMs.

DLRM's own arguments plan its inference: the bottom MLP's layers (``--arch-mlp-bot 13-512-256-64``:
dense features first, the sparse feature size last) and the top MLP's (``--arch-mlp-top 512-256-1``,
whose input DLRM prepends: the bottom MLP's output plus one dot product per pair of the 1 + T feature
vectors, 32 + C(5, 2) = 42 for 4 tables and a 64-32 bottom MLP) are FC layers, GEMMs of M = outputs,
N = batch, K = inputs, on the dense accelerator. Each EmbeddingBag (E rows of D values, L indices per
lookup) is a sparse GEMM on the sparse accelerator: M = batch, K = E, N = D with A (the lookups' one-hot
rows) (1 − L/E) sparse. The interaction is one (1 + T) × D × (1 + T) GEMM per sample: simulated once,
counted batch times (the launch's invocations).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import pandas as pd

from gpuprof.derive import simulated
from gpuprof.errors import InputError
from gpuprof.launch import stonne
from gpuprof.model import Launch, Run
from gpuprof.readers import stonne as reader
from gpuprof.workloads import ops


@dataclass(frozen=True)
class Layer:
    """One planned GEMM: its component, name, dimensions, and how many times a forward pass runs it."""

    component: str
    name: str
    gemm: stonne.Gemm
    count: int = 1


def _sizes(text: str, what: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split("-")]
    except ValueError:
        raise InputError(
            f"{what} '{text}' is not sizes joined by '-'", f"give {what} as DLRM takes it, e.g. 64-32"
        ) from None
    if not sizes or any(size <= 0 for size in sizes):
        raise InputError(f"{what} '{text}' needs positive sizes", f"give {what} as DLRM takes it, e.g. 64-32")
    return sizes


def interaction_width(tables: int, bottom_out: int) -> int:
    """The top MLP's input under DLRM's dot interaction (no self-interaction): the bottom MLP's output
    plus C(1 + tables, 2) pairwise dot products."""
    return bottom_out + math.comb(tables + 1, 2)


def plan_dlrm(
    embedding_sizes: str,
    sparse_feature_size: int,
    mlp_bot: str,
    mlp_top: str,
    indices_per_lookup: int,
    batch: int,
    dense: stonne.Gemm,
    sparse: stonne.Gemm,
) -> list[Layer]:
    """DLRM inference as GEMMs. ``dense`` and ``sparse`` carry the two accelerators' settings
    (architecture, multipliers, bandwidths); their dimensions are replaced per layer."""
    tables, bottom, top = (
        _sizes(embedding_sizes, "--arch-embedding-size"),
        _sizes(mlp_bot, "--arch-mlp-bot"),
        _sizes(mlp_top, "--arch-mlp-top"),
    )
    if len(bottom) < 2:
        raise InputError(f"--arch-mlp-bot '{mlp_bot}' needs an input and an output size", "e.g. 13-512-256-64")
    if bottom[-1] != sparse_feature_size:
        raise InputError(
            f"--arch-mlp-bot ends in {bottom[-1]} but --arch-sparse-feature-size is {sparse_feature_size}",
            "DLRM needs them equal: the bottom MLP's output meets the embeddings in the interaction",
        )
    if indices_per_lookup <= 0 or batch <= 0:
        raise InputError("--num-indices-per-lookup and --batch must be positive", "give counts of 1 or more")
    layers = [
        Layer("bottom MLP", f"bot_fc{i}", replace(dense, m=out, n=batch, k=inp))
        for i, (inp, out) in enumerate(itertools.pairwise(bottom))
    ]
    for t, rows in enumerate(tables):
        zeros = math.floor(100 * (1 - min(indices_per_lookup, rows) / rows))
        layers.append(
            Layer("EmbeddingBags", f"emb{t}", replace(sparse, m=batch, n=sparse_feature_size, k=rows, sparsity=zeros))
        )
    features = len(tables) + 1
    layers.append(
        Layer("interaction", "interaction", replace(dense, m=features, n=features, k=sparse_feature_size), count=batch)
    )
    widths = [interaction_width(len(tables), bottom[-1]), *top]
    layers += [
        Layer("top MLP", f"top_fc{i}", replace(dense, m=out, n=batch, k=inp))
        for i, (inp, out) in enumerate(itertools.pairwise(widths))
    ]
    return layers


def simulate_gemm(op: str, shape: str | None, binary: str | None, gemm: stonne.Gemm) -> Run:
    """One ``--op dot`` on STONNE; other ops are refused in one line."""
    if op != "dot":
        raise InputError(f"--op {op} is not simulated by STONNE", "STONNE simulates GEMMs: use --op dot")
    if not shape:
        raise InputError(
            "a STONNE device needs --shape MxKxN (no sizes in bytes: a simulator has no memory limit)",
            "give --shape, e.g. 20x256x20",
        )
    m, k, n = ops.parse_shape("dot", shape)
    path = stonne.locate(binary)
    stonne.probe(path)
    return stonne.simulate(path, replace(gemm, m=m, n=n, k=k), name=f"dot {m}x{k}x{n}")


def simulate_dlrm(
    layers: Sequence[Layer], binary: str | None, command: str, progress: Callable[[str], None] | None = None
) -> Run:
    """Every planned layer on STONNE, as one run with a launch per layer (its component an attribute)."""
    path = stonne.locate(binary)
    stonne.probe(path)
    launches: list[Launch] = []
    notes: list[str] = []
    for index, layer in enumerate(layers):
        if progress:
            progress(f"{layer.name} ({layer.component}, {layer.gemm.arch}) {index + 1}/{len(layers)}")
        run = stonne.simulate(path, layer.gemm, name=layer.name)
        (launch,) = run.launches
        launch.index, launch.invocations = index, layer.count
        launch.attributes["component"] = layer.component
        launches.append(launch)
        notes += [note for note in run.notes if note not in notes and not note.startswith("tiles")]
        notes.append(f"{layer.name}: {run.notes[-1]}")
    return Run(
        kind=stonne.SIMULATION,
        format="stonne",
        source=command,
        device={"kind": "simulated", "name": "STONNE (simulated)"},
        workload={"model": "DLRM inference", "layers": len(layers)},
        launches=launches,
        notes=notes,
    )


def component_table(run: Run) -> pd.DataFrame:
    """Per component: cycles, reads and writes summed over its layers (× invocations), share of cycles."""
    layers = simulated.layer_table(run)
    counts = pd.Series([launch.invocations for launch in run.launches], dtype=float)
    components = [launch.attributes.get("component", launch.kernel) for launch in run.launches]
    totals = layers[["cycles", "reads", "writes"]].mul(counts, axis=0).assign(component=components)
    out = totals.groupby("component", sort=False).sum().reset_index()
    out.insert(2, "share of cycles (%)", 100 * out["cycles"] / out["cycles"].sum())
    out["origin"] = (
        f"{reader.CYCLES}, reads and writes simulated (STONNE), summed over the component's "
        "layers × their runs per forward pass; interaction counted once per sample"
    )
    return out
