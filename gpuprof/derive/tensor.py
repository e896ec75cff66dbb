"""Tensor-core FLOPs per launch, counted per architecture as docs/tensor-cores.md sets out.

Turing and later: the ``sm__ops_path_tensor_*`` counters, summed per input/accumulator type (the
catalog's ``tensor_ops_*`` entries list every spelling a chip may have; the ones present are summed).
Where a chip offers a combined counter and also its ``_sparsity_off``/``_sparsity_on`` split (GH100
FP8; GA100 and AD102 FP16, BF16, TF32, INT8), the split counts the same work again: the combined
counter is taken where present, else off + on. Volta (CC 7.0), which has no such counters: 512 FLOP per tensor-pipe warp
instruction (``tensor_inst``'s ``flop_per_inst``). No source gives a factor for a later chip's
instruction count, so there a non-zero count leaves the tensor work unknown unless the user gives
a factor (``gpuprof import --tensor-flop-per-inst 512`` reproduces NERSC's roofline method, which
applies Volta's 512 on every chip); a zero count is no work on any chip, and so is a tensor pipe
that was never active. Each launch also says which rule gave its number (:data:`RULES`), so a
table can say where the number came from.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from gpuprof.derive.pivot import Counters, aliases, also_per_launch
from gpuprof.model import catalog, tables

if TYPE_CHECKING:
    import numpy as np

# How a launch's tensor FLOPs were found (index = the code :func:`parts` gives).
RULES = (
    "no tensor-core counter in the file: CUDA-core FLOPs only",
    "tensor FLOPs = sum of the sm__ops_path_tensor_* counters",
    "tensor FLOPs = 512 x tensor-pipe warp instructions (Volta)",
    "tensor FLOPs = 0: no tensor-pipe instruction",
    "tensor pipe active but its work not counted (only Volta's 512 FLOP per tensor-pipe instruction is "
    "documented; later chips' work is counted by sm__ops_path_tensor_*, not in the file): total FLOPs left empty",
    "tensor FLOPs = 0: the tensor pipe was idle",
    "tensor pipe active but its work not counted: the file does not say which GPU ran it, and 512 FLOP per "
    "tensor-pipe instruction holds on Volta only (name the GPU: gpuprof import --gpu): total FLOPs left empty",
    "tensor FLOPs = {factor:g} x tensor-pipe warp instructions, the factor given with --tensor-flop-per-inst "
    "(NERSC's method uses 512; NVIDIA documents it for Volta only, and an HMMA.16816 does 4096 FLOP): an "
    "estimate, not a count",
)
NONE, OPS, VOLTA, NO_INST, UNCOUNTED, IDLE, UNKNOWN_GPU, GIVEN = range(len(RULES))
NOT_COUNTED = (UNCOUNTED, UNKNOWN_GPU)
_SPARSE = "_sparsity_on.sum"
_ACTIVITY = ("tensor_precision_fu_utilization", "tensor_pipe_active")


@functools.cache
def kinds() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(catalog key, ceiling "precision/kind" or "", counter names) of each ``tensor_ops_*`` type."""
    return tuple(
        (key, entry.ceiling, tuple(entry.ncu_sum))
        for key, entry in catalog.entries().items()
        if key.startswith("tensor_ops_")
    )


def _present_sum(columns: list[np.ndarray]) -> np.ndarray:
    """Per launch, the sum of the columns it has; NaN where it has none."""
    import numpy as np

    present = [column for column in columns if not np.isnan(column).all()]  # most counters a file lacks
    if not present:
        return np.full(np.shape(columns[0]), np.nan)
    stacked = np.vstack(present)
    total = np.nansum(stacked, axis=0)
    if len(present) < len(columns):
        total += 0.0  # as the lacking counters' zeros made it: -0.0 + 0.0 is 0.0
    return np.where(np.isnan(stacked).all(axis=0), np.nan, total)


def names() -> list[str]:
    """Every name the tensor rules read, for one pass over a run's table."""
    return [
        *(name for _, _, counters in kinds() for name in counters),
        *(name for key in ("tensor_inst", *_ACTIVITY) for name in aliases(key)),
    ]


def _stems(counted: tuple[str, ...]) -> dict[str, list[str]]:
    """Counter names grouped by their combined counter: ``X.sum`` -> [``X.sum``, ``X_sparsity_off.sum``,
    ``X_sparsity_on.sum``] (those of them the type lists)."""
    groups: dict[str, list[str]] = {}
    for name in counted:
        stem = name.removesuffix(".sum").removesuffix("_sparsity_off").removesuffix("_sparsity_on") + ".sum"
        groups.setdefault(stem, []).append(name)
    return groups


def _family_ops(c: Counters, stem: str, group: list[str]) -> np.ndarray:
    """One counter family per launch: the combined counter ``stem`` where the launch has it, else off + on."""
    import numpy as np

    split = [c.raw(name) for name in group if name != stem]
    if stem not in group:
        return _present_sum(split)
    combined = c.raw(stem)
    return np.where(np.isnan(combined), _present_sum(split), combined) if split else combined


def by_kind(c: Counters) -> dict[str, np.ndarray]:
    """Tensor ops per type (ceiling "precision/kind", or the catalog key of a type without one),
    from the ``sm__ops_path_tensor_*`` counters; NaN where a launch has none of a type's counters."""
    c.fetch(names())
    return {
        ceiling or key: _present_sum([_family_ops(c, stem, group) for stem, group in _stems(counted).items()])
        for key, ceiling, counted in kinds()
    }


def parts(c: Counters) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per launch: tensor FLOPs (NaN when unknown), the rule that gave them (index into
    :data:`RULES`) and the kind of the largest tensor work ("fp16/tensor", "" when none)."""
    import numpy as np

    if c.absent(names()):  # no tensor counter at all, as most files: no tensor FLOPs, no rule, no kind
        return np.full(c.launches, np.nan), np.full(c.launches, NONE), np.full(c.launches, "", dtype=object)
    if c.absent([name for _, _, counters in kinds() for name in counters]):  # instructions counted, no ops
        ops, kind = np.full(c.launches, np.nan), np.full(c.launches, "", dtype=object)
    else:
        types = by_kind(c)
        ops = _present_sum(list(types.values()))
        stacked = np.vstack([np.nan_to_num(v, nan=-1.0) for v in types.values()])
        kind = np.where(np.nan_to_num(ops) > 0, np.array(list(types), dtype=object)[stacked.argmax(axis=0)], "")
    inst = c.number("tensor_inst")
    entry = catalog.entries()["tensor_inst"]
    counted = inst > 0
    cc = c.cc if counted.any() else np.full(c.launches, "", dtype=object)  # the rules below need it only then
    codes, ccs = tables.distinct(cc)  # a run's launches have a few compute capabilities
    per_inst = np.array([entry.flop_per_inst.get(cc, np.nan) for cc in ccs], dtype=float)[codes]
    activity = _present_sum([c.number(key) for key in _ACTIVITY])
    flops = np.full(c.launches, np.nan)
    rule = np.full(c.launches, NONE)
    for code, where, value in (
        (IDLE, activity == 0, 0.0),
        (UNCOUNTED, (activity > 0) | counted, np.nan),
        (UNKNOWN_GPU, counted & (cc == ""), np.nan),
        (NO_INST, inst == 0, 0.0),
        (GIVEN, counted & (c.tensor_flop_per_inst is not None), inst * (c.tensor_flop_per_inst or np.nan)),
        (VOLTA, counted & ~np.isnan(per_inst), inst * per_inst),
        (OPS, ~np.isnan(ops), ops),
    ):  # later rules take precedence
        flops = np.where(where, value, flops)
        rule = np.where(where, code, rule)
    kind = np.where((rule == VOLTA) | (rule == GIVEN), entry.ceiling, kind)
    return flops, rule, kind


def rule_text(rule: int, c: Counters) -> str:
    """What :data:`RULES` says of ``rule``, with the factor the user gave where it took one."""
    return RULES[rule].format(factor=c.tensor_flop_per_inst or 0)


@also_per_launch("FLOP")
def tensor_flops(c: Counters) -> np.ndarray:
    """Tensor-core FLOPs (INT8 and narrower: operations), NaN where the work was not counted."""
    return parts(c)[0]


def sparse(c: Counters) -> np.ndarray:
    """Whether 2:4-sparse tensor ops were counted (``*_sparsity_on``): whether ncu counts them as
    executed or as their dense equivalent is not settled (docs/tensor-cores.md section 7)."""
    import numpy as np

    names = [name for _, _, counters in kinds() for name in counters if name.endswith(_SPARSE)]
    if c.absent(names):
        return np.zeros(c.launches, dtype=bool)
    return (np.nan_to_num(np.vstack([c.raw(name) for name in names])) > 0).any(axis=0)
